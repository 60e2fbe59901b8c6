"""The toy transformer's backward pass against central finite differences, in float64, for
every parameter of every readout, causal and not, with one head and with two."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.train import network, tasks
from attnviz.train.tasks import Examples, Readout


def small(task: tasks.Task, n_heads: int) -> tuple[network.Shape, Examples]:
    """A small model and 6 examples; coref's of 6 different lengths, so that the padding's key
    mask is in the gradient too."""
    shape = network.shape_of(task)._replace(d_model=8, n_heads=n_heads)
    lengths = task.train.lengths
    if lengths is None:
        return shape, task.train.take(np.arange(6))
    pick = np.array([np.nonzero(lengths == n)[0][0] for n in (8, 9, 11, 13, 15, 16)])
    return shape, task.train.take(pick)


TASKS = {
    "coref pointer": lambda rng: tasks.coref(),
    "coref word": lambda rng: tasks.coref(Readout.WORD),
    "reverse": tasks.reverse,
    "previous (causal)": tasks.previous,
    "induction (causal, 2 layers)": tasks.induction,
}


@pytest.mark.slow
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


def test_a_padded_batch_gives_each_sentence_the_numbers_it_has_alone() -> None:
    """Sentences of 8 to 16 words in one batch, padded to 16: with the key mask, each one's
    weights, output and logits are those of the sentence run alone, unpadded. Two different
    computations (a batch and one sentence) may round differently in the BLAS kernel: float64,
    within 1e-12 of numbers of order 1 (d_model = 32 products of order 1 each)."""
    task = tasks.coref()
    shape = network.shape_of(task)
    parameters = network.initial_parameters(shape, np.random.default_rng(1), np.float64)
    lengths = task.held_out.lengths
    assert lengths is not None
    rows = np.array([np.nonzero(lengths == n)[0][0] for n in range(8, 17)])
    batch = task.held_out.take(rows)
    assert batch.lengths is not None
    together = network.forward(parameters, shape, batch.ids, batch.query, lengths=batch.lengths)
    for row, n in enumerate(batch.lengths):
        alone = network.forward(
            parameters, shape, batch.ids[row : row + 1, :n], batch.query[row : row + 1]
        )
        for layer, (mixed, single) in enumerate(zip(together.layers, alone.layers, strict=True)):
            weights = mixed.weights[row, :, :n, :]
            np.testing.assert_array_equal(weights[..., n:], 0.0)  # nobody reads the padding
            np.testing.assert_allclose(
                weights[..., :n], single.weights[0], atol=1e-12, err_msg=str(layer)
            )
        np.testing.assert_allclose(together.output[row, :n], alone.output[0], atol=1e-12)
        np.testing.assert_allclose(together.logits[row, :n], alone.logits[0], atol=1e-12)
        assert (together.logits[row, n:] == -np.inf).all()  # a pointer cannot point at padding


@pytest.mark.slow
def test_measuring_a_chunk_at_a_time_gives_the_numbers_of_one_pass() -> None:
    """network.measure runs MEASURE_CHUNK examples a pass; its logits and weights are those of
    one pass over every example, with the changes (ablation, positions, ids) applied to the right
    rows. Two computations of different batch sizes may round differently in the BLAS kernel:
    float64, within 1e-12 of numbers of order 1."""
    task = tasks.coref()
    shape = network.shape_of(task)
    parameters = network.initial_parameters(shape, np.random.default_rng(2), np.float64)
    held = task.held_out.take(np.arange(network.MEASURE_CHUNK * 2 + 37))
    rng = np.random.default_rng(3)
    ablate = {1: rng.random(held.ids.shape) < 0.3}
    positions = np.argsort(rng.random(held.ids.shape), axis=1)
    ids = np.where(rng.random(held.ids.shape) < 0.1, 1, held.ids)
    whole = network.forward(
        parameters, shape, ids, held.query, lengths=held.lengths, ablate=ablate, positions=positions
    )
    chunked = network.measure(parameters, shape, held, ids=ids, ablate=ablate, positions=positions)
    assert chunked.logits.shape == whole.logits.shape == (len(held.ids), held.ids.shape[1])
    finite = np.isfinite(whole.logits)
    np.testing.assert_array_equal(np.isfinite(chunked.logits), finite)
    np.testing.assert_allclose(chunked.logits[finite], whole.logits[finite], atol=1e-12)
    for mine, theirs in zip(chunked.weights, whole.layers, strict=True):
        np.testing.assert_allclose(mine, theirs.weights, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("readout", [Readout.POINTER, Readout.WORD])
@pytest.mark.parametrize("causal", [False, True])
def test_the_answer_alone_is_the_answer_of_the_whole_pass(readout: Readout, causal: bool) -> None:
    """forward(answer_only=True) computes the last layer's focus row only: the logits are the
    whole pass's, with padding, a causal mask, two heads and an ablation in the last layer. Not
    bit for bit: a product of one row may round otherwise than one of n rows in the BLAS kernel;
    float64, within 1e-12 of numbers of order 1."""
    task = tasks.coref(readout)
    shape = network.shape_of(task)._replace(n_heads=2, causal=causal)
    parameters = network.initial_parameters(shape, np.random.default_rng(4), np.float64)
    held = task.held_out.take(np.arange(300))
    rng = np.random.default_rng(5)
    ablate = {shape.n_layers: rng.random(held.ids.shape) < 0.5, 1: rng.random(held.ids.shape) < 0.2}
    runs = [
        network.forward(
            parameters,
            shape,
            held.ids,
            held.query,
            lengths=held.lengths,
            ablate=ablate,
            answer_only=answer_only,
        )
        for answer_only in (False, True)
    ]
    whole, answer = runs
    assert answer.logits.shape == whole.logits.shape
    finite = np.isfinite(whole.logits)
    np.testing.assert_array_equal(np.isfinite(answer.logits), finite)
    np.testing.assert_allclose(answer.logits[finite], whole.logits[finite], atol=1e-12)
    rows = np.arange(len(held.ids))
    last_whole, last_answer = whole.layers[-1].weights, answer.layers[-1].weights
    assert last_answer.shape == (len(held.ids), 2, 1, held.ids.shape[1])
    np.testing.assert_allclose(last_answer[:, :, 0], last_whole[rows, :, held.query], atol=1e-12)
    measured = network.measure(parameters, shape, held, ablate=ablate, answer_only=True)
    np.testing.assert_allclose(measured.logits[finite], whole.logits[finite], atol=1e-12)


def test_positions_can_be_given_and_shuffled_positions_change_x() -> None:
    task = tasks.reverse(np.random.default_rng(0))
    shape = network.shape_of(task)
    parameters = network.initial_parameters(shape, np.random.default_rng(2), np.float64)
    ids, query = task.train.ids[:3], task.train.query[:3]
    plain = network.forward(parameters, shape, ids, query)
    order = np.tile(np.arange(8), (3, 1))
    same = network.forward(parameters, shape, ids, query, positions=order)
    np.testing.assert_array_equal(same.layers[0].x, plain.layers[0].x)  # the same sums
    reversed_order = order[:, ::-1]
    moved = network.forward(parameters, shape, ids, query, positions=reversed_order)
    expected = parameters["E"][ids] + parameters["P"][reversed_order]
    np.testing.assert_array_equal(moved.layers[0].x, expected)  # the same sums, in numpy


@pytest.mark.slow
def test_every_position_of_a_model_is_trained() -> None:
    """A model has as many learned positions as its longest training example has words."""
    for task in (tasks.coref(), tasks.reverse(np.random.default_rng(0))):
        assert network.shape_of(task).max_positions == task.lengths[1]
    assert tasks.coref().lengths == (8, 16) and tasks.previous(
        np.random.default_rng(0)
    ).lengths == (8, 8)


@pytest.mark.slow
def test_tasks_are_reproducible_from_the_seed() -> None:
    first = tasks.induction(np.random.default_rng(3))
    second = tasks.induction(np.random.default_rng(3))
    assert np.array_equal(first.train.ids, second.train.ids)
    assert np.array_equal(first.held_out.targets, second.held_out.targets)
