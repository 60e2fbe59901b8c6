"""Step 7 and the header state b_O on both sides where a layer has one."""

from __future__ import annotations

import attnviz

from support import needs_model


@needs_model
def test_b_o_is_on_both_sides_of_the_head_by_head_sum() -> None:
    text = " ".join(attnviz.lesson(attnviz.explain("I am good", model="minilm"), steps="7").split())
    assert "then Concat(Z₁ … Z_h) · W_O + b_O" in text
    assert "Concat·W_O + b_O = Σ_h Z_h·W_O^(h) + b_O" in text


def test_without_biases_neither_side_has_b_o() -> None:
    text = " ".join(attnviz.lesson(attnviz.explain("I am good"), steps="7").split())
    assert "then Concat(Z₁ … Z_h) · W_O " in text and "b_O" not in text
    assert "Concat·W_O = Σ_h Z_h·W_O^(h)." in text
