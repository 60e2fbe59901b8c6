"""``attnviz exercise`` on a terminal: a question (its sentence and its inputs as small
tables), a verdict (right or not, the diagnosis, the worked solution) and the score. Every
word and number comes from the Question and the Verdict; nothing here computes or judges."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.text import Text

from attnviz.exercise.questions import Given, Question, Verdict
from attnviz.exercise.shown import number
from attnviz.render.terminal.reports import paragraphs, report_table

#: Room kept for the names' column when the numbers' columns are split to fit the width.
NAME_ROOM = 24


def given_tables(givens: Sequence[Given], width: int = 80) -> list[RenderableType]:
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


def _tables(group: list[Given], width: int) -> list[RenderableType]:
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
    heading, names = shared_name([given.name for given in group])
    tables: list[RenderableType] = []
    for first, last in spans:
        table = report_table()
        table.add_column("", justify="left", overflow="fold", ratio=1)
        for label in group[0].labels[first:last]:
            table.add_column(label, justify="right", no_wrap=True, min_width=6)
        for name, row in zip(names, shown, strict=True):
            table.add_row(Text(name), *(Text(cell) for cell in row[first:last]))
        # the shared words above the table: as wide as the table, not as its names' column
        tables.append(Group(Text(heading, style="bold"), table) if heading else table)
    return tables


def shared_name(names: Sequence[str]) -> tuple[str, list[str]]:
    """The words the rows' names share, as the names' column heading, and what is each row's
    own: "scaled scores of 'it' (head 2)" and "scaled scores of 'was' (head 2)" become
    "scaled scores of … (head 2)" over 'it' and 'was'. Names that share nothing, or would
    not tell their rows apart, are kept whole with no heading."""
    split = [name.split(" ") for name in names]
    shortest = min(len(words) for words in split)
    start = 0
    while start < shortest - 1 and len({words[start] for words in split}) == 1:
        start += 1
    end = 0
    while end < shortest - 1 - start and len({words[-1 - end] for words in split}) == 1:
        end += 1
    own = [" ".join(words[start : len(words) - end]) for words in split]
    if len(names) < 2 or not (start or end) or len(set(own)) < len(own):
        return "", list(names)
    first, last = split[0][:start], split[0][len(split[0]) - end :]
    return " ".join([*first, "…", *last]), own


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
