"""The pieces of a Llama-family layer that a BERT or GPT-2 layer lacks: RMSNorm, the SwiGLU
feed-forward block, rotary positions (RoPE) and attention with grouped key/value heads, which
keeps every intermediate in an AttentionTrace.

Grouped-query attention is computed group by group, never by repeating K and V: query heads
g·r … g·r + r − 1 (r = h/G) read key/value head g, so their r·n query rows are stacked and
multiplied by K̃_gᵀ in one product, [G, r·n, d_k] · [G, d_k, n] -> [G, r·n, n].
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import concat_heads
from attnviz.config import AttentionConfig
from attnviz.errors import FileProblem
from attnviz.kernels import row_max
from attnviz.model.base import for_layer
from attnviz.positions import Rope
from attnviz.provenance import Provenance
from attnviz.trace import AttentionTrace, frozen_array, frozen_mask


class GroupedWeights(Protocol):
    """One layer's attention weights with G ≤ h key/value heads (families.llama's): the
    products use each Linear's weight as a checkpoint stores it, [out, in]; W_Q … W_O are the
    x·W views the trace keeps."""

    # Read-only attributes (a frozen dataclass's fields match them).
    @property
    def W_Q(self) -> FloatArray: ...  # [h, d_model, d_k]
    @property
    def W_K(self) -> FloatArray: ...  # [G, d_model, d_k]
    @property
    def W_V(self) -> FloatArray: ...  # [G, d_model, d_k]
    @property
    def W_O(self) -> FloatArray: ...  # [h·d_k, d_model]
    @property
    def b_Q(self) -> FloatArray | None: ...  # [h, d_k]
    @property
    def b_K(self) -> FloatArray | None: ...  # [G, d_k]
    @property
    def b_V(self) -> FloatArray | None: ...  # [G, d_k]
    @property
    def b_O(self) -> FloatArray | None: ...  # [d_model]
    @property
    def qkv_rows(self) -> FloatArray: ...  # [(h + 2G)·d_k, d_model]: q_proj over k_ over v_
    @property
    def qkv_bias(self) -> FloatArray | None: ...  # [(h + 2G)·d_k]
    @property
    def output_rows(self) -> FloatArray: ...  # o_proj's weight, [d_model, h·d_k]


def rms_norm(x: FloatArray, gamma: FloatArray, eps: float) -> FloatArray:
    """x / √(mean(x²) + ε) · γ over the last axis (no mean subtracted, no bias).
    [n, d_model] -> [n, d_model]"""
    dtype = x.dtype.type
    mean_square = np.einsum("ij,ij->i", x, x)[:, np.newaxis]
    mean_square *= dtype(1.0 / x.shape[-1])
    mean_square += dtype(eps)
    result = x / np.sqrt(mean_square)
    result *= gamma
    return result


def rms_norm_columns(x_t: FloatArray, gamma: FloatArray, eps: float) -> FloatArray:
    """rms_norm of each column of Xᵀ, the vectors stored as columns as the forward pass keeps
    them (W·Xᵀ from the weights as stored then needs no transposed copy).
    [d_model, n] -> [d_model, n]"""
    dtype = x_t.dtype.type
    mean_square = np.einsum("ij,ij->j", x_t, x_t)
    mean_square *= dtype(1.0 / x_t.shape[0])
    mean_square += dtype(eps)
    result = x_t / np.sqrt(mean_square)
    result *= gamma[:, np.newaxis]
    return result


def swiglu_columns(x_t: FloatArray, gate_up_rows: FloatArray) -> FloatArray:
    """(SiLU(X·W_gate) ⊙ (X·W_up))ᵀ, SiLU(g) = g·σ(g) = g / (1 + e^−g), from Xᵀ and gate_proj's
    weight over up_proj's as the checkpoint stores them, [2·d_ff, d_model]: W·Xᵀ, whose gate and
    up halves are whole rows.  [d_model, n], [2·d_ff, d_model] -> [d_ff, n]"""
    both = gate_up_rows @ x_t  # [2·d_ff, n]
    d_ff = both.shape[0] // 2
    gate, up = both[:d_ff], both[d_ff:]
    dtype = x_t.dtype.type
    denominator = np.negative(gate)
    np.exp(denominator, out=denominator)  # e^−g: ∞ for a very negative g, giving −0
    denominator += dtype(1.0)
    np.divide(gate, denominator, out=gate)
    gate *= up
    return gate


def rope_angles(rope: Rope, n_tokens: int, d_k: int, dtype: type) -> tuple[FloatArray, FloatArray]:
    """cos and sin of m·θ_i for positions m = 0 … n−1 and θ_i = base^(−2i/d_k), i < d_k/2,
    computed in float64 and given in ``dtype``, read-only; remembered, as every layer of a
    model asks for the same.  -> 2 × [n, d_k/2]"""
    cos, sin, _, _ = _angles(rope, n_tokens, d_k, np.dtype(dtype).name)
    return cos, sin


def rope_angles_by_coordinate(
    rope: Rope, n_tokens: int, d_k: int, dtype: type
) -> tuple[FloatArray, FloatArray]:
    """rope_angles' cos and sin transposed, for rotate_rows.  -> 2 × [d_k/2, n]"""
    _, _, cos, sin = _angles(rope, n_tokens, d_k, np.dtype(dtype).name)
    return cos, sin


