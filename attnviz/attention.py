"""Multi-head self-attention as one small numpy function per textbook step.

    head_i = softmax(Q_i · K_iᵀ / √d_k) · V_i,   Q_i = X·W_Q[i], K_i = X·W_K[i], V_i = X·W_V[i]
    MultiHead(X) = Concat(head_1, …, head_h) · W_O

(Vaswani et al., "Attention Is All You Need", 2017, section 3.2.) Every function here is pure:
arrays in, arrays out, no printing, no files, no global random state. Shapes use the paper's
names: n tokens, h heads, d_model embedding width, d_k = d_model / h per head. The step
functions check nothing: their callers have (multi_head_attention checks its inputs and sizes
once, attnviz.public_steps checks what a Python user gives attnviz.softmax and the others).
attnviz.kernels computes the same steps faster for model mode, checked against these (a
Llama-family layer's rotary, grouped steps too, kernels.rotary_steps); traced() below assembles
every trace, on either path.

Three changes of today's models, each optional here:
- rotary positions (RoPE, as in Llama and its family; attnviz.positions.rotate): each head's q
  and k turned, pair by pair of coordinates, by the angle of their position 0 … n−1, and the
  scores taken between the turned ones; a trace keeps Q, K and Q_rotated, K_rotated. V is not
  rotated. Self-attention only.
- multi-head latent attention (DeepSeek-V2): keys and values from one latent c = X·W_DKV per
  token, K_i = c·W_UK[i], V_i = c·W_UV[i] (attnviz.latent); the trace keeps c and the scores and
  output computed again by absorption, without expanding K and V.
- grouped-query attention: W_K, W_V [G, d_model, d_k] with G dividing h give K, V [G, n, d_k],
  query head i reading key/value head i // (h/G); the h/G heads of a group are scored against
  their one K and weigh their one V, which are never copied (G = 1: multi-query attention).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, NoReturn, cast

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention_inputs import (
    AttentionOptions,
    Checked,
    checked_inputs,
    frozen_or_none,
    overflow,
)
from attnviz.config import AttentionConfig
from attnviz.latent import (
    LatentWeights,
    absorbed_output,
    absorbed_scores,
    compress,
    decoupled_key,
    decoupled_queries,
    expand,
    rope_scores,
)
from attnviz.positions import Rope, rotate
from attnviz.provenance import Provenance
from attnviz.trace import BIAS_KEYS, AttentionTrace, frozen_array, frozen_mask
from attnviz.weights import AttentionWeights


def project(x: FloatArray, w: FloatArray, b: FloatArray | None = None) -> FloatArray:
    """One projection per head: Q_i = X · W_Q[i] (+ b_Q[i] in a pretrained layer).

    [n, d_model], [h, d_model, d_k], optional [h, d_k] -> [h, n, d_k]
    """
    projected = x @ w
    return projected if b is None else projected + b[..., np.newaxis, :]


def attention_scores(q: FloatArray, k: FloatArray) -> FloatArray:
    """Raw scores s_ij = q_i · k_j, how well query i matches key j.

    With G key heads for h query heads (grouped-query attention), the h/G query heads of group g
    are scored against its one K_g, never copied.  [h, n_q, d_k], [G, n_k, d_k] -> [h, n_q, n_k]
    """
    grouped = _by_group(q, k.shape[-3])  # [G, h/G, n_q, d_k]
    scores = grouped @ np.swapaxes(k, -1, -2)[..., np.newaxis, :, :]
    return scores.reshape(*q.shape[:-1], k.shape[-2])


def scale_scores(scores: FloatArray, d_k: int) -> FloatArray:
    """Divide by √d_k.  [h, n_q, n_k] -> [h, n_q, n_k]

    If q and k have independent unit-variance components, q·k is a sum of d_k such products and
    has variance d_k. Dividing by √d_k brings the variance back to 1, so the softmax does not
    saturate into a one-hot row (with near-zero gradients) as d_k grows.
    """
    return scores / math.sqrt(d_k)  # a Python float: float32 scores stay float32


def causal_mask(n_tokens: int) -> np.ndarray:
    """Decoder self-attention: word i may attend to words 0..i only.  -> [n, n] bool"""
    return np.tril(np.ones((n_tokens, n_tokens), dtype=bool))


def sliding_window_mask(n_tokens: int, window: int) -> np.ndarray:
    """Sliding-window causal attention: query i may read key j when i − W < j ≤ i, itself and
    the W − 1 words before it, so each row sees min(i + 1, W) keys.  -> [n, n] bool

    The convention of Hugging Face transformers' sliding-window masks (Mistral, Qwen2, Gemma 2
    and 3: ``kv_idx > q_idx - sliding_window`` on top of the causal mask), which a
    checkpoint's ``sliding_window`` is written for: W counts the token itself. W ≥ n is the
    plain causal mask; W = 1 leaves each word only itself.
    """
    positions = np.arange(n_tokens)
    behind = positions[:, np.newaxis] - positions[np.newaxis, :]  # i − j
    # min(): a window past the sentence hides nothing, and a huge W stays a small integer.
    return (behind >= 0) & (behind < min(window, n_tokens))


def padding_mask(n_real: int, n_tokens: int) -> np.ndarray:
    """Every word may attend to the real words, none to the padding after them.  -> [n, n] bool"""
    mask = np.zeros((n_tokens, n_tokens), dtype=bool)
    mask[:, :n_real] = True
    return mask


def mask_scores(scaled: FloatArray, mask: np.ndarray) -> FloatArray:
    """Set the scores of pairs that may not attend to −∞, so softmax gives them exp(−∞) = 0.

    [h, n_q, n_k], [n_q, n_k] bool (True = may attend) -> [h, n_q, n_k]
    """
    return np.where(mask, scaled, -np.inf)


def softmax(scores: FloatArray) -> FloatArray:
    """Softmax over the last axis: w_ij = exp(s_ij) / Σ_j' exp(s_ij').  [..., n] -> [..., n]

    Subtracting the row maximum first leaves the result unchanged (it cancels in the ratio) but
    keeps exp() from overflowing: the largest exponent is exp(0) = 1, so every row sums to a
    number in [1, n] and no finite input gives NaN or inf. A score of −∞ (a masked pair) gets
    weight 0. NaN, +∞ and a row of −∞ alone have no softmax (their rows come out NaN): the
    callers refuse them (attnviz.public_steps.softmax, or scores checked finite beforehand).
    """
    with np.errstate(over="ignore"):  # e.g. -1e308 - 1e308 = -inf, and exp(-inf) = 0 is right
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def softmax_parts(scores: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The pieces of softmax(), for showing the arithmetic: (shifted, exponentials, totals),
    shifted = s − max(s) per row [..., n], exponentials = exp(shifted) [..., n], totals their
    row sums [..., 1]."""
    with np.errstate(over="ignore"):
        shifted = scores - scores.max(axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return shifted, exponentials, exponentials.sum(axis=-1, keepdims=True)


def weigh_values(weights: FloatArray, v: FloatArray) -> FloatArray:
    """Z = weights · V: each z_i is Σ_j w_ij · v_j; query head i weighs value head i // (h/G).

    [h, n_q, n_k], [G, n_k, d_k] -> [h, n_q, d_k]
    """
    grouped = _by_group(weights, v.shape[-3])  # [G, h/G, n_q, n_k]
    z = grouped @ v[..., np.newaxis, :, :]
    return z.reshape(*weights.shape[:-1], v.shape[-1])


def concat_heads(z: FloatArray) -> FloatArray:
    """Put the heads side by side: [Z_1 | Z_2 | … | Z_h].  [..., h, n, d_k] -> [..., n, h·d_k]

    (The leading axes are a batch of sentences, as training runs it.)
    """
    n_heads, n_tokens, d_k = z.shape[-3:]
    return np.moveaxis(z, -3, -2).reshape(*z.shape[:-3], n_tokens, n_heads * d_k)


def project_out(concat: FloatArray, w_o: FloatArray, b_o: FloatArray | None = None) -> FloatArray:
    """Mix the heads back into d_model columns: output = Concat · W_O (+ b_O).

    [n, h·d_k], [h·d_k, d_model], optional [d_model] -> [n, d_model]
    """
    output = concat @ w_o
    return output if b_o is None else output + b_o


def _by_group(per_head: FloatArray, n_groups: int) -> FloatArray:
    """The h heads' arrays as G groups of h/G, a view: group g's heads share key/value head g.
    [..., h, rows, columns] -> [..., G, h/G, rows, columns]"""
    *batch, h, rows, columns = per_head.shape
    return per_head.reshape(*batch, n_groups, h // n_groups, rows, columns)


class Intermediates(NamedTuple):
    """Every intermediate of the computation, named as the trace names them."""

    Q: FloatArray  # [h, n_q, d_k]
    K: FloatArray  # [G, n_k, d_k]
    V: FloatArray  # [G, n_k, d_k]
    Q_rotated: FloatArray | None  # [h, n_q, d_k] with rotary positions, else None
    K_rotated: FloatArray | None  # [G, n_k, d_k]
    scores: FloatArray  # [h, n_q, n_k]
    scaled: FloatArray  # [h, n_q, n_k]
    weights: FloatArray  # [h, n_q, n_k]
    Z: FloatArray  # [h, n_q, d_k]
    concat: FloatArray  # [n_q, h·d_k]
    output: FloatArray  # [n_q, d_model]
    # With latent attention (attnviz.latent): the latent c [n, d_c], and the scores and output
    # computed again without expanding K and V (absorbed), to be compared. Else None.
    c: FloatArray | None = None
    scores_absorbed: FloatArray | None = None  # [h, n_q, n_k]
    output_absorbed: FloatArray | None = None  # [n_q, d_model]
    # With a latent's decoupled rotary positions: each head's rotated query part and the one
    # rotated key the heads share.
    Q_R: FloatArray | None = None  # [h, n_q, d_rope]
    K_R: FloatArray | None = None  # [n_k, d_rope]


#: What computes the intermediates from checked inputs: steps() here, kernels.fused_steps, and
#: kernels.rotary_steps with a layer's stored rows (functools.partial).
Steps = Callable[[Checked], Intermediates]

#: What says that X [n, d_model] and the weights overflowed: raises, one sentence.
Overflow = Callable[[FloatArray, AttentionWeights], NoReturn]


def steps(given: Checked) -> Intermediates:
    """The steps in the textbook's order: project, (rotate,) score, scale, (mask,) softmax, weigh
    the values, concatenate, project out. Queries from X; keys and values from the source in
    cross-attention, else from X too.  x: [n_q, d_model]; source: [n_k, d_model] -> Intermediates
    """
    x, w, latent = given.x, given.weights, given.latent
    keys_from = x if given.source.x is None else given.source.x
    q = project(x, w.W_Q, w.b_Q)
    c = None
    if latent is None:
        k, v = project(keys_from, w.W_K, w.b_K), project(keys_from, w.W_V, w.b_V)
    else:  # keys and values from the latent, as a cache holding c would make them
        c = compress(keys_from, latent.W_DKV)
        k, v = expand(c, latent.W_UK), expand(c, latent.W_UV)
    q_rotated = k_rotated = None
    if given.rope is not None:  # positions 0 … n−1 of the sentence
        q_rotated = rotate(q, np.arange(q.shape[1]), given.rope)
        k_rotated = rotate(k, np.arange(k.shape[1]), given.rope)
    scores = attention_scores(
        q if q_rotated is None else q_rotated, k if k_rotated is None else k_rotated
    )
    q_r = k_r = None
    width = given.config.d_k
    if latent is not None and latent.rope is not None:  # DeepSeek's decoupled rotary part
        assert latent.W_QR is not None and latent.W_KR is not None  # shapes_fit checked
        q_r = decoupled_queries(x, latent.W_QR, latent.rope)
        k_r = decoupled_key(keys_from, latent.W_KR, latent.rope)
        # [q_C | q_R]·[k_C | k_R]ᵀ: d_k + d_rope products, so √(d_k + d_rope) keeps the
        # scaled scores' variance as √d_k does the paper's (DeepSeek-V2's softmax_scale).
        scores = scores + rope_scores(q_r, k_r)
        width += latent.d_rope
    scaled = scale_scores(scores, width)
    weights = softmax(scaled if given.mask is None else mask_scores(scaled, given.mask))
    z = weigh_values(weights, v)
    concat = concat_heads(z)
    output = project_out(concat, w.W_O, w.b_O)
    computed = Intermediates(
        q, k, v, q_rotated, k_rotated, scores, scaled, weights, z, concat, output
    )
    if latent is None or c is None:
        return computed
    absorbed = absorbed_scores(q, c, latent.W_UK)  # the content part only: see attnviz.latent
    return computed._replace(
        c=c,
        scores_absorbed=absorbed
        if q_r is None or k_r is None
        else absorbed + rope_scores(q_r, k_r),
        output_absorbed=absorbed_output(weights, c, latent.W_UV, w.W_O),
        Q_R=q_r,
        K_R=k_r,
    )


def multi_head_attention(
    tokens: Sequence[str],
    x: FloatArray,
    weights: AttentionWeights,
    *,
    provenance: Provenance | None = None,
    config: AttentionConfig | None = None,
    mask: np.ndarray | None = None,
    source_tokens: Sequence[str] | None = None,
    source_x: FloatArray | None = None,
    positional_encoding: FloatArray | None = None,
    source_positional_encoding: FloatArray | None = None,
    rope: Rope | None = None,
    latent: LatentWeights | None = None,
) -> AttentionTrace:
    """Run every step of multi-head attention on X and keep each intermediate, for the random
    layer, cross-attention, and any layer a Python user gives.
    tokens: [n]; x: [n, d_model]; weights: W_Q [h, d_model, d_k], W_K, W_V [G, d_model, d_k]
    (G = h but in grouped-query attention), W_O [h·d_k, d_model], and in a pretrained layer the
    biases b_Q [h, d_k], b_K, b_V [G, d_k], b_O [d_model]. rope: rotary positions (see above).
    latent: keys and values made from one latent c = X·W_DKV (attnviz.latent); the trace's
    W_K, W_V are then the products W_DKV·W_UK, W_DKV·W_UV.
    mask: optional [n, n] bool, True where query i may attend to key j (causal, padding); the
    others get −∞ before the softmax. Every row must allow at least one key.
    With source_tokens and source_x [n_source, d_model] it is cross-attention (encoder–decoder):
    queries from X (the target), keys and values from source_x, so Q = X·W_Q but K = S·W_K and
    V = S·W_V, and the weights are [h, n_target, n_source].
    positional_encoding: PE [n, d_model] (attnviz.positions): x then holds the token embeddings
    E and attention runs on X = E + PE (Vaswani et al. §3.5); the trace keeps E, PE and X. In
    cross-attention source_positional_encoding [n_source, d_model] is added to source_x alike.
    The provenance must say so (embeddings.positions), as the default one then does.
    provenance: how X and the weights were made; by default X "given", the weights' own origin.
    config: the sizes, checked against the weights; by default taken from them.
    Computed in float32 when X and the weights are float32 (a checkpoint's precision), else in
    float64. Returns an AttentionTrace with Q, K, V, scores, scaled, weights, Z [h, …], concat,
    output.
    """
    options = AttentionOptions(
        provenance,
        config,
        mask,
        source_tokens,
        source_x,
        positional_encoding,
        source_positional_encoding,
        rope,
        latent,
    )
    return traced(steps, tokens, x, weights, options)


def traced(
    compute: Steps,
    tokens: Sequence[str],
    x: FloatArray,
    weights: AttentionWeights,
    options: AttentionOptions,
    *,
    overflowed: Overflow = overflow,
    budgeted: bool = False,
) -> AttentionTrace:
    """The one place an AttentionTrace is assembled: the inputs checked (attention_inputs:
    their kinds and shapes, and the trace's memory before any of it is computed, unless
    ``budgeted``: a model's run, whose every layer was estimated at once), the intermediates
    computed by ``compute`` (steps() here; in model mode kernels.fused_steps, or
    kernels.rotary_steps for a Llama-family layer), their numbers checked finite, said in one
    sentence by ``overflowed`` if not (a model names the layer), and every array kept read-only
    (copied only when the caller could still change it)."""
    given = checked_inputs(tokens, x, weights, options, budgeted=budgeted)
    # Overflow is found below and said in one sentence, not as numpy's warnings.
    with np.errstate(over="ignore", invalid="ignore"):
        computed = compute(given)
    if not (np.isfinite(computed.scores).all() and np.isfinite(computed.output).all()):
        overflowed(given.x, weights)
    latent = given.latent
    return AttentionTrace(
        tokens=given.tokens,
        X=frozen_array(given.x),
        W_Q=frozen_array(weights.W_Q),
        W_K=frozen_array(given.weights.W_K),  # a latent layer's: W_DKV·W_UK
        W_V=frozen_array(given.weights.W_V),
        W_O=frozen_array(weights.W_O),
        **_read_only(computed),
        config=given.config,
        provenance=given.provenance,
        **cast(dict[str, Any], {key: frozen_or_none(getattr(weights, key)) for key in BIAS_KEYS}),
        mask=None if given.mask is None else frozen_mask(given.mask),
        source_tokens=given.source_tokens,
        X_source=frozen_or_none(given.source.x),
        E=frozen_or_none(given.embeddings),
        PE=frozen_or_none(given.positional_encoding),
        E_source=frozen_or_none(given.source.embeddings),
        PE_source=frozen_or_none(given.source.positional_encoding),
        rope=given.rope,
        W_DKV=None if latent is None else frozen_array(latent.W_DKV),
        W_UK=None if latent is None else frozen_array(latent.W_UK),
        W_UV=None if latent is None else frozen_array(latent.W_UV),
        W_QR=frozen_or_none(None if latent is None else latent.W_QR),
        W_KR=frozen_or_none(None if latent is None else latent.W_KR),
    )


def _read_only(computed: Intermediates) -> dict[str, Any]:
    """The intermediates as the trace's fields, read-only views (nobody else holds them)."""
    return {
        key: None if value is None else frozen_array(value, copy=False)
        for key, value in computed._asdict().items()
    }
