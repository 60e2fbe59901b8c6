"""Matrix tables laid out by hand: within the width, words cut only as far as needed and given in
full below, the middle elided when they must be."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.lesson.blocks import Matrix
from attnviz.render.terminal.tables import _fit_columns, _table_of, kept_indices, matrix_block


@pytest.mark.slow
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


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    n_columns=st.integers(3, 400),
    width=st.integers(20, 160),
    keep_column=st.one_of(st.none(), st.integers(0, 399)),
    label_length=st.integers(1, 12),
    seed=st.integers(0, 2**16),
)
def test_as_many_columns_stay_as_fit(
    n_columns: int, width: int, keep_column: int | None, label_length: int, seed: int
) -> None:
    """The columns kept are the most that fit: the search for them may start low, where no
    more could fit, but it ends where trying every count from all of them down would."""
    keep_column = None if keep_column is None else keep_column % n_columns
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(3, n_columns)) * rng.choice([1.0, 100.0], size=n_columns)
    words = [("w" * label_length)[: label_length - len(str(c))] + str(c) for c in range(n_columns)]
    matrix = Matrix(values, "M", ["a", "b", "c"], words, keep_column=keep_column)
    table = _table_of(matrix, 2, True)
    labels = dict(enumerate(words))
    layout, columns = _fit_columns(table, labels, keep_column, width)
    if columns == list(range(n_columns)):
        return  # every column fits, cut or whole
    fitting = [
        keep
        for keep in range(2, n_columns + 1)
        if table.total_width(kept_indices(n_columns, keep, keep_column), layout) <= width
    ]
    assert columns == kept_indices(n_columns, max(fitting, default=2), keep_column)


def test_kept_indices() -> None:
    assert kept_indices(5, 10) == [0, 1, 2, 3, 4]
    assert kept_indices(10, 4) == [0, 1, None, 8, 9]
    assert kept_indices(10, 4, must=5) == [0, None, 5, None, 9]
    assert kept_indices(10, 4, must=1) == [0, 1, None, 8, 9]


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
