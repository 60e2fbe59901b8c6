"""The PDF set: pages of A4 or Letter, every line within the margins, a question kept with its
answer box, the same set giving the same bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.render.figures.fonts import text_advance, text_width
from attnviz.render.worksheet.pdf import (
    INDENT,
    MARGIN,
    MONO,
    Row,
    mono_chars,
    paginate,
    sheet_blocks,
    wrapped,
    wrapped_by_measuring,
    write_pdf,
)
from attnviz.render.worksheet.sheet import INSTRUCTIONS, PAPERS
from render.worksheet.made import sheets

from support import examples


def _pages(path: Path) -> list[tuple[float, float]]:
    """Each page's size in points, from its MediaBox."""
    data = path.read_bytes()
    boxes = re.findall(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)
    return [(float(width), float(height)) for width, height in boxes]


#: A4 in the plain run, Letter too in CI (slow): each case draws a whole sheet with matplotlib.
@pytest.mark.parametrize(
    ("paper", "points"),
    [("a4", (595.276, 841.89)), pytest.param("letter", (612, 792), marks=pytest.mark.slow)],
)
def test_each_sheet_starts_a_page_of_the_paper_asked(
    tmp_path: Path, paper: str, points: tuple[float, float]
) -> None:
    made = sheets(copies=3, count=2)
    path = tmp_path / "sheet.pdf"
    write_pdf(made, path, paper, key=False)
    pages = _pages(path)
    assert len(pages) == 3  # two short questions: a page per sheet
    assert all(page == pytest.approx(points, abs=0.01) for page in pages)


def test_the_same_set_gives_the_same_bytes(tmp_path: Path) -> None:
    made = sheets(copies=2, count=3)
    write_pdf(made, tmp_path / "a.pdf", "a4", key=True)
    write_pdf(sheets(copies=2, count=3), tmp_path / "b.pdf", "a4", key=True)
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
    assert b"CreationDate" not in (tmp_path / "a.pdf").read_bytes()


@pytest.mark.parametrize("paper", ["a4", pytest.param("letter", marks=pytest.mark.slow)])
@pytest.mark.parametrize("key", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_every_line_fits_within_the_margins(paper: str, key: bool) -> None:
    width = PAPERS[paper][0] - 2 * MARGIN
    for block in sheet_blocks(sheets(copies=1, count=6)[0], width, key=key):
        for row in block:
            if row.kind in ("text", "bold"):
                assert row.indent + text_width(row.text, row.size, bold=row.kind == "bold") <= width
            elif row.kind == "mono":
                assert len(row.text) <= mono_chars(width - INDENT, MONO)


def test_a_word_wider_than_the_line_is_cut_into_pieces_that_fit() -> None:
    lines = wrapped("short " + "x" * 300 + " end", 10.0, 2.0)
    assert lines[0] == "short" and lines[-1].endswith(" end")
    assert "".join(lines[1:]).removesuffix(" end") == "x" * 300
    assert all(text_width(line, 10.0) <= 2.0 for line in lines)


#: Words as sheets hold them (a sentence's, numbers, the formulas' signs), capitals that kern
#: ("AV", "To", "Wa"), characters DejaVu Sans lacks (drawn as boxes) and a word longer than a line.
WORDS = st.sampled_from(
    [
        *INSTRUCTIONS.split(),
        "q·k",
        "√d_k",
        "−1.2345",
        "softmax(0.52,",
        "AVAWAY",
        "To.",
        "Wa",
        "猫",
        "🙂",
        "l" * 90,
        "W" * 70,
    ]
)


@pytest.mark.slow  # both ways of wrapping, the measuring one at about 2 ms a candidate line
@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(WORDS, min_size=1, max_size=60),
    st.sampled_from([9.0, 10.5, 14.0]),
    st.floats(0.5, 7.0),
    st.booleans(),
)
def test_lines_guessed_then_checked_are_those_measured_one_by_one(
    words: list[str], size: float, width: float, bold: bool
) -> None:
    text = " ".join(words)
    lines = wrapped(text, size, width, bold=bold)
    assert lines == wrapped_by_measuring(text, size, width, bold=bold)
    assert all(text_width(line, size, bold=bold) <= width for line in lines)


def test_a_guessed_width_is_within_a_percent_of_the_measured_one_for_prose() -> None:
    for size in (9.0, 10.5, 14.0):
        measured = text_width(INSTRUCTIONS, size)
        assert measured <= text_advance(INSTRUCTIONS, size) <= 1.01 * measured


def test_a_block_moves_whole_to_the_next_page_and_a_tall_one_is_split() -> None:
    def block(rows: int) -> list[Row]:
        return [Row("text", f"line {i}", 10.0, 0.0, 1.0) for i in range(rows)]

    pages = paginate([block(3), block(3), block(9), block(2)], 5.0)
    # The second block does not fit after the first: it starts page 2, whole. The third,
    # taller than a page, goes on where it begins, split between rows.
    assert [len(page) for page in pages] == [3, 5, 5, 4]
    assert all(sum(row.height for row in page) <= 5.0 for page in pages)
    assert [row.text for row in pages[1][:4]] == ["line 0", "line 1", "line 2", "line 0"]
