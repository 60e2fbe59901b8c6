"""The pieces of a Llama-family layer that a BERT or GPT-2 layer lacks: RMSNorm, the SwiGLU
feed-forward block, rotary positions (RoPE) and attention with grouped key/value heads, which
keeps every intermediate in an AttentionTrace.

Grouped-query attention is computed group by group, never by repeating K and V: query heads
g·r … g·r + r − 1 (r = h/G) read key/value head g, so their r·n query rows are stacked and
multiplied by K̃_gᵀ in one product, [G, r·n, d_k] · [G, d_k, n] -> [G, r·n, n].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import concat_heads
from attnviz.config import AttentionConfig
from attnviz.errors import FileProblem
from attnviz.model.base import for_layer
from attnviz.positions import Rope
from attnviz.provenance import Provenance
from attnviz.trace import AttentionTrace, frozen_array, frozen_mask


class GroupedWeights(Protocol):
    """One layer's attention weights with G ≤ h key/value heads (attnviz.model.llama's)."""

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
    def qkv(self) -> FloatArray: ...  # [d_model, (h + 2G)·d_k]: W_Q | W_K | W_V side by side
    @property
    def qkv_bias(self) -> FloatArray | None: ...  # [(h + 2G)·d_k]


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


def swiglu(x: FloatArray, gate_up: FloatArray) -> FloatArray:
    """SiLU(x·W_gate) ⊙ (x·W_up), SiLU(g) = g·σ(g) = g / (1 + e^−g); ``gate_up`` is
    [W_gate | W_up] side by side.  [n, d_model], [d_model, 2·d_ff] -> [n, d_ff]"""
    both = x @ gate_up
    d_ff = both.shape[1] // 2
    gate, up = both[:, :d_ff], both[:, d_ff:]
    dtype = x.dtype.type
    denominator = np.negative(gate)
    np.exp(denominator, out=denominator)  # e^−g: ∞ for a very negative g, giving −0
    denominator += dtype(1.0)
    result = gate / denominator
    result *= up
    return result


def rope_angles(rope: Rope, n_tokens: int, d_k: int, dtype: type) -> tuple[FloatArray, FloatArray]:
    """cos and sin of m·θ_i for positions m = 0 … n−1 and θ_i = base^(−2i/d_k), i < d_k/2,
    computed in float64 and given in ``dtype``.  -> 2 × [n, d_k/2]"""
    theta = rope.base ** (-np.arange(0, d_k, 2, dtype=np.float64) / d_k)
    angles = np.arange(n_tokens, dtype=np.float64)[:, np.newaxis] * theta
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


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


def masked_softmax(scaled: FloatArray, mask: np.ndarray) -> FloatArray:
    """softmax(mask(scaled)) over the last axis, the masked pairs −∞ and so weight 0: the same
    operations as attnviz.attention's softmax(mask_scores(…)), in one buffer.
    [h, n, n], [n, n] bool -> [h, n, n]"""
    weights = np.where(mask, scaled, -np.inf)
    weights -= weights.max(axis=-1, keepdims=True)
    np.exp(weights, out=weights)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights


def rotary_attention(
    tokens: Sequence[str],
    x: FloatArray,
    weights: GroupedWeights,
    rope: Rope,
    *,
    provenance: Provenance,
    layer: int,
    mask: np.ndarray,
) -> AttentionTrace:
    """Layer ``layer``'s (from 1) attention on ``x`` [n, d_model] with rotary positions and
    G key/value heads, every intermediate kept: Q [h, n, d_k] and K, V [G, n, d_k] as projected,
    Q_rotated and K_rotated after RoPE, scores = Q̃_i·K̃_gᵀ, scaled, weights, Z, concat, output.
    ``mask`` [n, n] bool, True where query i may attend to key j."""
    n = x.shape[0]
    h, d_model, d_k = weights.W_Q.shape
    g = weights.W_K.shape[0]
    with np.errstate(all="ignore"):  # overflow is found below and named with the layer
        projected = x @ weights.qkv
        if weights.qkv_bias is not None:
            projected += weights.qkv_bias
        per_head = projected.reshape(n, h + 2 * g, d_k).transpose(1, 0, 2)
        q, k, v = per_head[:h], per_head[h : h + g], per_head[h + g :]
        cos, sin = rope_angles(rope, n, d_k, x.dtype.type)
        q_rotated, k_rotated = rotate(q, rope, cos, sin), rotate(k, rope, cos, sin)
        group = h // g
        stacked = q_rotated.reshape(g, group * n, d_k)  # each group's query rows, stacked
        scores = np.matmul(stacked, k_rotated.transpose(0, 2, 1)).reshape(h, n, n)
        scaled = scores / math.sqrt(d_k)
        attention_weights = masked_softmax(scaled, mask)
        z = np.matmul(attention_weights.reshape(g, group * n, n), v).reshape(h, n, d_k)
        concat = concat_heads(z)
        output = concat @ weights.W_O
        if weights.b_O is not None:
            output += weights.b_O
    if not (np.isfinite(scores).all() and np.isfinite(output).all()):
        raise FileProblem(
            f"Layer {layer} of the model: the numbers overflow {x.dtype.name} in its attention "
            "(Q·Kᵀ reaches infinity); check the checkpoint."
        )

    def frozen(array: FloatArray | None) -> FloatArray | None:
        return None if array is None else frozen_array(array)

    return AttentionTrace(
        tokens=tuple(tokens),
        X=frozen_array(x, copy=False),
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
