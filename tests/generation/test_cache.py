"""The K/V cache: rows appended land where they belong, nothing held is copied or moved, and its
size is 2 · layers · G · t · d_k numbers."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.generation.cache import KVCache, visible


def test_appended_rows_are_read_back_in_order_and_the_size_counts_them() -> None:
    cache = KVCache(layers=2, key_value_heads=3, d_k=4, capacity=6, dtype=np.float32, query_heads=9)
    rng = np.random.default_rng(0)
    blocks = [rng.normal(size=(2, 3, m, 4)).astype(np.float32) for m in (3, 1, 2)]
    start = 0
    for block in blocks:
        for layer in range(2):
            cache.append(layer, block[0] + layer, block[1] - layer, start)
        start += block.shape[2]
    for layer in range(2):
        np.testing.assert_array_equal(
            cache.keys(layer), np.concatenate([b[0] + layer for b in blocks], axis=1)
        )
        np.testing.assert_array_equal(
            cache.values(layer), np.concatenate([b[1] - layer for b in blocks], axis=1)
        )
    size = cache.size
    assert (size.layers, size.key_value_heads, size.tokens, size.d_k) == (2, 3, 6, 4)
    assert size.numbers == 2 * 2 * 3 * 6 * 4
    assert size.bytes == size.numbers * 4
    assert size.without_grouping == size.bytes * 3  # 9 query heads for 3 key/value heads


def test_a_view_taken_earlier_still_holds_its_rows_after_more_are_appended() -> None:
    cache = KVCache(layers=1, key_value_heads=1, d_k=2, capacity=4, dtype=np.float64, query_heads=1)
    cache.append(0, np.ones((1, 2, 2)), np.ones((1, 2, 2)), 0)
    earlier = cache.keys(0)
    cache.append(0, np.full((1, 1, 2), 5.0), np.zeros((1, 1, 2)), 2)
    assert earlier.shape == (1, 2, 2) and (earlier == 1).all()
    assert cache.keys(0)[0, 2].tolist() == [5.0, 5.0]


@pytest.mark.parametrize(("window", "keep_first"), [(1, 0), (3, 0), (4, 1), (5, 2), (20, 1)])
def test_a_window_shows_what_a_literal_rule_shows(window: int, keep_first: int) -> None:
    n = 12
    allowed = visible(np.arange(n), np.arange(n), window, keep_first)
    for i in range(n):
        recent = set(range(max(0, i - (window - keep_first) + 1), i + 1))
        first = set(range(min(keep_first, i + 1)))
        assert set(np.flatnonzero(allowed[i])) == recent | first, i
        assert allowed[i].sum() == min(i + 1, window)


@pytest.mark.parametrize(("window", "keep_first"), [(3, 0), (4, 1)])
def test_a_sliding_cache_holds_at_most_the_window_and_keeps_the_first(
    window: int, keep_first: int
) -> None:
    cache = KVCache(1, 1, 2, 20, np.float64, 1, window=window, keep_first=keep_first)
    prompt = np.repeat(np.arange(6.0).reshape(1, 6, 1), 2, axis=2)  # each key holds its position
    cache.append(0, prompt, np.zeros((1, 6, 2)), 0)  # a prompt longer than W
    assert cache.positions(0).tolist() == list(range(6))  # held while its own rows are read
    for position in range(6, 11):
        cache.append(0, np.full((1, 1, 2), position), np.zeros((1, 1, 2)), position)
        held = cache.positions(0).tolist()
        assert len(held) == window
        assert held == [
            *range(keep_first),
            *range(position - window + keep_first + 1, position + 1),
        ]
        assert cache.keys(0)[0, :, 0].tolist()[keep_first:] == held[keep_first:]
    assert cache.size.tokens == window
