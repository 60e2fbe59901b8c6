"""The lesson page's steps: which of the table's steps the page goes through, and each step's
blocks as the page's data.

Most steps are worked out again by the page for whichever word and key a reader picks: their
paragraphs come with slots for the picked word, their worked examples by name, and their tables
are left to the terminal. A step in ``AS_WRITTEN`` is shown as the lesson writes it, tables and
all: it is about the lesson's example word (a row computed a block of keys at a time), so its
words stay that word's, and the lesson writes it for its first head only, so the page writes it
for each head, one a head, and its head menu picks which.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from attnviz import worked
from attnviz.labels import MASKED, format_number
from attnviz.lesson import steps as table
from attnviz.lesson.blocks import Block, Heading, Matrix, Paragraph, Pause, Tables, Worked
from attnviz.lesson.build import lesson
from attnviz.lesson.options import LessonOptions, parse_steps
from attnviz.lesson.steps import in_order
from attnviz.results import Analyses
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

#: Steps the page shows as the lesson writes them, for the lesson's example word, once for each
#: head shown (see the module's docstring).
AS_WRITTEN = frozenset({"blockwise"})

#: Worked examples about one word and position whatever word the page picks: shown as written.
FIXED_EXAMPLES = frozenset({"rotation", "relative_position", "absorption", "blockwise"})


def page_steps(
    trace: AttentionTrace, selection: Selection, options: LessonOptions
) -> list[dict[str, Any]]:
    """The steps the page goes through, in the table's order: the lesson's (every plain step,
    or with ``options.steps`` the steps it names, optional ones included), the focus view aside
    (the page's picture is the focus view of whichever word is picked). Each has the heading it
    has when no head is picked; an optional step also its label ("6b"), and a step shown as
    written the position of the word it follows."""
    wanted = None if options.steps is None else parse_steps(options.steps, trace)
    pages = []
    for number, label, step in in_order(table.STEPS, trace):
        shown = not step.optional if wanted is None else number in wanted
        if step.focus or not shown:
            continue
        entry: dict[str, Any] = {
            "number": number,
            "key": step.key,
            "perHead": step.per_head or step.key in AS_WRITTEN,
            "heading": f"Step {label} · {step.title}",
        }
        if label != str(number):
            entry["label"] = label
        if step.key in AS_WRITTEN:
            entry["example"] = worked.example_query(trace, selection)
        pages.append(entry)
    return pages


def lesson_steps(
    trace: AttentionTrace, selection: Selection, options: LessonOptions, run: Analyses
) -> list[dict[str, Any]]:
    """The lesson of one layer, step by step as the page shows it (page_steps): a step's
    blocks, or for a step in each head, each shown head's; ``run``: what the analyses found
    of the run's layers, which its focus view shows."""
    written = _written(lesson(trace, selection, options, analyses=run), options.decimals)
    steps = []
    for page in page_steps(trace, selection, options):
        if page["key"] in AS_WRITTEN:
            steps.append({"blocks": [], "heads": _each_head(trace, selection, options, page, run)})
        else:
            steps.append(written.get(page["number"], {"blocks": [], "heads": []}))
    return steps


def _written(blocks: list[Block], decimals: int) -> dict[int, dict[str, Any]]:
    """The lesson's blocks by step number: {"blocks": …} for a step written once, {"heads":
    [one list a head]} for a step in each head."""
    steps: dict[int, dict[str, Any]] = {}
    current: list[list[Any]] = []
    as_written = False
    for block in blocks:
        if isinstance(block, Pause):
            entry = steps.setdefault(block.step, {"blocks": [], "heads": []})
            current = []
            as_written = block.key in AS_WRITTEN
            if block.head is None:
                entry["blocks"] = current
            else:
                entry["heads"].append(current)
            continue
        current += _encoded(block, decimals) if as_written else _reworked(block)
    return steps


def _each_head(
    trace: AttentionTrace,
    selection: Selection,
    options: LessonOptions,
    page: dict[str, Any],
    run: Analyses,
) -> list[list[list[Any]]]:
    """A step the lesson writes for its first head, written for each shown head in turn, as
    the lesson of that head alone (``--head``) writes it."""
    alone = replace(options, steps=page["key"])
    return [
        _written(
            lesson(trace, selection._replace(heads=(head,)), alone, analyses=run),
            options.decimals,
        )[page["number"]]["blocks"]
        for head in selection.heads
    ]


def _reworked(block: Block) -> list[list[Any]]:
    """A block of a step the page works out again for the word and key picked: ["h", text] a
    step's heading, ["p", runs] a paragraph of [text, style, slot] runs, ["w", example] a worked
    example the page writes for the word and key picked (["w", example, text] one it shows as
    written); nothing for what the page leaves to the terminal (tables, bars, blank lines)."""
    if isinstance(block, Heading) and block.level == "step":
        return [["h", block.text]]
    if isinstance(block, Paragraph):
        return [["p", [[span.text, span.style, span.slot] for span in block.spans]]]
    if isinstance(block, Worked):
        if block.example in FIXED_EXAMPLES:
            return [["w", block.example, block.text]]
        return [["w", block.example]]
    return []


def _encoded(block: Block, decimals: int) -> list[list[Any]]:
    """A block of a step shown as written: as _reworked, its paragraphs' words kept as written
    (no slot: they name the lesson's example word whatever word is picked), and its tables as
    ["t", table] (_table)."""
    if isinstance(block, Paragraph):
        return [["p", [[span.text, span.style, ""] for span in block.spans]]]
    if isinstance(block, Matrix):
        return [["t", table_data(block, decimals)]]
    if isinstance(block, Tables):
        return [["t", table_data(matrix, decimals)] for matrix in block.matrices]
    return _reworked(block)


def table_data(matrix: Matrix, decimals: int) -> dict[str, Any]:
    """A table as the terminal prints it (terminal/tables.py): its title with its shape, its row
    and column words (whole: the page has room to scroll), each number at ``decimals`` ("−∞"
    where masked), each row's Σ when it has one, and each cell's shading when it has it (the
    text colour and background of terminal/text.py's weight_colours)."""
    from attnviz.render.terminal.text import weight_colours

    values = np.asarray(matrix.values, dtype=float)
    n_rows, n_columns = values.shape
    masked = np.zeros(values.shape, bool) if matrix.masked is None else matrix.masked
    encoded: dict[str, Any] = {
        "title": f"{matrix.title}  [{n_rows} × {n_columns}]",
        "rows": list(matrix.row_labels),
        "columns": list(matrix.column_labels),
        "cells": [
            [
                MASKED if masked[r, c] else format_number(float(values[r, c]), decimals)
                for c in range(n_columns)
            ]
            for r in range(n_rows)
        ],
    }
    if matrix.masked is not None:
        encoded["masked"] = masked.tolist()
    if matrix.row_sums:
        encoded["sums"] = [format_number(float(row.sum()), decimals) for row in values]
    if matrix.shade:
        encoded["colours"] = [[list(weight_colours(float(v))) for v in row] for row in values]
    return encoded
