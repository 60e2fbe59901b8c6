"""The K/V cache: every layer's keys and values of the tokens so far, so that a new token
computes only its own q, k and v and reads the rest.

    cache[layer] = (K [G, t, d_k], V [G, t, d_k])          G key/value heads, t tokens held
    numbers = 2 · layers · G · t · d_k,  bytes = numbers · bytes per number

Without the cache every new token would recompute K and V of every token before it in every
layer: the work of token t grows with t (and the whole generation with t²); with it, token t's
projections cost the same at every t and only its row of scores, t numbers, grows. Grouped-query
attention (G < h key/value heads) divides the cache by h / G.

A sliding cache (``window`` W) holds at most W tokens a layer: a query at position i sees the
keys at positions j ≤ i with i − j < W − k, and the first k tokens (``keep_first``: the attention
sinks StreamingLLM keeps, Xiao et al. 2023) whatever their distance. Every key keeps the
position it was rotated with when it was computed (StreamingLLM instead numbers the positions
inside the cache anew at each step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray


@dataclass(frozen=True)
class CacheSize:
    """The cache's shape [layers, G, t, d_k] (for K and again for V) and its size."""

    layers: int
    key_value_heads: int  # G
    tokens: int  # t, the tokens held
    d_k: int
    itemsize: int  # bytes per number
    query_heads: int  # h: the cache multi-head attention would hold has h for G

    @property
    def numbers(self) -> int:
        return 2 * self.layers * self.key_value_heads * self.tokens * self.d_k

    @property
    def bytes(self) -> int:
        return self.numbers * self.itemsize

    @property
    def without_grouping(self) -> int:
        """The bytes with one key/value head per query head (h for G)."""
        return self.bytes * self.query_heads // self.key_value_heads


def visible(
    query_positions: np.ndarray,
    key_positions: np.ndarray,
    window: int | None = None,
    keep_first: int = 0,
) -> np.ndarray:
    """Which keys each query may read: j ≤ i (causal), and with a window W, i − j < W − k or
    j < k (the first k tokens kept).  [m], [t] -> [m, t] bool"""
    i, j = query_positions[:, np.newaxis], key_positions[np.newaxis, :]
    allowed = j <= i
    if window is not None:
        allowed &= (i - j < window - keep_first) | (j < keep_first)
    return allowed


class KVCache:
    """Keys and values of every layer, grown by ``append`` a block of tokens at a time; room is
    reserved for ``capacity`` tokens up front, so that appending never copies what is held. With
    a ``window`` it holds at most W tokens a layer once a block is read: before a block is
    appended, the tokens its queries can no longer see are dropped (the first ``keep_first``
    never are)."""

    def __init__(
        self,
        layers: int,
        key_value_heads: int,
        d_k: int,
        capacity: int,
        dtype: type,
        query_heads: int,
        *,
        window: int | None = None,
        keep_first: int = 0,
    ) -> None:
        shape = (layers, key_value_heads, capacity, d_k)
        self._keys: FloatArray = np.empty(shape, dtype)
        self._values: FloatArray = np.empty(shape, dtype)
        self._positions = np.empty((layers, capacity), dtype=np.int64)
        self._lengths = [0] * layers
        self.query_heads = query_heads
        self.window = window
        self.keep_first = keep_first

    def append(self, layer: int, keys: FloatArray, values: FloatArray, start: int) -> None:
        """Add ``keys`` and ``values`` [G, m, d_k] of m new tokens at positions start … start +
        m − 1 to layer ``layer`` (from 0), after dropping what a window no longer shows."""
        if self.window is not None:
            self._drop_unseen(layer, start)
        begin = self._lengths[layer]
        end = begin + keys.shape[1]
        self._keys[layer, :, begin:end] = keys
        self._values[layer, :, begin:end] = values
        self._positions[layer, begin:end] = np.arange(start, start + keys.shape[1])
        self._lengths[layer] = end

    def _drop_unseen(self, layer: int, start: int) -> None:
        """Keep the rows the query at ``start`` may still read (and the later ones will)."""
        held = self._lengths[layer]
        positions = self._positions[layer, :held]
        kept = np.flatnonzero(
            visible(np.array([start]), positions, self.window, self.keep_first)[0]
        )
        if len(kept) == held:
            return
        # [layer][:, kept], not [layer, :, kept]: numpy would put the kept axis first.
        self._keys[layer, :, : len(kept)] = self._keys[layer][:, kept]
        self._values[layer, :, : len(kept)] = self._values[layer][:, kept]
        self._positions[layer, : len(kept)] = positions[kept]
        self._lengths[layer] = len(kept)

    def keys(self, layer: int) -> FloatArray:
        """Layer ``layer``'s keys held, [G, t, d_k] (a view)."""
        return self._keys[layer, :, : self._lengths[layer]]

    def values(self, layer: int) -> FloatArray:
        """Layer ``layer``'s values held, [G, t, d_k] (a view)."""
        return self._values[layer, :, : self._lengths[layer]]

    def positions(self, layer: int) -> np.ndarray:
        """The position of each key held by layer ``layer``, [t]."""
        return self._positions[layer, : self._lengths[layer]]

    def visible(self, layer: int, start: int, count: int) -> np.ndarray:
        """Which held keys the queries at positions start … start + count − 1 read. [m, t]"""
        queries = np.arange(start, start + count)
        return visible(queries, self.positions(layer), self.window, self.keep_first)

    @property
    def size(self) -> CacheSize:
        layers, key_value_heads, _, d_k = self._keys.shape
        return CacheSize(
            layers,
            key_value_heads,
            self._lengths[-1],
            d_k,
            self._keys.dtype.itemsize,
            self.query_heads,
        )
