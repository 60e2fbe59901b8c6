"""`attnviz train` on the command line: what it prints piped, the files it writes (all or
none), and what it refuses before training."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app

from support import CliRunner, listing, one_error_line

runner = CliRunner()


def test_piped_it_prints_plain_lines_and_what_was_learned() -> None:
    result = runner.invoke(app, ["train", "reverse"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b" not in out  # no escape codes when piped
    assert out.startswith("Task reverse: each position gives the digit at the mirrored")
    assert "Model: 1 layer of attention only, with 1 head, d_model 32" in out
    steps = [int(s) for s in re.findall(r"^step +(\d+) ", out, flags=re.M)]
    assert steps[0] == 0 and all(s % 10 == 0 for s in steps[:-1])
    trained = re.search(r"Trained (\d+) steps in [\d.]+ s of training: held-out accuracy", out)
    assert trained is not None and int(trained[1]) == steps[-1]
    assert "Layer 1, head 1: mirror score" in out
    sequences = re.search(r"; ([\d,]+) of the ([\d,]+) sequences entirely right", out)
    assert sequences is not None and sequences[2] == "1,024"  # whole sequences, not positions


@pytest.mark.slow
@pytest.mark.parametrize("columns", [60, 80, 100])
def test_piped_every_line_fits_the_width(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`COLUMNS=80 attnviz train coref --pace 0 | cat`: no line longer than 80 characters, the
    answers of a plain line going on under it when they do not fit beside it."""
    monkeypatch.setenv("COLUMNS", str(columns))
    result = runner.invoke(app, ["train", "coref", "--pace", "0"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns
    steps = [line for line in lines if line.startswith("step ")]
    assert steps and all("held-out" in line for line in steps)
    answers = 'L2 "it"→animal'
    assert all((answers in line) == (columns == 100) for line in steps)  # whole: 82 characters


@pytest.mark.slow
def test_every_file_is_written_and_reported(tmp_path: Path) -> None:
    arguments = ["train", "reverse", "--save", str(tmp_path / "m"), "--history"]
    arguments += [str(tmp_path / "h.npz"), "--animate", str(tmp_path / "a.gif")]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    for name in ("m", "h.npz", "a.gif"):
        assert f"wrote {tmp_path / name}" in result.stderr
    config = json.loads((tmp_path / "m" / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "attnviz-toy" and config["task"] == "reverse"
    with np.load(tmp_path / "h.npz", allow_pickle=False) as history:
        frames = len(history["step"])
        assert history["accuracy"][-1] >= 0.99
    from PIL import Image

    with Image.open(tmp_path / "a.gif") as animation:
        assert animation.n_frames == frames  # one frame per step, step 0 included
        assert animation.format == "GIF"


@pytest.mark.slow
def test_outputs_are_refused_before_training_and_nothing_is_written(tmp_path: Path) -> None:
    foreign = tmp_path / "someone"
    foreign.mkdir()
    (foreign / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    before = listing(tmp_path)
    for arguments, fragment in (
        (["--save", str(foreign)], "holds a config.json attnviz did not write"),
        (["--animate", str(tmp_path / "a.png")], "--animate"),
        (["--history", str(tmp_path / "nowhere" / "h.npz")], "--history"),
        (["--pace", "-1"], "--pace -1: give 0 to 600 seconds."),
        (["--steps", "0"], "--steps 0: give 1 to 20,000 steps."),
        (["--readout", "word"], "--readout word is for coref"),
    ):
        result = runner.invoke(app, ["train", "reverse", *arguments])
        assert result.exit_code != 0
        one_error_line(result.stderr, fragment)
        assert result.stdout == ""  # refused before the first line of training
    assert listing(tmp_path) == before


@pytest.mark.slow
def test_a_model_attnviz_saved_is_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    for seed in ("1", "2"):
        result = runner.invoke(app, ["train", "previous", "--seed", seed, "--save", str(folder)])
        assert result.exit_code == 0, result.output
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["training"]["seed"] == 2


@pytest.mark.slow
def test_the_word_readout_says_where_its_attention_went() -> None:
    result = runner.invoke(app, ["train", "coref", "--readout", "word"])
    assert result.exit_code == 0, result.output
    assert 'Readout: word: an output layer reads X at "it"' in result.stdout
    assert 'the model\'s answer: "animal" (right)' in result.stdout


@pytest.mark.slow
def test_explain_step_prints_one_step_and_trains_nothing(tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", "coref", "--explain-step"])
    assert result.exit_code == 0, result.output
    assert "L = −ln p(animal)" in result.stdout
    assert "∂L/∂W_Q₁ = X_0ᵀ·∂L/∂Q₁" in result.stdout
    assert "The weight of 'animal' in the row of 'it', layer 2:" in result.stdout
    assert "Trained" not in result.stdout  # no training ran
    for arguments, fragment in (
        (["reverse", "--explain-step"], "--explain-step is for coref"),
        (["coref", "--explain-step", "--save", str(tmp_path / "m")], "trains nothing"),
    ):
        refused = runner.invoke(app, ["train", *arguments])
        assert refused.exit_code != 0
        one_error_line(refused.stderr, fragment)
    assert list(tmp_path.iterdir()) == []
