"""attnviz.render.terminal.reports: the tables of ``attnviz heads`` and ``attnviz scaling``, drawn
from the analysis's numbers."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
from rich.console import Console

from attnviz.analysis.heads import head_weights
from attnviz.analysis.scaling import ScalingRow, SoftmaxStats
from attnviz.cli import app, run
from attnviz.core import trace_with_options
from attnviz.lesson.caveats import attention_caveat, readout_note
from attnviz.options import TraceOptions
from attnviz.render.terminal.reports import render_scaling
from attnviz.selection import ViewOptions, select

from support import CliRunner, needs_model

IT = "The animal didn't cross the street because it was too tired"


def printed(draw: Callable[..., None], *args: object, **kwargs: object) -> list[str]:
    """What ``draw(*args, console, **kwargs)`` prints at 100 columns without colour."""
    out = io.StringIO()
    draw(*args, Console(file=out, width=100, color_system=None), **kwargs)
    return out.getvalue().splitlines()


def test_the_scaling_table_prints_each_statistic_without_and_with_the_scaling() -> None:
    stats = SoftmaxStats  # score variance, max weight, entropy, gradient
    rows = [
        ScalingRow(4, stats(4.04, 0.411, 1.809, 0.3271), stats(0.99, 0.22, 2.4, 0.297)),
        ScalingRow(1024, stats(1009.3, 0.96, 0.1, 0.058), stats(0.99, 0.24, 2.37, 0.303)),
    ]
    lines = printed(render_scaling, rows, n_keys=16)
    assert lines[0] == "attnviz · why divide by √d_k"
    assert any("(flat would be ln 16 = 2.77)" in line for line in lines)
    table = [line for line in lines if line.strip()[:1].isdigit()]
    assert table == [
        "   4        4.0    0.99    0.41    0.22      1.81    2.40     0.327   0.297",
        "1024     1009.3    0.99    0.96    0.24      0.10    2.37     0.058   0.303",
    ]


def test_the_scaling_report_adds_the_gradient_the_softmax_passes_back() -> None:
    stats = SoftmaxStats  # score variance, max weight, entropy, gradient, backward, stalled
    rows = [
        ScalingRow(4, stats(4.0, 0.41, 1.81, 0.327, 0.3104, 0.0025), stats(1, 0.2, 2.4, 0.3, 0.29)),
        ScalingRow(
            1024, stats(1009, 0.96, 0.1, 0.058, 0.049, 0.7525), stats(1, 0.2, 2.4, 0.3, 0.274)
        ),
    ]
    rows = [row._replace(scaled=row.scaled._replace(stalled=0.0)) for row in rows]
    lines = printed(render_scaling, rows, n_keys=16)
    text = " ".join(" ".join(lines).split())
    assert "More stable gradients" in lines
    assert "∂L/∂s_j = w_j·(g_j − Σ_k w_k·g_k)" in text and "below 0.01" in text
    start = lines.index(next(line for line in lines if line.startswith("d_k ")))
    assert [line.split() for line in lines[start : start + 6]] == [
        ["d_k", "4", "1024"],
        ["─" * len(lines[start + 1])],
        ["‖∂L/∂s‖", "0.310", "0.049"],
        ["‖∂L/∂s‖", "÷√d_k", "0.290", "0.274"],
        ["stalled", "0%", "75%"],
        ["stalled", "÷√d_k", "0%", "0%"],
    ]
    assert (
        "From d_k = 4 to 1024, unscaled, ‖∂L/∂s‖ goes from 0.310 to 0.049 and the stalled rows "
        "from 0% to 75%; divided by √d_k, from 0.290 to 0.274 and from 0% to 0%." in text
    )


@pytest.mark.slow
def test_the_heads_table_ranks_by_specificity_with_signed_numbers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["heads", IT, "--heads", "4", "--d-model", "16"]) == 0  # render_heads prints it
    lines = capsys.readouterr().out.splitlines()
    text = " ".join(" ".join(lines).split())
    assert lines[0] == "attnviz · where does 'it' look, in every head"
    assert "spec, the specificity, is w − max(key, offset)" in text
    assert "Ranked by spec; --rank-by selectivity ranks by sel (w − key)" in text
    assert "these weights are random, not learned" in text
    # Its best head for "because" is the one where 'it' gives it most beyond both baselines.
    trace = trace_with_options(IT, TraceOptions(heads=4, d_model=16, seed=0)).trace
    weights = head_weights([trace], select(trace, ViewOptions(focus="it")))
    because = trace.tokens.index("because")
    best = int(np.argmax(weights.specificity[0, :, because]))
    row = next(line for line in lines if line.startswith("because "))
    w, spec = weights.focus[0, best, because], weights.specificity[0, best, because]
    assert row.split()[1:4] == ["L1", f"H{best + 1}", f"{w:.2f}"]
    assert row.split()[4] == (f"+{spec:.2f}" if spec >= 0 else f"−{-spec:.2f}")
    assert any("−" in line for line in lines) and not any(" -0." in line for line in lines)


@pytest.mark.parametrize(
    ("rank_by", "says"),
    [
        ("selectivity", ["Ranked by sel (w − key)", "most selective word for 'it'"]),
        ("weight", ["Ranked by w alone", "favourite word for 'it', strongest first"]),
    ],
)
def test_the_heads_report_names_what_it_ranks_by(
    rank_by: str, says: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["heads", IT, "--rank-by", rank_by]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(part in text for part in says)


def test_a_positional_heads_large_weight_is_said_to_be_its_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A typed head in which 'it' puts a large weight that its baseline explains is named, with
    the numbers of the table."""
    from dataclasses import replace

    from attnviz.render.terminal.heads_report import render_heads

    trace = trace_with_options(IT, TraceOptions(heads=2, d_model=8, seed=0)).trace
    n = trace.n_tokens
    previous = np.full((n, n), 0.02 / (n - 1))
    previous[np.arange(n), np.maximum(np.arange(n) - 1, 0)] = 0.98
    trace = replace(trace, weights=np.stack([previous, trace.weights[1]]))
    selection = select(trace, ViewOptions(focus="it"))
    from attnviz.analysis.heads import rank_heads

    lines = printed(render_heads, rank_heads([trace], selection), [trace])
    text = " ".join(" ".join(lines).split())
    assert "1 previous-token (L1 H1)" in text
    assert (
        "For example, L1 H1 is a previous-token head: 'it' gives 'because' 0.98 there, and the "
        "head's other rows give the word before them 0.98 on average, so spec is only +0.00"
    ) in text


