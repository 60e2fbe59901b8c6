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

Rotary layers with grouped key/value heads (Llama, Qwen2: rotary_steps) keep the vectors as
columns, as W·Xᵀ gives them: each head's Qᵀ, Kᵀ rows turned in place of a transposed copy
(rotate_rows), RoPE's cos and sin made once for every layer (rope_angles_by_coordinate), the h/G
query heads of a group scored against its one K̃_g in one product, and the mask added, not
selected (masked_softmax). Model mode assembles their trace in attention.traced like any other.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import Intermediates, attention_scores, concat_heads, mask_scores, traced
from attnviz.attention_inputs import AttentionOptions, Checked
from attnviz.positions import Rope, rotate
from attnviz.provenance import Provenance
from attnviz.trace import AttentionTrace, frozen_array
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


# -- rotary layers with grouped key/value heads (Llama, Qwen2) ---------------------------------


class StoredRows(Protocol):
    """A rotary layer's projections as its checkpoint stores them, [out, in] (families.llama's
    LlamaLayer): the W_Q … W_O its AttentionWeights hold are views of these rows."""

    # Read-only attributes (a frozen dataclass's fields match them).
    @property
    def qkv_rows(self) -> FloatArray: ...  # [(h + 2G)·d_k, d_model]: q_proj over k_ over v_
    @property
    def qkv_bias(self) -> FloatArray | None: ...  # [(h + 2G)·d_k] (Qwen2), else None
    @property
    def output_rows(self) -> FloatArray: ...  # o_proj's weight, [d_model, h·d_k]


def rotary_steps(stored: StoredRows, given: Checked) -> Intermediates:
    """attention.steps() for a layer given as its weights' stored rows (``stored``, of which
    given.weights are views), the vectors kept as columns: W·Xᵀ [(h + 2G)·d_k, n] in one
    product, each head's d_k rows together, so Qᵀ, Kᵀ, Vᵀ are blocks of it and Q, K, V their
    transposed views; rotary positions (given.rope) turn Qᵀ's and Kᵀ's rows (rotate_rows). The
    h/G query heads of key/value head g are stacked and scored against K̃_g in one product,
    [G, h/G·n, d_k]·[G, d_k, n], never repeating K or V. Then Concat·W_O as (W_Oᵀ·Concatᵀ)ᵀ from
    o_proj's rows.  x: [n, d_model] (fastest as the transpose of C-order Xᵀ) -> Intermediates
    """
    x_t, weights, rope = given.x.T, given.weights, given.rope
    n, d_k = x_t.shape[1], given.config.d_k
    h, g = weights.n_heads, weights.n_kv_heads
    projected = stored.qkv_rows @ x_t
    if stored.qkv_bias is not None:
        projected += stored.qkv_bias[:, np.newaxis]
    by_coordinate = projected.reshape(h + 2 * g, d_k, n)  # Qᵀ, Kᵀ, Vᵀ of each head
    q, k, v = (part.transpose(0, 2, 1) for part in np.split(by_coordinate, [h, h + g]))
    q_turned, k_turned = by_coordinate[:h], by_coordinate[h : h + g]  # Q̃ᵀ [h, d_k, n], K̃ᵀ
    q_rotated = k_rotated = None
    if rope is not None:
        cos, sin = rope_angles_by_coordinate(rope, n, d_k, x_t.dtype.type)
        q_turned = rotate_rows(q_turned, rope, cos, sin)
        k_turned = rotate_rows(k_turned, rope, cos, sin)
        q_rotated, k_rotated = q_turned.transpose(0, 2, 1), k_turned.transpose(0, 2, 1)
    # Q̃_i·K̃_gᵀ for the h/G query heads i of each key/value head g: [G, h/G, n, n].
    grouped = q_turned.transpose(0, 2, 1).reshape(g, h // g, n, d_k)
    scores = np.matmul(grouped, k_turned[:, np.newaxis]).reshape(h, n, n)
    scaled = scores / math.sqrt(d_k)
    if given.mask is None:
        attention_weights = softmax_in_place(scaled)
    else:
        attention_weights = masked_softmax(scaled, given.mask)
    z = np.matmul(attention_weights.reshape(g, h // g * n, n), v).reshape(h, n, d_k)
    concat = concat_heads(z)
    output = (stored.output_rows @ concat.T).T
    if weights.b_O is not None:
        output += weights.b_O
    return Intermediates(
        q, k, v, q_rotated, k_rotated, scores, scaled, attention_weights, z, concat, output
    )


def rope_angles_by_coordinate(
    rope: Rope, n_tokens: int, d_k: int, dtype: type
) -> tuple[FloatArray, FloatArray]:
    """cos and sin of m·θ_i for θ_i = base^(−2i/d_k), i < d_k/2, and positions m = 0 … n−1, one
    row per pair, for rotate_rows; computed in float64, given in ``dtype``, read-only, and
    remembered, as every layer of a model asks for the same.  -> 2 × [d_k/2, n]"""
    _, _, cos, sin = rope_tables(rope, n_tokens, d_k, np.dtype(dtype).name)
    return cos, sin


@functools.lru_cache(maxsize=8)
def rope_tables(
    rope: Rope, n_tokens: int, d_k: int, dtype: str
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """cos, sin [n, d_k/2] of m·θ_i, then the same two in C order [d_k/2, n]."""
    theta = rope.base ** (-np.arange(0, d_k, 2, dtype=np.float64) / d_k)
    angles = np.arange(n_tokens, dtype=np.float64)[:, np.newaxis] * theta
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    by_coordinate = np.ascontiguousarray(cos.T), np.ascontiguousarray(sin.T)
    return (
        frozen_array(cos, copy=False),
        frozen_array(sin, copy=False),
        frozen_array(by_coordinate[0], copy=False),
        frozen_array(by_coordinate[1], copy=False),
    )


def rotate_rows(x: FloatArray, rope: Rope, cos: FloatArray, sin: FloatArray) -> FloatArray:
    """positions.rotate for vectors stored as columns, each head's coordinates as rows, as W·Xᵀ
    gives them: pair (a, b), turned to (a·cos − b·sin, b·cos + a·sin), is rows (i, i + d_k/2)
    ("half") or (2i, 2i + 1) ("adjacent"), each a contiguous run of n numbers.
    [heads, d_k, n], 2 × [d_k/2, n] (rope_angles_by_coordinate) -> [heads, d_k, n] in C order"""
    half = x.shape[-2] // 2
    pairs = (slice(None, half), slice(half, None))
    if rope.pairing != "half":
        pairs = (slice(0, None, 2), slice(1, None, 2))
    first, second = x[:, pairs[0]], x[:, pairs[1]]
    rotated = np.empty(x.shape, x.dtype)
    out_first, out_second = rotated[:, pairs[0]], rotated[:, pairs[1]]
    np.multiply(first, cos, out=out_first)
    out_first -= second * sin
    np.multiply(second, cos, out=out_second)
    out_second += first * sin
    return rotated


def masked_softmax(scaled: FloatArray, mask: np.ndarray) -> FloatArray:
    """softmax(mask_scores(scaled, mask)) in one buffer: the mask is added (0 or −∞; s + 0 = s
    exactly), faster than where() at a model's sizes, and exp(−∞) = 0 gives a masked pair
    weight 0; then softmax_in_place's operations in its order.
    [h, n, n], [n, n] bool (True = may attend) -> [h, n, n]"""
    dtype = scaled.dtype.type
    weights = scaled + np.where(mask, dtype(0.0), dtype(-np.inf))
    weights -= row_max(weights)
    np.exp(weights, out=weights)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights
