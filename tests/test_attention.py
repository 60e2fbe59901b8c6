"""The math: each step against the textbook, identities, and a hand-checked example."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz
from attnviz.attention import (
    attention_scores,
    concat_heads,
    multi_head_attention,
    project_out,
    scale_scores,
    softmax,
)
from attnviz.config import AttentionConfig
from attnviz.errors import AttnvizError, command_line
from attnviz.weights import AttentionWeights, random_weights


def textbook_attention(x: np.ndarray, weights: AttentionWeights) -> dict[str, np.ndarray]:
    """Multi-head attention as a literal per-word loop over the textbook steps, no matrix code."""
    n_heads, d_model, d_k = weights.W_Q.shape
    n = x.shape[0]
    z = np.zeros((n_heads, n, d_k))
    all_weights = np.zeros((n_heads, n, n))
    for h in range(n_heads):
        q = [
            [sum(x[i, m] * weights.W_Q[h, m, c] for m in range(d_model)) for c in range(d_k)]
            for i in range(n)
        ]
        k = [
            [sum(x[i, m] * weights.W_K[h, m, c] for m in range(d_model)) for c in range(d_k)]
            for i in range(n)
        ]
        v = [
            [sum(x[i, m] * weights.W_V[h, m, c] for m in range(d_model)) for c in range(d_k)]
            for i in range(n)
        ]
        for i in range(n):
            scores = [sum(q[i][c] * k[j][c] for c in range(d_k)) for j in range(n)]  # q_i·k_j
            scaled = [s / math.sqrt(d_k) for s in scores]  # ÷ √d_k
            top = max(scaled)
            exps = [math.exp(s - top) for s in scaled]
            w = [e / sum(exps) for e in exps]  # softmax
            all_weights[h, i] = w
            for c in range(d_k):
                z[h, i, c] = sum(w[j] * v[j][c] for j in range(n))  # Σ_j w_ij·v_j
    concat = [[z[h, i, c] for h in range(n_heads) for c in range(d_k)] for i in range(n)]
    output = [
        [
            sum(concat[i][r] * weights.W_O[r, col] for r in range(n_heads * d_k))
            for col in range(d_model)
        ]
        for i in range(n)
    ]
    return {"weights": all_weights, "Z": z, "output": np.array(output)}


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    n_tokens=st.integers(1, 7),
    n_heads=st.integers(1, 4),
    d_k=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_matrix_code_equals_the_per_word_loop(
    n_tokens: int, n_heads: int, d_k: int, seed: int
) -> None:
    config = AttentionConfig(d_model=n_heads * d_k, n_heads=n_heads, seed=seed)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_tokens, config.d_model))
    weights = random_weights(config, rng)
    trace = multi_head_attention([f"w{i}" for i in range(n_tokens)], x, weights, config=config)
    expected = textbook_attention(x, weights)
    np.testing.assert_allclose(trace.weights, expected["weights"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(trace.Z, expected["Z"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(trace.output, expected["output"], rtol=1e-10, atol=1e-12)


def test_scaling_is_by_the_square_root_of_d_k_not_d_model() -> None:
    trace = attnviz.trace_attention("I am good", config=AttentionConfig(d_model=12, n_heads=3))
    assert trace.d_k == 4
    np.testing.assert_array_equal(trace.scaled, trace.scores / 2.0)
    np.testing.assert_allclose(trace.weights, softmax(trace.scores / 2.0))


def test_hand_checked_two_word_example() -> None:
    """One head, d_model = d_k = 2, identity projections; every number worked out by hand.

    X = [[1, 0], [0, 2]]. With W_Q = W_K = W_V = I: Q = K = V = X.
    scores = X·Xᵀ = [[1, 0], [0, 4]]; ÷ √2 -> [[0.7071, 0], [0, 2.8284]].
    Row 1: softmax(0.7071, 0) = (e^0.7071, 1)/(e^0.7071 + 1) = (0.66976, 0.33024).
    Row 2: softmax(0, 2.8284) = (1, e^2.8284)/(1 + e^2.8284) = (1, 16.919)/17.919
           = (0.05581, 0.94419).
    Z = weights·V: z_1 = 0.66976·[1, 0] + 0.33024·[0, 2] = [0.66976, 0.66048].
    W_O = [[0, 1], [1, 0]] swaps the columns: output_1 = [0.66048, 0.66976].
    """
    identity = np.eye(2)[None]
    weights = AttentionWeights(
        W_Q=identity, W_K=identity, W_V=identity, W_O=np.array([[0.0, 1.0], [1.0, 0.0]])
    )
    x = np.array([[1.0, 0.0], [0.0, 2.0]])
    trace = multi_head_attention(
        ["a", "b"], x, weights, config=AttentionConfig(d_model=2, n_heads=1)
    )
    np.testing.assert_allclose(trace.scores[0], [[1.0, 0.0], [0.0, 4.0]])
    np.testing.assert_allclose(trace.scaled[0], [[0.70711, 0.0], [0.0, 2.82843]], atol=1e-5)
    np.testing.assert_allclose(
        trace.weights[0], [[0.66976, 0.33024], [0.05581, 0.94419]], atol=1e-5
    )
    np.testing.assert_allclose(trace.Z[0, 0], [0.66976, 0.66048], atol=1e-5)
    np.testing.assert_allclose(trace.output[0], [0.66048, 0.66976], atol=1e-5)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 6),
    columns=st.integers(1, 9),
    magnitude=st.sampled_from([1e-300, 1.0, 1e3, 1e100, 1e300]),
    seed=st.integers(0, 1000),
)
def test_softmax_rows_sum_to_one_without_nan_for_any_finite_input(
    rows: int, columns: int, magnitude: float, seed: int
) -> None:
    scores = np.random.default_rng(seed).normal(size=(rows, columns)) * magnitude
    weights = softmax(scores)
    assert np.isfinite(weights).all()
    assert (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)


def test_softmax_of_extreme_values() -> None:
    weights = softmax(np.array([[1e308, -1e308, 0.0], [-1e308, -1e308, -1e308], [710.0, 0.0, 0.0]]))
    assert np.isfinite(weights).all()
    np.testing.assert_allclose(weights[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(weights[1], [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(weights[2], [1.0, 0.0, 0.0], atol=1e-300)  # exp(-710) is subnormal


def test_concat_times_w_o_equals_sum_of_per_head_blocks() -> None:
    trace = attnviz.trace_attention(
        "The animal didn't cross the street because it was too tired",
        config=AttentionConfig(d_model=12, n_heads=3, seed=7),
    )
    d_k = trace.d_k
    per_head = sum(trace.Z[h] @ trace.W_O[h * d_k : (h + 1) * d_k] for h in range(trace.n_heads))
    np.testing.assert_allclose(trace.output, per_head, atol=1e-12)
    np.testing.assert_array_equal(concat_heads(trace.Z), trace.concat)
    np.testing.assert_array_equal(trace.concat[:, d_k : 2 * d_k], trace.Z[1])
    np.testing.assert_allclose(project_out(trace.concat, trace.W_O), trace.output)


def test_biases_of_another_type_than_the_weights_are_not_rounded_to_it() -> None:
    """float32 weights with float64 biases, as a caller may give them: the biases are added
    apart, in float64 when X is float64, not rounded into a float32 column of the weights."""
    rng = np.random.default_rng(11)
    drawn = random_weights(AttentionConfig(d_model=8, n_heads=2), rng)
    as32 = {key: getattr(drawn, key).astype(np.float32) for key in ("W_Q", "W_K", "W_V", "W_O")}
    biases = {key: rng.normal(size=(2, 4)) + 1000.123456789 for key in ("b_Q", "b_K", "b_V")}
    biases["b_O"] = rng.normal(size=8)
    weights = AttentionWeights(**as32, **biases)
    assert weights.stacked_rows.shape == (24, 8) and weights.stacked_bias is not None
    x = rng.normal(size=(3, 8))
    trace = multi_head_attention(["a", "b", "c"], x, weights)
    for name in "QKV":
        w, b = as32[f"W_{name}"].astype(np.float64), biases[f"b_{name}"]
        expected = np.einsum("nd,hdk->hnk", x, w) + b[:, np.newaxis, :]
        np.testing.assert_allclose(getattr(trace, name), expected, rtol=0, atol=1e-9)
    same_type = AttentionWeights(**as32, **{k: v.astype(np.float32) for k, v in biases.items()})
    assert same_type.stacked_bias is None and same_type.stacked_rows.shape == (24, 9)


def test_steps_chain_as_the_trace_says() -> None:
    trace = attnviz.trace_attention("Thinking Machines")
    np.testing.assert_allclose(trace.Q, np.einsum("nd,hdk->hnk", trace.X, trace.W_Q))
    np.testing.assert_allclose(trace.scores, attention_scores(trace.Q, trace.K))
    np.testing.assert_allclose(trace.scaled, scale_scores(trace.scores, trace.d_k))
    np.testing.assert_allclose(trace.Z, trace.weights @ trace.V)


def test_same_seed_same_numbers_other_seed_other_numbers() -> None:
    first = attnviz.trace_attention("I am good", config=AttentionConfig(seed=3))
    again = attnviz.trace_attention("I am good", config=AttentionConfig(seed=3))
    other = attnviz.trace_attention("I am good", config=AttentionConfig(seed=4))
    for key, array in first.arrays().items():
        np.testing.assert_array_equal(array, again.arrays()[key])
    assert not np.allclose(first.weights, other.weights)


def test_random_numbers_are_pinned_across_machines() -> None:
    """numpy's PCG64 and blake2b are platform-independent; these values must never drift."""
    trace = attnviz.trace_attention("I am good")
    assert trace.X[0, :3].round(6).tolist() == pytest.approx(
        [-0.563573, -0.089289, -1.224418], abs=1e-6
    )
    assert trace.weights[0, 0].round(6).tolist() == pytest.approx(
        [0.197802, 0.243036, 0.559161], abs=1e-6
    )


