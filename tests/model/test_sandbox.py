"""sources.sandbox: work run in a child process, its value back as JSON, its failures one
sentence, the child gone when the parent is interrupted or the time is up."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from attnviz.errors import AttnvizError, ExitStatus, FileProblem
from attnviz.model.sources import sandbox
from attnviz.model.sources.sandbox import run_isolated

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="a child process by os.fork")


class PanicException(BaseException):
    """Stands for pyo3_runtime.PanicException: a BaseException from that module."""


PanicException.__module__ = "pyo3_runtime"


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow
def test_the_value_comes_back_and_an_attnviz_error_keeps_its_kind_and_status() -> None:
    assert run_isolated(lambda: {"ids": [1, 2], "tokens": ["a", "é"]}, "t") == {
        "ids": [1, 2],
        "tokens": ["a", "é"],
    }

    def refuse() -> None:
        raise AttnvizError("The sentence is too long. Shorten it.")

    with pytest.raises(AttnvizError, match="too long") as caught:
        run_isolated(refuse, "t")
    assert caught.value.exit_status == ExitStatus.BAD_INPUT and type(caught.value) is AttnvizError

    def damaged() -> None:
        raise FileProblem("x.json is damaged.")

    with pytest.raises(FileProblem, match="x.json is damaged."):
        run_isolated(damaged, "t")


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (PanicException("called `Result::unwrap()` on an `Err`\nbacktrace"), "called `Result"),
        (Exception("WordLevel error: Missing [UNK] token"), "WordLevel error"),
        (MemoryError(), "MemoryError"),
    ],
)
def test_any_other_failure_is_one_line_naming_the_tokenizer(
    error: BaseException, shown: str
) -> None:
    def fail() -> None:
        raise error

    with pytest.raises(FileProblem) as caught:
        run_isolated(fail, "m/tokenizer.json")
    message = str(caught.value)
    assert message.startswith(f"m/tokenizer.json cannot split the sentence ({shown}")
    assert message.endswith("fix the tokenizer or use another model.") and "\n" not in message


@pytest.mark.parametrize("ending", ["abort", "exit"])
def test_a_child_that_dies_without_an_answer_is_one_line(ending: str) -> None:
    def die() -> None:
        if ending == "abort":
            os.kill(os.getpid(), signal.SIGABRT)  # as Rust does when an allocation fails
        raise SystemExit(3)

    with pytest.raises(FileProblem, match=r"t failed while splitting .* GiB of memory .* crashed"):
        run_isolated(die, "t")


@pytest.mark.slow
def test_a_child_past_its_time_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "TOKENIZER_SECONDS", 0.2)
    pid_file = tmp_path / "pid"

    def hang() -> None:
        pid_file.write_text(str(os.getpid()))
        time.sleep(60)

    started = time.monotonic()
    with pytest.raises(FileProblem, match=r"t took more than 0.2 s"):
        run_isolated(hang, "t")
    assert time.monotonic() - started < 2
    assert gone(int(pid_file.read_text()))


@pytest.fixture
def alarm() -> Iterator[None]:
    """SIGALRM raises KeyboardInterrupt, as Ctrl-C does."""

    def interrupt(number: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupt_while_waiting_kills_the_child_at_once(tmp_path: Path, alarm: None) -> None:
    pid_file = tmp_path / "pid"

    def hang() -> None:
        pid_file.write_text(str(os.getpid()))
        time.sleep(60)

    signal.setitimer(signal.ITIMER_REAL, 0.2)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_isolated(hang, "t")
    assert time.monotonic() - started < 1
    assert gone(int(pid_file.read_text()))  # killed and reaped: not even a zombie


def test_the_child_is_limited_in_memory_and_time() -> None:
    def limits() -> list[int]:
        import resource

        return [
            resource.getrlimit(resource.RLIMIT_AS)[0],
            resource.getrlimit(resource.RLIMIT_CPU)[0],
        ]

    address_space, cpu = run_isolated(limits, "t")
    held = sandbox._address_space()
    if held is not None:
        assert held < address_space <= held + sandbox.TOKENIZER_MEMORY + 64 * 1024**2
    assert cpu == int(sandbox.TOKENIZER_SECONDS) + 1


def test_an_answer_past_its_size_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "ANSWER_MAX_BYTES", 100_000)
    assert len(run_isolated(lambda: "a" * 90_000, "t")) == 90_000
    with pytest.raises(FileProblem, match=r"t split the sentence into more than 0 MB of tokens"):
        run_isolated(lambda: "a" * 200_000, "t")


@pytest.mark.slow
def test_started_work_runs_while_the_parent_works_and_its_time_counts_from_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child works while the parent does (attnviz generate reads the layers meanwhile);
    a parent slower than TOKENIZER_SECONDS does not make a finished child's answer late."""
    monkeypatch.setattr(sandbox, "TOKENIZER_SECONDS", 0.5)
    done = tmp_path / "done"

    def work() -> dict[str, object]:
        done.write_text("yes")
        return {"value": list(range(50_000))}  # more than a pipe holds: it waits to be read

    started = sandbox.start_isolated(work, "t")
    waited = time.monotonic()
    while not done.exists() and time.monotonic() - waited < 5:
        time.sleep(0.01)
    assert done.exists()  # done before anything asked for it
    time.sleep(0.7)  # the parent's own work, past the child's time
    assert started.result() == {"value": list(range(50_000))}


@pytest.mark.slow
def test_a_started_child_no_longer_wanted_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def hang() -> None:
        pid_file.write_text(str(os.getpid()))
        time.sleep(60)

    started = sandbox.start_isolated(hang, "t")
    waited = time.monotonic()
    while not pid_file.exists() and time.monotonic() - waited < 5:
        time.sleep(0.01)
    started.cancel()
    assert gone(int(pid_file.read_text()))  # killed and reaped
    started.cancel()  # a second time: nothing to do
