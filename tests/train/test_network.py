"""The toy transformer's backward pass against central finite differences, in float64, for
every parameter of every readout, causal and not, with one head and with two."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.train import network, tasks
from attnviz.train.tasks import Examples, Readout


def small(task: tasks.Task, n_heads: int) -> tuple[network.Shape, Examples]:
    shape = network.shape_of(task)._replace(d_model=8, n_heads=n_heads)
    pick = np.arange(6)
    batch = Examples(task.train.ids[pick], task.train.targets[pick], task.train.query[pick])
    return shape, batch


TASKS = {
    "coref pointer": lambda rng: tasks.coref(),
    "coref word": lambda rng: tasks.coref(Readout.WORD),
    "reverse": tasks.reverse,
    "previous (causal)": tasks.previous,
    "induction (causal, 2 layers)": tasks.induction,
}


@pytest.mark.parametrize("n_heads", [1, pytest.param(2, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(TASKS))
def test_every_gradient_matches_central_differences(name: str, n_heads: int) -> None:
    rng = np.random.default_rng(7)
    shape, batch = small(TASKS[name](rng), n_heads)
    parameters = network.initial_parameters(shape, rng, np.float64)
    _, gradients, _ = network.loss_and_gradients(parameters, shape, batch)
    assert set(gradients) == set(parameters)
    step = 1e-6
    for key, value in parameters.items():
        assert gradients[key].shape == value.shape, key
        # 6 entries of each parameter, the ones with the largest gradients among them (an
        # embedding row of a word not in the batch has gradient 0, which proves little).
        flat = np.abs(gradients[key]).ravel()
        for index in np.argsort(flat)[-6:]:
            where = np.unravel_index(index, value.shape)
            losses = []
            for sign in (1, -1):
                moved = {k: v.copy() for k, v in parameters.items()}
                moved[key][where] += sign * step
                losses.append(network.loss_and_gradients(moved, shape, batch)[0])
            numeric = (losses[0] - losses[1]) / (2 * step)
            assert gradients[key][where] == pytest.approx(numeric, rel=1e-5, abs=1e-9), (
                key,
                where,
            )


def test_the_pointer_readout_is_the_last_layers_attention_row_of_it() -> None:
    """With the pointer readout the prediction is the attention itself: softmax of the logits
    equals the last layer's weights in the row of "it"."""
    task = tasks.coref()
    rng = np.random.default_rng(0)
    shape = network.shape_of(task)
    parameters = network.initial_parameters(shape, rng)
    run = network.forward(parameters, shape, task.train.ids[:5], task.train.query[:5])
    logits = run.logits
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    rows = run.layers[-1].weights[np.arange(5), 0, task.train.query[:5]]
    np.testing.assert_allclose(probabilities, rows, rtol=1e-12)


def test_the_forward_pass_equals_a_per_word_loop() -> None:
    """Each layer's matrices against a literal loop over words: q_i = x_i·W_Q, w_ij ∝
    exp(q_i·k_j/√d_k), z_i = Σ_j w_ij·v_j, x_i ← x_i + z_i·W_O."""
    task = tasks.previous(np.random.default_rng(1))
    shape = network.shape_of(task)._replace(n_heads=2, d_model=8)
    parameters = network.initial_parameters(shape, np.random.default_rng(2), np.float64)
    ids = task.train.ids[:1]
    run = network.forward(parameters, shape, ids, np.zeros(1, dtype=int))
    x = parameters["E"][ids[0]] + parameters["P"][: ids.shape[1]]
    n, d_k = ids.shape[1], shape.d_k
    for layer in range(1, shape.n_layers + 1):
        w_q, w_k, w_v, w_o = (parameters[k] for k in network.layer_keys(layer))
        new = x.copy()
        for i in range(n):
            z = []
            for head in range(shape.n_heads):
                q = x[i] @ w_q[head]
                keys = range(i + 1)  # causal: words 0..i
                s = np.array([q @ (x[j] @ w_k[head]) / np.sqrt(d_k) for j in keys])
                w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                np.testing.assert_allclose(run.layers[layer - 1].weights[0, head, i, : i + 1], w)
                z.append(sum(w[j] * (x[j] @ w_v[head]) for j in keys))
            new[i] = x[i] + np.concatenate(z) @ w_o
        x = new
    np.testing.assert_allclose(run.output[0], x, rtol=1e-10, atol=1e-12)


def test_the_coref_data_holds_out_the_seeds_two_sentences() -> None:
    task = tasks.coref()
    held = {" ".join(task.vocabulary[i] for i in row) for row in task.held_out.ids}
    trained = {" ".join(task.vocabulary[i] for i in row) for row in task.train.ids}
    assert tasks.TIRED in held and tasks.WIDE in held and not held & trained
    assert len(held) + len(trained) == 8192 and len(held) == 2048
    # the answer is the referent's position: "animal" (1) in the tired sentence, for "it" (7)
    sentences = [" ".join(task.vocabulary[i] for i in row) for row in task.held_out.ids]
    row = sentences.index(tasks.TIRED)
    assert task.held_out.targets[row] == 1 and task.held_out.query[row] == 7
    assert task.held_out.targets[sentences.index(tasks.WIDE)] == 5  # "street"


def test_tasks_are_reproducible_from_the_seed() -> None:
    first = tasks.induction(np.random.default_rng(3))
    second = tasks.induction(np.random.default_rng(3))
    assert np.array_equal(first.train.ids, second.train.ids)
    assert np.array_equal(first.held_out.targets, second.held_out.targets)
