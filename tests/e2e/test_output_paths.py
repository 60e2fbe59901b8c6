"""Outputs in fresh processes: every catchable stopping signal during --slides removes the
temporaries and keeps every file as it was (exit 128 + the signal), a CPU-time or file-size limit
likewise; Ctrl-C while the command starts is one line and exit 130; a standard error that cannot
be written changes neither the outputs nor the exit status. The path checks themselves, in
process: tests/test_outputs.py and tests/files/test_replacing.py."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnviz.errors import ExitStatus

from support import installed_attnviz, listing, one_error_line

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and limits")

SENTENCE = "I am good"
MEMORY = 2 * 1024**3  # every child's address space: a run that grew past it fails, not the host

#: A child running attnviz whose slides stop after the third file is staged (so temporaries
#: are there), until the parent's signal comes; "spin" burns CPU time instead of sleeping, for
#: a CPU-time limit to be reached.
SLOW_SLIDES = """
import resource, sys, time
from pathlib import Path
import attnviz.render.slides.draw as draw

ready, how = Path(sys.argv[1]), sys.argv[2]
real_save_slide = draw.save_slide
saved = []

def slow_save_slide(slide, *paths):
    real_save_slide(slide, *paths)
    saved.append(slide)
    if len(saved) == 3:
        if how == "spin":
            used = resource.getrusage(resource.RUSAGE_SELF).ru_utime
            resource.setrlimit(resource.RLIMIT_CPU, (int(used) + 2, int(used) + 30))
        ready.write_text("writing")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if how == "sleep":
                time.sleep(0.05)

draw.save_slide = slow_save_slide
from attnviz.cli import run
sys.exit(run(sys.argv[3:]))
"""


def limited(memory: int = MEMORY, file_size: int | None = None, *keep: int) -> object:
    """A preexec_fn: an address-space limit (and a file-size one), and the signals ``keep``
    delivered (a runner that ignores one would pass that on, and attnviz keeps it ignored)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        for number in keep:
            signal.signal(number, signal.SIG_DFL)

    return apply


def slides_stopped(
    tmp_path: Path, how: str, number: int | None, times: int = 1
) -> tuple[subprocess.CompletedProcess[str], dict[str, bytes], dict[str, bytes]]:
    """Start --slides into a folder holding an old slide, wait until three slides are staged,
    send ``number`` (if any, ``times`` times, 2 ms apart); the result, and the folder's files
    before and after."""
    deck = tmp_path / "deck"
    deck.mkdir()
    (deck / "01-title.svg").write_bytes(b"old slide")
    before = listing(deck)
    ready = tmp_path / "ready"
    argv = ["explain", SENTENCE, "--slides", str(deck)]
    keep = () if number is None else (number,)
    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_SLIDES, str(ready), how, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limited(MEMORY, None, *keep, signal.SIGXCPU),
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), child.communicate(timeout=5)
        assert any(name.startswith(".attnviz-") for name in listing(deck))  # staged, not renamed
        for _ in range(times if number is not None else 0):
            child.send_signal(number)
            time.sleep(0.002)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    result = subprocess.CompletedProcess(child.args, child.returncode, "", stderr)
    return result, before, listing(deck)


#: One signal for each default action a stopping signal can have: SIGQUIT's dumps core, SIGUSR1's
#: ends the process (as SIGUSR2's, SIGALRM's, SIGVTALRM's, SIGPROF's and SIGPWR's do). attnviz
#: takes over every signal of attnviz.signals.STOPPING with one handler and one cleanup, whatever
#: its number: tests/test_signals.py sends each of them in process, and the real-time signal, a
#: SIGXCPU and a SIGXFSZ below, SIGTERM and SIGHUP in tests/e2e/test_signals.py, each go through
#: the same cleanup in a fresh process. More signals here would run the same lines again.
SIGNALS = ["SIGQUIT", "SIGUSR1"]


