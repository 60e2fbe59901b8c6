"""A generation as the slider's steps (attnviz.lesson.generation_steps): one for the prefill pass
and one a new token, each holding the same blocks as the terminal prints for it, the text as it
stood and the cache as its pass left it, checked against the run's own records."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz.lesson.blocks import Bars, Heading, Paragraph
from attnviz.lesson.generation import token_blocks

PROMPT = "j k l a b c d e a b"


def said(block: object) -> str:
    """A block's words: a heading's text, a paragraph's spans, bars' labels and numbers."""
    if isinstance(block, Heading):
        return block.text
    if isinstance(block, Paragraph):
        return "".join(span.text for span in block.spans)
    if isinstance(block, Bars):
        return " ".join([*block.labels, *block.texts])
    return ""


def test_one_step_for_the_prefill_and_one_a_token_each_as_its_pass_left_the_cache() -> None:
    result = attnviz.generate(PROMPT, tokens=4)
    written = result.steps()
    assert [step.title for step in written.steps] == [
        "Prefill",
        "Token 1: ' c'",
        "Token 2: ' d'",
        "Token 3: ' e'",
        "Token 4: ' a'",
    ]
    n = len(result.prompt_ids)
    prefill = written.steps[0]
    assert prefill.new is None and prefill.weights == () and len(prefill.tokens) == n
    assert prefill.cache_tokens == n and prefill.cache_shape[2] == n
    for step, token in zip(written.steps[1:], result.tokens, strict=True):
        assert len(step.tokens) == n + token.number and step.new == n + token.number - 1
        assert step.cache_tokens == token.cache.tokens == len(step.read)
        assert step.cache_bytes == token.cache.bytes
        assert step.read == tuple(int(k) for k in token.key_positions)
        # The shaded row is the shown layer and head's softmax row: it sums to 1.
        assert sum(step.weights) == pytest.approx(1.0, abs=1e-5)
        assert np.allclose(step.weights, token.attention[-1][0])
    growing = [step.cache_bytes for step in written.steps]
    assert growing == sorted(growing) and growing[-1] > growing[0]


def test_each_tokens_step_holds_what_the_terminal_prints_for_it() -> None:
    result = attnviz.generate(PROMPT, tokens=2, temperature=0.8, top_k=3, seed=1)
    written = result.steps()
    assert result.telling is not None
    labels = list(result.prompt_tokens)
    for step, token, text, names in zip(
        written.steps[1:], result.tokens, result.texts, result.shown_texts, strict=True
    ):
        printed = [
            block
            for block in token_blocks(result.telling, token, labels, text, names)
            if type(block).__name__ != "Blank"
        ]
        assert [type(block) for block in step.blocks] == [type(block) for block in printed]
        assert [said(block) for block in step.blocks] == [said(block) for block in printed]
        assert any(isinstance(block, Bars) for block in step.blocks)
        labels.append(step.tokens[-1])
    introduction = " ".join(
        span.text
        for block in written.introduction
        if isinstance(block, Paragraph)
        for span in block.spans
    )
    assert "temperature 0.8" in introduction and "top-k 3" in introduction


def test_a_sliding_cache_shows_the_window_and_the_ending_has_the_text_and_studies() -> None:
    result = attnviz.generate(PROMPT, tokens=3, window=4, keep_first=1, sinks=True)
    written = result.steps()
    for step in written.steps[2:]:  # after the prefill pass and the token it chose
        assert step.cache_tokens == 4 and step.read[0] == 0  # the first token kept
    headings = [block.text for block in written.ending if isinstance(block, Heading)]
    assert headings[0] == "The text" and len(headings) == 3  # and --window's, --sinks' studies
    assert "layer 2, head 1" in written.legend  # the last layer, the first head: what is shaded
