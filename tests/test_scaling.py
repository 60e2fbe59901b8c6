"""The √d_k experiment: the statistics behave as the theory says, and the command shows them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnviz.analysis.scaling import MAX_D_K, parse_d_ks, scaling_experiment, softmax_stats
from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus

from support import CliRunner

runner = CliRunner()


def test_unscaled_variance_grows_like_d_k_and_scaled_stays_near_one() -> None:
    rows = scaling_experiment([4, 64, 1024], n_queries=400, seed=1)
    for row in rows:
        assert row.unscaled.score_variance == pytest.approx(row.d_k, rel=0.15)
        assert row.scaled.score_variance == pytest.approx(1.0, rel=0.15)
    unscaled_max = [row.unscaled.max_weight for row in rows]
    unscaled_gradient = [row.unscaled.gradient for row in rows]
    assert unscaled_max == sorted(unscaled_max) and unscaled_max[-1] > 0.9
    assert unscaled_gradient == sorted(unscaled_gradient, reverse=True)
    assert unscaled_gradient[-1] < 0.1
    scaled_entropy = [row.scaled.entropy for row in rows]
    assert max(scaled_entropy) - min(scaled_entropy) < 0.15


@pytest.mark.slow
def test_unscaled_gradient_shrinks_with_d_k_and_scaled_stays_the_same_size() -> None:
    """The seeds' "more stable gradients": for the same upstream gradient, what the softmax
    passes back shrinks and stalls without the scaling, and keeps its size with it."""
    rows = scaling_experiment([4, 16, 64, 256, 1024], n_queries=400, seed=2)
    unscaled = [row.unscaled.backward for row in rows]
    scaled = [row.scaled.backward for row in rows]
    assert unscaled == sorted(unscaled, reverse=True)
    assert unscaled[-1] < unscaled[0] / 4
    assert max(scaled) / min(scaled) < 1.25
    assert all(row.scaled.backward > 3 * row.unscaled.backward for row in rows[-2:])
    stalled = [row.unscaled.stalled for row in rows]
    assert stalled == sorted(stalled) and stalled[-1] > 0.5
    assert all(row.scaled.stalled < 0.02 for row in rows)


def test_the_backward_statistics_of_flat_and_one_hot_rows() -> None:
    upstream = np.array([[1.0, -1.0, 2.0, 0.0]])
    # w = 1/4 everywhere: ∂L/∂s = (g − mean g) / 4 = [0.125, −0.375, 0.375, −0.125]
    flat = softmax_stats(np.zeros((1, 4)), upstream)
    assert flat.backward == pytest.approx(np.sqrt(2 * 0.125**2 + 2 * 0.375**2))
    assert flat.stalled == 0.0
    one_hot = softmax_stats(np.array([[1000.0, 0.0, 0.0, 0.0]]), upstream)
    assert one_hot.backward == pytest.approx(0.0, abs=1e-12) and one_hot.stalled == 1.0
    assert np.isnan(softmax_stats(np.zeros((1, 4))).backward)


def test_the_upstream_gradient_leaves_the_other_statistics_as_they_were() -> None:
    """q and k are drawn as before the gradients were added: the README's table stands."""
    row = scaling_experiment([4, 16], seed=0)[1]
    assert format(row.unscaled.score_variance, ".1f") == "15.9"
    assert format(row.unscaled.gradient, ".3f") == "0.273"
    assert format(row.scaled.gradient, ".3f") == "0.302"


def test_softmax_stats_of_flat_and_one_hot_rows() -> None:
    flat = softmax_stats(np.zeros((3, 4)))
    assert flat.max_weight == pytest.approx(0.25) and flat.entropy == pytest.approx(np.log(4))
    # ∂w/∂s = diag(w) - w·wᵀ for w = 1/4: diagonal 3/16, off-diagonal -1/16
    assert flat.gradient == pytest.approx(np.sqrt(4 * (3 / 16) ** 2 + 12 * (1 / 16) ** 2))
    one_hot = softmax_stats(np.array([[1000.0, 0.0, 0.0]]))
    assert one_hot.max_weight == pytest.approx(1.0)
    assert one_hot.entropy == pytest.approx(0.0, abs=1e-12)
    assert one_hot.gradient == pytest.approx(0.0, abs=1e-12)


def test_same_seed_same_numbers() -> None:
    assert scaling_experiment([16], seed=3) == scaling_experiment([16], seed=3)


def test_parse_d_ks_caps_and_refuses() -> None:
    assert parse_d_ks("4, 16,64") == ([4, 16, 64], [])
    values, notes = parse_d_ks("8,100000")
    assert values == [8, MAX_D_K] and "capped" in notes[0]
    for bad, message in (
        ("0,4", "1 or more"),
        ("-4", "1 or more"),
        ("4,x", "not a whole"),
        ("", "empty"),
    ):
        with pytest.raises(AttnvizError, match=message):
            parse_d_ks(bad)


