"""A tiny attention-only transformer, forward and backward, on a batch of sentences.

    X_0 = E[ids] + P[:n]                         token embeddings plus learned positions
    X_l = X_{l−1} + Concat_i(softmax(Q_i·K_iᵀ/√d_k)·V_i)·W_O     for each layer l (no MLP, no
                                                                  LayerNorm: attention only)

and one of three readouts (tasks.Readout): the last layer's scaled scores in the focus row as
the prediction over positions (pointer), X_L at the focus word times W_U over the task's words
(word), or X_L at every position times W_U over the vocabulary (token). The forward pass is
attnviz.attention's own step functions, the ones the lesson shows; the backward pass is
train.backward's, one per step, in reverse order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import (
    attention_scores,
    causal_mask,
    concat_heads,
    mask_scores,
    project,
    project_out,
    scale_scores,
    softmax,
    weigh_values,
)
from attnviz.train import backward
from attnviz.train.tasks import Examples, Readout, Task

Parameters = dict[str, FloatArray]


class Shape(NamedTuple):
    """The sizes of a toy model."""

    vocabulary: int
    outputs: int  # the readout's choices (word: the task's words; token: the vocabulary)
    d_model: int
    n_heads: int
    n_layers: int
    max_positions: int
    causal: bool
    readout: Readout
    position_scale: float = 1.0  # P starts as N(0, scale²): small where order cannot answer

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads


def shape_of(task: Task) -> Shape:
    """The model for ``task``: as many learned positions as its longest example has words, so
    that every position the model accepts is trained."""
    outputs = {Readout.POINTER: 0, Readout.WORD: len(task.classes)}.get(
        task.readout, len(task.vocabulary)
    )
    return Shape(
        len(task.vocabulary),
        outputs,
        task.d_model,
        task.n_heads,
        task.n_layers,
        task.lengths[1],
        task.causal,
        task.readout,
        task.position_scale,
    )


def layer_keys(layer: int) -> tuple[str, str, str, str]:
    """The names of layer ``layer``'s (from 1) matrices in the parameters."""
    return (f"W_Q.{layer}", f"W_K.{layer}", f"W_V.{layer}", f"W_O.{layer}")


def initial_parameters(
    shape: Shape, rng: np.random.Generator, dtype: type = np.float32
) -> Parameters:
    """Small random weights: E, P ~ N(0, 1); every W ~ N(0, 1/fan_in), so X·W keeps X's scale.
    float32 trains twice as fast as float64 and as well; the gradient checks use float64."""
    d, h, d_k = shape.d_model, shape.n_heads, shape.d_k
    parameters = {
        "E": rng.standard_normal((shape.vocabulary, d)),
        "P": shape.position_scale * rng.standard_normal((shape.max_positions, d)),
    }
    for layer in range(1, shape.n_layers + 1):
        q, k, v, o = layer_keys(layer)
        for key in (q, k, v):
            parameters[key] = rng.standard_normal((h, d, d_k)) / math.sqrt(d)
        parameters[o] = rng.standard_normal((h * d_k, d)) / math.sqrt(h * d_k)
    if shape.outputs:
        parameters["W_U"] = rng.standard_normal((d, shape.outputs)) / math.sqrt(d)
    return {key: value.astype(dtype) for key, value in parameters.items()}


class LayerPass(NamedTuple):
    """What one layer computed for a batch, kept for the backward pass and for showing."""

    x: FloatArray  # [B, n, d_model] the layer's input
    q: FloatArray  # [B, h, n, d_k]
    k: FloatArray
    v: FloatArray
    scores: FloatArray  # [B, h, n, n]
    scaled: FloatArray  # [B, h, n, n], −∞ where a causal mask forbids
    weights: FloatArray  # [B, h, n, n]
    z: FloatArray  # [B, h, n, d_k]
    concat: FloatArray  # [B, n, h·d_k]


class Forward(NamedTuple):
    layers: tuple[LayerPass, ...]
    output: FloatArray  # [B, n, d_model] X_L, the last layer's output
    logits: FloatArray  # pointer/word: [B, choices]; token: [B, n, vocabulary]


