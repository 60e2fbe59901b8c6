"""Multi-head latent attention (DeepSeek-AI, "DeepSeek-V2", 2024, §2.1), its numbers worked:
keys and values made from one shared latent per token instead of being projected apart.

    c = X · W_DKV                     [n, d_c]   one latent row per token, shared by every head
    K_i = c · W_UK[i],  V_i = c · W_UV[i]         [n, d_k] each head's keys and values
    Q_i = X · W_Q[i]                               as in the paper's attention

A decoder's cache then holds c (n·d_c numbers a layer) instead of every head's K and V
(2·n·h·d_k). The trick that makes it pay at inference is absorption: a score is

    q · kᵀ = q · (c_j · W_UK[i])ᵀ = (q · W_UK[i]ᵀ) · c_jᵀ

so the query is carried into the latent's d_c coordinates once and scored against the cached c
directly; K is never expanded. Likewise on the value side Z_i · W_O^(i) = weights_i · c ·
(W_UV[i] · W_O^(i)), W_O^(i) head i's rows of W_O. Both forms are one sum in another order, equal
within float error.

DeepSeek also compresses the queries (W_DQ, W_UQ), to save activation memory in training, not
cache; attnviz's latent layer does not: Q = X·W_Q as in the paper.

Rotary positions cannot go into k_C = c·W_UK: the turn R_j of key j would sit between W_UK and
c_j, q·(c_j·W_UK·R_j)ᵀ, and W_UK could no longer be carried into the query once for every key.
DeepSeek-V2 (§2.1.3) therefore decouples them: each head's query gets a small rotated part and
all heads share one rotated key, d_rope wide, cached beside c:

    q_R,i = RoPE(X · W_QR[i])    [n, d_rope]    k_R = RoPE(X · W_KR)    [n, d_rope]
    score_i = (q_C,i · k_C,iᵀ + q_R,i · k_Rᵀ) / √(d_k + d_rope)

q_C = X·W_Q[i] and k_C = c·W_UK[i] being the content parts above: the score is the dot product
of the concatenations [q_C | q_R]·[k_C | k_R]ᵀ, d_k + d_rope products, hence DeepSeek's divisor
√(d_k + d_rope) (its code's softmax_scale = (qk_nope_head_dim + qk_rope_head_dim)^−½). The
content part is absorbed as above; the RoPE part is computed as it stands. With
``--positions rope`` attnviz draws W_QR and W_KR; without it d_rope = 0. Pure numpy, as
attnviz.attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnviz import limits
from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, option, shown_value
from attnviz.positions import Rope, rotate

#: DeepSeek-V2's sizes, which the lesson's cache sentence compares with (§2.1.4; its config:
#: 128 heads, qk_nope_head_dim 128, kv_lora_rank 512, qk_rope_head_dim 64).
DEEPSEEK_V2 = {"n_heads": 128, "d_k": 128, "d_c": 512, "d_rope": 64}


@dataclass(frozen=True)
class LatentWeights:
    """The matrices of latent attention's keys and values.

    W_DKV [d_model, d_c] compresses X into the latent; W_UK, W_UV [h, d_c, d_k] expand the
    latent into each head's keys and values. With decoupled rotary positions, W_QR
    [h, d_model, d_rope] makes each head's rotated query part and W_KR [d_model, d_rope] the one
    rotated key all heads share (``rope`` says how they turn); None without.
    """

    W_DKV: FloatArray  # [d_model, d_c]
    W_UK: FloatArray  # [h, d_c, d_k]
    W_UV: FloatArray  # [h, d_c, d_k]
    W_QR: FloatArray | None = None  # [h, d_model, d_rope]
    W_KR: FloatArray | None = None  # [d_model, d_rope]
    rope: Rope | None = None  # how q_R and k_R turn, with W_QR and W_KR

    @property
    def d_c(self) -> int:
        return int(self.W_DKV.shape[1])

    @property
    def d_rope(self) -> int:
        """The width of the decoupled rotated parts; 0 without them."""
        return 0 if self.W_KR is None else int(self.W_KR.shape[1])

    def shapes_fit(self, n_heads: int, d_model: int, d_k: int) -> bool:
        """Whether these matrices fit a layer of ``n_heads`` heads, ``d_model``, ``d_k``."""
        up = (n_heads, self.d_c, d_k)
        fits = (
            self.W_DKV.shape == (d_model, self.d_c)
            and self.W_UK.shape == up
            and self.W_UV.shape == up
        )
        if self.W_QR is None and self.W_KR is None:
            return fits and self.rope is None
        d_rope = self.d_rope
        return (
            fits
            and self.W_QR is not None
            and self.W_KR is not None
            and self.rope is not None
            and d_rope % 2 == 0
            and self.W_QR.shape == (n_heads, d_model, d_rope)
            and self.W_KR.shape == (d_model, d_rope)
        )


def rope_width(d_k: int) -> int:
    """The decoupled RoPE key's width: d_k/2 as in DeepSeek-V2 (d_rope = 64 for d_k = 128),
    rounded up to an even number, since RoPE turns coordinates in pairs: 2·⌈d_k/4⌉."""
    return 2 * -(-d_k // 4)


def check_latent_width(d_c: object, n_heads: int, d_k: int) -> int:
    """d_c, a whole number from 1 to 2·h·d_k − 1: at 2·h·d_k the latent is as wide as every
    head's K and V together and compresses nothing."""
    most = 2 * n_heads * d_k - 1
    if isinstance(d_c, bool) or not isinstance(d_c, int) or not 1 <= d_c <= most:
        raise AttnvizError(
            f"The latent's width d_c ({option('latent')}) must be a whole number from 1 to "
            f"2·h·d_k − 1 = {most} (h = {n_heads} heads of d_k = {d_k}), got "
            f"{shown_value(d_c)}; e.g. {option('latent', max(1, min(most, 2 * d_k)))}."
        )
    return d_c


