"""Fresh Python processes: what the command imports before it prints, and that it prints the
same numbers every time. Start-up weight matters (explain, help and --version must not load
matplotlib; help and --version not even rich), and only a new process shows it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attnviz import __version__

from support import step

IT_SENTENCE = "The animal didn't cross the street because it was too tired"


def test_explain_is_reproducible_across_processes() -> None:
    command = [sys.executable, "-m", "attnviz", "explain", IT_SENTENCE]
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    first = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
    second = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
    assert first == second and f"Step {step('output')}" in first


def test_python_dash_m_and_the_console_script_agree() -> None:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    module = subprocess.run(
        [sys.executable, "-m", "attnviz", "--version"], capture_output=True, text=True, env=env
    )
    assert module.returncode == 0 and module.stdout.strip() == f"attnviz {__version__}"


def test_explain_does_not_import_matplotlib() -> None:
    code = (
        "import sys; from attnviz.cli import COMMANDS, app\n"
        "try:\n    app(['explain', 'I am good', '--focus', 'I'])\nexcept SystemExit:\n    pass\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "heavy = sorted(roots & {'matplotlib', 'PIL', 'torch'})\n"
        "print('HEAVY', heavy)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "HEAVY []" in result.stdout


def test_explain_loads_neither_the_model_runner_nor_the_trainer_nor_other_commands() -> None:
    """`attnviz explain` in random mode imports only what it runs: start-up is the floor. Nor
    does it load the file readers and writers, with nothing to read or write. Of attnviz.model
    only model/sources/shipped.py, which reads the shipped models' config.json without the
    model code (for the line that names a model trained for the sentence), and the packages
    around it."""
    code = (
        "import sys; from attnviz.cli import run\n"
        "run(['explain', 'I am good', '--focus', 'I'])\n"
        "allowed = {'attnviz.model', 'attnviz.model.sources', 'attnviz.model.sources.shipped'}\n"
        "unused = ('attnviz.model.run', 'attnviz.train', 'attnviz.analysis.ablation', "
        "'attnviz.analysis.heads', 'attnviz.analysis.scaling', 'attnviz.cli.training', "
        "'attnviz.cli.analyses', 'attnviz.api.compare', 'attnviz.api.page', 'attnviz.model', "
        "'attnviz.api.heads', 'attnviz.api.train', "
        "'attnviz.analysis.blockwise', 'attnviz.files', 'attnviz.outputs', 'attnviz.trace_files', "
        "'attnviz.embeddings.loading', 'attnviz.embeddings.array_files', "
        "'attnviz.embeddings.text_vectors', 'attnviz.render.figures.images')\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith(unused) and m not in "
        "allowed))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "LOADED []" in result.stdout, result.stdout[-300:]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["explain", "--help"]])
def test_help_and_version_load_neither_rich_nor_matplotlib(argv: list[str]) -> None:
    """Plain help, as click prints it: the fastest start-up a Typer command can have."""
    code = (
        "import sys; from attnviz.cli import run\n"
        f"status = run({argv!r})\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "print('STATUS', status, 'HEAVY', sorted(roots & {'rich', 'matplotlib', 'PIL'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "STATUS 0 HEAVY []" in result.stdout, result.stdout + result.stderr


def test_importing_the_heatmap_module_does_not_import_matplotlib() -> None:
    code = "import sys, attnviz.render.figures.heatmap; sys.exit('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_slides_need_matplotlib_only_when_asked_for() -> None:
    code = (
        "import sys, attnviz.render.slides\n"
        "print('HEAVY', sorted({m.split('.')[0] for m in sys.modules} & {'matplotlib', 'PIL'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and "HEAVY []" in result.stdout
