"""Labels cut to fit: in time linear in the word's length (issue 13, §1)."""

from __future__ import annotations

import time

import pytest
import rich.cells
from render.counting import Measured

from attnviz.labels import fit_label, fitting_prefix


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
