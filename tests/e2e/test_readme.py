"""The README and docs/*.md are part of the product: every command in them runs as printed, with
the installed ``attnviz`` command in a fresh process, and says what its page says it does; CI
runs the README's test command; their pasted output and error lines are real.

The commands are read from the pages (tests/docs_pages.py); what each must print and write is in
readme_expected.py, so a command added to a page fails here until it says what its output must
hold.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from docs_pages import PAGES, ROOT, documented_commands, section, text_block

from attnviz.errors import ExitStatus
from e2e.readme_expected import EXPECTED, WRITTEN_BEFORE

from support import has_model_extra, installed_attnviz

README = PAGES["README.md"]


def run(
    *arguments: str, cwd: Path = ROOT, columns: str = "100"
) -> subprocess.CompletedProcess[str]:
    """The installed command, as a person types it, at a terminal width without colour."""
    environment = {**os.environ, "COLUMNS": columns, "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [installed_attnviz(), *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


#: The first bytes of each kind of file a command writes.
SIGNATURES = {
    ".png": b"\x89PNG\r\n\x1a\n",
    ".pdf": b"%PDF-",
    ".svg": b"<",  # <svg, or matplotlib's <?xml before it
    ".html": b"<!DOCTYPE html>",
    ".npz": b"PK\x03\x04",
    ".gif": b"GIF89a",
    ".md": b"# ",
    ".gift": b"// ",
    ".xml": b"<?xml",
}


#: The models attnviz ships: --model with one of these needs no extra.
SHIPPED_MODELS = ("coref", "coref-word")


def needs_model(command: str) -> bool:
    arguments = shlex.split(command)
    for flag in ("--model", "-m"):
        if flag in arguments and arguments[arguments.index(flag) + 1] not in SHIPPED_MODELS:
            return True
    return False


def png_size(path: Path) -> tuple[int, int]:
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return width, height


def check_written(path: Path) -> None:
    """A whole file of its kind: the right signature, a plausible size, a readable body."""
    if path.is_dir():  # a model folder, as `attnviz train --save` writes it
        assert sorted(p.name for p in path.iterdir()) == ["config.json", "weights.npz"]
        return
    content = path.read_bytes()
    assert content.startswith(SIGNATURES[path.suffix]), path
    if path.suffix == ".png":
        width, height = png_size(path)
        assert width >= 600 and height >= 500, (path, width, height)
        if path.parent.name == "slides":
            assert (width, height) == (1920, 1080)
    elif path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as saved:
            if "probe1_rows" in saved:  # `attnviz train --history`: each row of each snapshot
                np.testing.assert_allclose(saved["probe1_rows"].sum(-1), 1.0, atol=1e-5)
            elif "generated_ids" in saved:  # `attnviz generate --export`: each token's rows
                for j in range(1, len(saved["generated_ids"]) + 1):
                    rows = saved[f"{j}.attention"]
                    np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-5)
            else:
                np.testing.assert_allclose(saved["weights"].sum(-1), 1.0, atol=1e-6)
    elif path.suffix in (".svg", ".html"):
        text = content.decode("utf-8")
        assert "<svg" in text[:500] if path.suffix == ".svg" else "<html" in text[:100]
        assert text.rstrip().endswith("</svg>" if path.suffix == ".svg" else "</html>"), path
    elif path.suffix == ".pdf":
        assert content.rstrip().endswith(b"%%EOF")
    assert len(content) > 4_000, path


@pytest.fixture(scope="module")
def written_before(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The file ``name`` of WRITTEN_BEFORE, made once by the example that writes it."""
    folder = tmp_path_factory.mktemp("written_before")
    made: dict[str, Path] = {}

    def made_by_its_example(name: str) -> Path:
        if name not in made:
            command = WRITTEN_BEFORE[name]
            if needs_model(command) and not has_model_extra():
                pytest.skip(f"{name} needs attnviz[model]")
            assert run(*shlex.split(command)[1:], cwd=folder).returncode == 0
            made[name] = folder / name
        return made[name]

    return made_by_its_example


def test_every_documented_command_has_an_expectation() -> None:
    assert set(documented_commands()) == set(EXPECTED)


