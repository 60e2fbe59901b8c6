"""attnviz.cli.keys on a pseudo-terminal: a key is read without Enter, a key of several bytes
comes whole, and the terminal's settings are back as they were after every read, Ctrl-C's
included."""

from __future__ import annotations

import os
import pty
import signal
import termios
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from attnviz.cli.keys import read_key, reads_keys


@pytest.fixture
def terminal() -> Iterator[tuple[int, Any]]:
    """A pseudo-terminal: the end a person types into, and the end attnviz reads (a file)."""
    typed, read = pty.openpty()
    with os.fdopen(read, "r", encoding="utf-8") as stream:
        try:
            yield typed, stream
        finally:
            os.close(typed)


def pressed(typed: int, stream: Any, key: bytes, seconds: float = 5.0) -> str:
    """``key`` typed once read_key waits for it (the terminal in cbreak mode), and what
    read_key returned; read_key runs in a thread, so that one waiting for Enter fails the test
    rather than hanging it."""
    keys: list[str] = []
    reader = threading.Thread(target=lambda: keys.append(read_key(stream)), daemon=True)
    reader.start()
    waited = 0.0
    while termios.tcgetattr(stream.fileno())[3] & termios.ICANON and waited < seconds:
        time.sleep(0.01)
        waited += 0.01
    os.write(typed, key)
    reader.join(seconds)
    assert not reader.is_alive(), "read_key waited for more than the key"
    return keys[0]


def test_a_key_is_read_without_enter_and_the_terminal_is_as_it_was(
    terminal: tuple[int, Any],
) -> None:
    typed, stream = terminal
    before = termios.tcgetattr(stream.fileno())
    assert before[3] & termios.ICANON and before[3] & termios.ECHO  # line mode, echoing
    assert pressed(typed, stream, b"q") == "q"
    assert termios.tcgetattr(stream.fileno()) == before
    assert pressed(typed, stream, b"\x1b[C") == "\x1b[C"  # →: three bytes, one key
    assert pressed(typed, stream, "é".encode()) == "é"
    assert pressed(typed, stream, b"\r") in {"\r", "\n"}  # Enter, as the terminal maps it
    assert termios.tcgetattr(stream.fileno()) == before


def test_ctrl_c_while_waiting_leaves_the_terminal_as_it_was(terminal: tuple[int, Any]) -> None:
    """SIGINT arrives while the key is awaited (as Ctrl-C does): KeyboardInterrupt, and the
    settings restored on the way out."""
    _, stream = terminal
    before = termios.tcgetattr(stream.fileno())
    seen: list[Any] = []

    def interrupt(number: int, frame: object) -> None:
        seen.append(termios.tcgetattr(stream.fileno()))  # as it was while waiting
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            read_key(stream)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    (waiting,) = seen
    assert not waiting[3] & termios.ICANON and not waiting[3] & termios.ECHO  # cbreak mode
    assert termios.tcgetattr(stream.fileno()) == before


def test_ctrl_d_is_its_byte_and_a_terminal_hung_up_is_no_key() -> None:
    typed, read = pty.openpty()
    with os.fdopen(read, "r", encoding="utf-8") as stream:
        assert pressed(typed, stream, b"\x04") == "\x04"  # Ctrl-D: in cbreak mode, its byte
        keys: list[str] = []
        reader = threading.Thread(target=lambda: keys.append(read_key(stream)), daemon=True)
        reader.start()
        time.sleep(0.1)
        os.close(typed)  # the window closed
        reader.join(5)
        assert keys == [""]


def test_only_a_terminal_reads_keys(tmp_path: Any, terminal: tuple[int, Any]) -> None:
    assert reads_keys(terminal[1])
    with open(tmp_path / "keys.txt", "w+", encoding="utf-8") as file:
        assert not reads_keys(file)
    assert not reads_keys(None)
