"""The K/V cache: every layer's keys and values of the tokens so far, so that a new token
computes only its own q, k and v and reads the rest.

    cache[layer] = (K [G, t, d_k], V [G, t, d_k])          G key/value heads, t tokens so far
    numbers = 2 · layers · G · t · d_k,  bytes = numbers · bytes per number

Without the cache every new token would recompute K and V of every token before it in every
layer: the work of token t grows with t (and the whole generation with t²); with it, token t's
projections cost the same at every t and only its row of scores, t numbers, grows. Grouped-query
attention (G < h key/value heads) divides the cache by h / G.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray


@dataclass(frozen=True)
class CacheSize:
    """The cache's shape [layers, G, t, d_k] (for K and again for V) and its size."""

    layers: int
    kv_heads: int  # G
    tokens: int  # t
    d_k: int
    itemsize: int  # bytes per number
    query_heads: int  # h: the cache multi-head attention would hold has h for G

    @property
    def numbers(self) -> int:
        return 2 * self.layers * self.kv_heads * self.tokens * self.d_k

    @property
    def bytes(self) -> int:
        return self.numbers * self.itemsize

    @property
    def without_grouping(self) -> int:
        """The bytes with one key/value head per query head (h for G)."""
        return self.bytes * self.query_heads // self.kv_heads


class KVCache:
    """Keys and values of every layer, grown by ``append`` a block of tokens at a time; room is
    reserved for ``capacity`` tokens up front, so that appending never copies what is held."""

    def __init__(
        self, layers: int, kv_heads: int, d_k: int, capacity: int, dtype: type, query_heads: int
    ) -> None:
        shape = (layers, kv_heads, capacity, d_k)
        self._keys: FloatArray = np.empty(shape, dtype)
        self._values: FloatArray = np.empty(shape, dtype)
        self._lengths = [0] * layers
        self.query_heads = query_heads

    def append(self, layer: int, keys: FloatArray, values: FloatArray) -> None:
        """Add ``keys`` and ``values`` [G, m, d_k] of m new tokens to layer ``layer`` (from 0)."""
        start = self._lengths[layer]
        end = start + keys.shape[1]
        self._keys[layer, :, start:end] = keys
        self._values[layer, :, start:end] = values
        self._lengths[layer] = end

    def keys(self, layer: int) -> FloatArray:
        """Layer ``layer``'s keys so far, [G, t, d_k] (a view)."""
        return self._keys[layer, :, : self._lengths[layer]]

    def values(self, layer: int) -> FloatArray:
        """Layer ``layer``'s values so far, [G, t, d_k] (a view)."""
        return self._values[layer, :, : self._lengths[layer]]

    @property
    def size(self) -> CacheSize:
        layers, kv_heads, _, d_k = self._keys.shape
        return CacheSize(
            layers,
            kv_heads,
            self._lengths[-1],
            d_k,
            self._keys.dtype.itemsize,
            self.query_heads,
        )
