"""``--positions rope`` and ``--kv-heads G`` on the command line: every command that draws the
random layer takes them, --help says what they do, and wrong values get one line."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.options import TraceOptions
from attnviz.trace_files import load_trace

from support import CliRunner, step

runner = CliRunner()
ENV = {"COLUMNS": "80", "NO_COLOR": "1"}
SENTENCE = "The cat sat on the mat"


def one_line_error(*arguments: str) -> str:
    result = runner.invoke(app, list(arguments), env=ENV)
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout and result.stdout == ""
    return lines[0]


@pytest.mark.parametrize("command", ["explain", "heatmap", "page", "heads", "compare"])
def test_help_says_what_rope_and_kv_heads_do(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={**ENV, "COLUMNS": "200"})
    text = re.sub(r"-\s+", "-", " ".join(result.stdout.split()))  # lines broken at a hyphen
    assert "rope (q and k rotated in each head by their position, base 10000" in text
    assert "--kv-heads" in text and "1 is multi-query" in text


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["--kv-heads", "3"], "--kv-heads 3 does not divide 2 heads"),
        (["--kv-heads", "0"], "--kv-heads must be a positive whole number"),
        (["--heads", "4", "--d-model", "12", "--positions", "rope"], "d_k = 3 is odd"),
        (["-m", "coref", "--kv-heads", "1"], "drop --kv-heads"),
    ],
)
def test_wrong_values_are_refused_in_one_line(arguments: list[str], fragment: str) -> None:
    assert fragment in one_line_error("explain", "I am good", *arguments)


def test_cross_refuses_rope_in_one_line() -> None:
    message = one_line_error("cross", "I am good", "Je vais bien", "--positions", "rope")
    assert "--positions sinusoidal" in message


@pytest.mark.slow
def test_explain_exports_what_it_showed(tmp_path: Path) -> None:
    path = tmp_path / "run.npz"
    arguments = ["explain", SENTENCE, "--heads", "4", "--d-model", "16", "--kv-heads", "2"]
    result = runner.invoke(app, [*arguments, "--positions", "rope", "--export", str(path)], env=ENV)
    assert result.exit_code == 0, result.stderr
    assert f"Step {step('rope', rope=True)} · Rotary positions" in result.stdout
    (trace,) = load_trace(path)
    assert trace.n_kv_heads == 2 and trace.rope is not None
    again = tmp_path / "again.npz"
    rerun = ["explain", SENTENCE, "--weights", str(path), "--positions", "rope"]
    result = runner.invoke(app, [*rerun, "--export", str(again)], env=ENV)
    assert result.exit_code == 0, result.stderr
    np.testing.assert_array_equal(load_trace(again)[0].weights, trace.weights)


@pytest.mark.slow
def test_the_heatmap_names_the_shared_key_value_heads(tmp_path: Path) -> None:
    from attnviz.core import trace_with_options
    from attnviz.render.figures.measures import head_title

    trace, _ = trace_with_options(SENTENCE, TraceOptions(heads=4, d_model=16, kv_heads=2))
    assert [head_title(trace, h) for h in range(4)] == [
        "Head 1 (K/V 1)", "Head 2 (K/V 1)", "Head 3 (K/V 2)", "Head 4 (K/V 2)",
    ]  # fmt: skip
    paper, _ = trace_with_options(SENTENCE)
    assert head_title(paper, 1) == "Head 2"
    path = tmp_path / "map.png"
    arguments = ["heatmap", SENTENCE, "--heads", "4", "--d-model", "16", "--kv-heads", "2"]
    result = runner.invoke(app, [*arguments, "--positions", "rope", "-o", str(path)], env=ENV)
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes().startswith(b"\x89PNG")