@pytest.mark.slow
def test_scaling_command_table_and_plot(tmp_path: Path) -> None:
    plot = tmp_path / "scaling.png"
    result = runner.invoke(app, ["scaling", "--dk", "4,64", "--queries", "100", "-o", str(plot)])
    assert result.exit_code == 0, result.stderr
    assert "softmax temperature" in result.stdout and "T = √d_k" in result.stdout
    first_table = result.stdout.split("√d_k, not √(number of words)")[0]  # sizes by d_k
    rows = [
        line.split()
        for line in first_table.splitlines()
        if line.strip().split(" ")[0] in {"4", "64"}
    ]
    assert [row[0] for row in rows] == ["4", "64"]
    assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--dk", "0,4"], "1 or more"),
        (["--dk", "4,abc"], "not a whole number"),
        (["--keys", "1"], "--keys 1 is out of range"),
        (["-o", "plot.gif"], "'.gif'"),
    ],
)
def test_scaling_errors(
    args: list[str], fragment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["scaling", *args])
    assert result.exit_code in (ExitStatus.BAD_INPUT, ExitStatus.CANNOT_WRITE)
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_absurd_d_k_is_capped_and_said() -> None:
    result = runner.invoke(app, ["scaling", "--dk", "4,999999", "--queries", "20"])
    assert result.exit_code == 0
    assert f"capped at {MAX_D_K}" in result.stderr


def test_too_many_random_numbers_is_one_line_not_a_memory_error() -> None:
    result = runner.invoke(app, ["scaling", "--dk", "4096", "--keys", "4096"])
    assert result.exit_code == ExitStatus.BAD_INPUT
    assert "random numbers; keep it under" in result.stderr


# -- √d_k, not √n ---------------------------------------------------------------------------------


def test_dividing_by_root_d_k_keeps_a_pairs_scores_whatever_the_length() -> None:
    from attnviz.analysis.scaling import divisor_experiment

    rows = divisor_experiment((2, 8, 64, 256), d_k=64, n_queries=200, seed=3)
    # Recomputed here from the same draws: query 1, keys 1 and 2.
    rng = np.random.default_rng((3, 2))
    q = rng.standard_normal((200, 1, 64))
    k = rng.standard_normal((200, 256, 64))
    pair = np.array([q[0, 0] @ k[0, 0], q[0, 0] @ k[0, 1]])
    for row in rows:
        np.testing.assert_allclose(row.pair_by_d_k, pair / 8.0, rtol=1e-12)
        np.testing.assert_allclose(row.pair_by_n, pair / np.sqrt(row.n_keys), rtol=1e-12)
        assert row.ratio_by_d_k == pytest.approx(np.exp((pair[0] - pair[1]) / 8.0))
        assert row.ratio_by_d_k == pytest.approx(row.weights_by_d_k[0] / row.weights_by_d_k[1])
    assert len({row.ratio_by_d_k for row in rows}) == 1  # ÷√d_k: the same at every length
    ratios = [abs(np.log(row.ratio_by_n)) for row in rows]
    assert ratios == sorted(ratios, reverse=True)  # ÷√n: towards 1 as words are added
    flat = [row.flatness_by_n for row in rows]
    assert flat == sorted(flat) and flat[-1] > 0.95  # long sentences flatten
    assert rows[2].flatness_by_n == pytest.approx(rows[2].flatness_by_d_k)  # n = d_k


@pytest.mark.slow
def test_the_scaling_command_says_root_d_k_not_root_n_with_its_numbers() -> None:
    import attnviz

    result = runner.invoke(app, ["scaling", "--dk", "4,64"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    rows = attnviz.divisor_rows()
    first, last = rows[0], rows[-1]
    assert f"s₁ is {first.pair_by_d_k[0]:.2f} and w₁/w₂ {first.ratio_by_d_k:.1f} at every" in text
    assert (
        f"s₁ goes from {first.pair_by_n[0]:.2f} at n = {first.n_keys} to "
        f"{last.pair_by_n[0]:.2f} at n = {last.n_keys}"
    ) in text
    assert f"flatness goes from {first.flatness_by_n:.2f} to {last.flatness_by_n:.2f}" in text
    assert first.flatness_by_n < last.flatness_by_n
    table = result.stdout.split("√d_k, not √(number of words)")[1].splitlines()
    assert len({f"{r.ratio_by_d_k:.1f}" for r in rows}) == 1
    for row in rows:
        line = next(x for x in table if x.split()[:1] == [str(row.n_keys)])
        assert line.split()[1:3] == [f"{row.pair_by_d_k[0]:.2f}", f"{row.pair_by_n[0]:.2f}"]
    with pytest.raises(AttnvizError, match="queries"):
        attnviz.divisor_rows(queries=0)
