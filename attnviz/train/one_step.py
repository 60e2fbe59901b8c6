"""One gradient step of the coref model on the seeds' sentence, with every number kept.

The sentence is tasks.TIRED, "the animal didn't cross the street because it was too tired"; the
loss is L = −log p(referent) under the model's readout at "it" (pointer: the last layer's scaled
scores in the row of "it" are the logits over positions; word: X_L[it]·W_U over the 16 nouns).
The backward pass is train.backward's functions, one per forward step, called in reverse order
as network.loss_and_gradients calls them, but with each intermediate gradient kept so that a
lesson can show it. The update is plain gradient descent, W ← W − lr·∂L/∂W, not the Adam that
training uses, so that each new weight can be checked by hand from its gradient.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError
from attnviz.train import backward, network
from attnviz.train.coref import TIRED
from attnviz.train.tasks import Examples, Readout, coref

#: The learning rate of the lesson's one step of plain gradient descent. The initial model's
#: softmax rows are nearly one-hot and its gradients reach several units, so a larger step
#: overshoots: at 0.1 the word readout's loss for seed 3 rises from 4.15 to 6.14, at 1 the
#: pointer's for seed 0 from 6.39 to 845. At 0.001 the loss falls for both readouts and seeds
#: 0–5, and for seed 0 the weight of "animal" in the row of "it" rises with both.
STEP_LEARNING_RATE = 0.001
FOCUS = "it"
REFERENT = "animal"


@dataclass(frozen=True, eq=False)
class LayerGradients:
    """One layer (of one sentence) backwards: what it computed and ∂L/∂ each of its arrays.

    ``d_name`` is ∂L/∂name, the same shape as name. n: the sentence's words; h: heads.
    """

    layer: int  # from 1
    x: FloatArray  # [n, d_model] the layer's input X_{l−1}
    q: FloatArray  # [h, n, d_k]
    k: FloatArray  # [h, n, d_k]
    v: FloatArray  # [h, n, d_k]
    weights: FloatArray  # [h, n, n]
    concat: FloatArray  # [n, h·d_k]
    d_output: FloatArray  # [n, d_model] ∂L/∂X_l, which is also ∂L/∂(this layer's output)
    d_concat: FloatArray  # [n, h·d_k] = ∂L/∂output · W_Oᵀ
    d_w_o: FloatArray  # [h·d_k, d_model] = Concatᵀ · ∂L/∂output
    d_z: FloatArray  # [h, n, d_k]
    d_weights: FloatArray  # [h, n, n] = ∂L/∂Z · Vᵀ
    d_v: FloatArray  # [h, n, d_k] = weightsᵀ · ∂L/∂Z
    d_softmax: FloatArray  # [h, n, n] the softmax backward's part of ∂L/∂scaled
    d_readout: FloatArray | None  # [h, n, n] the pointer readout's part (last layer only)
    d_scaled: FloatArray  # [h, n, n] both parts
    d_scores: FloatArray  # [h, n, n] = ∂L/∂scaled / √d_k
    d_q: FloatArray  # [h, n, d_k] = ∂L/∂scores · K
    d_k: FloatArray  # [h, n, d_k] = ∂L/∂scoresᵀ · Q
    d_w_q: FloatArray  # [h, d_model, d_k] = Xᵀ · ∂L/∂Q
    d_w_k: FloatArray  # [h, d_model, d_k] = Xᵀ · ∂L/∂K
    d_w_v: FloatArray  # [h, d_model, d_k] = Xᵀ · ∂L/∂V
    d_x: FloatArray  # [n, d_model] ∂L/∂X_{l−1}: the residual's ∂L/∂X_l plus the projections'


@dataclass(frozen=True, eq=False)
class GradientStep:
    """One step of gradient descent on one sentence, forward, backward and update."""

    readout: Readout
    seed: int | None  # the seed of the initial weights; None for weights given
    learning_rate: float
    shape: network.Shape
    words: tuple[str, ...]
    focus: int  # the position of "it"
    referent: int  # the position of "animal"
    choices: tuple[str, ...]  # what the logits are over: the words (pointer) or the nouns (word)
    target: int  # the referent's index among the choices
    parameters: network.Parameters  # before the step, float64
    gradients: network.Parameters  # ∂L/∂(every parameter)
    updated: network.Parameters  # parameters − learning_rate · gradients
    before: network.Forward
    after: network.Forward
    loss: float
    loss_after: float
    probabilities: FloatArray  # [choices] softmax(logits)
    d_logits: FloatArray  # [choices] = probabilities − onehot(target)
    d_output_focus: FloatArray | None  # word: [d_model] ∂L/∂X_L[it] = ∂L/∂logits · W_Uᵀ
    layers: tuple[LayerGradients, ...]  # layer 1 first

    @property
    def logits(self) -> FloatArray:
        logits: FloatArray = self.before.logits[0]
        return logits

    @property
    def probabilities_after(self) -> FloatArray:
        return _softmax(self.after.logits[0])

    @property
    def d_model(self) -> int:
        return self.shape.d_model

    def focus_row(self, run: network.Forward, layer: int | None = None) -> FloatArray:
        """Head 1's weights in the row of "it" in ``layer`` (from 1; the last by default).  [n]"""
        index = self.shape.n_layers if layer is None else layer
        row: FloatArray = run.layers[index - 1].weights[0, 0, self.focus]
        return row

    @property
    def referent_weight_before(self) -> float:
        return float(self.focus_row(self.before)[self.referent])

    @property
    def referent_weight_after(self) -> float:
        return float(self.focus_row(self.after)[self.referent])


