"""A run stopped by SIGTERM or SIGHUP while writing, in a fresh process: the temporaries are
removed, every file stays as it was, and the exit code is 128 + the signal."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnviz.errors import ExitStatus

from support import listing, one_error_line

SENTENCE = "I am good"


#: A child process running attnviz whose .npz export stops halfway, the temporary file written,
#: until a signal comes: the parent sends it once the child has said so.
SLOW_EXPORT = """
import sys, time
from pathlib import Path
import numpy as np

ready = Path(sys.argv[1])
real_savez = np.savez

def slow_savez(handle, **arrays):
    real_savez(handle, **arrays)
    ready.write_text("writing")
    time.sleep(120)

np.savez = slow_savez
from attnviz.cli import run
sys.exit(run(sys.argv[2:]))
"""


@pytest.mark.parametrize(
    ("signal_name", "status"),
    [("SIGTERM", ExitStatus.TERMINATED), ("SIGHUP", ExitStatus.HUNG_UP)],
)
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_signal_during_a_write_removes_the_temporaries_and_keeps_every_file(
    tmp_path: Path, signal_name: str, status: ExitStatus
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "main.png").write_bytes(b"old picture")
    (out / "t.npz").write_bytes(b"old export")
    before = listing(out)
    ready = tmp_path / "ready"
    argv = ["heatmap", SENTENCE, "-o", str(out / "main.png"), "--export", str(out / "t.npz")]
    number = getattr(signal, signal_name)
    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_EXPORT, str(ready), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Under nohup (or a runner that ignores SIGHUP) the child would inherit the ignored
        # signal, and attnviz rightly keeps a signal ignored: the test wants it delivered.
        preexec_fn=lambda: signal.signal(number, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), child.communicate(timeout=5)
        temporaries = [name for name in listing(out) if name.startswith(".attnviz-")]
        assert len(temporaries) == 2  # the picture, then the export being written
        child.send_signal(getattr(signal, signal_name))
        stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()  # reaps it and closes its pipes
    assert child.returncode == status == 128 + getattr(signal, signal_name)
    one_error_line(stderr, f"stopped by {signal_name}")
    assert listing(out) == before  # no temporary left, both old files as they were