@functools.lru_cache(maxsize=8)
def _angles(
    rope: Rope, n_tokens: int, d_k: int, dtype: str
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """cos, sin [n, d_k/2], then the same two in C order [d_k/2, n]."""
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


def rotate(x: FloatArray, rope: Rope, cos: FloatArray, sin: FloatArray) -> FloatArray:
    """Each pair (a, b) of x's coordinates rotated by its position's angle:
    (a·cos − b·sin, b·cos + a·sin). Pairs are (i, i + d_k/2) with pairing "half", (2i, 2i + 1)
    with "adjacent".  [heads, n, d_k], 2 × [n, d_k/2] -> [heads, n, d_k]"""
    half = x.shape[-1] // 2
    if rope.pairing == "half":
        first, second = x[..., :half], x[..., half:]
    else:
        first, second = x[..., 0::2], x[..., 1::2]
    rotated = np.empty(x.shape, x.dtype)  # C order, whatever x's: a group's rows reshape freely
    if rope.pairing == "half":
        out_first, out_second = rotated[..., :half], rotated[..., half:]
    else:
        out_first, out_second = rotated[..., 0::2], rotated[..., 1::2]
    np.multiply(first, cos, out=out_first)
    out_first -= second * sin
    np.multiply(second, cos, out=out_second)
    out_second += first * sin
    return rotated


def rotate_rows(x: FloatArray, rope: Rope, cos: FloatArray, sin: FloatArray) -> FloatArray:
    """rotate() for vectors stored as columns, each head's coordinates as rows, as W·Xᵀ gives
    them: pair (a, b) is rows (i, i + d_k/2) or (2i, 2i + 1), each a contiguous run of n numbers.
    [heads, d_k, n], 2 × [d_k/2, n] (rope_angles_by_coordinate) -> [heads, d_k, n]"""
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
    """softmax(mask(scaled)) over the last axis, the masked pairs −∞ and so weight 0: the same
    numbers as attnviz.attention's softmax(mask_scores(…)), in one buffer: the mask is added
    (0 or −∞, s + 0 = s exactly), faster than where() at a model's sizes.
    [h, n, n], [n, n] bool -> [h, n, n]"""
    dtype = scaled.dtype.type
    weights = scaled + np.where(mask, dtype(0.0), dtype(-np.inf))
    weights -= row_max(weights)
    np.exp(weights, out=weights)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights


def rotary_attention(
    tokens: Sequence[str],
    x_t: FloatArray,
    weights: GroupedWeights,
    rope: Rope,
    *,
    provenance: Provenance,
    layer: int,
    mask: np.ndarray,
) -> AttentionTrace:
    """Layer ``layer``'s (from 1) attention on X, given as Xᵀ [d_model, n], with rotary positions
    and G key/value heads, every intermediate kept: Q [h, n, d_k] and K, V [G, n, d_k] as projected,
    Q_rotated and K_rotated after RoPE, scores = Q̃_i·K̃_gᵀ, scaled, weights, Z, concat, output.
    ``mask`` [n, n] bool, True where query i may attend to key j."""
    n = x_t.shape[1]
    h, d_model, d_k = weights.W_Q.shape
    g = weights.W_K.shape[0]
    with np.errstate(all="ignore"):  # overflow is found below and named with the layer
        # W·Xᵀ from the weights as stored, [(h + 2G)·d_k, n]: each head's d_k rows together.
        projected = weights.qkv_rows @ x_t
        if weights.qkv_bias is not None:
            projected += weights.qkv_bias[:, np.newaxis]
        by_coordinate = projected.reshape(h + 2 * g, d_k, n)  # Qᵀ, Kᵀ, Vᵀ of each head
        cos, sin = rope_angles_by_coordinate(rope, n, d_k, x_t.dtype.type)
        q_turned = rotate_rows(by_coordinate[:h], rope, cos, sin)  # Q̃ᵀ [h, d_k, n]
        k_turned = rotate_rows(by_coordinate[h : h + g], rope, cos, sin)  # K̃ᵀ [G, d_k, n]
        q, k, v = (part.transpose(0, 2, 1) for part in np.split(by_coordinate, [h, h + g]))
        q_rotated, k_rotated = q_turned.transpose(0, 2, 1), k_turned.transpose(0, 2, 1)
        group = h // g
        # Q̃_i·K̃_gᵀ for the h/G query heads i of each key/value head g: [G, h/G, n, n].
        grouped = q_rotated.reshape(g, group, n, d_k)
        scores = np.matmul(grouped, k_turned[:, np.newaxis]).reshape(h, n, n)
        scaled = scores / math.sqrt(d_k)
        attention_weights = masked_softmax(scaled, mask)
        z = np.matmul(attention_weights.reshape(g, group * n, n), v).reshape(h, n, d_k)
        concat = concat_heads(z)
        output = (weights.output_rows @ concat.T).T
        if weights.b_O is not None:
            output += weights.b_O
    if not (np.isfinite(scores).all() and np.isfinite(output).all()):
        raise FileProblem(
            f"Layer {layer} of the model: the numbers overflow {x_t.dtype.name} in its attention "
            "(Q·Kᵀ reaches infinity); check the checkpoint."
        )

    def frozen(array: FloatArray | None) -> FloatArray | None:
        return None if array is None else frozen_array(array)

    return AttentionTrace(
        tokens=tuple(tokens),
        X=frozen_array(x_t.T, copy=False),
        W_Q=weights.W_Q,
        W_K=weights.W_K,
        W_V=weights.W_V,
        W_O=weights.W_O,
        Q=frozen_array(q, copy=False),
        K=frozen_array(k, copy=False),
        V=frozen_array(v, copy=False),
        scores=frozen_array(scores, copy=False),
        scaled=frozen_array(scaled, copy=False),
        weights=frozen_array(attention_weights, copy=False),
        Z=frozen_array(z, copy=False),
        concat=frozen_array(concat, copy=False),
        output=frozen_array(output, copy=False),
        config=AttentionConfig(d_model=d_model, n_heads=h),
        provenance=for_layer(provenance, layer),
        b_Q=frozen(weights.b_Q),
        b_K=frozen(weights.b_K),
        b_V=frozen(weights.b_V),
        b_O=frozen(weights.b_O),
        mask=frozen_mask(mask),
        rope=rope,
        Q_rotated=frozen_array(q_rotated, copy=False),
        K_rotated=frozen_array(k_rotated, copy=False),
    )
