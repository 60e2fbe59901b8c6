"""One key from the terminal, without Enter: what --step's pause reads.

The terminal is put in cbreak mode (no line editing, no echo; Ctrl-C still interrupts) for the
read alone, and its settings are put back on every way out: a key, the end of input, Ctrl-C,
or a signal that attnviz.signals turns into an exception.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TextIO

#: How long the rest of one key's bytes may take to follow its first: an arrow sends ESC [ C
#: at once, and is one key, not three.
REST_OF_A_KEY = 0.03


def reads_keys(stream: TextIO | None) -> bool:
    """Whether ``stream`` is a terminal a key can be read from (and this system has termios)."""
    try:
        import termios  # noqa: F401  (POSIX only)
    except ImportError:
        return False
    return stream is not None and stream.isatty()


def read_key(stream: TextIO, ask: Callable[[], None] = lambda: None) -> str:
    """The next key pressed at the terminal ``stream`` reads from, as its text ("q", "\\n",
    "\\x1b[C" for →), or "" at the end of input. ``ask`` prints the question once the terminal
    no longer echoes, so that a key pressed as soon as it shows is not echoed either."""
    import select
    import termios
    import tty

    descriptor = stream.fileno()
    saved = termios.tcgetattr(descriptor)
    try:
        tty.setcbreak(descriptor, termios.TCSANOW)
        ask()
        try:
            key = os.read(descriptor, 1)
        except OSError:  # the terminal hung up (EIO): the end of input
            key = b""
        while key and select.select([descriptor], [], [], REST_OF_A_KEY)[0]:
            more = os.read(descriptor, 32)
            if not more:
                break
            key += more
    finally:
        try:
            termios.tcsetattr(descriptor, termios.TCSADRAIN, saved)
        except termios.error:  # the terminal is gone (hung up): nothing left to restore
            pass
    return key.decode("utf-8", errors="replace")
