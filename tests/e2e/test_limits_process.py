"""The bounds of attnviz.limits in a fresh process, as a person meets them: each command runs
the installed ``attnviz`` under a memory cap (RLIMIT_AS) and a time limit, with its own oversized
request, and must answer with one ``error:`` line, a named exit code, nothing on stdout and no
file, long before either limit. On main, each of these ran out of memory, ran past a minute or
wrote hundreds of files."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from attnviz.errors import ExitStatus

from support import installed_attnviz, one_error_line

pytestmark = pytest.mark.slow

#: Address space for the command: the refusals need Python, numpy and Rich, a few hundred MB;
#: any of the requests below would take gigabytes.
MEMORY_CAP = 1_500_000_000
TIMEOUT = 30  # seconds; each refusal comes in a few


def capped_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def attnviz(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [installed_attnviz(), *arguments],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=capped_memory,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"},
    )


def refused(result: subprocess.CompletedProcess[str], status: ExitStatus, *parts: str) -> None:
    assert result.returncode == status, result.stderr
    assert result.stdout == ""
    one_error_line(result.stderr, *parts)


def test_2048_heads_on_500_words(tmp_path: Path) -> None:
    words = " ".join(f"w{index}" for index in range(500))
    result = attnviz("explain", words, "--d-model", "2048", "--heads", "2048", cwd=tmp_path)
    refused(result, ExitStatus.BAD_INPUT, "12.5 GB of memory", "--heads 128 or fewer")


def test_4096_sizes_of_d_k_and_the_divisor_experiment(tmp_path: Path) -> None:
    sizes = ",".join(str(d_k) for d_k in range(1, 4097))
    refused(attnviz("scaling", "--dk", sizes, cwd=tmp_path), ExitStatus.BAD_INPUT, "at most 64")
    divisor = attnviz("scaling", "--dk", "1", "--queries", "100000", "--keys", "2", cwd=tmp_path)
    refused(divisor, ExitStatus.BAD_INPUT, "the divisor experiment", "keep it under")


def test_slides_of_2048_heads(tmp_path: Path) -> None:
    result = attnviz(
        "explain", "I am good", "--heads", "2048", "--d-model", "2048", "--slides", "s",
        cwd=tmp_path,
    )  # fmt: skip
    refused(result, ExitStatus.CANNOT_WRITE, "--slides would write at least 2,052 slides")
    assert list(tmp_path.iterdir()) == []


def test_a_json_export_too_large_to_read_back(tmp_path: Path) -> None:
    words = " ".join(f"w{index}" for index in range(500))
    result = attnviz(
        "explain", words, "--heads", "32", "--d-model", "64", "--export", "out.json",
        cwd=tmp_path,
    )  # fmt: skip
    refused(result, ExitStatus.CANNOT_WRITE, "export as .npz instead")
    assert list(tmp_path.iterdir()) == []


def test_a_word_of_combining_marks(tmp_path: Path) -> None:
    result = attnviz("explain", "I am a" + "\u0301" * 19_990, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.encode()) < 40_000  # 1.29 MB on main
