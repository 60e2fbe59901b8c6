"""--svg puts every character at its terminal cell, so tables line up in any SVG renderer."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
from rich.cells import cell_len
from rich.text import Text

import attnviz
from attnviz.lesson.options import LessonOptions
from attnviz.render.terminal.lesson import save_lesson
from attnviz.render.terminal.terminal_svg import (
    BASELINE,
    CELL_WIDTH,
    LINE_HEIGHT,
    PADDING,
    lesson_svg,
)

from support import shown, steps_spec

SVG = "{http://www.w3.org/2000/svg}"

#: Lines a renderer that trusts its font or collapses spaces would misalign: leading spaces,
#: runs of several styles, wide characters, an emoji sequence, right-to-left letters, a
#: combining mark, characters XML escapes.
HOSTILE = [
    Text("                    |"),
    Text.assemble(("ab", "bold"), ("  ", ""), ("cd", "white on #21908d"), " " * 14, "|"),
    Text("日本語 " + " " * 13 + "|"),
    Text("👩\u200d👩\u200d👧 שלום" + " " * 13 + "|"),  # one wide emoji sequence, right-to-left
    Text("e\u0301e\u0301 <&> '\" " + " " * 10 + "|"),
    Text.assemble(("0.56", "black on #5cc863"), ("  1.00", "dim"), " " * 10, "|"),
]


def placed(svg: str) -> dict[int, dict[int, str]]:
    """What the SVG draws where: line -> cell -> the characters placed at that cell (a
    combining mark with the character before it)."""
    root = ElementTree.fromstring(svg)
    cells: dict[int, dict[int, str]] = {}
    group = root.findall(f"{SVG}g")[-1]  # the text, after the backgrounds
    for text in group.findall(f"{SVG}text"):
        row = (int(text.get("y", "")) - BASELINE) // LINE_HEIGHT
        chunks = [text] if text.get("x") else text.findall(f"{SVG}tspan")
        for chunk in chunks:
            xs = [int(x) for x in (chunk.get("x") or "").split()]
            content = chunk.text or ""
            if len(xs) > 1:  # one x per character: one-cell characters only
                assert len(xs) == len(content) and cell_len(content) == len(content)
                pieces = list(content)
            else:
                pieces = [content]
            for x, piece in zip(xs, pieces, strict=True):
                assert x % CELL_WIDTH == 0
                cells.setdefault(row, {})[x // CELL_WIDTH] = piece
    return cells


def line_at_cells(cells: dict[int, str]) -> str:
    """A line rebuilt from what sits at each cell, spaces between."""
    line, cell = "", 0
    for start in sorted(cells):
        line += " " * (start - cell) + cells[start]
        cell = start + cell_len(cells[start])
    return line


def test_every_character_is_placed_at_its_cell() -> None:
    svg = lesson_svg(HOSTILE, "attnviz explain", 30)
    cells = placed(svg)
    for row, line in enumerate(HOSTILE):
        assert line_at_cells(cells[row]) == line.plain.rstrip()
        assert cells[row][20] == "|"  # the marker column: the same cell on every line
    assert ">attnviz explain</text>" in svg and "&lt;&amp;&gt;" in svg
    assert not re.search(r"url\(|href|@import", svg)  # nothing loaded from anywhere


def test_a_saved_lesson_is_the_terminal_cell_for_cell(tmp_path: Path) -> None:
    trace = attnviz.explain("I am good").trace
    svg, text = tmp_path / "l.svg", tmp_path / "l.txt"
    options = LessonOptions(steps=steps_spec("weights"))
    save_lesson(trace, shown(trace), options, 80, svg=svg)
    drawn = placed(svg.read_text(encoding="utf-8"))
    from rich.console import Console

    console = Console(width=80, file=text.open("w", encoding="utf-8"), no_color=True)
    from attnviz.render.terminal.lesson import render_explain

    render_explain(trace, shown(trace), console, options)
    console.file.close()
    expected = text.read_text(encoding="utf-8").splitlines()
    assert [line_at_cells(drawn.get(row, {})) for row in range(len(expected))] == [
        line.rstrip() for line in expected
    ]


def marker_columns(png: Path, rows: int) -> list[float]:
    """The x (in pixels) of the pure red marker on each text line of a rendered SVG."""
    from matplotlib.image import imread

    pixels = imread(png)
    red = pixels[..., 0] - np.maximum(pixels[..., 1], pixels[..., 2]) > 0.3
    found = []
    top = 40 + PADDING
    for row in range(rows):
        band = red[top + row * LINE_HEIGHT : top + (row + 1) * LINE_HEIGHT]
        columns = np.flatnonzero(band.any(axis=0))
        found.append(float(columns.mean()) if columns.size else float("nan"))
    return found


@pytest.mark.slow  # starts rsvg-convert
def test_tables_line_up_when_rsvg_convert_draws_them(tmp_path: Path) -> None:
    """An SVG renderer outside a browser (librsvg, used by image viewers and converters) puts
    a marker at the same pixel column on every line, whatever comes before it."""
    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert is not installed (apt-get install librsvg2-bin)")
    lines = [line.copy() for line in HOSTILE]
    for line in lines:
        line.stylize("#ff0000", len(line) - 1)  # the marker
    svg, png = tmp_path / "t.svg", tmp_path / "t.png"
    svg.write_text(lesson_svg(lines, "attnviz explain", 30), encoding="utf-8")
    subprocess.run(["rsvg-convert", str(svg), "-o", str(png)], check=True, timeout=60)
    columns = marker_columns(png, len(lines))
    assert not np.isnan(columns).any(), columns
    assert max(columns) - min(columns) < 1.0, columns  # within a pixel: same cell
    expected = PADDING + 20 * CELL_WIDTH + CELL_WIDTH / 2
    assert abs(columns[0] - expected) < CELL_WIDTH / 2, columns