@pytest.mark.parametrize("name", SIGNALS)
def test_a_stopping_signal_during_slides_leaves_no_temporary(tmp_path: Path, name: str) -> None:
    """Each default action a stopping signal has (SIGNALS says why these two stand for all)."""
    number = int(getattr(signal, name))
    result, before, after = slides_stopped(tmp_path, "sleep", number)
    assert result.returncode == 128 + number, result.stderr
    one_error_line(result.stderr, f"stopped by {name}")
    assert after == before  # no temporary left, the old slide as it was


@pytest.mark.skipif(not hasattr(signal, "SIGRTMIN"), reason="real-time signals")
def test_a_real_time_signal_stops_with_cleanup_too(tmp_path: Path) -> None:
    number = signal.SIGRTMIN + 2
    result, before, after = slides_stopped(tmp_path, "sleep", number)
    assert result.returncode == 128 + number
    one_error_line(result.stderr, "stopped by SIGRTMIN+2")
    assert after == before


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_second_signal_during_the_cleanup_leaves_no_temporary(tmp_path: Path, name: str) -> None:
    """Ctrl-C (raised as KeyboardInterrupt) and a stopping signal (raised as Interrupted): the
    two ways a stop begins, each dropping the second signal by the same flag; SIGQUIT, the
    third case here before, takes SIGTERM's path and is stopped once above."""
    number = int(getattr(signal, name))
    result, before, after = slides_stopped(tmp_path, "sleep", number, times=2)
    assert result.returncode == 128 + number, result.stderr
    one_error_line(result.stderr, "stopped by")
    assert after == before


def test_a_cpu_time_limit_during_slides_leaves_no_temporary(tmp_path: Path) -> None:
    """SIGXCPU, sent when the soft limit is passed (and again each second after it)."""
    result, before, after = slides_stopped(tmp_path, "spin", None)
    assert result.returncode == 128 + signal.SIGXCPU, result.stderr
    one_error_line(result.stderr, "stopped by SIGXCPU")
    assert after == before


def test_a_file_size_limit_refuses_the_slides_and_leaves_no_temporary(tmp_path: Path) -> None:
    """A file larger than RLIMIT_FSIZE: SIGXFSZ, then the write fails (EFBIG); either way one
    line, and nothing of the run is left."""
    deck = tmp_path / "deck"
    command = [installed_attnviz(), "explain", SENTENCE, "--slides", str(deck)]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limited(MEMORY, 20_000, signal.SIGXFSZ),
    )
    assert result.returncode in (ExitStatus.CANNOT_WRITE, 128 + signal.SIGXFSZ), result.stderr
    one_error_line(result.stderr)
    assert not deck.exists()  # the folder it made is gone again


# -- Ctrl-C while the command starts ------------------------------------------------------------

#: The console script's own code, with a finder that sends Ctrl-C to the process when the named
#: module starts being imported: the moment a person's Ctrl-C would land in it.
INTERRUPTED_IMPORT = """
import os, signal, sys

interrupted = sys.argv.pop(1)

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == interrupted:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
from _attnviz_command import main
sys.exit(main())
"""


@pytest.mark.parametrize(
    "module", ["attnviz", "numpy", "attnviz.api", "typer", "attnviz.cli", "attnviz.cli.commands"]
)
def test_ctrl_c_while_attnviz_is_imported_is_one_line_and_130(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_IMPORT, module, "explain", SENTENCE],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limited(),
    )
    assert result.returncode == ExitStatus.INTERRUPTED, result.stderr
    one_error_line(result.stderr, "stopped by Ctrl-C")
    assert result.stdout == ""


#: ``python -m attnviz`` as Python runs it (runpy, as -m does), with the same finder: the
#: package is imported first, outside attnviz's handler, then attnviz/__main__.py runs.
INTERRUPTED_DASH_M = INTERRUPTED_IMPORT.replace(
    "from _attnviz_command import main\nsys.exit(main())",
    "import runpy\nrunpy.run_module('attnviz', run_name='__main__', alter_sys=True)",
)


