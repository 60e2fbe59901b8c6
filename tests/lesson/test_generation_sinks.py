"""What --sinks and --window say is read off their figures: a sink is named only when the first
token takes much weight and its value is small; keeping the first token is said to help only
when it does."""

from __future__ import annotations

import numpy as np

from attnviz.generation.sinks import FirstToken, HeldText
from attnviz.lesson.blocks import Paragraph
from attnviz.lesson.generation_sinks import held_blocks, sink_blocks


def text(blocks: list[object]) -> str:
    return " ".join(
        "".join(span.text for span in block.spans)
        for block in blocks
        if isinstance(block, Paragraph)
    )


def _first(weight: float, size: float, share: float) -> FirstToken:
    shape = (3, 2)
    return FirstToken(np.full(shape, weight), np.full(shape, size), np.full(shape, share), 20)


def test_a_sink_is_named_only_for_a_large_weight_on_a_small_value() -> None:
    said = text(sink_blocks(_first(0.6, 0.2, 0.3), "The"))
    assert "‘The’ gets 60% of the weight" in said and "0.20 times the others' size" in said
    assert "Large weight, small value: what Xiao et al. (2023, StreamingLLM) call" in said
    assert "in 3 of the 3 layers" in said
    for figures in ((0.1, 0.2, 0.05), (0.6, 0.9, 0.5)):
        said = text(sink_blocks(_first(*figures), "The"))
        assert "Not the pattern Xiao et al." in said and "Large weight" not in said


def _held(keep: float, drop: float) -> HeldText:
    n = 12
    whole = np.full(n - 1, -2.0)
    log_p = {"whole": whole, "keep": np.full(n - 1, keep), "drop": np.full(n - 1, drop)}
    tv = {"keep": np.full(n - 1, 0.1), "drop": np.full(n - 1, 0.4)}
    return HeldText(4, 1, log_p, tv)


def test_the_held_text_says_keeping_helps_only_when_the_numbers_say_so() -> None:
    labels = [f"t{i}" for i in range(12)]
    said = text(held_blocks(_held(-2.5, -4.0), labels))
    assert "for the 7 predictions from there" in said
    assert f"-2.500 keeping the first token ({np.exp(2.5):.1f})" in said
    assert "Keeping the first token keeps the model closer" in said
    said = text(held_blocks(_held(-4.5, -4.0), labels))
    assert "does not bring the model closer" in said


def test_a_prompt_no_longer_than_the_window_is_said_to_change_nothing() -> None:
    held = _held(-2.5, -4.0)
    said = text(held_blocks(held, [f"t{i}" for i in range(5)]))
    assert "no token left a window of 4 and it changed nothing" in said
