"""Model files far larger than what a sentence needs, run by the installed command in a fresh
process under a memory cap (RLIMIT_AS) and a time limit: a position table of 2²⁷ rows (4 GB,
a sparse file) costs the sentence's rows, and a GGUF file larger than the cap is named as such.
In-process, without the cap: tests/model/test_model_values.py."""

from __future__ import annotations

import os
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from model.checkpoints import edit_config, gpt2_copy, tiny_bert
from model.test_model_values import POSITIONS, TINY_GGUF, huge_feed_forward, sparse_table

from attnviz.errors import ExitStatus

from support import installed_attnviz, needs_model

pytestmark = needs_model
#: Address space for the command: Python, numpy, tokenizers and Rich take a few hundred MB of
#: it; mapping or reading any of these files whole would take more.
MEMORY_CAP = 1_500_000_000
TIMEOUT = 60


def capped_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [installed_attnviz(), *arguments],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=capped_memory,
        env=env or {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"},
    )


@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_a_4_gb_position_table_runs_under_a_1_5_gb_cap(model: str, tmp_path: Path) -> None:
    if model == "bert":
        folder, table, key = tiny_bert(tmp_path / "bert"), POSITIONS, "max_position_embeddings"
    else:
        folder, table, key = gpt2_copy(tmp_path / "gpt2"), "wpe.weight", "n_positions"
    sparse_table(folder, table, 2**27)
    edit_config(**{key: 2**27})(folder)
    assert (folder / "model.safetensors").stat().st_size > 4 * 2**30
    result = run("explain", "I am good", "-m", str(folder))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and result.stderr == ""


def test_weights_larger_than_the_cap_are_refused_before_they_are_read(tmp_path: Path) -> None:
    """A feed-forward block of 2 GB (a sparse file) against a 1.5 GB cap: named, not "ran out
    of memory" after the fact."""
    folder = tiny_bert(tmp_path / "bert")
    huge_feed_forward(folder, 2**26)
    result = run("explain", "I am good", "-m", str(folder))
    assert result.returncode == ExitStatus.BAD_FILE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "encoder.layer.0.intermediate.dense.weight needs 2.15 GB of memory" in lines[0]
    assert "the process's memory limit" in lines[0]


def test_a_gguf_file_larger_than_the_cap_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "large.gguf"
    shutil.copy(TINY_GGUF, path)
    with path.open("r+b") as handle:
        handle.truncate(4 * 2**30)  # a hole after the tensors: 4 GB to map
    result = run("explain", "I am good", "-m", str(path))
    assert result.returncode == ExitStatus.BAD_FILE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "(4.29 GB) cannot be mapped into memory: this process may not use that much" in lines[0]


def _readable_by_anyone(path: Path) -> bool:
    """Whether every folder above ``path`` lets another user through (o+x)."""
    return all(os.stat(parent).st_mode & stat.S_IXOTH for parent in Path(path).parents)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run a command as an unknown user id")
def test_an_unknown_user_without_home_gets_one_line(tmp_path: Path) -> None:
    """As a container's --user 54321 without HOME: no passwd entry, no home folder."""
    if not (_readable_by_anyone(Path(sys.executable)) and _readable_by_anyone(tmp_path)):
        pytest.skip("this Python lies in a folder another user may not enter (/root is 0700)")
    environment = {k: v for k, v in os.environ.items() if k not in ("HOME", "HF_HOME")}
    environment.pop("HF_HUB_CACHE", None)

    def as_unknown_user() -> None:
        capped_memory()
        os.setgid(54321)
        os.setuid(54321)

    result = subprocess.run(
        [installed_attnviz(), "explain", "I am good", "-m", "gpt2"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=as_unknown_user,
        env=environment,
        cwd=tmp_path,
    )
    assert result.returncode == ExitStatus.BAD_INPUT, result.stderr
    assert "HOME is unset and this user has no home folder" in result.stderr
    assert "Traceback" not in result.stderr