def forward(
    parameters: Mapping[str, FloatArray],
    shape: Shape,
    ids: np.ndarray,
    query: np.ndarray,
    *,
    lengths: np.ndarray | None = None,
    ablate: Mapping[int, np.ndarray] | None = None,
    positions: np.ndarray | None = None,
    answer_only: bool = False,
) -> Forward:
    """Every layer on a batch.  ids: [B, n] ints; query: [B] the focus positions.

    lengths: [B] the words of each sentence, when sentences of several lengths share the batch
    (ids after a sentence's last word are padding): a key mask keeps every row from reading
    them, so each sentence's numbers are those it has alone.
    ablate: {layer: [B, n] bool} sets that layer's attention output to zero where True, so its
    residual stream carries X_{l−1} unchanged there (to measure which path carries what).
    positions: [B, n] which row of P each word gets (default 0, 1, …, n − 1): shuffled, they
    measure how much the model relies on word order.
    answer_only: the last layer computes only the focus word's row (pointer and word readouts:
    the answer reads nothing else), so its LayerPass and ``output`` hold one row, [B, h, 1, …]
    and [B, 1, d_model]: the same answers for a third less work, where only they are wanted.
    """
    n = ids.shape[1]
    x = parameters["E"][ids] + parameters["P"][np.arange(n) if positions is None else positions]
    mask = sentence_mask(n, lengths, causal=shape.causal)
    rows = np.arange(len(query))
    passes = []
    for layer in range(1, shape.n_layers + 1):
        # The focus rows alone: q_i and everything after it depend on row i only (and on
        # every key and value), so the answer is the same as with every row computed.
        focus = answer_only and layer == shape.n_layers and shape.readout is not Readout.TOKEN
        w_q, w_k, w_v, w_o = (parameters[key] for key in layer_keys(layer))
        q = _projected(x[rows, query][:, np.newaxis] if focus else x, w_q)
        k, v = (_projected(x, w) for w in (w_k, w_v))
        scores = attention_scores(q, k)
        scaled = scale_scores(scores, shape.d_k)
        if mask is not None:
            scaled = mask_scores(scaled, _focus_mask(mask, rows, query, n) if focus else mask)
        weights = softmax(scaled)
        z = weigh_values(weights, v)
        concat = concat_heads(z)
        output = project_out(concat, w_o)
        if ablate is not None and layer in ablate:
            zeroed = ablate[layer][rows, query][:, np.newaxis] if focus else ablate[layer]
            output = np.where(zeroed[..., np.newaxis], 0.0, output)
        passes.append(LayerPass(x, q, k, v, scores, scaled, weights, z, concat))
        x = (x[rows, query][:, np.newaxis] if focus else x) + output
    last_rows = (
        np.zeros_like(query) if answer_only and shape.readout is not Readout.TOKEN else query
    )
    return Forward(tuple(passes), x, _logits(parameters, shape, passes[-1], x, last_rows))


def _focus_mask(mask: np.ndarray, rows: np.ndarray, query: np.ndarray, n: int) -> np.ndarray:
    """The focus rows of a key mask: [n, n], [B, 1, 1, n] or [B, 1, n, n] -> [B, 1, 1, n]."""
    batch = len(query)
    full = np.broadcast_to(mask, (batch, 1, n, n)) if mask.ndim < 4 else mask
    if full.shape[2] == 1:  # padding only: the same keys for every row
        return full
    return full[rows, :, query][:, :, np.newaxis, :]


def sentence_mask(n: int, lengths: np.ndarray | None, *, causal: bool) -> np.ndarray | None:
    """Which keys each row may read: [n, n] (causal), [B, 1, 1, n] (padding) or both combined
    into [B, 1, n, n]; None when every row reads every key.  True = may attend."""
    mask = causal_mask(n) if causal else None
    if lengths is None or bool((lengths >= n).all()):
        return mask
    keys = (np.arange(n)[None, :] < lengths[:, None])[:, None, None, :]  # [B, 1, 1, n]
    return keys if mask is None else keys & mask


