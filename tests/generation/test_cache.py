"""The K/V cache: rows appended land where they belong, nothing held is copied or moved, and its
size is 2 · layers · G · t · d_k numbers."""

from __future__ import annotations

import numpy as np

from attnviz.generation.cache import KVCache


def test_appended_rows_are_read_back_in_order_and_the_size_counts_them() -> None:
    cache = KVCache(layers=2, kv_heads=3, d_k=4, capacity=6, dtype=np.float32, query_heads=9)
    rng = np.random.default_rng(0)
    blocks = [rng.normal(size=(2, 3, m, 4)).astype(np.float32) for m in (3, 1, 2)]
    for block in blocks:
        for layer in range(2):
            cache.append(layer, block[0] + layer, block[1] - layer)
    for layer in range(2):
        np.testing.assert_array_equal(
            cache.keys(layer), np.concatenate([b[0] + layer for b in blocks], axis=1)
        )
        np.testing.assert_array_equal(
            cache.values(layer), np.concatenate([b[1] - layer for b in blocks], axis=1)
        )
    size = cache.size
    assert (size.layers, size.kv_heads, size.tokens, size.d_k) == (2, 3, 6, 4)
    assert size.numbers == 2 * 2 * 3 * 6 * 4
    assert size.bytes == size.numbers * 4
    assert size.without_grouping == size.bytes * 3  # 9 query heads for 3 key/value heads


def test_a_view_taken_earlier_still_holds_its_rows_after_more_are_appended() -> None:
    cache = KVCache(layers=1, kv_heads=1, d_k=2, capacity=4, dtype=np.float64, query_heads=1)
    cache.append(0, np.ones((1, 2, 2)), np.ones((1, 2, 2)))
    earlier = cache.keys(0)
    cache.append(0, np.full((1, 1, 2), 5.0), np.zeros((1, 1, 2)))
    assert earlier.shape == (1, 2, 2) and (earlier == 1).all()
    assert cache.keys(0)[0, 2].tolist() == [5.0, 5.0]