@pytest.mark.parametrize(
    "module",
    ["_attnviz_command", "numpy", "attnviz.api", "typer", "attnviz.cli", "attnviz.cli.commands"],
)
def test_ctrl_c_while_python_dash_m_attnviz_imports_is_one_line_and_130(module: str) -> None:
    """Every import after the package's own __init__ (which imports none of attnviz's modules,
    so that Python's window for a traceback is well under a millisecond)."""
    assert INTERRUPTED_DASH_M != INTERRUPTED_IMPORT
    result = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_DASH_M, module, "explain", SENTENCE],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limited(),
    )
    assert result.returncode == ExitStatus.INTERRUPTED, result.stderr
    one_error_line(result.stderr, "stopped by Ctrl-C")
    assert result.stdout == ""


def test_python_dash_m_imports_no_attnviz_module_before_its_main_runs() -> None:
    code = (
        "import sys, runpy\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == '_attnviz_command':\n"
        "            print('BEFORE', sorted(m for m in sys.modules if m.startswith('attnviz')))\n"
        "sys.meta_path.insert(0, Watch())\n"
        "runpy.run_module('attnviz', run_name='__main__', alter_sys=True)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "BEFORE ['attnviz']"


def test_ctrl_c_at_any_moment_of_the_command_is_at_most_one_line() -> None:
    """The installed command, interrupted after 0.05 s to 0.6 s: each run finished, or ended
    in one line and 130. A Ctrl-C inside Python's own start-up (its site module) or in the
    lines of pip's launcher script, before any of attnviz's code runs, is Python's to report
    (as the README says), and is not counted: its traceback has no frame of attnviz's; nor is
    one that lands before Python has a handler for it at all."""
    counted = 0
    for delay in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.6):
        child = subprocess.Popen(
            [installed_attnviz(), "explain", SENTENCE],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=limited(),
        )
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
        attnviz_frame = re.search(r'File "[^"]*(_attnviz_command\.py|/attnviz/)', stderr)
        if "<frozen site>" in stderr or ("Traceback" in stderr and not attnviz_frame):
            continue
        if child.returncode == -signal.SIGINT and not stderr:
            # Before the interpreter installed its own handler (a busy machine can start a
            # process that slowly): the default action ended it, before any of Python's or
            # attnviz's code. attnviz never gives SIGINT its default action back.
            continue
        counted += 1
        if child.returncode != 0:
            assert child.returncode == ExitStatus.INTERRUPTED, stderr
            one_error_line(stderr, "stopped by Ctrl-C")
    assert counted >= 4


# -- a standard error that cannot be written ---------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_standard_error_changes_neither_the_outputs_nor_the_exit_status(
    tmp_path: Path,
) -> None:
    picture = tmp_path / "it.png"
    with open("/dev/full", "w") as full:
        wrote = subprocess.run(
            [installed_attnviz(), "heatmap", SENTENCE, "-o", str(picture)],
            stderr=full,
            timeout=120,
            preexec_fn=limited(),
        )
        refused = subprocess.run(
            [installed_attnviz(), "explain", SENTENCE, "--heads", "0"],
            stdout=subprocess.DEVNULL,
            stderr=full,
            timeout=60,
            preexec_fn=limited(),
        )
    assert wrote.returncode == ExitStatus.SUCCESS
    assert picture.read_bytes().startswith(b"\x89PNG")
    assert refused.returncode == ExitStatus.BAD_INPUT  # the refusal's own status, not 1


def test_with_standard_error_closed_a_picture_is_written_whole(tmp_path: Path) -> None:
    """2>&-: no file the run opens may take descriptor 2, where a library's message to the
    closed stream would land inside it."""
    picture = tmp_path / "it.png"
    command = [installed_attnviz(), "heatmap", SENTENCE, "-o", str(picture), "--export"]
    command.append(str(tmp_path / "t.npz"))
    result = subprocess.run(
        ["sh", "-c", 'exec "$@" 2>&-', "sh", *command],
        stdout=subprocess.PIPE,
        timeout=120,
        preexec_fn=limited(),
    )
    assert result.returncode == ExitStatus.SUCCESS
    assert picture.read_bytes().startswith(b"\x89PNG")