def _projected(x: FloatArray, w: FloatArray) -> FloatArray:
    """project() on every sentence at once, as one [B·n, d_model] matrix per head (one matrix
    product, not B small ones).  x: [B, n, d_model]; w: [h, d_model, d_k] -> [B, h, n, d_k]"""
    batch, n, _ = x.shape
    flat = project(x.reshape(batch * n, -1), w)  # [h, B·n, d_k]
    return np.moveaxis(flat.reshape(w.shape[0], batch, n, -1), 0, 1)


def _logits(
    parameters: Mapping[str, FloatArray],
    shape: Shape,
    last: LayerPass,
    output: FloatArray,
    query: np.ndarray,
) -> FloatArray:
    rows = np.arange(len(query))
    logits: FloatArray
    if shape.readout is Readout.POINTER:
        logits = last.scaled[rows, 0, query]  # [B, n]: head 1's scaled scores in the focus row
    elif shape.readout is Readout.WORD:
        logits = output[rows, query] @ parameters["W_U"]
    else:
        logits = output @ parameters["W_U"]
    return logits


def loss_and_gradients(
    parameters: Mapping[str, FloatArray], shape: Shape, batch: Examples
) -> tuple[float, Parameters, Forward]:
    """The mean cross-entropy of the batch's answers and ∂L/∂(every parameter)."""
    run = forward(parameters, shape, batch.ids, batch.query, lengths=batch.lengths)
    loss, d_logits = _readout_loss(run.logits, batch.targets)
    gradients: Parameters = {}
    d_x = np.zeros_like(run.output)
    d_scaled_last = None
    rows = np.arange(len(batch.query))
    if shape.readout is Readout.POINTER:
        d_scaled_last = np.zeros_like(run.layers[-1].scaled)
        d_scaled_last[rows, 0, batch.query] = d_logits
    elif shape.readout is Readout.WORD:
        gradients["W_U"] = run.output[rows, batch.query].T @ d_logits
        d_x[rows, batch.query] = d_logits @ parameters["W_U"].T
    else:
        flat = d_logits.reshape(-1, d_logits.shape[-1])
        gradients["W_U"] = run.output.reshape(-1, shape.d_model).T @ flat
        d_x = d_logits @ parameters["W_U"].T
    for layer in range(shape.n_layers, 0, -1):
        done = layer_backward(parameters, shape, run.layers[layer - 1], layer, d_x, d_scaled_last)
        d_x, layer_gradients = done
        gradients.update(layer_gradients)
        d_scaled_last = None
    d_embeddings, d_positions = backward.embed_backward(batch.ids, d_x, shape.vocabulary)
    gradients["E"] = d_embeddings
    gradients["P"] = np.zeros_like(parameters["P"])
    gradients["P"][: batch.ids.shape[1]] = d_positions
    return loss, gradients, run


def _readout_loss(logits: FloatArray, targets: np.ndarray) -> tuple[float, FloatArray]:
    """Cross-entropy over the answers; a token task's positions without one (−1) count 0."""
    if logits.ndim == 2:
        return backward.cross_entropy(logits, targets)
    flat_logits, flat_targets = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    answered = flat_targets >= 0
    loss, d_answered = backward.cross_entropy(flat_logits[answered], flat_targets[answered])
    d_flat = np.zeros_like(flat_logits)
    d_flat[answered] = d_answered
    return loss, d_flat.reshape(logits.shape)


