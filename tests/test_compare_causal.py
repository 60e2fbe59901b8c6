"""compare under a causal mask: when A and B are the same up to the focus word, its row reads
only those tokens in every layer, so the two rows are equal by construction. The report says
so before the numbers, and does not call that "little of the row moves"."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnviz
from attnviz.cli import app

from support import CliRunner, needs_model

TIRED = "The animal didn't cross the street because it was too tired"
WIDE = "The animal didn't cross the street because it was too wide"
# The same change, made before the focus word: the rows may differ.
EARLY = "The animal didn't cross the road because it was too tired"
TINY = Path(__file__).parent / "model"
runner = CliRunner()


def largest_tv(pair: attnviz.api.compare.Compared) -> float:
    return max(change.tv for change in pair.comparison.heads)


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [
        {"causal": True},  # random weights, masked
        {"causal": True, "positions": "sinusoidal"},
        {"causal": True, "positions": "rope"},
        pytest.param({"model": str(TINY / "tiny_llama")}, marks=needs_model),
        pytest.param({"model": str(TINY / "tiny_llama.gguf")}, marks=needs_model),
    ],
)
def test_a_change_after_the_focus_word_cannot_reach_its_row(options: dict[str, object]) -> None:
    pair = attnviz.compare(TIRED, WIDE, **options)  # type: ignore[arg-type]
    first = pair.comparison.fixed_by_mask  # the first token that differs: "tired", or a piece
    assert first and "tired".startswith(first)
    # The same computation on the same tokens: only float rounding of matrices of another
    # length separates the rows (float32, ~1e-7 per weight).
    assert largest_tv(pair) < 1e-5
    early = attnviz.compare(TIRED, EARLY, **options)  # type: ignore[arg-type]
    assert early.comparison.fixed_by_mask == ""


def test_without_the_mask_the_rows_are_not_said_to_be_fixed() -> None:
    pair = attnviz.compare(TIRED, WIDE)
    assert pair.comparison.fixed_by_mask == ""
    assert largest_tv(pair) > 1e-3  # every word reads the whole sentence: the row moves


def test_the_same_sentence_twice_is_not_put_down_to_the_mask() -> None:
    assert attnviz.compare(TIRED, TIRED, causal=True).comparison.fixed_by_mask == ""


def test_a_sentence_that_goes_on_after_the_other_is_named_by_its_first_extra_word() -> None:
    pair = attnviz.compare(TIRED, TIRED + " today", causal=True)
    assert pair.comparison.fixed_by_mask == "today"


@pytest.mark.parametrize("causal", [True, False])
def test_the_report_says_it_before_the_numbers_and_closes_without_little_moves(
    causal: bool,
) -> None:
    args = ["compare", TIRED, WIDE, *(["--causal"] if causal else [])]
    result = runner.invoke(app, args, env={"COLUMNS": "3000"})
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    said = "Under the causal mask, the row of 'it' in every layer reads only 'it'"
    if not causal:
        assert said not in text and "That is the causal mask" not in text
        return
    assert said in text and "first differ at 'tired', after 'it'" in text
    assert text.index(said) < text.index("The heads ranked by")
    assert "That is the causal mask, not the model" in text
    assert "Little of the row moves" not in text


@pytest.mark.slow
def test_the_page_of_the_comparison_says_it_too() -> None:
    html = attnviz.page(attnviz.compare(TIRED, WIDE, causal=True)).html
    assert "Under the causal mask, the row of" in html
    assert "That is the causal mask, not the model" in html