def test_a_word_has_the_same_random_vector_in_every_sentence() -> None:
    one = attnviz.trace_attention("the cat")
    two = attnviz.trace_attention("a cat sat on The mat")
    np.testing.assert_array_equal(one.X[1], two.X[1])
    np.testing.assert_array_equal(one.X[0], two.X[4])  # "the" and "The" share a vector


def test_trace_is_immutable() -> None:
    trace = attnviz.trace_attention("I am good")
    with pytest.raises(ValueError):
        trace.weights[0, 0, 0] = 1.0
    with pytest.raises(AttributeError):
        trace.tokens = ("x",)  # type: ignore[misc]


@pytest.mark.parametrize(
    "sentence", ["I am good", "The animal didn't cross the street because it was too tired"]
)
def test_default_random_weights_give_softmax_neither_flat_nor_one_hot(sentence: str) -> None:
    entropies, largest = [], []
    for seed in range(20):
        trace = attnviz.trace_attention(sentence, config=AttentionConfig(seed=seed))
        w = trace.weights
        entropies.append(float((-(w * np.log(w)).sum(-1)).mean() / np.log(trace.n_tokens)))
        largest.append(float(w.max(-1).mean()))
    assert 0.4 < np.mean(entropies) < 0.85  # 1.0 would be flat, 0 one-hot
    assert 1.5 / trace.n_tokens < np.mean(largest) < 0.8


