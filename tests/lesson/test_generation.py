"""What ``attnviz generate`` says, checked against the numbers it says it of: the cache's shape
and size, grouped-query attention's saving (or its absence), the bars left out, the cuts, and
the proof's verdict."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.generation.cache import CacheSize
from attnviz.generation.run import CacheProof
from attnviz.generation.sampling import Sampling, choose
from attnviz.lesson.blocks import Bars, Paragraph
from attnviz.lesson.generation import (
    ALL_BARS,
    MOST_BARS,
    _bars_said,
    _row_bars,
    cache_sentence,
    choice_blocks,
    grouping_sentence,
    proof_sentence,
)


def text(blocks: list[object]) -> str:
    return " ".join(
        "".join(span.text for span in block.spans)
        for block in blocks
        if isinstance(block, Paragraph)
    )


def test_the_cache_sentence_counts_k_and_v_of_every_layer() -> None:
    size = CacheSize(layers=30, key_value_heads=3, tokens=5, d_k=64, itemsize=4, query_heads=9)
    said = cache_sentence(size, "float32")
    assert "[30 layers, 3 key/value heads, 5 tokens, 64]" in said
    assert f"{2 * 30 * 3 * 5 * 64:,} numbers" in said and "230 kB in float32" in said


@pytest.mark.parametrize(
    ("heads", "kv", "expected"),
    [
        (9, 3, "9 query heads share 3 key/value heads, 3 to each"),
        (4, 4, "Each of the 4 heads has its own keys and values"),
        (1, 1, "With one head, the cache grows by 2 × 2 × 8 = 32 numbers a token"),
    ],
)
def test_grouped_query_attention_is_claimed_only_when_heads_share(
    heads: int, kv: int, expected: str
) -> None:
    said = grouping_sentence(CacheSize(2, kv, 7, 8, 4, heads), "float32")
    assert expected in said
    assert ("grouped-query" in said) == (kv < heads)


def test_bars_leave_out_only_the_smallest_weights_and_say_what_they_sum_to() -> None:
    rng = np.random.default_rng(0)
    row = rng.dirichlet(np.ones(ALL_BARS + 5))
    labels = [f"w{i}" for i in range(len(row))]
    bars = _row_bars(row, labels, range(len(row)))
    assert isinstance(bars, Bars) and len(bars.weights) == MOST_BARS
    assert min(bars.weights) >= np.sort(row)[::-1][MOST_BARS - 1]
    left_out = float(np.sort(row)[: len(row) - MOST_BARS].sum())
    assert f"sum to {left_out:.3f}" in _bars_said(row)
    short = row[:ALL_BARS] / row[:ALL_BARS].sum()
    assert (
        len(_row_bars(short, labels, range(ALL_BARS)).weights) == ALL_BARS
        and _bars_said(short) == "every weight:"
    )


def test_the_cut_sentences_state_the_survivors_counted() -> None:
    logits = np.log(np.array([0.4, 0.3, 0.2, 0.05, 0.05]))
    choice = choose(logits, Sampling(top_p=0.8), np.random.default_rng(1))
    said = text(choice_blocks(choice, ["a", "b", "c", "d", "e"], "b"))
    assert "Top-p 0.8 keeps the fewest most likely tokens whose" in said
    assert "reach 0.8: 3, summing to 0.9000" in said
    assert "p′ = p / Σ p over the 3 kept" in said
    assert choice.interval is not None and choice.draw is not None
    start, end = choice.interval
    assert start <= choice.draw < end and f"[{start:.4f}, {end:.4f})" in said


def test_the_proof_says_rounding_only_below_the_tolerance_it_states() -> None:
    assert "rounding alone" in proof_sentence(CacheProof(3e-6, 1e-5, 2e-6, 4), 9, "float32")
    assert "rounding alone" not in proof_sentence(CacheProof(3e-6, 1e-5, 2e-6, 4), 9, "float64")
    assert "differs from the cached run" in proof_sentence(
        CacheProof(0.2, 0.1, 0.0, 4), 9, "float32"
    )
