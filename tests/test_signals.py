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
