"""``attnviz exercise`` on a terminal: a question (its sentence and its inputs as small
tables), a verdict (right or not, the diagnosis, the worked solution) and the score. Every
word and number comes from the Question and the Verdict; nothing here computes or judges."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from attnviz.exercise.questions import Given, Question, Verdict
from attnviz.exercise.shown import number
from attnviz.render.terminal.reports import paragraphs, report_table

#: Room kept for the names' column when the numbers' columns are split to fit the width.
NAME_ROOM = 24


def given_tables(givens: Sequence[Given], width: int = 80) -> list[Table]:
    """The inputs as tables: consecutive inputs labelled alike (the rows of a matrix, the
    columns of W) share one, a row each; columns that would not fit ``width`` go on into
    another table below, so that no number is ever cut."""
    groups: list[list[Given]] = []
    for given in givens:
        if groups and groups[-1][0].labels == given.labels:
            groups[-1].append(given)
        else:
            groups.append([given])
    return [table for group in groups for table in _tables(group, width)]


def _tables(group: list[Given], width: int) -> list[Table]:
    """One group of inputs, its columns split into tables that fit ``width``."""
    shown = [[number(value, given.decimals) for value in given.values] for given in group]
    widths = [
        max(len(label), *(len(row[index]) for row in shown)) + 3
        for index, label in enumerate(group[0].labels)
    ]
    spans: list[tuple[int, int]] = []
    start, used = 0, 0
    for index, needed in enumerate(widths):
        if index > start and used + needed > max(width - NAME_ROOM, needed):
            spans.append((start, index))
            start, used = index, 0
        used += needed
    spans.append((start, len(widths)))
    tables = []
    for first, last in spans:
        table = report_table()
        table.add_column("", justify="left", overflow="fold", ratio=1)
        for label in group[0].labels[first:last]:
            table.add_column(label, justify="right", no_wrap=True, min_width=6)
        for given, row in zip(group, shown, strict=True):
            table.add_row(Text(given.name), *(Text(cell) for cell in row[first:last]))
        tables.append(table)
    return tables


def question_renderables(
    question: Question, position: int, total: int, console: Console
) -> list[RenderableType]:
    """Question ``position`` of ``total``: its heading, its sentence, its inputs."""
    heading = Text(f"Question {position} of {total} ({question.kind})", style="bold")
    found: list[RenderableType] = [heading, *paragraphs(console, Text(question.text))]
    for table in given_tables(question.givens, console.width):
        found += [Text(""), table]
    return found


def verdict_renderables(verdict: Verdict, console: Console) -> list[RenderableType]:
    """Right or not (in colour where the terminal has it), then the explanation line by line."""
    first, *rest = verdict.explanation.splitlines()
    style = "bold green" if verdict.right else "bold red"
    lines = [Text(first, style=style)]
    lines += [Text(line, style="cyan") if line.startswith("  ") else Text(line) for line in rest]
    return [line for text in lines for line in paragraphs(console, text)]


def score_text(right: int, answered: int, total: int) -> Text:
    """ "Score: 3 of 5 right (4 answered)." """
    said = f"Score: {right} of {total} right"
    if answered < total:
        said += f" ({answered} answered)"
    return Text(said + ".", style="bold")