@pytest.mark.parametrize("command", documented_commands())
def test_documented_command_says_and_writes_what_it_should(
    command: str, tmp_path: Path, written_before: Callable[[str], Path]
) -> None:
    if needs_model(command) and not has_model_extra():
        pytest.skip("--model needs the optional extra attnviz[model]")
    expected = EXPECTED[command]
    (tmp_path / "sample_embeddings").symlink_to(ROOT / "sample_embeddings")
    (tmp_path / "tests").symlink_to(ROOT / "tests")  # the tiny GPT-2 of the GPT-2 examples
    arguments = shlex.split(command)[1:]
    for name in WRITTEN_BEFORE:  # an example reading what the one before wrote
        if name in arguments and arguments[arguments.index(name) - 1] != "--export":
            shutil.copy(written_before(name), tmp_path / name)
    result = run(*arguments, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    wrote = [f"wrote {name}" for name in expected.writes]
    assert result.stderr.splitlines() == [*expected.notes, *wrote]
    lines = result.stdout.splitlines()
    assert bool(lines) == bool(expected.says), "stdout holds the lesson or report, or nothing"
    for part in expected.says:
        assert any(part in line for line in lines), part
    for name in expected.writes:
        check_written(tmp_path / name)
    if expected.then is not None:
        expected.then(tmp_path)


# -- the README's other claims --------------------------------------------------------------


def test_quickstart_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    quickstart = README.split("## Quickstart")[1].split("\n## ")[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quickstart, flags=re.DOTALL)
    assert len(commands) == 2
    assert commands[0].endswith('attnviz explain "I am good"')
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci_script.splitlines()


def test_no_two_documented_commands_write_the_same_file() -> None:
    """Run one after another in one folder, the pages' commands keep each other's outputs."""
    written: dict[str, str] = {}
    for command, expected in EXPECTED.items():
        for name in expected.writes:
            assert name not in written, f"{command!r} replaces {name}, written by {written[name]!r}"
            written[name] = command


def test_python_api_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the examples save files where they run
    # The fourth block is a notebook cell (%matplotlib):
    # tests/render/notebook/test_notebook_lesson.py runs it.
    python = PAGES["docs/python.md"]
    first, toy, model, library, _ = re.findall(r"```python\n(.*?)```", python, flags=re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(first, namespace)  # noqa: S102 - the page's own example
    assert namespace["trace"].weights.shape == (2, 11, 11)
    assert namespace["text"].startswith("attnviz · multi-head self-attention")
    assert namespace["pair"].trace.is_cross
    assert [row.d_k for row in namespace["rows"]] == [4, 16, 64]
    exec(toy, namespace)  # noqa: S102 - the shipped toy model and training, without the extra
    assert namespace["toy"].trace.weights[0, 7].argmax() == 5  # "it" on "street"
    assert namespace["trained"].findings.accuracy >= 0.99
    assert (tmp_path / "my_coref" / "weights.npz").is_file()
    if has_model_extra():  # without the extra, the model example is not run
        exec(model, namespace)  # noqa: S102
        assert namespace["real"].trace.provenance.weights.layer == 6
        assert len(namespace["real"].layers) == 6
        assert namespace["ranking"].focus == "it"
    namespace = {"attnviz": namespace["attnviz"]}
    exec(library, namespace)  # noqa: S102
    example, trace = namespace["example"], namespace["trace"]
    assert example.result == trace.scores[0, 1, 0]
    np.testing.assert_allclose(example.q @ example.k, example.result)


def error_examples() -> list[tuple[str, str]]:
    lines = text_block("docs/safety.md", "## Errors")
    return list(zip(lines[::2], lines[1::2], strict=True))


@pytest.mark.parametrize(("prompt", "expected"), error_examples())
def test_error_examples_are_real(prompt: str, expected: str) -> None:
    arguments = shlex.split(prompt.removeprefix("$ "))[1:]
    result = run(*arguments)
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.strip() == expected
    # Run as `python -m attnviz`, the usage hint names that command.
    environment = {**os.environ, "COLUMNS": "100"}
    module = subprocess.run(
        [sys.executable, "-m", "attnviz", *arguments],
        capture_output=True,
        text=True,
        env=environment,
    )
    assert module.returncode == result.returncode
    assert module.stderr.strip() == expected.replace("attnviz explain", "python -m attnviz explain")


def test_the_model_layer_error_example_is_real(written_before: Callable[[str], Path]) -> None:
    prompt, expected = text_block("docs/inputs.md", "## Exported traces and `--weights`")
    folder = written_before("m.npz").parent
    result = run(*shlex.split(prompt.removeprefix("$ "))[1:], cwd=folder)
    assert result.returncode == ExitStatus.BAD_INPUT and result.stderr.strip() == expected


def test_pasted_output_is_real_output() -> None:
    """The README's first steps and docs/explain.md's focus view: one lesson's real output."""
    blocks = [
        block
        for page, heading in (
            ("README.md", "## What you see"),
            ("docs/explain.md", "## The focus view"),
        )
        for block in re.findall(r"```text\n(.*?)```", section(page, heading), flags=re.DOTALL)
    ]
    assert len(blocks) == 2
    result = run("explain", "I am good", "--focus", "I")
    real = "\n".join(line.rstrip() for line in result.stdout.splitlines())
    for block in blocks:
        assert block.rstrip("\n") in real


def test_the_80_column_table_is_real_output() -> None:
    explain = section("docs/explain.md", "# `attnviz explain SENTENCE`")
    block = explain.split("```text\n$ COLUMNS=80 ")[1].split("```")[0]
    command, *pasted, more = block.rstrip("\n").splitlines()
    assert more == "…" and pasted[0].startswith("scores₁ = Q₁·K₁ᵀ  [11 × 11]")
    arguments = shlex.split(command)
    assert arguments[0] == "attnviz"
    result = run(*arguments[1:], columns="80")
    real = [line.rstrip() for line in result.stdout.splitlines()]
    start = real.index(pasted[0])
    assert real[start : start + len(pasted)] == pasted
    assert all(len(line) <= 80 for line in pasted) and "elided" not in result.stdout


def test_the_sliding_window_step_is_real_output() -> None:
    """docs/modern.md's window step: what its first sliding-window command prints."""
    modern = section("docs/modern.md", "## Sliding-window attention: `--window W`")
    (block,) = re.findall(r"```text\n(.*?)```", modern, flags=re.DOTALL)
    assert block.startswith("Step 2 · Sliding window W = 4")
    result = run(
        "explain",
        "The animal didn't cross the street because it was too tired",
        "--causal",
        "--window",
        "4",
        "--steps",
        "2",
    )
    real = "\n".join(line.rstrip() for line in result.stdout.splitlines())
    assert block.rstrip("\n") in real


def test_hostile_input_example_is_real_output() -> None:
    lines = [line.strip() for line in text_block("docs/safety.md", "## Any input, safely")]
    assert (
        lines[0] == "$ attnviz explain $'[red]it[/] was \\x1b[2J 東京 👍🏽' --heads 1 --d-model 4"
    )
    result = run("explain", "[red]it[/] was \x1b[2J 東京 👍🏽", "--heads", "1", "--d-model", "4")
    real = [line.rstrip() for line in result.stdout.splitlines()]
    for line in lines[1:]:
        assert line in real, line


def test_the_four_things_quote_the_numbers_the_commands_print() -> None:
    """docs/reading.md's "Four things introductions say" quotes numbers that change when a model
    is retrained or a count's rules change: each is checked against the command it names."""
    four = section(
        "docs/reading.md", "## Four things introductions say, checked against the numbers"
    )
    prose = " ".join(four.split())
    step = run("train", "coref", "--explain-step")
    rows = [line.split() for line in step.stdout.splitlines()]
    table = rows[next(i for i, row in enumerate(rows) if row[:3] == ["w", "∂L/∂w", "∂L/∂s"]) + 2 :]
    gradient = ", ".join(row[2].replace("-", "−") for row in table[:3])
    backward = ", ".join(row[3].replace("-", "−") for row in table[:3])
    assert f"∂L/∂w = {gradient}, … and ∂L/∂s = {backward}, …" in prose
    it = "The animal didn't cross the street because it was too tired"
    for arguments, count in (
        (
            ("explain", it, "--full"),
            re.search(r"--full`'s focus view counts (\d+ of \d+) rows", prose),
        ),
        (
            ("explain", "--model", "coref", it),
            re.search(r"`explain --model coref` (\d+ of \d+)", prose),
        ),
    ):
        assert count is not None
        said = " ".join(run(*arguments).stdout.split())
        assert f"Counted here: {count[1]} rows" in said, arguments
