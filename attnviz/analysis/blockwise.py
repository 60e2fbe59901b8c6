"""The softmax as FlashAttention computes it (Dao et al. 2022, "FlashAttention: Fast and
Memory-Efficient Exact Attention with IO-Awareness"; the online softmax of Milakov and
Gimelshein 2018): one query's z = softmax(q·Kᵀ/√d_k)·V with the keys taken a block at a time,
so that no row of n scores, let alone the n × n matrix, is ever held whole.

Three numbers run along, starting at m = −∞, ℓ = 0, o = 0 (a vector of d_v). For each block of
keys, with s_j = q·k_j/√d_k (−∞ where the pair is masked):

    m_new  = max(m_old, max_j s_j)                  the largest score so far
    factor = exp(m_old − m_new)                     1 when the maximum stays; 0 at the first
    ℓ_new  = factor·ℓ_old + Σ_j exp(s_j − m_new)    the softmax's denominator so far
    o_new  = factor·o_old + Σ_j exp(s_j − m_new)·v_j     its numerator so far

What was summed under the old maximum is multiplied by the factor, so that every term of ℓ and o
is always exp(s_j − m) for the current m. At the end z = o/ℓ = Σ_j exp(s_j − m)·v_j /
Σ_j exp(s_j − m): the shifted softmax of the weights step times V, exactly (the same sums, in
another order).
A block whose keys are all masked adds exp(−∞) = 0 and leaves m, ℓ and o as they were.

Pure numpy; one query row, K and V read a block of rows at a time, each block once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.results import BlockUpdate


@dataclass(frozen=True)
class OnlineSoftmax:
    """One query's row of attention computed a block of keys at a time: every block's update."""

    block: int  # keys per block (the last block may have fewer)
    updates: tuple[BlockUpdate, ...]

    @property
    def m(self) -> float:
        """The row's largest allowed score."""
        return self.updates[-1].m_new

    @property
    def ell(self) -> float:
        """Σ_j exp(s_j − m), the softmax's denominator."""
        return self.updates[-1].l_new

    @property
    def o(self) -> FloatArray:
        """[d_v] Σ_j exp(s_j − m)·v_j."""
        return self.updates[-1].o_new

    @property
    def z(self) -> FloatArray:
        """[d_v] the head's output for this query: o / ℓ."""
        return frozen(self.o / self.ell)

    def weights(self) -> FloatArray:
        """[n_keys] the row of weights, w_j = exp(s_j − m)/ℓ: each block's exponentials, taken
        under that block's maximum, rescaled to the final one. (FlashAttention itself never
        keeps them; they are here to be compared with the weights step's.)"""
        return frozen(
            np.concatenate([u.exponentials * _rescale(u.m_new, self.m) for u in self.updates])
            / self.ell
        )


def default_block(n_keys: int) -> int:
    """Keys per block so that the sentence makes 3 or 4 blocks (n_keys blocks of 1 below 3):
    ⌈n/4⌉ gives ⌈n/⌈n/4⌉⌉ ∈ {3, 4} for every n ≥ 3."""
    if n_keys < 1:
        raise ValueError(f"a row needs at least one key, got {n_keys}")
    return -(-n_keys // 4)


def key_blocks(n_keys: int, block: int) -> tuple[tuple[int, int], ...]:
    """The (start, stop) of each block of ``block`` keys; the last may be shorter."""
    if block < 1:
        raise ValueError(f"a block holds at least one key, got {block}")
    return tuple((start, min(start + block, n_keys)) for start in range(0, n_keys, block))


def block_update(
    q: FloatArray,
    keys: FloatArray,
    values: FloatArray,
    allowed: np.ndarray,
    state: tuple[float, float, FloatArray],
    start: int,
) -> BlockUpdate:
    """One block's update of (m, ℓ, o).

    q: [d_k]; keys: [b, d_k]; values: [b, d_v]; allowed: [b] bool (False: masked);
    state: (m_old, ℓ_old, o_old [d_v]).
    """
    m_old, l_old, o_old = state
    scores = np.where(allowed, keys @ q / math.sqrt(q.shape[-1]), -np.inf)
    m_new = max(m_old, float(scores.max()))
    factor = _rescale(m_old, m_new)
    exponentials = np.zeros_like(scores)
    exponentials[allowed] = np.exp(scores[allowed] - m_new)
    contributions = exponentials @ values
    return BlockUpdate(
        start=start,
        stop=start + len(scores),
        scores=frozen(scores),
        m_old=m_old,
        m_new=m_new,
        factor=factor,
        exponentials=frozen(exponentials),
        l_old=l_old,
        l_new=factor * l_old + float(exponentials.sum()),
        o_old=frozen(o_old),
        o_new=frozen(factor * o_old + contributions),
        contributions=frozen(contributions),
    )


def online_softmax(
    q: FloatArray,
    K: FloatArray,
    V: FloatArray,
    *,
    block: int,
    allowed: np.ndarray | None = None,
) -> OnlineSoftmax:
    """z = softmax(q·Kᵀ/√d_k)·V for one query, the keys ``block`` at a time.

    q: [d_k]; K: [n_keys, d_k]; V: [n_keys, d_v]; allowed: [n_keys] bool, False where the pair
    is masked (None: every key). K and V are only read a block of rows at a time, each once.
    Raises ValueError when every key is masked (the softmax of nothing).
    """
    n_keys = len(K)
    dtype = np.result_type(q, K[:0], V[:0])
    state: tuple[float, float, FloatArray] = (-math.inf, 0.0, np.zeros(V.shape[-1], dtype))
    updates = []
    for start, stop in key_blocks(n_keys, block):
        mask = np.ones(stop - start, bool) if allowed is None else np.asarray(allowed[start:stop])
        update = block_update(q, K[start:stop], V[start:stop], mask, state, start)
        updates.append(update)
        state = (update.m_new, update.l_new, update.o_new)
    if state[0] == -math.inf:
        raise ValueError("every key of this row is masked: its softmax is undefined")
    return OnlineSoftmax(block, tuple(updates))


def _rescale(m_old: float, m_new: float) -> float:
    """exp(m_old − m_new); 1 when the maximum stays, −∞ included (where exp(−∞ + ∞) is NaN)."""
    return 1.0 if m_old == m_new else math.exp(m_old - m_new)


def frozen(array: FloatArray) -> FloatArray:
    """``array``, read-only: a record's numbers are not changed after it is made."""
    array = np.array(array)
    array.flags.writeable = False
    return array
