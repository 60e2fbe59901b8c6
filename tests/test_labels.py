"""Labels cut to fit: in time linear in the word's length (issue 13, §1)."""

from __future__ import annotations

import time

import pytest
import rich.cells
from render.counting import Measured

from attnviz.labels import (
    CODE_POINTS_PER_CELL,
    MAX_LABEL_WIDTH,
    elide_marks,
    fit_label,
    fitting_prefix,
    percent,
    reciprocal,
)


def test_a_16000_character_word_is_cut_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    measured = Measured(monkeypatch)
    started = time.perf_counter()
    assert fit_label("a" * 16_000) == "a" * 9 + "…"
    assert fit_label("b" * 16_000 + ":2", 6) == "bbb…:2"
    assert time.perf_counter() - started < 2  # cutting a character at a time took 11–13 s
    assert measured.characters < 2 * 2 * 16_000  # each word measured whole about once


@pytest.mark.parametrize("word", ["漢字" * 50, "e\u0301" * 80, "👨\u200d👩\u200d👧" * 20, "ab"])
def test_the_fitting_prefix_is_the_longest_piece_that_fits(word: str) -> None:
    for cells in range(12):
        end = fitting_prefix(word, cells)
        assert rich.cells.cell_len(word[:end]) <= cells
        assert end == len(word) or rich.cells.cell_len(word[: end + 1]) > cells


def test_runs_of_zero_width_marks_are_cut_to_thirty() -> None:
    # Unicode's stream-safe format allows 30 non-starters in a row; a cut by cells kept all.
    assert elide_marks("e" + "\u0301" * 30) == "e" + "\u0301" * 30
    assert elide_marks("e" + "\u0301" * 31 + "x") == "e" + "\u0301" * 30 + "…x"
    assert elide_marks("\u0301" * 50 + " a" + "\u0300" * 40) == (
        "\u0301" * 30 + "… a" + "\u0300" * 30 + "…"
    )
    for word in ("नमस्ते", "Ελληνικά", "👨\u200d👩\u200d👧", "e\u0301" * 80, "漢字" * 50):
        assert elide_marks(word) == word


def test_a_label_is_cut_by_code_points_as_well_as_cells() -> None:
    word = "a" + "\u0301" * 19_990
    label = fit_label(word)
    assert len(label) <= CODE_POINTS_PER_CELL * MAX_LABEL_WIDTH + 1 and label.endswith("…")
    assert fit_label(word + ":2").endswith("…:2")
    assert len(fit_label("x\u0301\u0302" * 30, 6)) <= CODE_POINTS_PER_CELL * 6
    assert fit_label("e\u0301" * 4) == "e\u0301" * 4  # a short word with marks stays whole


@pytest.mark.parametrize(
    ("share", "text"),
    [
        (0.993, "99.3%"),
        (1.0, "100.0%"),
        (4812 / 4814, "99.96%"),  # one decimal would round it up to 100.0%
        (0.99999, "99.99%"),  # two would too: never 100% below 1
        (0.0004, "0.0%"),
    ],
)
def test_a_share_below_1_never_reads_100_percent(share: float, text: str) -> None:
    assert percent(share) == text


@pytest.mark.parametrize(
    ("n", "decimals", "text"),
    [(4, 2, "1/4 = 0.25"), (8, 2, "1/8 ≈ 0.12"), (16, 3, "1/16 ≈ 0.062"), (3, 2, "1/3 ≈ 0.33")],
)
def test_an_exact_tie_is_written_equal_only_when_the_digits_are_exact(
    n: int, decimals: int, text: str
) -> None:
    assert reciprocal(n, decimals) == text