def initial_parameters(readout: Readout, seed: int) -> network.Parameters:
    """The weights ``attnviz train coref`` starts from with this seed (Trainer's draws), in
    float64 so that the lesson's arithmetic is exact to the digits it prints."""
    shape = network.shape_of(coref(readout))
    drawn = network.initial_parameters(shape, np.random.default_rng(seed))
    return {key: value.astype(np.float64) for key, value in drawn.items()}


def gradient_step(
    *,
    readout: Readout = Readout.POINTER,
    seed: int = 0,
    learning_rate: float = STEP_LEARNING_RATE,
    parameters: Mapping[str, FloatArray] | None = None,
) -> GradientStep:
    """One step of plain gradient descent on the seeds' sentence, every quantity kept.

    parameters: a coref model's weights for this readout (a trained model's); None: the initial
    weights for ``seed``.
    """
    if not (math.isfinite(learning_rate) and learning_rate > 0):
        raise AttnvizError(f"the learning rate must be a positive number, got {learning_rate}.")
    if seed < 0:
        raise AttnvizError(f"the seed must be 0 or more, got {seed}.")
    task = coref(readout)
    vocabulary, classes, shape = task.vocabulary, task.classes, network.shape_of(task)
    if parameters is None:
        start = initial_parameters(readout, seed)
    else:
        start = _checked(parameters, initial_parameters(readout, 0), readout)
    words = tuple(TIRED.split())
    focus, referent = words.index(FOCUS), words.index(REFERENT)
    choices = words if readout is Readout.POINTER else classes
    target = referent if readout is Readout.POINTER else classes.index(REFERENT)
    sentence = Examples(
        np.array([[vocabulary.index(word) for word in words]]),
        np.array([target]),
        np.array([focus]),
    )
    before = network.forward(start, shape, sentence.ids, sentence.query)
    loss, d_logits = backward.cross_entropy(before.logits, sentence.targets)
    layers, gradients, d_output_focus = _backward(start, shape, before, sentence, d_logits)
    updated = {key: start[key] - learning_rate * gradients[key] for key in start}
    after = network.forward(updated, shape, sentence.ids, sentence.query)
    loss_after, _ = backward.cross_entropy(after.logits, sentence.targets)
    return GradientStep(
        readout=readout,
        seed=seed if parameters is None else None,
        learning_rate=learning_rate,
        shape=shape,
        words=words,
        focus=focus,
        referent=referent,
        choices=choices,
        target=target,
        parameters=start,
        gradients=gradients,
        updated=updated,
        before=before,
        after=after,
        loss=loss,
        loss_after=loss_after,
        probabilities=_softmax(before.logits[0]),
        d_logits=d_logits[0],
        d_output_focus=d_output_focus,
        layers=layers,
    )