def random_latent(
    n_heads: int, d_model: int, d_k: int, d_c: int, rng: np.random.Generator, d_rope: int = 0
) -> LatentWeights:
    """Draw W_DKV [d_model, d_c] from N(0, 1/d_model), so that c keeps unit-variance X's
    variance; W_UK [h, d_c, d_k] from N(0, 2/d_c) and W_UV from N(0, 1/d_c), so that K and V
    have the variances of attnviz's random W_K and W_V (2 and 1; attnviz.weights). With
    ``d_rope`` > 0 (even), then W_QR [h, d_model, d_rope] and W_KR [d_model, d_rope] from
    N(0, 2/d_model), as W_Q and W_K: q_R and k_R components of variance 2 as well."""
    w_dkv = rng.normal(0.0, 1.0 / math.sqrt(d_model), size=(d_model, d_c))
    w_uk = rng.normal(0.0, math.sqrt(2.0 / d_c), size=(n_heads, d_c, d_k))
    w_uv = rng.normal(0.0, 1.0 / math.sqrt(d_c), size=(n_heads, d_c, d_k))
    if d_rope == 0:
        return LatentWeights(w_dkv, w_uk, w_uv)
    w_qr = rng.normal(0.0, math.sqrt(2.0 / d_model), size=(n_heads, d_model, d_rope))
    w_kr = rng.normal(0.0, math.sqrt(2.0 / d_model), size=(d_model, d_rope))
    return LatentWeights(w_dkv, w_uk, w_uv, w_qr, w_kr, Rope())


def compress(x: FloatArray, w_dkv: FloatArray) -> FloatArray:
    """The latent: c = X · W_DKV.  [n, d_model], [d_model, d_c] -> [n, d_c]"""
    result: FloatArray = x @ w_dkv
    return result


def expand(c: FloatArray, w_up: FloatArray) -> FloatArray:
    """Each head's keys (or values) from the latent: K_i = c · W_UK[i].
    [n, d_c], [h, d_c, d_k] -> [h, n, d_k]"""
    result: FloatArray = c @ w_up
    return result


def effective_projection(w_dkv: FloatArray, w_up: FloatArray) -> FloatArray:
    """The one matrix that X is multiplied by: K_i = (X·W_DKV)·W_UK[i] = X·(W_DKV·W_UK[i]).
    [d_model, d_c], [h, d_c, d_k] -> [h, d_model, d_k]"""
    result: FloatArray = w_dkv @ w_up
    return result


def absorbed_queries(q: FloatArray, w_uk: FloatArray) -> FloatArray:
    """The queries carried into the latent's coordinates: q̃_i = q_i · W_UK[i]ᵀ.
    [h, n_q, d_k], [h, d_c, d_k] -> [h, n_q, d_c]"""
    result: FloatArray = q @ np.swapaxes(w_uk, -1, -2)
    return result


