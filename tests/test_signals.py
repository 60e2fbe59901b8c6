"""attnviz.signals: SIGTERM and SIGHUP raised as an exception where the program is, so that
cleanup runs; exit codes 128 + the signal; signals held while outputs are renamed. The same in a
fresh process, while a file is being written: tests/e2e/test_signals.py."""

from __future__ import annotations

import signal
import threading

import pytest

from attnviz.errors import ExitStatus
from attnviz.signals import STOPPING, Interrupted, signals_held, stopping_signals_raise

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")


def signal_this_thread(number: int) -> None:
    """Send ``number`` to the main thread (this one), which Python delivers signals to; a signal
    sent to the process may reach another thread, which does not hold it."""
    signal.pthread_kill(threading.main_thread().ident or 0, number)


def test_the_exit_status_is_128_plus_the_signal() -> None:
    assert Interrupted(signal.SIGTERM).exit_status is ExitStatus.TERMINATED == 143
    assert Interrupted(signal.SIGHUP).exit_status is ExitStatus.HUNG_UP == 129
    assert str(Interrupted(signal.SIGTERM)) == "stopped by SIGTERM"
    assert not isinstance(Interrupted(signal.SIGTERM), Exception)  # `except Exception` lets it by


@pytest.mark.parametrize("number", STOPPING)
def test_a_stopping_signal_raises_inside_the_block_and_handlers_come_back(number: int) -> None:
    before = signal.getsignal(number)
    signal.signal(number, signal.SIG_DFL)
    try:
        cleaned = False
        with pytest.raises(Interrupted) as stopped:
            with stopping_signals_raise():
                try:
                    signal_this_thread(number)
                finally:
                    cleaned = True
        assert stopped.value.signal_number == number and cleaned
        assert signal.getsignal(number) is signal.SIG_DFL
    finally:
        signal.signal(number, before)


def test_once_the_command_line_is_stopped_a_later_signal_is_ignored() -> None:
    """With ``ending`` (the command line, which exits next) a stop leaves the stopping signals
    ignored, so one more while it exits cannot end it by that signal; without a stop, or
    without ``ending``, the handlers come back."""
    number = signal.SIGTERM
    before = {n: signal.getsignal(n) for n in (signal.SIGINT, *STOPPING)}
    signal.signal(number, signal.SIG_DFL)
    try:
        with stopping_signals_raise(ending=True):
            pass
        assert signal.getsignal(number) is signal.SIG_DFL  # no stop: as it was
        with pytest.raises(Interrupted):
            with stopping_signals_raise(ending=True):
                signal_this_thread(number)
        assert signal.getsignal(number) is signal.SIG_IGN
        signal_this_thread(number)  # ignored: this test goes on
    finally:
        for n, handler in before.items():
            signal.signal(n, handler)
        with stopping_signals_raise():  # the module's state back to "no stop begun"
            pass


def test_an_ignored_signal_stays_ignored() -> None:
    before = signal.getsignal(signal.SIGHUP)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with stopping_signals_raise():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            signal_this_thread(signal.SIGHUP)  # ignored: nothing happens
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_held_signal_arrives_when_the_block_ends() -> None:
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        finished = False
        with pytest.raises(Interrupted):
            with stopping_signals_raise():
                with signals_held():
                    signal_this_thread(signal.SIGTERM)
                    finished = True  # the renaming this protects goes on to the end
        assert finished
    finally:
        signal.signal(signal.SIGTERM, before)


def test_every_catchable_stopping_signal_is_taken_and_no_fault_or_ignored_one() -> None:
    names = {signal.Signals(number).name for number in STOPPING if number < 32}
    wanted = {"SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGXCPU"}
    assert wanted | {"SIGXFSZ", "SIGVTALRM", "SIGPROF"} <= names
    left_alone = {"SIGINT", "SIGKILL", "SIGSTOP", "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL"}
    left_alone |= {"SIGABRT", "SIGPIPE", "SIGCHLD", "SIGWINCH", "SIGTSTP", "SIGCONT"}
    assert not names & left_alone
    if hasattr(signal, "SIGRTMIN"):
        assert set(range(signal.SIGRTMIN, signal.SIGRTMAX + 1)) <= set(STOPPING)


def test_a_signal_without_a_named_status_exits_128_plus_its_number() -> None:
    assert Interrupted(signal.SIGQUIT).exit_status == 131
    assert Interrupted(signal.SIGXCPU).exit_status == 128 + signal.SIGXCPU
    if hasattr(signal, "SIGRTMIN"):
        stop = Interrupted(signal.SIGRTMIN + 2)
        assert stop.name == "SIGRTMIN+2" and stop.exit_status == 128 + signal.SIGRTMIN + 2


@pytest.mark.parametrize("name", ["SIGINT", "SIGQUIT", "SIGUSR1", "SIGALRM", "SIGXCPU"])
def test_a_second_signal_does_not_cut_the_cleanup_short(name: str) -> None:
    """SIGXCPU comes again each second past a CPU-time limit; a second Ctrl-C or Ctrl-\\ comes
    from an impatient hand."""
    number = getattr(signal, name)
    before = signal.getsignal(number)
    default = signal.default_int_handler if name == "SIGINT" else signal.SIG_DFL
    signal.signal(number, default)
    raised: type[BaseException] = KeyboardInterrupt if name == "SIGINT" else Interrupted
    try:
        cleaned = False
        with pytest.raises(raised):
            with stopping_signals_raise():
                with stopping_signals_raise():  # a run's staged writes, inside the command
                    try:
                        signal_this_thread(number)
                    finally:
                        signal_this_thread(number)  # while cleaning up: not raised again
                        cleaned = True
        assert cleaned
        assert signal.getsignal(number) is default
    finally:
        signal.signal(number, before)
