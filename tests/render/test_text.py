"""The terminal's text layout: matrix tables (elided, cut, with a legend), wrapping, shading."""

from __future__ import annotations

import numpy as np
import pytest
import rich.cells
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from attnviz.cli import run
from attnviz.render.blocks import Matrix
from attnviz.render.text import _kept_indices, matrix_block, weight_style, wrap
from render.counting import Measured


@settings(max_examples=40, deadline=None)
@given(
    n_rows=st.integers(1, 60),
    n_columns=st.integers(1, 600),
    width=st.integers(40, 200),
    decimals=st.integers(0, 6),
    scale=st.sampled_from([1.0, 1e4, 1e-3]),
)
def test_matrix_block_never_exceeds_the_width_and_keeps_first_and_last(
    n_rows: int, n_columns: int, width: int, decimals: int, scale: float
) -> None:
    values = np.random.default_rng(n_rows * n_columns).normal(size=(n_rows, n_columns)) * scale
    labels = [f"w{i}" for i in range(n_rows)]
    block = matrix_block(
        Matrix(values, "M", labels, [str(c + 1) for c in range(n_columns)]), decimals, width
    )
    lines = [line.plain for line in block.lines]
    if n_columns > 2 and decimals <= 2 and scale == 1.0:
        assert max(len(line) for line in lines) <= width
    rule = next(number for number, line in enumerate(lines) if line.startswith("─"))
    title, table_lines = " ".join(lines[: rule - 1]), lines[rule - 1 :]
    header = table_lines[0].split()
    assert header[0] == "1" and header[-1] == str(n_columns)
    assert title.startswith(f"M  [{n_rows} × {n_columns}]")
    rows = [line.split()[0] for line in table_lines[2:]]
    assert rows[0] == "w0" and rows[-1] == f"w{n_rows - 1}"
    assert ("elided" in title) == ("…" in " ".join(table_lines))


def test_kept_indices() -> None:
    assert _kept_indices(5, 10) == [0, 1, 2, 3, 4]
    assert _kept_indices(10, 4) == [0, 1, None, 8, 9]
    assert _kept_indices(10, 4, must=5) == [0, None, 5, None, 9]
    assert _kept_indices(10, 4, must=1) == [0, 1, None, 8, 9]


def test_weight_style_is_dark_for_zero_bright_for_one_and_readable() -> None:
    assert weight_style(0.0) == "white on #440154"
    assert weight_style(1.0) == "black on #fde725"
    assert weight_style(-5.0) == weight_style(0.0) and weight_style(7.0) == weight_style(1.0)


def test_weight_style_stays_ordered_on_256_and_16_colour_terminals() -> None:
    greys = [int(weight_style(w / 20, "256").split("color(")[1].rstrip(")")) for w in range(21)]
    assert greys == sorted(greys) and greys[0] == 232 and greys[-1] == 255
    assert weight_style(0.05, "standard") == "dim"
    assert weight_style(0.2, "standard") == ""
    assert weight_style(0.4, "standard") == "bold"
    assert weight_style(0.9, "standard") == "bold reverse"
    assert weight_style(0.9, None) == ""


def test_wrap_keeps_vectors_whole_indents_continuations_and_leaves_no_trailing_spaces() -> None:
    from rich.text import Text

    from attnviz.render.text import wrap

    formula = Text("  z_it = 0.61·v_was + 0.12·v_because + 0.09·v_cross = [0.22, -0.34, -1.17]")
    formula.stylize("green")
    lines = wrap(formula, 40)
    assert [line.plain for line in lines] == [
        "  z_it = 0.61·v_was + 0.12·v_because +",
        "    0.09·v_cross = [0.22, -0.34, -1.17]",
    ]
    assert [line.plain for line in wrap(formula, 36)][-2:] == [
        "    + 0.09·v_cross",
        "    = [0.22, -0.34, -1.17]",
    ]
    assert all(line.spans and line.spans[-1].style == "green" for line in lines)
    prose = wrap(Text("X has shape [n, d_model] = [11, 8] and so on "), 22)
    assert [line.plain for line in prose] == ["X has shape", "[n, d_model] = [11, 8]", "and so on"]