@pytest.mark.parametrize(
    ("d_model", "n_heads", "message"),
    [
        (10, 3, "not divisible by 3 heads"),
        (0, 2, r"d_model \(--d-model\) must be a positive"),
        (-8, 2, r"d_model \(--d-model\) must be a positive"),
        (8, 0, r"heads \(--heads\) must be a positive"),
        (8, -2, r"heads \(--heads\) must be a positive"),
        (100000, 2, "too large"),
        (4096, 2, "at most 2048"),
        (
            8,
            10**23,
            r"heads \(--heads\) 100000000000000000000000 is too many: .* at most 2048 heads",
        ),
        (2048, 3, r"such as --d-model 2046\.$"),  # a multiple that is itself allowed
    ],
)
def test_bad_sizes_are_refused_with_a_message(d_model: int, n_heads: int, message: str) -> None:
    with pytest.raises(AttnvizError, match=message), command_line():  # as the command line says
        AttentionConfig(d_model=d_model, n_heads=n_heads)
    with pytest.raises(AttnvizError) as raised:  # and in Python, in the API's own words
        AttentionConfig(d_model=d_model, n_heads=n_heads)
    assert "--" not in raised.value.message


def test_paper_preset_sizes() -> None:
    config = AttentionConfig.paper()
    assert (config.d_model, config.n_heads, config.d_k) == (512, 8, 64)
    trace = attnviz.trace_attention("Thinking Machines", config=config)
    assert trace.Q.shape == (8, 2, 64)
    assert trace.output.shape == (2, 512)