def absorbed_scores(q: FloatArray, c: FloatArray, w_uk: FloatArray) -> FloatArray:
    """Raw scores without expanding K: (q_i · W_UK[i]ᵀ) · c_jᵀ, equal to q_i · k_jᵀ.
    [h, n_q, d_k], [n_k, d_c], [h, d_c, d_k] -> [h, n_q, n_k]"""
    result: FloatArray = absorbed_queries(q, w_uk) @ c.T
    return result


def absorbed_output(
    weights: FloatArray, c: FloatArray, w_uv: FloatArray, w_o: FloatArray
) -> FloatArray:
    """The layer's output without expanding V: Σ_i weights_i · c · (W_UV[i] · W_O^(i)), W_O^(i)
    head i's d_k rows of W_O; equal to Concat(weights_i · V_i) · W_O.
    [h, n_q, n_k], [n_k, d_c], [h, d_c, d_k], [h·d_k, d_model] -> [n_q, d_model]"""
    n_heads, _, d_k = w_uv.shape
    per_head_o = w_o.reshape(n_heads, d_k, w_o.shape[-1])  # [h, d_k, d_model]
    result: FloatArray = ((weights @ c) @ (w_uv @ per_head_o)).sum(axis=0)
    return result


def decoupled_queries(x: FloatArray, w_qr: FloatArray, rope: Rope) -> FloatArray:
    """Each head's rotated query part: q_R,i = RoPE(X · W_QR[i]) at positions 0 … n−1.
    [n, d_model], [h, d_model, d_rope] -> [h, n, d_rope]"""
    return rotate(x @ w_qr, np.arange(len(x)), rope)


def decoupled_key(x: FloatArray, w_kr: FloatArray, rope: Rope) -> FloatArray:
    """The one rotated key every head shares: k_R = RoPE(X · W_KR) at positions 0 … n−1.
    [n, d_model], [d_model, d_rope] -> [n, d_rope]"""
    return rotate(x @ w_kr, np.arange(len(x)), rope)


def rope_scores(q_r: FloatArray, k_r: FloatArray) -> FloatArray:
    """The RoPE part of every head's scores, q_R,i · k_Rᵀ, k_R shared by the heads.
    [h, n_q, d_rope], [n_k, d_rope] -> [h, n_q, n_k]"""
    result: FloatArray = q_r @ k_r.T
    return result


# -- what the cache holds, per layer ------------------------------------------------------------


def latent_cache_numbers(n_tokens: int, d_c: int, d_rope: int = 0) -> int:
    """Numbers a layer caches with latent attention: n·(d_c + d_rope)."""
    return n_tokens * (d_c + d_rope)


def key_value_cache_numbers(n_tokens: int, n_kv_heads: int, d_k: int) -> int:
    """Numbers a layer caches keeping K and V: 2·n·G·d_k (G = h in the paper's attention)."""
    return 2 * n_tokens * n_kv_heads * d_k


def check_latent_trace(
    n_queries: int, n_keys: int, n_heads: int, d_model: int, d_c: int, d_rope: int = 0
) -> None:
    """Refuse, before any of it is computed, a latent layer's trace that would take more than
    limits.MAX_TRACE_BYTES: the paper's arrays (limits.trace_numbers) and the latent's, c
    [n_k, d_c], W_DKV [d_model, d_c], W_UK and W_UV [h, d_c, d_k] (h·d_k = d_model),
    scores_absorbed [h, n_q, n_k] and output_absorbed [n_q, d_model]; with decoupled rotary
    positions W_QR [h, d_model, d_rope], W_KR [d_model, d_rope], Q_R [h, n_q, d_rope] and
    K_R [n_k, d_rope]."""
    latent = n_keys * d_c + 3 * d_model * d_c + n_heads * n_queries * n_keys + n_queries * d_model
    latent += (n_heads + 1) * d_model * d_rope + (n_heads * n_queries + n_keys) * d_rope
    needed = limits.trace_numbers(n_queries, n_keys, d_model, n_heads) + latent
    if needed * limits.BYTES_PER_NUMBER > limits.MAX_TRACE_BYTES:
        raise AttnvizError(
            f"With a latent of d_c = {d_c}, {n_heads} heads on {n_queries} tokens (d_model "
            f"{d_model}) would take about {limits.size_text(needed * limits.BYTES_PER_NUMBER)} "
            "of memory, the absorbed scores a fourth matrix of heads × tokens²; attnviz computes "
            f"at most {limits.size_text(limits.MAX_TRACE_BYTES)}: use fewer heads, a smaller "
            f"{option('latent')} or a shorter sentence."
        )
