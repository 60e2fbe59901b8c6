"""SIGTERM and SIGHUP handled as Python handles SIGINT: as an exception raised where the program
is, so that cleanup code (``except BaseException: unlink``, ``finally``) runs before it ends.

Without this the default action ends the process at once and an output being written is left
behind as a temporary file. SIGINT already arrives as KeyboardInterrupt; the exit code of each is
128 + the signal's number, as shells report it (130, 143, 129).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from attnviz.errors import ExitStatus

#: The signals that stop attnviz with cleanup: the terminal closing, and a polite kill.
STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
#: The signals held while outputs are renamed into place or their temporaries removed.
HELD = (signal.SIGINT, *STOPPING)


class Interrupted(BaseException):
    """A stopping signal arrived. A BaseException, like KeyboardInterrupt, so that code catching
    Exception lets it pass and only cleanup code sees it."""

    def __init__(self, signal_number: int) -> None:
        self.signal_number = signal_number
        self.name = signal.Signals(signal_number).name
        super().__init__(f"stopped by {self.name}")

    @property
    def exit_status(self) -> ExitStatus:
        """128 + the signal's number: ExitStatus.TERMINATED (143) or HUNG_UP (129)."""
        return ExitStatus(128 + self.signal_number)


def _raise_interrupted(signal_number: int, frame: FrameType | None) -> None:
    raise Interrupted(signal_number)


@contextmanager
def stopping_signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise Interrupted instead of ending the process.

    Only a signal left to its default action is taken over, and only on the main thread (the
    only one Python delivers signals to): a signal the program ignores (``nohup``) or handles
    itself keeps its handler. The previous handlers are restored on leaving.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced = {}
    for number in STOPPING:
        if signal.getsignal(number) is signal.SIG_DFL:
            replaced[number] = signal.signal(number, _raise_interrupted)
    try:
        yield
    finally:
        for number, previous in replaced.items():
            signal.signal(number, previous)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP during a short step that must not stop halfway (renaming
    a run's outputs into place, removing its temporaries); one that arrives meanwhile is
    delivered when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no masks
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