@settings(max_examples=500, deadline=None)
@given(
    indent=st.integers(0, 12),
    text=st.text(alphabet=st.sampled_from(list("ab [](),=·東👍 ")), max_size=120),
    width=st.integers(1, 60),
)
def test_wrap_never_exceeds_the_width_nor_loses_a_character(
    indent: int, text: str, width: int
) -> None:
    from rich.cells import cell_len
    from rich.text import Text

    from attnviz.render.text import wrap

    lines = [line.plain for line in wrap(Text(" " * indent + text), width)]
    if width >= 2:  # narrower, a wide character cannot fit at all
        assert all(cell_len(line) <= width for line in lines)
    assert not any(line.endswith(" ") for line in lines)
    assert all(line.strip() for line in lines) or not text.strip()
    assert "".join("".join(lines).split()) == "".join(text.split())


def table_of(words: list[str], width: int) -> list[str]:
    values = np.linspace(-0.5, 0.5, len(words) ** 2).reshape(len(words), len(words))
    matrix = Matrix(values, "scores", words, words)
    return [line.plain for line in matrix_block(matrix, 2, width).lines]


def test_column_words_are_cut_only_as_far_as_needed_and_given_in_full_below() -> None:
    words = ["international", "negotiations", "collapsed", "yesterday", "because", "of", "it"]
    whole = table_of(words, 100)
    assert whole[1].split() == ["internati…", "negotiati…", *words[2:]]  # as ever: 10 cells
    assert not whole[-1].startswith("columns:")
    cut = table_of(words, 64)
    assert max(len(line) for line in cut) <= 64
    assert cut[1].split() == ["intern…", "negoti…", "collap…", "yester…", *words[4:]]
    assert " ".join(cut[-2:]) == (
        "columns: intern… = international, negoti… = negotiations, collap… = collapsed, "
        "yester… = yesterday"
    )
    rows = [line.split()[0] for line in cut[3:10]]
    assert rows == ["internati…", "negotiati…", *words[2:]]  # the rows keep their words
    assert table_of(words, 60)[1].split()[4] == "becau…"  # narrower, cut further


def test_words_that_would_be_cut_alike_are_elided_instead() -> None:
    distinct = table_of(["streetcar", "lamppost", "pavements", "a", "b", "c"], 50)
    assert distinct[1].split()[:3] == ["stree…", "lampp…", "pavem…"]  # cut, and all there
    alike = table_of(["streetcar", "streetlamp", "streetwise", "a", "b", "c"], 50)
    assert "middle elided" in alike[0] and not alike[-1].startswith("columns:")


def test_a_title_too_long_for_the_line_keeps_its_elision_note_whole() -> None:
    lines = table_of([f"w{i}" for i in range(30)], 40)
    assert lines[:2] == ["scores  [30 × 30]", "middle elided, --export has all"]
    assert max(len(line) for line in lines) <= 40


def test_wrapping_a_long_word_grows_linearly_with_its_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    measured = Measured(monkeypatch)
    work = []
    for length in (16_000, 32_000):
        measured.characters = 0
        text = Text(f"Sentence: {'a' * length} and [0.1, 0.2] more words (11 tokens)")
        lines = wrap(text, 80)
        assert all(line.cell_len <= 80 for line in lines)
        assert "".join(line.plain for line in lines).replace(" ", "") == text.plain.replace(" ", "")
        work.append(measured.characters)
    assert work[1] < 2.2 * work[0]  # measuring from the start for every line was quadratic


def test_explain_prints_a_16000_character_word_in_lines_that_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["explain", "a" * 16_000, "--steps", "1"]) == 0
    out = capsys.readouterr().out
    assert "a" * 9 + "…" in out
    assert max(rich.cells.cell_len(line) for line in out.splitlines()) <= 100
