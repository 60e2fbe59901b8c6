"""`attnviz train` as a person runs it: stopped with Ctrl-C it writes nothing, and without
--animate it never loads matplotlib."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support import installed_attnviz, listing


def test_ctrl_c_stops_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    command = [installed_attnviz(), "train", "induction", "--steps", "3000", "--until", "1"]
    command += ["--save", str(tmp_path / "model"), "--history", str(tmp_path / "h.npz")]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert process.stdout is not None
    first = process.stdout.readline()  # the task is stated: training has started
    assert first.startswith(b"Task induction")
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    lines = stderr.decode().strip().splitlines()
    assert lines == ["error: stopped by Ctrl-C; any output not yet complete was left as it was."]
    assert listing(tmp_path) == {} and list(tmp_path.iterdir()) == []


def test_train_loads_matplotlib_only_for_animate(tmp_path: Path) -> None:
    code = (
        "import sys; from attnviz.cli import run\n"
        "status = run(sys.argv[1:])\n"
        "print('STATUS', status, 'HEAVY', 'matplotlib' in sys.modules)"
    )
    plain = subprocess.run(
        [sys.executable, "-c", code, "train", "reverse"], capture_output=True, text=True
    )
    assert "STATUS 0 HEAVY False" in plain.stdout, plain.stderr
    animated = subprocess.run(
        [sys.executable, "-c", code, "train", "reverse", "--animate", str(tmp_path / "a.gif")],
        capture_output=True,
        text=True,
    )
    assert "STATUS 0 HEAVY True" in animated.stdout, animated.stderr
