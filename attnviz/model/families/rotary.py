"""The pieces of a Llama-family layer that a BERT or GPT-2 layer lacks: RMSNorm, the SwiGLU
feed-forward block, rotary positions (RoPE) and attention with grouped key/value heads, which
keeps every intermediate in an AttentionTrace.

The attention's fused steps are model mode's fast path, kernels.rotary_steps (checked against
attention.steps in tests/test_kernels.py), and its trace is assembled where every trace is,
attention.traced: here are what it is handed, the layer's AttentionWeights (views of the rows
the checkpoint stores, nothing copied) and how an overflow is said, naming the layer.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NoReturn, Protocol

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import traced
from attnviz.attention_inputs import AttentionOptions
from attnviz.errors import FileProblem
from attnviz.kernels import StoredRows, rope_tables, rotary_steps
from attnviz.model.base import for_layer
from attnviz.positions import Rope
from attnviz.provenance import Provenance
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights


class GroupedWeights(StoredRows, Protocol):
    """One layer's attention weights with G ≤ h key/value heads (families.llama's): the
    products use each Linear's weight as a checkpoint stores it, [out, in] (StoredRows); W_Q …
    b_O are the x·W views the trace keeps, and ``attention`` them as AttentionWeights, made
    once for the layer's every run."""

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
    def attention(self) -> AttentionWeights: ...  # the above, attention_weights(self), kept


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
    computed in float64 and given in ``dtype``, read-only; remembered with the forward pass's
    transposed ones (kernels.rope_angles_by_coordinate).  -> 2 × [n, d_k/2]"""
    cos, sin, _, _ = rope_tables(rope, n_tokens, d_k, np.dtype(dtype).name)
    return cos, sin


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
    ``mask`` [n, n] bool, True where query i may attend to key j. Computed by kernels.rotary_steps
    from the weights as stored, the trace assembled by attention.traced; the model's run was
    estimated as a whole before it started (model_limits.check_model_run), so the layer's own
    memory is not asked again, and numbers that overflow are said with the layer's number."""
    options = AttentionOptions(provenance=for_layer(provenance, layer), mask=mask, rope=rope)
    return traced(
        functools.partial(rotary_steps, weights),
        tokens,
        x_t.T,
        weights.attention,
        options,
        overflowed=functools.partial(overflow_in_layer, layer),
        budgeted=True,
    )


def attention_weights(weights: GroupedWeights) -> AttentionWeights:
    """The layer's W_Q … b_O as AttentionWeights, views of its stored rows: nothing is copied when
    they are read-only all the way down, as families.llama.load_layer makes them (AttentionWeights
    and the trace copy an array that could still change)."""
    return AttentionWeights(
        W_Q=weights.W_Q,
        W_K=weights.W_K,
        W_V=weights.W_V,
        W_O=weights.W_O,
        b_Q=weights.b_Q,
        b_K=weights.b_K,
        b_V=weights.b_V,
        b_O=weights.b_O,
    )


def overflow_in_layer(layer: int, x: FloatArray, weights: AttentionWeights) -> NoReturn:
    """Finite weights whose attention still overflows: the checkpoint's, named with the layer
    (from 1)."""
    del weights  # a model's weights were checked finite as they were read
    raise FileProblem(
        f"Layer {layer} of the model: the numbers overflow {x.dtype.name} in its attention "
        "(Q·Kᵀ reaches infinity); check the checkpoint."
    )
