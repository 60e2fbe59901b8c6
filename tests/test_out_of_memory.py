"""Running out of memory is one plain line on stderr and exit 3, with nothing imported to say it:
importing Rich to print the line (as the command line once did) can itself run out of memory and
end in a traceback."""

from __future__ import annotations

import builtins
import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pytest

from attnviz.cli import OUT_OF_MEMORY, run
from attnviz.errors import ExitStatus

#: Address space for the child: Python, numpy and attnviz's start-up fit in about 350 MB; the
#: 128 heads on 400 words below take about 500 MB for their scores alone.
MEMORY_CAP = 600_000_000


def capped_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@pytest.mark.slow
def test_a_command_that_runs_out_of_memory_says_so_in_one_plain_line() -> None:
    words = " ".join(f"w{index}" for index in range(400))
    # Within attnviz's estimate (under 1 GB), beyond this process's cap.
    result = subprocess.run(
        [sys.executable, "-m", "attnviz", "explain", words, "--d-model", "256", "--heads", "128"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=capped_memory,
        env={**os.environ, "COLUMNS": "100", "OPENBLAS_NUM_THREADS": "1"},
    )
    assert result.returncode == ExitStatus.BAD_INPUT, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [OUT_OF_MEMORY.rstrip("\n")]
    assert "ran out of memory" in result.stderr and "--layer N" in result.stderr
    assert result.stdout == ""


class ImportsRefused(Exception):
    """Raised by any import while the error path runs."""


class RefuseEveryImport:
    """A meta path finder that refuses every module not already loaded."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None) -> Any:
        raise ImportsRefused(f"imported {name} on the error path")


def test_memory_running_out_is_reported_without_importing_anything(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_import = builtins.__import__
    attempts: list[str] = []

    def refused_import(name: str, *args: Any, **kwargs: Any) -> Any:
        attempts.append(name)
        raise ImportsRefused(f"import {name} on the error path")

    def exhausted(*args: object, **kwargs: object) -> None:
        # From the moment memory runs out, every import fails: `from rich.text import Text`
        # goes through builtins.__import__ even when rich.text is already loaded, and a module
        # not yet loaded through sys.meta_path.
        builtins.__import__ = refused_import
        sys.meta_path.insert(0, RefuseEveryImport())  # type: ignore[arg-type]
        raise MemoryError

    monkeypatch.setattr("attnviz.api.explain.explained_on", exhausted)
    try:
        status = run(["explain", "I am good"])
    finally:
        builtins.__import__ = real_import
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, RefuseEveryImport)]
    assert attempts == []
    assert status == ExitStatus.BAD_INPUT
    err = capsys.readouterr().err
    assert err == OUT_OF_MEMORY
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_the_line_is_one_line_naming_the_ways_round() -> None:
    assert OUT_OF_MEMORY.endswith("\n") and OUT_OF_MEMORY.count("\n") == 1
    assert OUT_OF_MEMORY.startswith("error: attnviz ran out of memory")
    for way in ("shorter text", "--layer N", "fewer heads"):
        assert way in OUT_OF_MEMORY