@pytest.mark.parametrize("magnitude", [1e6, 0.0])
def test_extreme_embeddings_give_finite_traces(magnitude: float) -> None:
    tokens = ["w"] * 5
    x = np.random.default_rng(0).normal(size=(5, 8)) * magnitude
    trace = attnviz.trace_attention(tokens, embeddings=x)
    for array in trace.arrays().values():
        assert np.isfinite(array).all()
    np.testing.assert_allclose(trace.weights.sum(-1), 1.0, atol=1e-9)


def test_mismatched_weights_and_config_are_refused() -> None:
    config = AttentionConfig(d_model=8, n_heads=2)
    weights = random_weights(AttentionConfig(d_model=8, n_heads=4), np.random.default_rng(0))
    with pytest.raises(AttnvizError, match="4 heads"):
        multi_head_attention(["a"], np.zeros((1, 8)), weights, config=config)


def test_softmax_of_integer_scores_is_float_and_leaves_them_unchanged() -> None:
    scores = np.array([[1, 2, 3]])
    weights = softmax(scores)
    np.testing.assert_allclose(weights[0], np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum(), rtol=1e-15)
    assert scores.tolist() == [[1, 2, 3]]


def test_a_pretrained_layer_is_multi_head_attention_with_biases() -> None:
    """The one builder: recomputing a GPT-2 layer's attention from its X, weights, biases and
    mask with multi_head_attention gives every array of the layer's trace exactly."""
    pytest.importorskip("safetensors", reason="needs the optional extra attnviz[model]")
    pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")
    from pathlib import Path

    from attnviz.model.run import trace_model

    model = Path(__file__).resolve().parent / "model" / "tiny_gpt2"
    layer = trace_model("it was tired", str(model), dtype="float64").trace.layers[1]
    weights = AttentionWeights(
        **{key: getattr(layer, key) for key in ("W_Q", "W_K", "W_V", "W_O")},
        **{key: getattr(layer, key) for key in ("b_Q", "b_K", "b_V", "b_O")},
    )
    again = multi_head_attention(
        layer.tokens, layer.X, weights, provenance=layer.provenance, mask=layer.mask
    )
    for key, array in layer.arrays().items():
        np.testing.assert_array_equal(getattr(again, key), array, err_msg=key)


def test_cross_attention_runs_one_attention_not_a_self_attention_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import attnviz.core

    calls: list[int] = []
    real = attnviz.core.multi_head_attention

    def counted(*args: object, **kwargs: object) -> attnviz.AttentionTrace:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(attnviz.core, "multi_head_attention", counted)
    trace = attnviz.core.trace_cross("I am good", "Je vais bien").trace
    assert len(calls) == 1 and trace.is_cross and trace.weights.shape == (2, 3, 3)


def test_a_trace_cannot_change_after_the_fact_through_the_callers_arrays() -> None:
    config = AttentionConfig()
    weights = random_weights(config, np.random.default_rng(0))
    x = np.random.default_rng(1).normal(size=(3, 8))
    view = x.view()
    view.flags.writeable = False  # read-only, but x can still change it
    trace = multi_head_attention(["a", "b", "c"], view, weights)
    x[:] = 0
    assert not np.shares_memory(trace.X, x) and trace.X.any()
    with pytest.raises(ValueError):
        weights.W_Q[0, 0, 0] = 1.0  # the weights a trace records are read-only too
    original = np.ones((2, 8, 4))
    given = AttentionWeights(W_Q=original, W_K=original, W_V=original, W_O=np.ones((8, 8)))
    original[:] = 5.0
    assert (given.W_Q == 1.0).all() and (given.stacked_rows == 1.0).all()


@pytest.mark.parametrize("shape", [(3, 0), (0,), (0, 0)])
def test_an_empty_array_is_refused_in_a_sentence(shape: tuple[int, ...]) -> None:
    from attnviz.errors import AttnvizError

    with pytest.raises(AttnvizError, match="is empty"):
        attnviz.softmax(np.zeros(shape))  # the Python API's softmax checks; attention's does not
