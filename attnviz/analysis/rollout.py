"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

From layer 2 on, row i of a layer's weights mixes the layer's inputs, which are already
mixtures of the sentence made by the layers below (and the residual connection keeps part of
each word's own vector). Rollout follows the mixing down to the input words:

    Â_l = ½ · mean_h A_l + ½ · I,   rows renormalised to sum to 1
    R_1 = Â_1,   R_l = Â_l · R_{l−1}

A_l: layer l's weights [h, n, n]; the ½·I stands for the residual connection (x + attention(x)),
with the two paths counted as equal. R_l[i, j] is how much of input word j reaches word i's row
after layer l if mixing were all a layer did: it ignores the value vectors, W_O, the MLPs and
layer norms, so it says where mixing could carry a word, not what the model uses.

Masks: where word i may not attend to itself (a [PAD] query's own, masked, column), the identity
term is left out of that row, so no weight lands on a masked pair; masked pairs stay 0 through
the product, since Â keeps every masked pair at 0 and a causal Â is lower triangular.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.trace import AttentionTrace


def residual_attention(weights: FloatArray, mask: np.ndarray | None = None) -> FloatArray:
    """Â = ½·mean_h A + ½·I, rows renormalised.  [h, n, n], optional [n, n] bool -> [n, n]

    mask: True where query i may attend to key j; the identity is added only where (i, i) may
    be attended. A row of Â sums to 1 whenever the weights' rows do.
    """
    mean = np.asarray(weights, dtype=np.float64).mean(axis=0)  # [n, n]
    n = mean.shape[-1]
    if mean.shape != (n, n):
        raise ValueError(f"rollout needs square weights (self-attention), got {mean.shape}")
    identity = np.eye(n)
    if mask is not None:
        identity *= np.asarray(mask, dtype=bool)
    mixed = 0.5 * mean + 0.5 * identity
    totals = mixed.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        renormalised: FloatArray = mixed / totals
    return renormalised


def rollout(layer_weights: Sequence[FloatArray], mask: np.ndarray | None = None) -> FloatArray:
    """R_l for every layer: R_1 = Â_1, R_l = Â_l · R_{l−1}.

    layer_weights: L arrays [h, n, n] (layer 1 first), or one array [L, h, n, n]; mask: [n, n]
    bool shared by every layer, or None -> [L, n, n]. A single layer gives [1, n, n] = Â_1.
    """
    if len(layer_weights) == 0:
        raise ValueError("rollout needs at least one layer")
    rolled = []
    current: FloatArray | None = None
    for weights in layer_weights:
        mixed = residual_attention(weights, mask)
        current = mixed if current is None else mixed @ current
        rolled.append(current)
    return np.stack(rolled)


def trace_rollout(layers: Sequence[AttentionTrace]) -> FloatArray:
    """Rollout of a model's layers (``Explanation.layers``), their own mask.  -> [L, n, n]

    ValueError when the layers do not share their tokens or are cross-attention.
    """
    if not layers:
        raise ValueError("rollout needs at least one layer")
    first = layers[0]
    if any(layer.is_cross for layer in layers):
        raise ValueError("rollout follows self-attention; cross-attention mixes another sentence")
    if any(layer.tokens != first.tokens for layer in layers):
        raise ValueError("rollout needs layers of one sentence: their tokens differ")
    return rollout([layer.weights for layer in layers], first.mask)