def layer_backward(
    parameters: Mapping[str, FloatArray],
    shape: Shape,
    layer_pass: LayerPass,
    layer: int,
    d_output: FloatArray,
    d_scaled_extra: FloatArray | None,
) -> tuple[FloatArray, Parameters]:
    """One layer backwards: ∂L/∂X_l (d_output, [B, n, d_model]) -> ∂L/∂X_{l−1} and the
    gradients of W_Q, W_K, W_V, W_O. The residual X_l = X_{l−1} + attention(X_{l−1}) passes
    ∂L/∂X_l straight through as well. ``d_scaled_extra``: the pointer readout's gradient on this
    layer's scaled scores."""
    w_q, w_k, w_v, w_o = (parameters[key] for key in layer_keys(layer))
    q_key, k_key, v_key, o_key = layer_keys(layer)
    d_concat, d_w_o = backward.project_out_backward(layer_pass.concat, w_o, d_output)
    d_z = backward.concat_heads_backward(d_concat, shape.n_heads)
    d_weights, d_v = backward.weigh_values_backward(layer_pass.weights, layer_pass.v, d_z)
    d_scaled = backward.softmax_backward(layer_pass.weights, d_weights)
    if d_scaled_extra is not None:
        d_scaled = d_scaled + d_scaled_extra
    d_scores = backward.scale_scores_backward(d_scaled, shape.d_k)
    d_q, d_k = backward.attention_scores_backward(layer_pass.q, layer_pass.k, d_scores)
    d_x = d_output.copy()
    gradients = {o_key: d_w_o}
    for key, w, d_projected in ((q_key, w_q, d_q), (k_key, w_k, d_k), (v_key, w_v, d_v)):
        d_x_part, gradients[key] = backward.project_backward(layer_pass.x, w, d_projected)
        d_x += d_x_part
    return d_x, gradients


#: Examples per forward pass when a whole set is measured. A pass keeps every intermediate for
#: the backward pass (about 10 KB an example per layer at n = 16, d_model 32), so measuring the
#: 4,814 held-out sentences of coref at once would hold some 100 MB; chunks bound it.
MEASURE_CHUNK = 512


class Measured(NamedTuple):
    """The readout and every layer's weights of a whole set of examples."""

    logits: FloatArray  # pointer/word: [N, choices]; token: [N, n, vocabulary]
    weights: tuple[FloatArray, ...]  # one [N, h, n, n] per layer


def measure(
    parameters: Mapping[str, FloatArray],
    shape: Shape,
    examples: Examples,
    *,
    ids: np.ndarray | None = None,
    ablate: Mapping[int, np.ndarray] | None = None,
    positions: np.ndarray | None = None,
    answer_only: bool = False,
) -> Measured:
    """``forward`` over every example, MEASURE_CHUNK at a time, keeping only the logits and the
    weights.  ids: [N, n] in place of the examples' own (a changed sentence); ablate,
    positions and answer_only as in ``forward``, one row per example (with answer_only the
    last layer's weights are the focus rows alone, [N, h, 1, n]). Each example's numbers are
    its own (the key mask keeps every row to its sentence), so the chunks change no result."""
    ids = examples.ids if ids is None else ids
    logits, weights = [], []
    for start in range(0, len(ids), MEASURE_CHUNK):
        part = slice(start, start + MEASURE_CHUNK)
        run = forward(
            parameters,
            shape,
            ids[part],
            examples.query[part],
            lengths=None if examples.lengths is None else examples.lengths[part],
            ablate=None if ablate is None else {layer: at[part] for layer, at in ablate.items()},
            positions=None if positions is None else positions[part],
            answer_only=answer_only,
        )
        logits.append(run.logits)
        weights.append(tuple(layer_pass.weights for layer_pass in run.layers))
    return Measured(
        np.concatenate(logits),
        tuple(np.concatenate(layer) for layer in zip(*weights, strict=True)),
    )


def accuracy(parameters: Mapping[str, FloatArray], shape: Shape, examples: Examples) -> float:
    """The share of answers the model gets right (argmax of its readout)."""
    right = correct(parameters, shape, examples)
    if right.ndim == 1:
        return float(right.mean())
    return float(right[examples.targets >= 0].mean())


def correct(parameters: Mapping[str, FloatArray], shape: Shape, examples: Examples) -> np.ndarray:
    """Whether each answer is right: [N] (pointer, word) or [N, n] (token: one per position,
    False where there is nothing to answer)."""
    logits = measure(parameters, shape, examples, answer_only=True).logits
    return np.asarray(logits.argmax(axis=-1) == examples.targets)
