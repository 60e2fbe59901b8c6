"""Latent attention with DeepSeek's decoupled rotary positions (attnviz.latent): each head's
turned query part q_R and the one turned key k_R against a literal loop over tokens, heads and
pairs; the scores, their scale √(d_k + d_rope) and the rest of the layer against a loop; the
absorbed content part plus the turned part against the expanded scores; d_rope's default; the
combination accepted where it was refused; the export round trip.

Tolerances: the loops add the same products as numpy's matrix products in another order, so
they agree within rounding of float64 sums of a few dozen terms, 1e-12 on numbers of order 10.
The absorbed scores (q·W_UKᵀ)·cᵀ + q_R·k_Rᵀ and the expanded q·kᵀ + q_R·k_Rᵀ share the turned
part and differ in the content part by rounding only: bounded by support.product_atol's γ_k
bound (Higham, eq. 3.5) over both products. Never bit for bit: BLAS orders sums differently on
other machines.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.attention import multi_head_attention
from attnviz.cli import app
from attnviz.config import AttentionConfig
from attnviz.core import trace_with_options
from attnviz.errors import AttnvizError
from attnviz.latent import LatentWeights, latent_cache_numbers, random_latent, rope_width
from attnviz.options import TraceOptions
from attnviz.positions import Rope
from attnviz.trace import LATENT_KEYS, LATENT_ROPE_KEYS, AttentionTrace
from attnviz.trace_files import export_trace, load_trace
from attnviz.weights import random_weights

from support import CliRunner, examples, one_error_line, product_atol

IT = "The animal didn't cross the street because it was too tired"
runner = CliRunner()


def rope_trace(sentence: str = IT, **options: object) -> AttentionTrace:
    options = {"latent": 6, "positions": "rope", **options}
    trace, _ = trace_with_options(sentence, TraceOptions(**options))  # type: ignore[arg-type]
    return trace


def looped_turn(row: list[float], position: int, base: float = 10000.0) -> list[float]:
    """One row turned by RoPE, pair i = (i, i + d/2) by the angle position·base^(−2i/d)."""
    d = len(row)
    turned = list(row)
    for i in range(d // 2):
        angle = position * base ** (-2 * i / d)
        a, b = row[i], row[i + d // 2]
        turned[i] = a * math.cos(angle) - b * math.sin(angle)
        turned[i + d // 2] = a * math.sin(angle) + b * math.cos(angle)
    return turned


def looped_projection(x: np.ndarray, w: np.ndarray) -> list[list[float]]:
    """x·w one token and column at a time.  [n, d_model], [d_model, d] -> n rows of d"""
    return [
        [
            sum(float(x[t, m]) * float(w[m, col]) for m in range(w.shape[0]))
            for col in range(w.shape[1])
        ]
        for t in range(len(x))
    ]


def test_the_turned_parts_are_the_looped_formulas() -> None:
    trace = rope_trace(heads=2, d_model=8)
    assert trace.W_QR is not None and trace.W_KR is not None
    assert trace.Q_R is not None and trace.K_R is not None
    x = np.asarray(trace.X)
    keys = [looped_turn(row, t) for t, row in enumerate(looped_projection(x, trace.W_KR))]
    np.testing.assert_allclose(trace.K_R, keys, rtol=0, atol=1e-12)
    for head in range(2):
        rows = looped_projection(x, trace.W_QR[head])
        queries = [looped_turn(row, t) for t, row in enumerate(rows)]
        np.testing.assert_allclose(trace.Q_R[head], queries, rtol=0, atol=1e-12)
    assert trace.d_rope == 2 and trace.K_R.shape == (11, 2) and trace.Q_R.shape == (2, 11, 2)
    assert trace.rope is None and trace.Q_rotated is None  # the turn is the latent's only


def test_the_scores_scale_and_layer_are_a_per_token_per_head_loop() -> None:
    trace = rope_trace(heads=2, d_model=8, latent=5, causal=True)
    assert trace.Q_R is not None and trace.K_R is not None
    n, d_k, d_rope = trace.n_tokens, trace.d_k, trace.d_rope
    for head in range(2):
        for i in range(n):
            for j in range(n):
                content = sum(trace.Q[head, i, c] * trace.K[head, j, c] for c in range(d_k))
                turned = sum(trace.Q_R[head, i, r] * trace.K_R[j, r] for r in range(d_rope))
                score = content + turned
                assert abs(trace.scores[head, i, j] - score) <= 1e-12
                # DeepSeek-V2's scale: the root of the number of products in the score.
                scaled = score / math.sqrt(d_k + d_rope)
                assert abs(trace.scaled[head, i, j] - scaled) <= 1e-12
            allowed = [trace.scaled[head, i, j] for j in range(i + 1)]
            top = max(allowed)
            exps = [math.exp(s - top) for s in allowed]
            for j in range(n):
                weight = exps[j] / sum(exps) if j <= i else 0.0
                assert abs(trace.weights[head, i, j] - weight) <= 1e-12
            z = [
                sum(trace.weights[head, i, j] * trace.V[head, j, c] for j in range(n))
                for c in range(d_k)
            ]
            np.testing.assert_allclose(trace.Z[head, i], z, rtol=0, atol=1e-12)
    np.testing.assert_allclose(trace.output, trace.concat @ trace.W_O, rtol=0, atol=1e-12)


def test_the_turned_part_is_added_to_the_same_latent_layer() -> None:
    """W_QR and W_KR are drawn after the latent's matrices: with and without --positions rope
    the same seed gives the same Q, c, K and V, and the scores differ by q_R·k_Rᵀ alone."""
    plain, turned = rope_trace(positions="none", seed=4), rope_trace(seed=4)
    for key in ("Q", "c", "K", "V", "W_O"):
        np.testing.assert_array_equal(getattr(plain, key), getattr(turned, key))
    assert turned.Q_R is not None and turned.K_R is not None and plain.Q_R is None
    added = turned.Q_R @ turned.K_R.T
    np.testing.assert_allclose(turned.scores - plain.scores, added, rtol=0, atol=1e-12)
    assert plain.d_rope == 0 and plain.score_width == plain.d_k


def test_the_turned_part_depends_on_the_distance_only() -> None:
    """RoPE's property, for the decoupled part: the same q_R and k_R rows at positions m and n
    score as at m + s and n + s."""
    rope = Rope()
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(1, 4)), rng.normal(size=(1, 4))
    from attnviz.positions import rotate

    def score(m: int, n: int) -> float:
        return float(rotate(q, np.array([m]), rope)[0] @ rotate(k, np.array([n]), rope)[0])

    assert abs(score(5, 2) - score(9, 6)) <= 1e-12
    assert abs(score(5, 2) - score(2, 2)) > 1e-6  # and on the distance it does


@settings(max_examples=examples(60), deadline=None)
@given(
    n=st.integers(1, 9),
    heads=st.sampled_from([1, 2, 4]),
    d_k=st.integers(1, 6),
    d_c=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_absorbed_content_plus_turned_part_equals_the_expanded_within_rounding(
    n: int, heads: int, d_k: int, d_c: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    d_model = heads * d_k
    weights = random_weights(AttentionConfig(d_model, heads), rng)
    latent = random_latent(heads, d_model, d_k, d_c, rng, rope_width(d_k))
    x = rng.normal(size=(n, d_model))
    trace = multi_head_attention([f"w{i}" for i in range(n)], x, weights, latent=latent)
    assert trace.scores_absorbed is not None and trace.c is not None
    assert trace.Q_R is not None and trace.K_R is not None
    q_tilde = trace.Q @ np.swapaxes(latent.W_UK, -1, -2)
    bound = product_atol(q_tilde, trace.c.T) + product_atol(trace.Q, np.swapaxes(trace.K, -1, -2))
    bound += 2 * product_atol(trace.Q_R, trace.K_R.T)  # the turned part, computed twice
    np.testing.assert_allclose(trace.scores_absorbed, trace.scores, rtol=0, atol=bound * 4)
    # The absorbed content part alone is not the score: the turned part is really there.
    content = q_tilde @ trace.c.T
    turned = trace.Q_R @ trace.K_R.T
    np.testing.assert_allclose(trace.scores_absorbed - content, turned, rtol=0, atol=bound * 4)


@pytest.mark.parametrize(("d_k", "d_rope"), [(1, 2), (2, 2), (4, 2), (6, 4), (8, 4), (128, 64)])
def test_d_rope_is_half_of_d_k_rounded_up_to_even(d_k: int, d_rope: int) -> None:
    assert rope_width(d_k) == d_rope


def test_an_odd_d_k_gets_an_even_d_rope() -> None:
    trace = rope_trace("I am good", heads=2, d_model=6)  # d_k = 3
    assert trace.d_k == 3 and trace.d_rope == 2 and trace.score_width == 5
    np.testing.assert_allclose(trace.scaled, trace.scores / math.sqrt(5), rtol=0, atol=1e-15)


def test_the_cache_counts_the_turned_key() -> None:
    assert latent_cache_numbers(11, 6, 2) == 88 and latent_cache_numbers(1, 512, 64) == 576


# -- the command line and the refusals ----------------------------------------------------------


def test_the_command_line_runs_a_latent_with_rotary_positions() -> None:
    result = runner.invoke(
        app, ["explain", IT, "--latent", "6", "--positions", "rope"], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "k_R = RoPE(X·W_KR) [11 × 2]" in out
    assert "n·(d_c + d_rope) = 11·(6 + 2) = 88 numbers" in out
    assert "Scale by √(d_k + d_rope) = √6 = 2.45" in out
    assert "The turned part cannot be absorbed" in out


def test_the_options_accept_the_combination_and_still_refuse_grouped_heads() -> None:
    options = TraceOptions(latent=4, positions="rope")  # type: ignore[arg-type]
    assert options.latent == 4
    result = runner.invoke(
        app, ["explain", "I am good", "--latent", "4", "--positions", "rope", "--kv-heads", "1"]
    )
    assert result.exit_code != 0 and result.stdout == ""
    one_error_line(result.stderr, "drop --kv-heads 1, or --latent")


def test_multi_head_attention_refuses_turned_parts_that_do_not_fit() -> None:
    rng = np.random.default_rng(0)
    weights = random_weights(AttentionConfig(8, 2), rng)
    latent = random_latent(2, 8, 4, 3, rng, 2)
    x = rng.normal(size=(2, 8))
    for wrong in (
        LatentWeights(latent.W_DKV, latent.W_UK, latent.W_UV, latent.W_QR, latent.W_KR, None),
        LatentWeights(latent.W_DKV, latent.W_UK, latent.W_UV, latent.W_QR, None, Rope()),
        LatentWeights(
            latent.W_DKV, latent.W_UK, latent.W_UV, latent.W_QR[..., :1], latent.W_KR[:, :1], Rope()
        ),
    ):
        with pytest.raises(AttnvizError, match="W_QR .h, d_model, d_rope.") as refused:
            multi_head_attention(["a", "b"], x, weights, latent=wrong)
        assert "\n" not in str(refused.value)
    with pytest.raises(AttnvizError, match="its rotary positions the latent's own"):
        multi_head_attention(["a", "b"], x, weights, latent=latent, rope=Rope())


def test_a_turned_latent_over_the_memory_budget_is_refused_before_the_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from attnviz import latent, limits

    plain = limits.trace_numbers(11, 11, 8, 2)
    unturned = plain + 11 * 6 + 3 * 8 * 6 + 2 * 11 * 11 + 11 * 8
    monkeypatch.setattr(limits, "MAX_TRACE_BYTES", (unturned + 1) * limits.BYTES_PER_NUMBER)
    latent.check_latent_trace(11, 11, 2, 8, 6)  # fits without the turned parts
    with pytest.raises(AttnvizError, match="absorbed scores"):
        rope_trace(heads=2, d_model=8)


# -- the export ---------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_the_turned_parts_survive_an_export_round_trip(tmp_path: Path, suffix: str) -> None:
    trace = rope_trace(causal=True)
    path = tmp_path / f"trace{suffix}"
    export_trace(trace, path)
    (loaded,) = load_trace(path)
    assert loaded.d_rope == 2 and loaded.config_dict()["d_rope"] == 2
    for key in (*LATENT_KEYS, *LATENT_ROPE_KEYS, "scores", "scaled"):
        np.testing.assert_array_equal(getattr(loaded, key), getattr(trace, key))


def test_an_export_with_part_of_the_turned_parts_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trace.npz"
    export_trace(rope_trace("I am good"), path)
    with np.load(path) as data:
        kept = {key: data[key] for key in data.files if key != "K_R"}
    np.savez(path, **kept)
    with pytest.raises(AttnvizError, match="need W_QR, W_KR, Q_R, K_R together"):
        load_trace(path)
