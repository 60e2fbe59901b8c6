"""The backward pass of attention, one pure function per forward step of attnviz.attention, in
the same order, each the chain rule for that one step (as micrograd puts each operation's
backward beside its forward).

Arrays carry a leading batch axis B (the sentences trained on together): X [B, n, d_model],
Q, K, V [B, h, n, d_k], scores and weights [B, h, n, n]. ``d_name`` is ∂L/∂name, the gradient of
the loss L with respect to that array, of the same shape. A parameter's gradient sums over the
batch, since one W serves every sentence.
"""

from __future__ import annotations

import math

import numpy as np

from attnviz.arrays import FloatArray


def cross_entropy(logits: FloatArray, targets: np.ndarray) -> tuple[float, FloatArray]:
    """The mean of −log p(target) under softmax(logits), and its gradient.

    L = −(1/N)·Σ log softmax(ℓ)_target, so ∂L/∂ℓ = (softmax(ℓ) − onehot(target)) / N: the
    probability given to every wrong answer pushes its logit down, and the right one's shortfall
    (1 − p) pushes it up.
    logits: [N, classes] (−∞ for a class that may not be chosen); targets: [N] ints
    -> (L, ∂L/∂logits [N, classes])
    """
    n = len(targets)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_total = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    log_p = shifted - log_total
    loss = float(-log_p[np.arange(n), targets].mean())
    d_logits = np.exp(log_p)
    d_logits[np.arange(n), targets] -= 1.0
    return loss, d_logits / n


def project_out_backward(
    concat: FloatArray, w_o: FloatArray, d_output: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """output = Concat · W_O:  ∂L/∂Concat = ∂L/∂output · W_Oᵀ,  ∂L/∂W_O = Σ_B Concatᵀ · ∂L/∂output.

    concat: [B, n, h·d_k]; w_o: [h·d_k, d_model]; d_output: [B, n, d_model]
    -> (∂L/∂Concat [B, n, h·d_k], ∂L/∂W_O [h·d_k, d_model])
    """
    d_concat = np.matmul(d_output, w_o.T)
    d_w_o = concat.reshape(-1, concat.shape[-1]).T @ d_output.reshape(-1, d_output.shape[-1])
    return d_concat, d_w_o


def concat_heads_backward(d_concat: FloatArray, n_heads: int) -> FloatArray:
    """Concatenation only moves numbers: its backward moves the gradients back to their head.

    d_concat: [B, n, h·d_k] -> ∂L/∂Z [B, h, n, d_k]
    """
    *batch, n_tokens, width = d_concat.shape
    per_head = d_concat.reshape(*batch, n_tokens, n_heads, width // n_heads)
    return np.moveaxis(per_head, -2, -3)


def weigh_values_backward(
    weights: FloatArray, v: FloatArray, d_z: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Z = weights · V:  ∂L/∂weights = ∂L/∂Z · Vᵀ  and  ∂L/∂V = weightsᵀ · ∂L/∂Z.

    ∂L/∂w_ij = ∂L/∂z_i · v_j: a weight matters as much as its value vector agrees with where the
    loss wants z_i to move.
    weights: [B, h, n_q, n_k]; v: [B, h, n_k, d_k]; d_z: [B, h, n_q, d_k]
    -> (∂L/∂weights [B, h, n_q, n_k], ∂L/∂V [B, h, n_k, d_k])
    """
    d_weights = np.matmul(d_z, np.swapaxes(v, -1, -2))
    d_v = np.matmul(np.swapaxes(weights, -1, -2), d_z)
    return d_weights, d_v


def softmax_backward(weights: FloatArray, d_weights: FloatArray) -> FloatArray:
    """w = softmax(s) over each row:  ∂L/∂s_ij = w_ij · (∂L/∂w_ij − Σ_k w_ik · ∂L/∂w_ik).

    Raising one score raises its own weight and lowers every other weight of the row (they
    still sum to 1), hence the row's weighted mean subtracted. A masked key has w = 0 and so
    gets no gradient, and a row that is almost one-hot (w near 0 or 1 everywhere) passes almost
    none back: why unscaled scores, which saturate the softmax, train badly.
    weights, d_weights: [..., n_k] -> ∂L/∂scores [..., n_k]
    """
    d_scores: FloatArray = weights * (d_weights - (weights * d_weights).sum(axis=-1, keepdims=True))
    return d_scores


def scale_scores_backward(d_scaled: FloatArray, d_k: int) -> FloatArray:
    """scaled = scores / √d_k:  ∂L/∂scores = ∂L/∂scaled / √d_k.  [..., n_k] -> [..., n_k]"""
    return d_scaled / math.sqrt(d_k)


def attention_scores_backward(
    q: FloatArray, k: FloatArray, d_scores: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """scores = Q · Kᵀ:  ∂L/∂Q = ∂L/∂scores · K  and  ∂L/∂K = ∂L/∂scoresᵀ · Q.

    q: [B, h, n_q, d_k]; k: [B, h, n_k, d_k]; d_scores: [B, h, n_q, n_k]
    -> (∂L/∂Q [B, h, n_q, d_k], ∂L/∂K [B, h, n_k, d_k])
    """
    return np.matmul(d_scores, k), np.matmul(np.swapaxes(d_scores, -1, -2), q)


def project_backward(
    x: FloatArray, w: FloatArray, d_projected: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Q_i = X · W_Q[i] for each head i:  ∂L/∂X = Σ_i ∂L/∂Q_i · W_Q[i]ᵀ  and
    ∂L/∂W_Q[i] = Σ_B Xᵀ · ∂L/∂Q_i.

    x: [B, n, d_model]; w: [h, d_model, d_k]; d_projected: [B, h, n, d_k]
    -> (∂L/∂X [B, n, d_model], ∂L/∂W [h, d_model, d_k])
    """
    # Each head's [B·n, d_k] block in one matrix product (not B small ones).
    n_heads, d_k = d_projected.shape[-3], d_projected.shape[-1]
    per_head = np.moveaxis(d_projected, -3, 0).reshape(n_heads, -1, d_k)  # [h, B·n, d_k]
    d_x = np.matmul(per_head, np.swapaxes(w, -1, -2)).sum(axis=0).reshape(x.shape)
    d_w = np.matmul(x.reshape(-1, x.shape[-1]).T, per_head)
    return d_x, d_w


def embed_backward(
    ids: np.ndarray, d_x: FloatArray, vocabulary: int
) -> tuple[FloatArray, FloatArray]:
    """X = E[ids] + P[:n] (token embeddings plus learned positions): each row of E collects the
    gradients of every place its word appears; each position's row of P, of every sentence.

    ids: [B, n] ints; d_x: [B, n, d_model] -> (∂L/∂E [vocabulary, d_model], ∂L/∂P[:n] [n, d_model])
    """
    flat_ids = ids.reshape(-1)
    one_hot = np.zeros((flat_ids.size, vocabulary), dtype=d_x.dtype)
    one_hot[np.arange(flat_ids.size), flat_ids] = 1.0
    # Σ over every place a word appears, as one product: one_hotᵀ [V, B·n] · ∂L/∂X [B·n, d].
    d_embeddings = one_hot.T @ d_x.reshape(-1, d_x.shape[-1])
    return d_embeddings, d_x.sum(axis=0)