@pytest.mark.slow
@needs_model
def test_an_untrained_checkpoint_and_a_dash_are_explained(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The tiny GPT-2 is random (its config.json says so) though given with --model, and its
    causal mask leaves 'it' no selectivity for the words after it: both are said."""
    from pathlib import Path

    tiny = Path(__file__).resolve().parents[2] / "model" / "tiny_gpt2"
    assert run(["heads", "--model", str(tiny), IT]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "—: no baseline and no spec, because 'it' may not look at that word" in text
    assert "the first row, which may look only at itself, has no choice and does not count" in text
    assert "this checkpoint is untrained (its config.json says so); give a trained one." in text
    assert "use --model for a trained model" not in text


@pytest.mark.slow
def test_heads_counts_the_rows_that_look_most_at_their_own_word(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Counted from the trace, not assumed: with the default random weights no row of the
    11-word sentence gives its largest weight to its own word."""
    assert run(["heads", IT, "--heads", "4", "--d-model", "16"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    trace = trace_with_options(IT, TraceOptions(heads=4, d_model=16, seed=0)).trace
    alone = [  # rows whose largest weight is one key's alone (no tie)
        (h, i)
        for h in range(trace.n_heads)
        for i in range(trace.n_tokens)
        if (trace.weights[h, i] == trace.weights[h, i].max()).sum() == 1
    ]
    own = sum(int(trace.weights[h, i, i] >= trace.weights[h, i].max()) for h, i in alone)
    rows = len(alone)
    said = f"Rows that look most at their own word: {own:,} of the {rows:,} rows of these heads"
    assert said in text
    assert "No head is a self head (a mean weight of 0.5 or more on the word itself)." in text


def test_a_trained_models_heads_end_with_its_readout_and_the_caution() -> None:
    sentence = "The animal didn't cross the street because it was too tired"
    for model, readout in (("coref", "pointer"), ("coref-word", "word")):
        result = CliRunner().invoke(app, ["heads", "--model", model, sentence])
        assert result.exit_code == 0, result.output
        text = " ".join(result.stdout.split())
        note = readout_note(readout, ["it"])
        assert note is not None and note in text
        assert " ".join(attention_caveat("'it'").split()) in text
    random = CliRunner().invoke(app, ["heads", sentence])
    assert "A caution" not in random.stdout and "model's answer" not in random.stdout
