"""``attnviz explain --step`` at a terminal (a pseudo-terminal, the installed command in a fresh
process): q stops at once, without Enter; any other key, an arrow included, goes on one step;
and after q, after the lesson's end and after Ctrl-C the terminal is back in line mode with
echo, as it was."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import termios
import time

import pytest

from attnviz.lesson.steps import step_number

from support import installed_attnviz

PROMPT = "q quits"
QKV = step_number("qkv")  # the first step of a head, as the table numbers it
#: Bold and dim, which NO_COLOR leaves on (it takes colours away, not styles).
STYLES = re.compile(r"\x1b\[[0-9;]*m")


class Terminal:
    """attnviz running in a pseudo-terminal of its own, and what it has printed so far."""

    def __init__(self, *arguments: str) -> None:
        command = installed_attnviz()
        environment = {**os.environ, "TERM": "xterm", "COLUMNS": "100", "NO_COLOR": "1"}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: attnviz, its terminal the pseudo-terminal
            os.execve(command, [command, *arguments], environment)
        self.started = termios.tcgetattr(self.fd)  # before attnviz has run a line
        self.output = ""

    def read_until(self, text: str, seconds: float = 60.0) -> str:
        """What it printed until ``text`` appears in what is new (or it ends)."""
        start, deadline = len(self.output), time.monotonic() + seconds
        while text not in self.output[start:] and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # EIO: it has ended
                    break
                if not chunk:
                    break
                self.output += STYLES.sub("", chunk.decode("utf-8", errors="replace"))
        return self.output[start:]

    def press(self, key: bytes) -> None:
        os.write(self.fd, key)

    def end(self, seconds: float = 30.0) -> int | None:
        """Its exit code, once what is left of its output is read; None if it is still running
        after ``seconds`` (still waiting for a key), and then it is killed."""
        self.read_until("\0never printed\0", seconds)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None

    def in_line_mode(self) -> bool:
        flags = termios.tcgetattr(self.fd)[3]
        return bool(flags & termios.ICANON and flags & termios.ECHO)

    def close(self) -> None:
        os.close(self.fd)


@pytest.fixture
def lesson() -> Terminal:
    terminal = Terminal("explain", "I am good", "--step")
    assert PROMPT in terminal.read_until(PROMPT)  # step 1 printed, the first pause
    return terminal


def test_q_stops_at_once_without_enter(lesson: Terminal) -> None:
    lesson.press(b"q")
    assert lesson.end() == 0
    assert lesson.output.endswith(f"{PROMPT} \r\n(stopped)\r\n")  # the key not echoed
    assert f"Step {QKV} ·" not in lesson.output.split(PROMPT)[-1]  # nothing after the pause
    assert lesson.in_line_mode() and termios.tcgetattr(lesson.fd) == lesson.started
    lesson.close()


def test_a_key_goes_on_one_step_an_arrow_too(lesson: Terminal) -> None:
    lesson.press(b" ")
    shown = lesson.read_until(PROMPT)
    assert f"Step {QKV} · Queries, keys and values" in shown and f"⏎ Step {QKV + 1} ·" in shown
    lesson.press(b"\x1b[C")  # →: three bytes, one key, one step
    shown = lesson.read_until(PROMPT)
    after = f"Step {QKV + 2}"  # the step after the next
    assert f"⏎ {after} ·" in shown and f"{after} ·" not in shown.split(f"⏎ {after}")[0]
    lesson.press(b"Q")
    assert lesson.end() == 0
    assert lesson.in_line_mode() and termios.tcgetattr(lesson.fd) == lesson.started
    lesson.close()


def test_ctrl_c_at_a_pause_ends_in_one_line_and_restores_the_terminal(lesson: Terminal) -> None:
    lesson.press(b"\x03")  # the terminal sends SIGINT
    assert lesson.end() == 130
    assert lesson.output.endswith(
        f"{PROMPT} \r\nerror: stopped by Ctrl-C; any output not yet complete was left as it "
        "was.\r\n"
    )
    assert lesson.in_line_mode() and termios.tcgetattr(lesson.fd) == lesson.started
    lesson.close()


def test_enter_to_the_end_leaves_the_terminal_as_it_was(lesson: Terminal) -> None:
    for _ in range(40):  # "I am good" has fewer pauses
        lesson.press(b"\r")
        if PROMPT not in lesson.read_until(PROMPT, seconds=20):
            break  # no pause came: the lesson ended
    assert lesson.end() == 0
    assert "(stopped)" not in lesson.output and f"Step {step_number('output')} ·" in lesson.output
    assert lesson.in_line_mode() and termios.tcgetattr(lesson.fd) == lesson.started
    lesson.close()
