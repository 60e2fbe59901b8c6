"""``attnviz exercise`` at a real terminal (a pseudo-terminal): a non-number asked again, a
right answer, a deliberate mistake diagnosed, then Ctrl-C, which ends with the score so far and
exit 130. The answers are the same questions' own, made in this process from the same options."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from attnviz.api.exercise import questions
from attnviz.exercise.questions import format_number
from attnviz.options import options_from

from support import installed_attnviz

SENTENCE = "The cat sat on the mat"
ARGUMENTS = [SENTENCE, "--kind", "scaled", "--count", "3", "--seed", "5"]


#: What the terminal showed past the last ``wanted`` read_until found: the next call starts there.
_unread: dict[int, bytes] = {}


def read_until(fd: int, wanted: bytes, seconds: float = 60.0) -> bytes:
    """What the terminal shows up to and including ``wanted`` (or until it closes); what came
    after it in the same read is kept for the next call, so that two prompts read in one chunk
    are found one after the other, not waited for."""
    seen, deadline = _unread.pop(fd, b""), time.monotonic() + seconds
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    if wanted in seen:
        end = seen.index(wanted) + len(wanted)
        seen, _unread[fd] = seen[:end], seen[end:]
    return seen


def exit_status(pid: int, seconds: float) -> int:
    """The child's wait status; killed (and the test failed) if it has not ended in ``seconds``,
    so that a command that keeps waiting never hangs the suite."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ended, status = os.waitpid(pid, os.WNOHANG)
        if ended:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"attnviz exercise had not ended {seconds:.0f} s after Ctrl-C")


def waits_for_a_key(pid: int, seconds: float = 30.0) -> None:
    """Returns once process ``pid`` has been asleep for three looks in a row, 50 ms apart (after
    its prompt, only the read of the answer puts it to sleep); after half a second where there
    is no /proc to look in."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        time.sleep(0.5)
        return
    asleep, deadline = 0, time.monotonic() + seconds
    while asleep < 3 and time.monotonic() < deadline:
        state = stat.read_text().rpartition(")")[2].split()[0]  # after the (command name)
        asleep = asleep + 1 if state == "S" else 0
        time.sleep(0.05)


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_a_student_at_a_terminal_is_asked_checked_diagnosed_and_stopped_by_ctrl_c() -> None:
    asked = questions(SENTENCE, options_from(seed=5), ["scaled"], 3, 5)
    mistake = asked[1].mistakes[0]
    pid, fd = pty.fork()
    if pid == 0:  # the child: the installed command, as a person runs it
        # as at a person's terminal, Ctrl-C interrupts: a run started in the background by a
        # shell without job control inherits SIGINT ignored, a runner may hold it blocked, and
        # the child would keep either across exec
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        os.environ.update({"COLUMNS": "100", "NO_COLOR": "1"})
        os.execv(installed_attnviz(), ["attnviz", "exercise", *ARGUMENTS])
    prompt = b"Your answer (- to skip): "
    shown = read_until(fd, prompt)
    os.write(fd, b"abc\n")
    shown += read_until(fd, b"Not a number") + read_until(fd, prompt)
    os.write(fd, format_number(asked[0].answer, 2).encode() + b"\n")
    shown += read_until(fd, b"Question 2 of 3") + read_until(fd, prompt)
    os.write(fd, f"{mistake.value:.4f}".encode() + b"\n")
    shown += read_until(fd, b"Question 3 of 3") + read_until(fd, prompt)
    # Ctrl-C: what the line discipline does on ^C, SIGINT to the terminal's foreground process
    # group (the child's: pty.fork made it one), sent directly, so that the test does not hang on
    # whether a sandbox let the pseudo-terminal become the child's controlling terminal; and
    # only once the child waits in read(): Python's input() checks for a signal only when
    # read() is interrupted, so one that lands between the prompt and the read() waits for a key
    waits_for_a_key(pid)
    os.killpg(pid, signal.SIGINT)
    stopped = read_until(fd, b"stopped by Ctrl-C", seconds=30.0)
    shown += stopped
    if b"stopped by Ctrl-C" not in stopped:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail(f"no 'stopped by Ctrl-C' 30 s after SIGINT; the terminal showed {shown!r}")
    status = exit_status(pid, seconds=60.0)
    shown += _unread.pop(fd, b"")
    os.close(fd)
    text = shown.decode("utf-8", errors="replace").replace("\r\n", "\n")
    assert os.waitstatus_to_exitcode(status) == 130
    assert "Question 1 of 3 (scaled)" in text and "within 0.01" in text
    assert "Not a number: type one like 0.5" in text
    assert "Right: the answer is" in text
    assert f"is what you get if you {mistake.name}" in text
    assert "Score: 1 of 3 right (2 answered)." in text
    assert "Traceback" not in text