def _backward(
    parameters: Mapping[str, FloatArray],
    shape: network.Shape,
    run: network.Forward,
    sentence: Examples,
    d_logits: FloatArray,
) -> tuple[tuple[LayerGradients, ...], network.Parameters, FloatArray | None]:
    """The readout backwards, then every layer from the last, then the embeddings: as
    network.loss_and_gradients, keeping every intermediate."""
    focus = int(sentence.query[0])
    gradients: network.Parameters = {}
    d_x = np.zeros_like(run.output)  # [1, n, d_model]
    d_readout = None
    d_output_focus = None
    if shape.readout is Readout.POINTER:
        d_readout = np.zeros_like(run.layers[-1].scaled)
        d_readout[0, 0, focus] = d_logits[0]
    else:
        gradients["W_U"] = np.outer(run.output[0, focus], d_logits[0])
        d_output_focus = d_logits[0] @ parameters["W_U"].T
        d_x[0, focus] = d_output_focus
    layers = []
    for layer in range(shape.n_layers, 0, -1):
        record = _layer_backward(parameters, shape, run.layers[layer - 1], layer, d_x, d_readout)
        layers.append(record)
        q_key, k_key, v_key, o_key = network.layer_keys(layer)
        gradients |= {q_key: record.d_w_q, k_key: record.d_w_k, v_key: record.d_w_v}
        gradients[o_key] = record.d_w_o
        d_x = record.d_x[np.newaxis]
        d_readout = None
    d_embeddings, d_positions = backward.embed_backward(sentence.ids, d_x, shape.vocabulary)
    gradients["E"] = d_embeddings
    gradients["P"] = np.zeros_like(parameters["P"])
    gradients["P"][: sentence.ids.shape[1]] = d_positions
    return tuple(reversed(layers)), gradients, d_output_focus


def _layer_backward(
    parameters: Mapping[str, FloatArray],
    shape: network.Shape,
    layer_pass: network.LayerPass,
    layer: int,
    d_output: FloatArray,
    d_readout: FloatArray | None,
) -> LayerGradients:
    """network.layer_backward's calls, in its order, each result kept.  d_output: [1, n, d_model]"""
    w_q, w_k, w_v, w_o = (parameters[key] for key in network.layer_keys(layer))
    d_concat, d_w_o = backward.project_out_backward(layer_pass.concat, w_o, d_output)
    d_z = backward.concat_heads_backward(d_concat, shape.n_heads)
    d_weights, d_v = backward.weigh_values_backward(layer_pass.weights, layer_pass.v, d_z)
    d_softmax = backward.softmax_backward(layer_pass.weights, d_weights)
    d_scaled = d_softmax if d_readout is None else d_softmax + d_readout
    d_scores = backward.scale_scores_backward(d_scaled, shape.d_k)
    d_q, d_k = backward.attention_scores_backward(layer_pass.q, layer_pass.k, d_scores)
    d_x = d_output.copy()
    projected = []
    for w, d_projected in ((w_q, d_q), (w_k, d_k), (w_v, d_v)):
        d_x_part, d_w = backward.project_backward(layer_pass.x, w, d_projected)
        d_x += d_x_part
        projected.append(d_w)
    return LayerGradients(
        layer=layer,
        x=layer_pass.x[0],
        q=layer_pass.q[0],
        k=layer_pass.k[0],
        v=layer_pass.v[0],
        weights=layer_pass.weights[0],
        concat=layer_pass.concat[0],
        d_output=d_output[0],
        d_concat=d_concat[0],
        d_w_o=d_w_o,
        d_z=d_z[0],
        d_weights=d_weights[0],
        d_v=d_v[0],
        d_softmax=d_softmax[0],
        d_readout=None if d_readout is None else d_readout[0],
        d_scaled=d_scaled[0],
        d_scores=d_scores[0],
        d_q=d_q[0],
        d_k=d_k[0],
        d_w_q=projected[0],
        d_w_k=projected[1],
        d_w_v=projected[2],
        d_x=d_x[0],
    )


def _checked(
    parameters: Mapping[str, FloatArray], expected: network.Parameters, readout: Readout
) -> network.Parameters:
    """``parameters`` in float64, when they have the coref model's names and shapes."""
    for key, value in expected.items():
        given = parameters.get(key)
        if given is None or np.shape(given) != value.shape:
            raise AttnvizError(
                f"these weights are not a coref model's with a {readout.value} readout "
                f"({key} is {'missing' if given is None else np.shape(given)}, expected "
                f"{value.shape}); train one with attnviz train coref --readout {readout.value}."
            )
    return {key: np.asarray(parameters[key], dtype=np.float64) for key in expected}


def _softmax(logits: FloatArray) -> FloatArray:
    """The readout's probabilities, as backward.cross_entropy computes them.  [c] -> [c]"""
    shifted = np.exp(logits - logits.max())
    probabilities: FloatArray = shifted / shifted.sum()
    return probabilities
