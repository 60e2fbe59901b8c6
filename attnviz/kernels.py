"""The fast path: attention.py's steps as model mode runs them, the same numbers within float
rounding (tests/test_kernels.py holds them to it), faster at a model's sizes.

Where the time goes at a model's sizes (all-MiniLM-L6-v2, 128 tokens) and what each kernel does
about it, measured on numpy's OpenBLAS:
- Q, K and V of every head in one matrix product, W·Xᵀ with the heads' W_Qᵀ, W_Kᵀ and W_Vᵀ one
  above the other (AttentionWeights.stacked_rows, a torch checkpoint's rows as it stores them),
  the biases inside it as a last column, [W | b]·[Xᵀ; 1] = W·Xᵀ + b: one large product instead of
  3h small ones and no pass of its own for the biases (project_together).
- Each head's V copied into a C-order block: weights·V then runs on OpenBLAS's small-matrix
  kernel, 1.6 times as fast as on the strided view the projection gives (the copy takes a
  seventh of the time it saves).
- The softmax in one buffer, worked on in place (at 8 heads × 2048² tokens each extra copy
  would cost 268 MB), its row max taken by fmax, which numpy reduces along a row about 1.6
  times as fast as max (the same number for numbers and ±∞).
- Each head's Z written straight into the concatenation's room, so Concat is a view and not a
  copy (concat_buffer).
- x·W_O as (W_Oᵀ·xᵀ)ᵀ when W_O is a view of a weight stored [out, in] (times): OpenBLAS
  multiplies a weight's contiguous rows by xᵀ about a sixth faster than x by its columns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import Intermediates, attention_scores, concat_heads, mask_scores, traced
from attnviz.attention_inputs import AttentionOptions, Checked
from attnviz.positions import rotate
from attnviz.provenance import Provenance
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights


def multi_head_attention(
    tokens: Sequence[str],
    x: FloatArray,
    weights: AttentionWeights,
    *,
    provenance: Provenance,
    mask: np.ndarray | None,
) -> AttentionTrace:
    """attention.multi_head_attention of a model's layer, its steps computed by fused_steps:
    the same checks and the same trace, assembled in the same place (attention.traced)."""
    options = AttentionOptions(provenance=provenance, mask=mask)
    return traced(fused_steps, tokens, x, weights, options)


def fused_steps(given: Checked) -> Intermediates:
    """attention.steps() with the kernels above: the same intermediates, in the same order.
    x: [n_q, d_model]; source: [n_k, d_model] -> Intermediates"""
    x, weights, d_k = given.x, given.weights, given.config.d_k
    matrix, bias = weights.stacked_rows, weights.stacked_bias
    h, g = weights.n_heads, weights.n_kv_heads
    if given.source.x is None:
        q, k, v = project_together(x, matrix, bias, (h, g, g), d_k)
    else:  # queries from the target, keys and values from the source
        width = h * d_k  # W_Qᵀ's rows (with their biases, when the rows hold them)
        query_bias, key_value_bias = (None, None) if bias is None else (bias[:width], bias[width:])
        (q,) = project_together(x, matrix[:width], query_bias, (h,), d_k)
        k, v = project_together(given.source.x, matrix[width:], key_value_bias, (g, g), d_k)
    v = np.ascontiguousarray(v)  # each head's V a C-order block: see the module's docstring
    q_rotated = k_rotated = None
    if given.rope is not None:
        q_rotated = rotate(q, np.arange(q.shape[1]), given.rope)
        k_rotated = rotate(k, np.arange(k.shape[1]), given.rope)
    scores = attention_scores(
        q if q_rotated is None else q_rotated, k if k_rotated is None else k_rotated
    )
    scaled = scores / math.sqrt(d_k)
    attention_weights = softmax_in_place(
        scaled if given.mask is None else mask_scores(scaled, given.mask)
    )
    z = weigh_values_into(
        attention_weights, v, concat_buffer(h, len(x), d_k, attention_weights.dtype)
    )
    concat = concat_heads(z)  # a view: Z was written side by side
    output = times(concat, weights.W_O)
    if weights.b_O is not None:
        output = output + weights.b_O
    return Intermediates(
        q, k, v, q_rotated, k_rotated, scores, scaled, attention_weights, z, concat, output
    )


def project_together(
    x: FloatArray,
    stacked_rows: FloatArray,
    bias: FloatArray | None,
    heads: int | Sequence[int],
    d_k: int,
) -> list[FloatArray]:
    """Several projections of the same X in one matrix product, W·Xᵀ with W the heads' W_Qᵀ,
    W_Kᵀ, … one above the other, each head's d_k rows together (AttentionWeights.stacked_rows),
    split back by head: attention.project() for each W. ``heads``: how many heads each W has,
    in order (h for W_Q, G for W_K and W_V); one number when they all have as many. The biases
    come either apart, ``bias`` [Σheads·d_k], or as the last column of ``stacked_rows``
    (d_model + 1 columns): then Xᵀ gets a row of ones and the product adds them,
    [W | b]·[Xᵀ; 1] = W·Xᵀ + b.

    [n, d_model], [Σheads·d_k, d_model (+ 1)], optional [Σheads·d_k] -> [heads_1, n, d_k], …
    """
    n, d_model = x.shape
    if stacked_rows.shape[1] == d_model + 1:  # the biases' column: X's transpose with ones
        x_t = np.empty((d_model + 1, n), np.result_type(x, stacked_rows))
        x_t[:d_model] = x.T
        x_t[d_model] = 1
    else:
        x_t = x.T
    projected = stacked_rows @ x_t  # [Σheads·d_k, n]: Qᵀ, Kᵀ, … of each head
    if bias is not None:  # of another type than the weights: as project() adds it, promoted
        projected = projected + bias[:, np.newaxis]
    width = stacked_rows.shape[0]
    by_coordinate = projected.reshape(width // d_k, d_k, n)
    if isinstance(heads, int):
        heads = [heads] * (width // d_k // heads)
    starts = [0, *itertools.accumulate(heads)]
    return [
        by_coordinate[start : start + count].transpose(0, 2, 1)
        for start, count in zip(starts[:-1], heads, strict=True)
    ]


def row_max(scores: FloatArray) -> FloatArray:
    """The largest number of each row by fmax, the same as max for numbers (and for ±∞), which
    numpy reduces along a row about 1.6 times as fast.  [..., n] -> [..., 1]"""
    return np.fmax.reduce(scores, axis=-1, keepdims=True)


def softmax_in_place(scores: FloatArray) -> FloatArray:
    """attention.softmax in one new [..., n] buffer, the same operations in the same order (so
    the same numbers), worked on in place.  [..., n] -> [..., n]"""
    weights = scores - row_max(scores)
    np.exp(weights, out=weights)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights


def concat_buffer(n_heads: int, n_tokens: int, d_k: int, dtype: np.dtype) -> FloatArray:
    """Room for Concat(head_1, …, head_h) [n, h·d_k], seen as Z [h, n, d_k]: weigh_values_into
    writes each head's z_i straight into its columns, and concat_heads() of that Z is then this
    room itself, no copy.  -> [h, n, d_k] (a view of an [n, h, d_k] array)"""
    return np.empty((n_tokens, n_heads, d_k), dtype).transpose(1, 0, 2)


def weigh_values_into(weights: FloatArray, v: FloatArray, out: FloatArray) -> FloatArray:
    """attention.weigh_values written into ``out`` (a concat_buffer()); query head i weighs
    value head i // (h/G).  [h, n_q, n_k], [G, n_k, d_k], [h, n_q, d_k] -> out"""
    h, g = weights.shape[0], v.shape[0]
    if g == h:
        return np.matmul(weights, v, out=out)
    grouped = weights.reshape(g, h // g, *weights.shape[1:])  # [G, h/G, n_q, n_k]
    # Splitting the head axis of ``out`` is a view, so the product writes into it.
    np.matmul(grouped, v[:, np.newaxis], out=out.reshape(g, h // g, *out.shape[1:]))
    return out


def times(x: FloatArray, w: FloatArray) -> FloatArray:
    """x·W, as (Wᵀ·xᵀ)ᵀ when W is a view of its transpose in C order (a torch Linear's weight
    is stored [out, in]): numpy (OpenBLAS) multiplies a weight's contiguous rows by xᵀ about a
    sixth faster than x by its columns at a model's sizes.  [n, d_in], [d_in, d_out] -> [n, d_out]
    """
    if w.ndim == 2 and w.T.flags.c_contiguous and not w.flags.c_contiguous:
        return (w.T @ x.T).T
    return x @ w
