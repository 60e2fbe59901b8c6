"""The Concat·W_O step and the header state b_O on both sides where a layer has one."""

from __future__ import annotations

import pytest

import attnviz

from support import needs_model, steps_spec


@pytest.mark.slow
@needs_model
def test_b_o_is_on_both_sides_of_the_head_by_head_sum() -> None:
    text = " ".join(
        attnviz.lesson(
            attnviz.explain("I am good", model="minilm"), steps=steps_spec("output")
        ).split()
    )
    assert "then Concat(Z₁ … Z_h) · W_O + b_O" in text
    assert "Concat·W_O + b_O = Σ_h Z_h·W_O^(h) + b_O" in text


def test_without_biases_neither_side_has_b_o() -> None:
    text = " ".join(
        attnviz.lesson(attnviz.explain("I am good"), steps=steps_spec("output")).split()
    )
    assert "then Concat(Z₁ … Z_h) · W_O " in text and "b_O" not in text
    assert "Concat·W_O = Σ_h Z_h·W_O^(h)." in text


def test_the_padding_rows_are_explained_from_their_numbers() -> None:
    """--pad-to: a [PAD] query is not masked, only [PAD] keys are; with attnviz's zero [PAD]
    vectors every score is 0, so the row is 1/n over the real words, as the sentence says."""
    shown = attnviz.explain("I am good", pad_to=6)
    trace = shown.trace
    assert (trace.X[3:] == 0).all()
    assert abs(trace.weights[0][3:, :3] - 1 / 3).max() < 1e-12
    text = " ".join(attnviz.lesson(shown, steps=steps_spec("weights")).split())
    assert "The [PAD] rows: only [PAD] as a key is masked, so a [PAD] query still looks at" in text
    assert "Here its X is zero, so its query is zero, every score is 0 and each weight" in text
    assert "1/3 ≈ 0.33" in text  # a rounded value is not written as equal
    hidden = attnviz.explain("I am good", pad_to=6, hide_special=True)
    assert "The [PAD] rows" not in attnviz.lesson(
        hidden, steps=steps_spec("weights")
    )  # no such rows shown
