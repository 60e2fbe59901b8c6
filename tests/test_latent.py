"""Multi-head latent attention (attnviz.latent): the latent and each head's K and V against a
literal loop over tokens and heads, the absorbed scores and output against the expanded ones,
the cache counts, the refusals, and the export round trip.

Tolerances: the absorbed score (q·W_UKᵀ)·cᵀ and the expanded q·(c·W_UK)ᵀ are the same d_c·d_k
products added in other orders, so they differ by rounding only: within a few units in the
last place of the largest partial sum, bounded here by support.product_atol's γ_k bound over
the d_c·d_k terms (Higham, eq. 3.5). Never bit for bit: BLAS orders the sums differently on
other machines.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz
from attnviz.attention import multi_head_attention
from attnviz.cli import app
from attnviz.config import AttentionConfig
from attnviz.core import trace_with_options
from attnviz.errors import AttnvizError
from attnviz.latent import (
    LatentWeights,
    absorbed_output,
    absorbed_scores,
    compress,
    expand,
    key_value_cache_numbers,
    latent_cache_numbers,
    random_latent,
)
from attnviz.options import TraceOptions
from attnviz.trace import LATENT_KEYS, AttentionTrace
from attnviz.trace_files import export_trace, load_trace
from attnviz.weights import random_weights

from support import CliRunner, examples, one_error_line

IT = "The animal didn't cross the street because it was too tired"
runner = CliRunner()


def latent_trace(sentence: str = IT, **options: object) -> AttentionTrace:
    trace, _ = trace_with_options(sentence, TraceOptions(**options))  # type: ignore[arg-type]
    return trace


def looped_latent(x: np.ndarray, latent: LatentWeights) -> tuple[np.ndarray, ...]:
    """c, K, V by the formulas, one token, head and coordinate at a time."""
    n, d_model = x.shape
    n_heads, d_c, d_k = latent.W_UK.shape
    c = np.zeros((n, d_c))
    for j in range(n):
        for r in range(d_c):
            c[j, r] = sum(x[j, m] * latent.W_DKV[m, r] for m in range(d_model))
    k, v = np.zeros((n_heads, n, d_k)), np.zeros((n_heads, n, d_k))
    for i in range(n_heads):
        for j in range(n):
            for col in range(d_k):
                k[i, j, col] = sum(c[j, r] * latent.W_UK[i, r, col] for r in range(d_c))
                v[i, j, col] = sum(c[j, r] * latent.W_UV[i, r, col] for r in range(d_c))
    return c, k, v


def test_the_latent_and_each_heads_keys_and_values_are_the_looped_formulas() -> None:
    trace = latent_trace(latent=6, heads=2, d_model=8)
    assert trace.W_DKV is not None and trace.W_UK is not None and trace.W_UV is not None
    latent = LatentWeights(trace.W_DKV, trace.W_UK, trace.W_UV)
    c, k, v = looped_latent(np.asarray(trace.X), latent)
    np.testing.assert_allclose(trace.c, c, rtol=0, atol=1e-12)
    np.testing.assert_allclose(trace.K, k, rtol=0, atol=1e-12)
    np.testing.assert_allclose(trace.V, v, rtol=0, atol=1e-12)
    # W_K in the trace is the product X is in effect multiplied by, so X·W_K is the same K.
    np.testing.assert_allclose(trace.X @ trace.W_K, trace.K, rtol=0, atol=1e-12)
    assert trace.d_c == 6 and trace.c.shape == (11, 6)


def test_queries_and_the_output_matrix_are_the_layers_without_a_latent() -> None:
    """The latent's matrices are drawn after the paper's: W_Q and W_O are those of the same
    seed without --latent, so the two lessons differ in the keys and values alone."""
    plain, latent = latent_trace(seed=3), latent_trace(seed=3, latent=5)
    np.testing.assert_array_equal(plain.W_Q, latent.W_Q)
    np.testing.assert_array_equal(plain.W_O, latent.W_O)
    np.testing.assert_array_equal(plain.Q, latent.Q)
    assert not np.allclose(plain.K, latent.K)
    assert plain.c is None and plain.scores_absorbed is None


def test_the_steps_after_the_keys_run_as_in_the_paper() -> None:
    trace = latent_trace(latent=7, heads=2, d_model=8, causal=True)
    scores = np.einsum("hqd,hkd->hqk", trace.Q, trace.K)
    np.testing.assert_allclose(trace.scores, scores, rtol=0, atol=1e-12)
    np.testing.assert_allclose(trace.scaled, trace.scores / 2.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(trace.weights.sum(-1), 1.0, rtol=0, atol=1e-12)
    assert (trace.weights[:, 0, 1:] == 0).all()  # the causal mask holds


@settings(max_examples=examples(60), deadline=None)
@given(
    n=st.integers(1, 9),
    heads=st.sampled_from([1, 2, 4]),
    d_k=st.integers(1, 6),
    d_c=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_absorbed_scores_and_output_equal_the_expanded_within_rounding(
    n: int, heads: int, d_k: int, d_c: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    d_model = heads * d_k
    latent = random_latent(heads, d_model, d_k, d_c, rng)
    weights = random_weights(AttentionConfig(d_model, heads), rng)
    x = rng.normal(size=(n, d_model))
    trace = multi_head_attention([f"w{i}" for i in range(n)], x, weights, latent=latent)
    q_tilde = trace.Q @ np.swapaxes(latent.W_UK, -1, -2)
    from support import product_atol

    bound = product_atol(q_tilde, trace.c.T) + product_atol(trace.Q, np.swapaxes(trace.K, -1, -2))
    assert trace.scores_absorbed is not None and trace.output_absorbed is not None
    np.testing.assert_allclose(trace.scores_absorbed, trace.scores, rtol=0, atol=bound * 4)
    scale = float(np.abs(trace.output).max()) + 1.0
    np.testing.assert_allclose(trace.output_absorbed, trace.output, rtol=0, atol=1e-13 * scale)


def test_the_absorption_functions_against_a_loop() -> None:
    rng = np.random.default_rng(7)
    latent = random_latent(2, 6, 3, 4, rng)
    x = rng.normal(size=(5, 6))
    q = rng.normal(size=(2, 5, 3))
    c = compress(x, latent.W_DKV)
    k = expand(c, latent.W_UK)
    looped = np.array([[[q[i, a] @ k[i, b] for b in range(5)] for a in range(5)] for i in range(2)])
    np.testing.assert_allclose(absorbed_scores(q, c, latent.W_UK), looped, rtol=0, atol=1e-12)
    weights = rng.dirichlet(np.ones(5), size=(2, 5))
    w_o = rng.normal(size=(6, 6))
    v = expand(c, latent.W_UV)
    z = np.concatenate([weights[i] @ v[i] for i in range(2)], axis=1)
    np.testing.assert_allclose(
        absorbed_output(weights, c, latent.W_UV, w_o), z @ w_o, rtol=0, atol=1e-12
    )


@pytest.mark.parametrize(("n", "heads", "d_k", "d_c"), [(1, 1, 1, 1), (11, 2, 4, 6), (7, 8, 64, 9)])
def test_the_cache_counts_are_the_formulas(n: int, heads: int, d_k: int, d_c: int) -> None:
    assert latent_cache_numbers(n, d_c) == sum(d_c for _ in range(n))
    assert latent_cache_numbers(n, d_c, 3) == n * d_c + n * 3
    per_token = sum(1 for _ in range(heads) for _ in range(d_k))  # every head's k
    assert key_value_cache_numbers(n, heads, d_k) == 2 * n * per_token


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--latent", "0"], ["d_c (--latent) must be a whole number from 1 to", "15", "got 0"]),
        (["--latent", "16"], ["2·h·d_k − 1 = 15", "got 16", "e.g. --latent 8"]),
        (["--latent", "17", "--heads", "4", "--d-model", "8"], ["= 15", "h = 4 heads of d_k = 2"]),
        (["--latent", "4", "--model", "coref"], ["--latent is random mode's", "Drop --latent"]),
        (["--latent", "4", "--kv-heads", "1"], ["drop --kv-heads 1, or --latent"]),
    ],
)
def test_the_command_line_refuses_a_latent_it_cannot_draw_in_one_line(
    args: list[str], fragments: list[str]
) -> None:
    result = runner.invoke(app, ["explain", "I am good", *args])
    assert result.exit_code != 0 and result.stdout == ""
    one_error_line(result.stderr, *fragments)


def test_a_latent_with_a_weights_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    export_trace(latent_trace("I am good"), path)
    result = runner.invoke(app, ["explain", "I am good", "--latent", "3", "--weights", str(path)])
    assert result.exit_code != 0
    one_error_line(result.stderr, "--weights", "--latent")


def test_cross_takes_no_latent() -> None:
    result = runner.invoke(app, ["cross", "I am good", "Je vais bien", "--latent", "3"])
    assert result.exit_code != 0 and "--latent" in result.stderr


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (0, "got 0"),
        (-2, "latent"),
        (16, "got 16"),
        ("3", "latent"),
        (True, "latent"),
        (2.5, "latent"),
    ],
)
def test_the_python_api_refuses_a_bad_latent_in_one_sentence(value: object, fragment: str) -> None:
    with pytest.raises(AttnvizError, match=fragment) as refused:
        attnviz.explain("I am good", latent=value)  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)


def test_the_python_api_refuses_a_latent_with_a_model() -> None:
    with pytest.raises(AttnvizError, match="latent is random mode's"):
        attnviz.explain("I am good", model="coref", latent=4)


def test_multi_head_attention_refuses_a_latent_that_does_not_fit() -> None:
    rng = np.random.default_rng(0)
    weights = random_weights(AttentionConfig(8, 2), rng)
    wrong = random_latent(4, 8, 2, 3, rng)
    with pytest.raises(AttnvizError, match="do not fit W_Q"):
        multi_head_attention(["a", "b"], rng.normal(size=(2, 8)), weights, latent=wrong)
    with pytest.raises(AttnvizError, match="a LatentWeights"):
        multi_head_attention(["a"], rng.normal(size=(1, 8)), weights, latent="no")  # type: ignore[arg-type]


def test_a_latent_trace_over_the_memory_budget_is_refused_before_the_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The absorbed scores are a fourth [h, n, n] array: a sentence that fits without the latent
    may not fit with it, and is refused in one sentence before anything is computed."""
    from attnviz import limits

    plain = limits.trace_numbers(11, 11, 8, 2) * limits.BYTES_PER_NUMBER
    monkeypatch.setattr(limits, "MAX_TRACE_BYTES", plain + 8)  # the paper's arrays fit
    latent_trace(heads=2, d_model=8)
    with pytest.raises(AttnvizError, match="absorbed scores a fourth matrix") as refused:
        latent_trace(heads=2, d_model=8, latent=6)
    assert "smaller latent" in str(refused.value) and "\n" not in str(refused.value)


# -- the export ---------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_the_latent_survives_an_export_round_trip(tmp_path: Path, suffix: str) -> None:
    trace = latent_trace(latent=5, causal=True)
    path = tmp_path / f"trace{suffix}"
    export_trace(trace, path)
    (loaded,) = load_trace(path)
    assert loaded.d_c == 5 and loaded.config_dict()["d_c"] == 5
    for key in LATENT_KEYS:
        np.testing.assert_array_equal(getattr(loaded, key), getattr(trace, key))


def test_an_export_with_part_of_a_latent_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trace.npz"
    export_trace(latent_trace("I am good", latent=5), path)
    with np.load(path) as data:
        kept = {key: data[key] for key in data.files if key != "W_UV"}
    np.savez(path, **kept)
    with pytest.raises(AttnvizError, match="latent attention needs W_DKV, W_UK, W_UV"):
        load_trace(path)
