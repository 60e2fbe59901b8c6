"""Bounds found by an attack on the reliability release, each one line and a named exit code,
checked in-process (the fresh-process versions of the heavier ones are in
tests/e2e/test_input_limits.py), and the widths the console and the API accept."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from render.analysed import for_grid

import attnviz
from attnviz.cli import app, run
from attnviz.errors import ExitStatus
from attnviz.files import MAX_JSON_BYTES
from attnviz.render.figures.grid import MAX_GRID_TOKENS, build_layers_figure
from attnviz.render.options import MAX_WIDTH
from attnviz.selection import select

from support import CliRunner, needs_model, step

runner = CliRunner()


def one_line(stderr: str, *parts: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])


def test_a_json_file_too_large_to_parse_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as file:
        file.truncate(MAX_JSON_BYTES + 1)  # sparse: no disk is spent
    for option in ("-e", "-w"):
        result = runner.invoke(app, ["explain", "I am good", option, str(path)])
        assert result.exit_code == ExitStatus.BAD_FILE
        one_line(result.stderr, "of JSON", "save it as .npz")


def test_running_out_of_memory_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def exhausted(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr("attnviz.api.explain.explained_on", exhausted)
    assert run(["explain", "I am good"]) == ExitStatus.BAD_INPUT
    one_line(capsys.readouterr().err, "ran out of memory", "shorter text")


def test_a_width_of_zero_is_taken_as_unknown(tmp_path: Path) -> None:
    result = runner.invoke(app, ["explain", "I am good"], env={"COLUMNS": "0"})
    assert result.exit_code == 0 and f"Step {step('tokens')} ·" in result.stdout
    missing = runner.invoke(app, ["explain", "I am good", "-e", str(tmp_path / "no.txt")],
                            env={"COLUMNS": "0"})  # fmt: skip
    assert missing.exit_code == ExitStatus.BAD_FILE
    one_line(missing.stderr, "not found")


def test_a_model_name_too_long_for_the_file_system_is_one_line() -> None:
    name = "c" * (os.pathconf(".", "PC_NAME_MAX") + 45)
    result = runner.invoke(app, ["explain", "I am good", "-m", name])
    assert result.exit_code == ExitStatus.BAD_FILE
    one_line(result.stderr, "File name too long", "'minilm'")


def test_a_layers_grid_of_panels_too_small_to_read_is_refused() -> None:
    words = " ".join(f"w{k}" for k in range(MAX_GRID_TOKENS + 1))
    config = attnviz.AttentionConfig(d_model=8, n_heads=2)
    layers = [attnviz.trace_attention(words, config=config) for _ in range(2)]
    with pytest.raises(attnviz.AttnvizError, match=f"at most {MAX_GRID_TOKENS}"):
        build_layers_figure(for_grid(layers), select(layers[0]))


@pytest.mark.slow
@needs_model
def test_a_sentence_of_only_unknown_pieces_prints_no_nan() -> None:
    # Warnings are errors in this test suite: a mean over no rows would fail it.
    result = runner.invoke(app, ["explain", "😀", "-m", "minilm"])
    assert result.exit_code == 0, result.stderr
    assert "nan" not in result.stdout and "Warning" not in result.stderr
    assert "[CLS] and [SEP] are added to every input" in " ".join(result.stdout.split())


def test_the_console_and_the_api_keep_the_width_within_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from attnviz.cli.console import new_console
    from attnviz.errors import AttnvizError

    for columns, width in (("100000000", MAX_WIDTH), ("10000000", MAX_WIDTH), ("120", 120)):
        monkeypatch.setenv("COLUMNS", columns)
        assert new_console().width == width
    with pytest.raises(AttnvizError, match=f"give at most {MAX_WIDTH}"):
        attnviz.lesson(attnviz.explain("I am good"), width=100_000_000)


def test_a_long_sentence_is_not_quoted_whole_in_a_refusal(tmp_path: Path) -> None:
    """A 500-word sentence in an error line: its first words and "…", never all of it."""
    from attnviz.errors import AttnvizError

    words = " ".join(f"w{i}" for i in range(500))
    with pytest.raises(AttnvizError) as refused:
        attnviz.explain(words, model="coref")
    shown = re.search(r"know: (.*) … and (\d+) more\.", refused.value.message)
    assert shown is not None and len(refused.value.message) < 600
    assert shown[1].count("'w") + int(shown[2]) == 500  # the first few, then how many more
    export = tmp_path / "w.npz"
    attnviz.export_trace(attnviz.explain(words).trace, export)
    with pytest.raises(AttnvizError) as other:
        attnviz.explain("other words", embeddings=export)
    assert "…" in other.value.message and len(other.value.message) < 400
