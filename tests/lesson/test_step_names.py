"""The steps' names keep two pairs apart that explanations of attention often mix up: the
softmax normalises a row of scores into weights (forward), and its backward step passes the
gradient on; the weights are the attention matrix [n, n], Z each head's output [n, d_v]."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from attnviz.cli import app
from attnviz.lesson.steps import STEPS, step_number
from attnviz.render.terminal.training_step import render_gradient_step
from attnviz.train.one_step import gradient_step

from support import CliRunner

runner = CliRunner()
IT = "The animal didn't cross the street because it was too tired"


def test_step_titles_name_the_weights_and_the_heads_output() -> None:
    titles = {step.key: step.title for step in STEPS}
    assert titles["weights"] == "Softmax: attention weights, each row of scores normalised"
    assert titles["z"] == "Z = weights·V, the head's output"


def test_the_lesson_says_once_that_z_is_not_the_attention_matrix(tmp_path: Path) -> None:
    export = tmp_path / "t.npz"
    result = runner.invoke(app, ["explain", IT, "--export", str(export)], env={"COLUMNS": "3000"})
    assert result.exit_code == 0, result.stderr
    said = "is weights₁, not Z."
    assert result.stdout.count(said) == 1
    line = next(x for x in result.stdout.splitlines() if said in x)
    with np.load(export, allow_pickle=False) as data:
        n, d_v = data["Z"].shape[1:]
        assert data["weights"].shape[1:] == (n, n)
    assert "(Z₁, [n, d_v], is the head's output; the attention matrix, [n, n]," in line
    full = runner.invoke(app, ["explain", IT, "--full"], env={"COLUMNS": "3000"}).stdout
    assert full.count("Some explanations call Z the attention matrix") == 2  # with every head
    assert f"Step {step_number('z')} · Z₁ = weights₁·V₁, the head's output" in result.stdout
    assert f"Z₁ has shape [n, d_v] = [{n}, {d_v}]" in " ".join(result.stdout.split())


@pytest.mark.slow
def test_the_gradient_lesson_names_the_softmaxs_backward_step() -> None:
    step = gradient_step()
    console = Console(file=io.StringIO(), width=3000, color_system=None)
    render_gradient_step(step, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "The softmax's backward step: ∂L/∂scaled₁ from ∂L/∂weights₁" in text
    assert text.count("normalises no gradient") == 1  # said once, at the first softmax
    through = sum(bool(np.any(layer.d_output)) for layer in step.layers)
    assert text.count("each row of ∂L/∂s sums to 0") == through >= 1
    for layer in step.layers:  # what the sentence says, from the numbers
        if np.any(layer.d_softmax):
            np.testing.assert_allclose(layer.d_softmax.sum(axis=-1), 0.0, atol=1e-12)
