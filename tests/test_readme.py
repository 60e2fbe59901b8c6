"""The README is part of the product: its commands run, and CI runs its test command."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from attnviz.cli import COMMANDS, app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)


def readme_attnviz_commands() -> list[str]:
    lines = [line.strip() for block in bash_blocks() for line in block.splitlines()]
    return [line for line in lines if line.startswith("attnviz ")]


def test_quickstart_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    quickstart = README.split("## Quickstart")[1].split("\n## ")[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quickstart, flags=re.DOTALL)
    assert len(commands) == 2
    assert commands[0].endswith('attnviz explain "I am good"')
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci_script.splitlines()


def test_every_command_is_documented() -> None:
    for command in COMMANDS:
        assert f"### `attnviz {command}" in README, command


#: Files the README's examples read, and the example before them that writes each.
WRITTEN_BEFORE = {
    "trace.npz": shlex.split("explain 'I am good' --heads 4 --d-model 16 --export trace.npz"),
    "m.npz": shlex.split("explain 'I am good' -m minilm --export m.npz"),
}


@pytest.mark.parametrize("command", readme_attnviz_commands())
def test_readme_command_runs(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arguments = shlex.split(command, comments=True)[1:]
    if "--model" in arguments or "-m" in arguments:
        pytest.importorskip("safetensors", reason="--model needs the optional extra attnviz[model]")
        pytest.importorskip("tokenizers", reason="--model needs the optional extra attnviz[model]")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sample_embeddings").symlink_to(ROOT / "sample_embeddings")
    (tmp_path / "tests").symlink_to(ROOT / "tests")  # the tiny GPT-2 of the GPT-2 examples
    # The examples that read back a file which the line before them wrote: that line first.
    for name, before in WRITTEN_BEFORE.items():
        if name in arguments and arguments[arguments.index(name) - 1] != "--export":
            if "-m" in before:
                pytest.importorskip("safetensors", reason="the export needs attnviz[model]")
                pytest.importorskip("tokenizers", reason="the export needs attnviz[model]")
            assert CliRunner().invoke(app, before).exit_code == 0
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.output


def test_python_api_examples_run() -> None:
    # The fourth block is a notebook cell (%matplotlib): tests/test_notebook_lesson.py runs it.
    first, model, library, _ = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(first, namespace)  # noqa: S102 - the README's own example
    assert namespace["trace"].weights.shape == (2, 11, 11)
    assert namespace["text"].startswith("attnviz · multi-head self-attention")
    assert namespace["pair"].trace.is_cross
    assert [row.d_k for row in namespace["rows"]] == [4, 16, 64]
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:  # without the extra, the model example is not run
        pass
    else:
        exec(model, namespace)  # noqa: S102
        assert namespace["real"].trace.provenance.weights.layer == 6
        assert len(namespace["real"].layers) == 6
        assert namespace["ranking"].focus == "it"
    namespace = {"attnviz": namespace["attnviz"]}
    exec(library, namespace)  # noqa: S102
    example, trace = namespace["example"], namespace["trace"]
    assert example.result == trace.scores[0, 1, 0]
    np.testing.assert_allclose(example.q @ example.k, example.result)


def test_error_examples_are_real() -> None:
    block = README.split("### Errors")[1].split("```text\n")[1].split("```")[0]
    lines = block.strip().splitlines()
    for prompt, expected in zip(lines[::2], lines[1::2], strict=True):
        result = subprocess.run(
            [sys.executable, "-m", "attnviz", *shlex.split(prompt.removeprefix("$ "))[1:]],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "100"},
        )
        assert result.returncode != 0
        assert result.stderr.strip() == expected.replace(
            "attnviz explain", "python -m attnviz explain"
        )


def test_pasted_output_is_real_output() -> None:
    pasted = README.split("## What you see")[1].split("### An honest note")[0]
    blocks = re.findall(r"```text\n(.*?)```", pasted, flags=re.DOTALL)
    assert len(blocks) == 2
    result = CliRunner().invoke(app, ["explain", "I am good", "--focus", "I"])
    real = "\n".join(line.rstrip() for line in result.stdout.splitlines())
    for block in blocks:
        assert block.rstrip("\n") in real


def test_the_80_column_table_is_real_output() -> None:
    explain = README.split("### `attnviz explain SENTENCE`")[1].split("\n### ")[0]
    block = explain.split("```text\n$ COLUMNS=80 ")[1].split("```")[0]
    command, *pasted, more = block.rstrip("\n").splitlines()
    assert more == "…" and pasted[0].startswith("scores₁ = Q₁·K₁ᵀ  [11 × 11]")
    arguments = shlex.split(command)
    assert arguments[0] == "attnviz"
    result = CliRunner().invoke(app, arguments[1:], env={"COLUMNS": "80"})
    real = [line.rstrip() for line in result.stdout.splitlines()]
    start = real.index(pasted[0])
    assert real[start : start + len(pasted)] == pasted
    assert all(len(line) <= 80 for line in pasted) and "elided" not in result.stdout


def test_hostile_input_example_is_real_output() -> None:
    section = README.split("### Any input, safely")[1].split("\n### ")[0].split("\n## ")[0]
    block = section.split("```text\n")[1].split("```")[0]
    lines = [line.strip() for line in block.strip().splitlines()]
    assert (
        lines[0] == "$ attnviz explain $'[red]it[/] was \\x1b[2J 東京 👍🏽' --heads 1 --d-model 4"
    )
    result = CliRunner().invoke(
        app, ["explain", "[red]it[/] was \x1b[2J 東京 👍🏽", "--heads", "1", "--d-model", "4"]
    )
    real = [line.rstrip() for line in result.stdout.splitlines()]
    for line in lines[1:]:
        assert line in real, line
