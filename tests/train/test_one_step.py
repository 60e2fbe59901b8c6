"""One gradient step on the seeds' sentence: the record's gradients are the network's (and
central differences'), every intermediate is its step's formula, the update is plain gradient
descent, and the step moves "it" towards "animal"."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from attnviz.errors import AttnvizError
from attnviz.train import backward, network
from attnviz.train.loop import Trainer
from attnviz.train.one_step import (
    STEP_LEARNING_RATE,
    GradientStep,
    gradient_step,
    initial_parameters,
)
from attnviz.train.tasks import Examples, Readout, coref

READOUTS = [Readout.POINTER, Readout.WORD]


@pytest.fixture(scope="module", params=READOUTS, ids=lambda readout: readout.value)
def step(request: pytest.FixtureRequest) -> GradientStep:
    readout: Readout = request.param
    return gradient_step(readout=readout)


@functools.cache
def vocabulary_of(readout: Readout) -> tuple[str, ...]:
    return coref(readout).vocabulary


def sentence_of(step: GradientStep) -> Examples:
    vocabulary = vocabulary_of(step.readout)
    ids = np.array([[vocabulary.index(word) for word in step.words]])
    return Examples(ids, np.array([step.target]), np.array([step.focus]))


def loss_of(step: GradientStep, parameters: network.Parameters) -> float:
    sentence = sentence_of(step)
    run = network.forward(parameters, step.shape, sentence.ids, sentence.query)
    return backward.cross_entropy(run.logits, sentence.targets)[0]


@pytest.mark.slow
def test_the_record_is_what_the_network_computes(step: GradientStep) -> None:
    loss, gradients, _ = network.loss_and_gradients(step.parameters, step.shape, sentence_of(step))
    assert step.loss == loss
    assert set(step.gradients) == set(gradients) == set(step.parameters)
    for key, gradient in gradients.items():
        np.testing.assert_array_equal(step.gradients[key], gradient, err_msg=key)


def test_the_gradients_match_central_differences(step: GradientStep) -> None:
    h = 1e-6
    for key, value in step.parameters.items():
        if not np.any(step.gradients[key]):
            continue
        for index in np.argsort(np.abs(step.gradients[key]).ravel())[-2:]:
            where = np.unravel_index(index, value.shape)
            losses = []
            for sign in (1, -1):
                moved = {k: v.copy() for k, v in step.parameters.items()}
                moved[key][where] += sign * h
                losses.append(loss_of(step, moved))
            numeric = (losses[0] - losses[1]) / (2 * h)
            assert step.gradients[key][where] == pytest.approx(numeric, rel=1e-5), (key, where)


def test_the_loss_is_minus_log_the_referents_probability(step: GradientStep) -> None:
    assert step.words[step.focus] == "it" and step.words[step.referent] == "animal"
    assert step.choices[step.target] == "animal"
    assert step.loss == pytest.approx(-math.log(step.probabilities[step.target]))
    onehot = np.eye(len(step.choices))[step.target]
    np.testing.assert_allclose(step.d_logits, step.probabilities - onehot)
    assert step.probabilities.sum() == pytest.approx(1.0)


def test_every_intermediate_is_its_steps_formula(step: GradientStep) -> None:
    root = math.sqrt(step.shape.d_k)
    for layer in step.layers:
        w_o = step.parameters[f"W_O.{layer.layer}"]
        np.testing.assert_allclose(layer.d_concat, layer.d_output @ w_o.T)
        np.testing.assert_allclose(layer.d_w_o, layer.concat.T @ layer.d_output)
        np.testing.assert_allclose(layer.d_weights[0], layer.d_z[0] @ layer.v[0].T)
        w, g = layer.weights[0], layer.d_weights[0]
        for i in range(len(step.words)):  # the formula, one entry at a time
            for j in range(len(step.words)):
                by_formula = w[i, j] * (g[i, j] - sum(w[i, k] * g[i, k] for k in range(len(w))))
                assert layer.d_softmax[0, i, j] == pytest.approx(by_formula, abs=1e-12)
        np.testing.assert_allclose(layer.d_scores, layer.d_scaled / root)
        np.testing.assert_allclose(layer.d_q[0], layer.d_scores[0] @ layer.k[0])
        np.testing.assert_allclose(layer.d_k[0], layer.d_scores[0].T @ layer.q[0])
        np.testing.assert_allclose(layer.d_w_q[0], layer.x.T @ layer.d_q[0])
        np.testing.assert_allclose(layer.d_w_k[0], layer.x.T @ layer.d_k[0])
        np.testing.assert_allclose(layer.d_w_v[0], layer.x.T @ layer.d_v[0])
    # X_0 = E[ids] + P[:n]: for one sentence, ∂L/∂P[:n] is ∂L/∂X_0 itself.
    np.testing.assert_allclose(step.gradients["P"][: len(step.words)], step.layers[0].d_x)


def test_the_readouts_gradient_enters_where_the_readout_reads(step: GradientStep) -> None:
    last = step.layers[-1]
    if step.readout is Readout.POINTER:
        assert last.d_readout is not None
        np.testing.assert_array_equal(last.d_readout[0, step.focus], step.d_logits)
        assert not np.any(last.d_output) and not np.any(last.d_w_o) and not np.any(last.d_w_v)
        assert step.d_output_focus is None
    else:
        assert last.d_readout is None and step.d_output_focus is not None
        w_u = step.parameters["W_U"]
        np.testing.assert_allclose(step.d_output_focus, step.d_logits @ w_u.T)
        np.testing.assert_allclose(last.d_output[step.focus], step.d_output_focus)
        x_last = step.before.output[0, step.focus]
        np.testing.assert_allclose(step.gradients["W_U"], np.outer(x_last, step.d_logits))


def test_the_update_is_plain_gradient_descent_and_helps(step: GradientStep) -> None:
    assert step.learning_rate == STEP_LEARNING_RATE
    for key, value in step.parameters.items():
        expected = value - STEP_LEARNING_RATE * step.gradients[key]
        np.testing.assert_array_equal(step.updated[key], expected)
    assert step.loss_after == pytest.approx(loss_of(step, step.updated))
    assert step.loss_after < step.loss
    if step.readout is Readout.POINTER:  # the weight on "animal" is what the loss asks for
        assert step.referent_weight_after > step.referent_weight_before


def test_nothing_is_nan(step: GradientStep) -> None:
    arrays = [*step.gradients.values(), *step.updated.values(), step.d_logits]
    arrays += [getattr(layer, name) for layer in step.layers for name in ("d_q", "d_k", "d_x")]
    assert all(np.isfinite(array).all() for array in arrays)


@pytest.mark.slow
def test_the_initial_weights_are_the_trainers() -> None:
    for readout in READOUTS:
        trainer = Trainer(coref(readout), seed=3)
        ours = initial_parameters(readout, 3)
        assert set(ours) == set(trainer.parameters)
        for key, value in trainer.parameters.items():
            assert ours[key].dtype == np.float64
            np.testing.assert_array_equal(ours[key], value.astype(np.float64))


@pytest.mark.slow
def test_given_weights_are_used_and_checked() -> None:
    start = initial_parameters(Readout.POINTER, 5)
    step = gradient_step(parameters=start)
    assert step.seed is None
    np.testing.assert_array_equal(step.parameters["W_Q.1"], start["W_Q.1"])
    with pytest.raises(AttnvizError, match="not a coref model's with a word readout"):
        gradient_step(readout=Readout.WORD, parameters=start)  # no W_U


@pytest.mark.parametrize("learning_rate", [0.0, -0.1, float("nan"), float("inf")])
def test_a_bad_learning_rate_is_refused(learning_rate: float) -> None:
    with pytest.raises(AttnvizError, match="learning rate must be a positive number"):
        gradient_step(learning_rate=learning_rate)


def test_a_negative_seed_is_refused() -> None:
    with pytest.raises(AttnvizError, match="seed must be 0 or more"):
        gradient_step(seed=-1)
