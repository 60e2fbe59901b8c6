"""Every catchable signal that would end attnviz handled as Python handles SIGINT: as an
exception raised where the program is, so that cleanup code (``except BaseException: unlink``,
``finally``) runs before it ends.

Without this the default action ends the process at once and the outputs being written are
left behind as temporary files: SIGTERM (kill), SIGHUP (the terminal closed), SIGQUIT (Ctrl-\\),
SIGALRM, SIGVTALRM and SIGPROF (timers), SIGXCPU and SIGXFSZ (a CPU-time or file-size limit),
SIGUSR1, SIGUSR2, SIGIO, SIGPWR, SIGSTKFLT and the real-time signals. SIGINT already arrives as
KeyboardInterrupt. The exit code of each is 128 + the signal's number, as shells report it
(130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP, 131 for SIGQUIT).

Left alone: SIGKILL and SIGSTOP (they cannot be caught), the signals whose default is to be
ignored or to pause (SIGCHLD, SIGWINCH, SIGTSTP, …), SIGPIPE (Python ignores it), and the
faults a bug raises (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS): a handler
returning from one of those would run the faulting instruction again.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from attnviz.errors import ExitStatus

_NAMED = (
    "SIGTERM",
    "SIGHUP",
    "SIGQUIT",
    "SIGALRM",
    "SIGVTALRM",
    "SIGPROF",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGUSR1",
    "SIGUSR2",
    "SIGIO",
    "SIGPWR",
    "SIGSTKFLT",
)
_REAL_TIME = (
    tuple(range(signal.SIGRTMIN, signal.SIGRTMAX + 1)) if hasattr(signal, "SIGRTMIN") else ()
)
#: The signals that stop attnviz with cleanup, where the system has them.
STOPPING: tuple[int, ...] = tuple(
    dict.fromkeys(
        [int(getattr(signal, name)) for name in _NAMED if hasattr(signal, name)] + [*_REAL_TIME]
    )
)
#: The signals held while outputs are renamed into place or their temporaries removed.
HELD = (signal.SIGINT, *STOPPING)


class Interrupted(BaseException):
    """A stopping signal arrived. A BaseException, like KeyboardInterrupt, so that code catching
    Exception lets it pass and only cleanup code sees it."""

    def __init__(self, signal_number: int) -> None:
        self.signal_number = signal_number
        self.name = signal_name(signal_number)
        super().__init__(f"stopped by {self.name}")

    @property
    def exit_status(self) -> int:
        """128 + the signal's number: ExitStatus.TERMINATED (143), HUNG_UP (129), or the
        number itself for a signal without a name there (131 for SIGQUIT)."""
        status = 128 + self.signal_number
        try:
            return ExitStatus(status)
        except ValueError:
            return status


def signal_name(number: int) -> str:
    """SIGTERM for 15; SIGRTMIN+3 for a real-time signal, as kill -l names them."""
    try:
        return signal.Signals(number).name
    except ValueError:
        rt_min = getattr(signal, "SIGRTMIN", None)
        return f"SIGRTMIN+{number - rt_min}" if rt_min is not None else f"signal {number}"


#: Whether a stopping signal was raised already: one is enough, and a second (SIGXCPU comes
#: every second past the limit) must not cut short the cleanup the first one began.
_stopping = False


def _raise_interrupted(signal_number: int, frame: FrameType | None) -> None:
    global _stopping
    if _stopping:
        return
    _stopping = True
    if signal_number == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(signal_number)


@contextmanager
def stopping_signals_raise(*, ending: bool = False) -> Iterator[None]:
    """Within the block, the STOPPING signals raise Interrupted instead of ending the process,
    and only the first stopping signal or Ctrl-C raises: one more during the cleanup is dropped.
    ``ending``: the process ends after the block (the command line), so once a stop has begun
    these signals are ignored from then on: one more while attnviz says so and exits, even
    while Python finalizes (which puts the default action back for the handlers it installed,
    not for ignored signals), cannot end the process by that signal instead.

    Only a signal left to its default action is taken over, and only on the main thread (the
    only one Python delivers signals to): a signal the program ignores (``nohup``) or handles
    itself keeps its handler. The previous handlers are restored on leaving.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _stopping
    replaced = {}
    for number in (signal.SIGINT, *STOPPING):
        # Ctrl-C stays KeyboardInterrupt, raised once like the others: a second one while
        # the first's cleanup runs would cut it short.
        default = signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL
        try:
            if signal.getsignal(number) is default:
                replaced[number] = signal.signal(number, _raise_interrupted)
        except (OSError, ValueError):  # a signal this system reserves
            continue
    if replaced:  # the outermost block: a run begins
        _stopping = False
    try:
        yield
    finally:
        stopped = ending and _stopping
        for number, previous in replaced.items():
            signal.signal(number, signal.SIG_IGN if stopped else previous)
        if replaced and not stopped:
            _stopping = False


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and the STOPPING signals during a short step that must not stop halfway
    (renaming a run's outputs into place, removing its temporaries); one that arrives meanwhile
    is delivered when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no masks
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
