"""Model folders with files that are not regular files, NaN weights and a sentence that is not
UTF-8, run by the installed command in a fresh process: one line, a named exit code, and no
traceback or numpy warning on stderr as a person sees it (in-process:
tests/model/test_checkpoint.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from model.checkpoints import GPT2, MODEL_FILES, QUERY_2, edit_config, poke, tiny_bert

from attnviz.errors import ExitStatus

from support import installed_attnviz, needs_model

pytestmark = needs_model


def run_attnviz(*args: str | bytes, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The installed command in a fresh process, as a person runs it: Python's own warning
    filters."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run(
        [installed_attnviz(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**environment, "COLUMNS": "100"},
    )


def assert_one_line(
    result: subprocess.CompletedProcess[str], status: ExitStatus, fragment: str
) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], lines
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr
    assert result.stdout == ""


KINDS = ["fifo", "link to /dev/zero", "link to a fifo", "folder"]
#: Every model file with two kinds of non-file, every kind in two or three files: 10 runs, not
#: the 20 of every pair. Which kind a path is comes from one function for every file
#: (attnviz.files.reading's _require_regular, on what the path leads to), and each file reaches
#: it through open_regular or require_readable: a file that skipped it fails with either kind,
#: and a kind told wrong fails in every file. tests/model/test_checkpoint.py puts a FIFO in
#: place of each file in process.
CASES = [
    (name, KINDS[(number + shift) % len(KINDS)])
    for number, name in enumerate(MODEL_FILES)
    for shift in (0, 1)
]


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_non_regular_model_files_in_a_fresh_process(name: str, kind: str, tmp_path: Path) -> None:
    folder = MODEL_FILES[name](tmp_path / "model")
    path = folder / name
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link to a fifo":
        os.mkfifo(tmp_path / "pipe")
        path.symlink_to(tmp_path / "pipe")
    else:
        path.mkdir()
    expected = {"folder": "is a folder", "link to /dev/zero": "is a device"}.get(kind, "(FIFO)")
    result = run_attnviz("explain", "I am good", "-m", str(folder), timeout=30)
    assert_one_line(result, ExitStatus.BAD_FILE, expected)


def test_nan_weights_print_no_warning_in_a_fresh_process(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "bert")
    poke(QUERY_2, (0, 0), np.nan)(folder)
    result = run_attnviz("explain", "I am good", "-m", str(folder))
    assert_one_line(result, ExitStatus.BAD_FILE, "(layer 2 of the model) holds NaN")
    folder = tiny_bert(tmp_path / "eps")
    edit_config(layer_norm_eps=-1.0)(folder)
    result = run_attnviz("heatmap", "I am good", "-m", str(folder), "-o", str(tmp_path / "h.png"))
    assert_one_line(result, ExitStatus.BAD_FILE, "LayerNorm epsilon")
    assert not (tmp_path / "h.png").exists()


def test_a_non_utf8_byte_in_argv_in_a_fresh_process() -> None:
    result = run_attnviz("explain", b"caf\xe9", "-m", str(GPT2))
    assert_one_line(result, ExitStatus.BAD_INPUT, "not UTF-8 text (\\xe9)")
