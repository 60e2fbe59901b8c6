"""The page of two sentences (``attnviz page A --compare B``), its data without a browser: the
table of A beside B names a changed word where it stands ("tired / wide"); and sentences whose
positions do not line up (a word added, words reordered) are said to, never paired by
position."""

from __future__ import annotations

from typing import Any

import pytest

import attnviz
from attnviz.labels import format_number
from attnviz.render.page_compare import TOGETHER
from render.test_page import data_block

TIRED = "The cat sat because it was tired"
WIDE = "The cat sat because it was wide"
LONGER = "The cat sat down because it was very wide"


def page_of(a: str, b: str, **options: Any) -> tuple[Any, attnviz.Compared]:
    pair = attnviz.compare(a, b, **options)
    return data_block(attnviz.page(pair).html), pair


def rows_of(data: Any, layer: int, head: int) -> list[list[str]]:
    """The table of A beside B for one head (its place in the page's menu)."""
    compared = data["compare"]
    (change,) = [c for c in compared["changes"] if (c["layer"], c["head"]) == (layer, head)]
    rows: list[list[str]] = change["rows"]
    return rows


def test_a_changed_word_is_named_where_it_stands_with_both_weights() -> None:
    data, pair = page_of(TIRED, WIDE)
    about = data["compare"]["about"]
    assert "“tired / wide”: what A and B have at the same position." in about
    assert "do not line up" not in about
    for change in pair.comparison.heads:
        rows = rows_of(data, change.layer - 1, change.head - 1)
        assert [row[0] for row in rows] == [
            "The",
            "cat",
            "sat",
            "because",
            "it",
            "was",
            "tired / wide",
        ]
        assert [row[1:3] for row in rows] == [
            [format_number(w_a, 2), format_number(w_b, 2)]
            for w_a, w_b in zip(change.row_a, change.row_b, strict=True)
        ]
        tired = abs(change.row_a[6] - change.row_b[6])
        assert rows[-1][3] == format_number(tired, 2)


def test_sentences_whose_positions_do_not_line_up_say_so() -> None:
    data, pair = page_of(TIRED, LONGER)
    about = data["compare"]["about"]
    assert (
        "A has 7 words and B 9, and their positions do not line up: each shared word is paired "
        "with its partner by the alignment, not by its position, and “— / down”, “tired / very "
        "wide” name what A and B have in one place between shared words (—: nothing)."
    ) in about
    assert "same position" not in about
    for change in pair.comparison.heads:
        rows = rows_of(data, change.layer - 1, change.head - 1)
        assert [row[0] for row in rows] == [
            "The", "cat", "sat", "— / down", "because", "it", "was", "tired / very wide", TOGETHER,
        ]  # fmt: skip
        down, tired, together = rows[3], rows[7], rows[8]
        assert down[1:] == ["0.00", format_number(change.row_b[3], 2), ""]
        assert tired[1:] == [
            format_number(change.row_a[6], 2),
            format_number(change.row_b[7] + change.row_b[8], 2),
            "",
        ]
        # TV counts the changed words as one: their weights together, once, in the last column.
        w_a, w_b = change.row_a[6], change.row_b[[3, 7, 8]].sum()
        assert together[1:] == [format_number(w, 2) for w in (w_a, w_b, abs(w_a - w_b))]
        shared = [(i, j) for i, j in enumerate([0, 1, 2, 4, 5, 6])]
        twice = sum(abs(change.row_a[i] - change.row_b[j]) for i, j in shared) + abs(w_a - w_b)
        assert twice == pytest.approx(2 * change.tv)


def test_words_in_another_order_are_not_paired_by_position() -> None:
    data, _ = page_of("the animal saw it in the street", "the street saw it in the animal")
    about = data["compare"]["about"]
    assert (
        "A and B have 7 words each, and their positions do not line up: each shared word is "
        "paired with its partner by the alignment, not by its position."
    ) in about
    assert "same position" not in about
