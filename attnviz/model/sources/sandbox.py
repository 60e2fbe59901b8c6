"""A model's tokenizer run where it cannot hang, crash or exhaust attnviz.

A tokenizer.json is a small program (regular expressions, replacements, a model) that the
``tokenizers`` package runs in Rust, where Python's signal handlers cannot interrupt it: a Split
pattern such as ``.{0,150}.{0,150}.{0,150}\\d`` backtracks for minutes on a short sentence, one
such as ``(\\w*)*\\d`` panics (pyo3's PanicException, a BaseException), and Replace normalizers
that each write "a" as a hundred of them ask for gigabytes and abort the process. So the tokenizer
is built and run in a child process (os.fork): it has TOKENIZER_SECONDS of time and
TOKENIZER_MEMORY bytes of memory beyond what attnviz already holds, it is killed the moment the
parent is interrupted (Ctrl-C, SIGTERM), and its answer comes back as JSON (never pickled).
Whatever goes wrong in it becomes one sentence (FileProblem) naming the tokenizer and the fix.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from attnviz.errors import AttnvizError, ExitStatus, FileProblem
from attnviz.signals import HELD, signals_held

#: Wall-clock time a tokenizer has to be built and to split one sentence. Real ones take a
#: fraction of a second (GPT-2's: about 30 ms with Python's start); a 30 MB tokenizer.json some.
TOKENIZER_SECONDS = 10.0
#: Memory a tokenizer may take beyond what attnviz holds when it starts (address space).
TOKENIZER_MEMORY = 2 * 1024**3
#: The largest answer read back: an encoding of a few thousand tokens is some hundred KB.
ANSWER_MAX_BYTES = 16_000_000


@dataclass(frozen=True)
class IsolatedTokenizer:
    """A tokenizer that exists only in child processes: ``build()`` makes the
    ``tokenizers.Tokenizer`` there. ``source`` names it in messages ("…/tokenizer.json")."""

    build: Callable[[], Any]
    source: str


def run_isolated(work: Callable[[], Any], source: str) -> Any:
    """``work()``'s value (JSON: numbers, text, lists, dicts), computed in a child process under
    the limits above. An AttnvizError raised in it is raised here as it was; any other failure,
    running out of time or memory included, is a FileProblem naming ``source``. Without fork
    (Windows) the work runs here, its exceptions made one sentence all the same."""
    return start_isolated(work, source).result()


class Started:
    """Work begun in a child process (``start_isolated``): its answer is read by ``result``,
    once; ``cancel`` ends the child instead (a run that stopped before it needed the answer).
    Meanwhile the parent goes on with its own work (attnviz generate reads the model's layers
    while the child splits the prompt: on two cores, at the same time)."""

    def __init__(self, source: str, pid: int | None, read_end: int | None, answer: Any) -> None:
        self.source = source
        self._pid = pid
        self._read_end = read_end
        self._answer = answer  # the answer already known (no fork), else None

    def result(self) -> Any:
        """The work's value, as ``run_isolated`` gives it. The child has TOKENIZER_SECONDS
        from now: the time it waited for the parent to read is not counted against it (its
        CPU time stays bounded, RLIMIT_CPU)."""
        if self._pid is None or self._read_end is None:
            return _answer(self._answer, self.source)
        pid, read_end = self._pid, self._read_end
        self._pid = self._read_end = None
        try:
            received = _receive(read_end, time.monotonic() + TOKENIZER_SECONDS)
        except BaseException:  # Ctrl-C, or SIGTERM as attnviz.signals raises it
            _kill(pid)
            raise
        finally:
            os.close(read_end)
        return _received(received, pid, self.source)

    def cancel(self) -> None:
        """End the child now, when its answer is no longer wanted (nothing once it was read)."""
        if self._pid is not None and self._read_end is not None:
            _kill(self._pid)
            os.close(self._read_end)
            self._pid = self._read_end = None


def start_isolated(work: Callable[[], Any], source: str) -> Started:
    """``work`` begun in a child process under the limits above (see run_isolated); without fork
    (Windows) it runs here, now."""
    if not hasattr(os, "fork"):
        return Started(source, None, None, _attempt(work))
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = None
    try:
        with signals_held():  # a Ctrl-C that comes now is raised once the child is known
            pid = _fork()
            if pid == 0:
                os.close(read_end)
                _child(work, write_end, parent)
            os.close(write_end)
    except BaseException:  # Ctrl-C, or SIGTERM as attnviz.signals raises it: the child goes too
        if pid is not None:
            _kill(pid)
        os.close(read_end)
        raise
    return Started(source, pid, read_end, None)


def _received(received: bytes | None, pid: int, source: str) -> Any:
    """The child's answer from the bytes it wrote (None: it ran out of time), the child reaped."""
    if received is None:
        _kill(pid)
        raise FileProblem(
            f"{source} took more than {TOKENIZER_SECONDS:g} s to split the sentence, and was "
            r"stopped (a regular expression that backtracks, such as '.{0,150}.{0,150}\d', or "
            "a normalizer that makes the text grow can take hours); fix the tokenizer or use "
            "another model."
        )
    if len(received) > ANSWER_MAX_BYTES:
        _kill(pid)
        raise FileProblem(
            f"{source} split the sentence into more than {ANSWER_MAX_BYTES // 1_000_000} MB of "
            "tokens; fix the tokenizer or use another model."
        )
    status = _reap(pid)
    try:
        answer = json.loads(received)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or status != 0:
        raise FileProblem(
            f"{source} failed while splitting the sentence: it took more than "
            f"{TOKENIZER_MEMORY / 1024**3:g} GiB of memory (replacements that make the text "
            "grow, for example) or crashed; fix the tokenizer or use another model."
        )
    return _answer(answer, source)


def _fork() -> int:
    """os.fork(), without Python 3.12's warning that forking beside threads may deadlock the
    child: it takes no lock another thread may hold (imports and malloc are reset by fork)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _attempt(work: Callable[[], Any]) -> dict[str, Any]:
    """The answer to send: {"value": …}, {"problem": …} for an AttnvizError, {"failure": …}."""
    try:
        return {"value": work()}
    except AttnvizError as problem:
        return {"problem": problem.message, "status": int(problem.exit_status)}
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # pyo3's PanicException is a BaseException
        if isinstance(error, Exception) or is_panic(error):
            return {"failure": one_line(error)}
        raise


def is_panic(error: BaseException) -> bool:
    """Whether ``error`` is a Rust panic that pyo3 raised (pyo3_runtime.PanicException)."""
    return type(error).__module__ == "pyo3_runtime"


def one_line(error: BaseException) -> str:
    """An exception's message, its first line only and at most 200 characters."""
    lines = str(error).strip().splitlines() or [type(error).__name__]
    line = lines[0]
    return line if len(line) <= 200 else line[:199] + "…"


def _answer(answer: dict[str, Any], source: str) -> Any:
    if "value" in answer:
        return answer["value"]
    if "problem" in answer:
        status = ExitStatus(answer.get("status", ExitStatus.BAD_INPUT))
        if status == ExitStatus.BAD_FILE:
            raise FileProblem(str(answer["problem"]))
        raise AttnvizError(str(answer["problem"]), status)
    raise FileProblem(
        f"{source} cannot split the sentence ({answer.get('failure')}); fix the tokenizer or "
        "use another model."
    )


def _child(work: Callable[[], Any], write_end: int, parent: int) -> NoReturn:
    """Run ``work`` confined and write its answer; never returns into the parent's code."""
    gc.disable()  # a collection would touch, and so copy, every page of the parent's objects
    code = 0
    try:
        _confine(parent)
        data = json.dumps(_attempt(work)).encode("utf-8")
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
    except BaseException:  # the parent sees no answer: a failure
        code = 1
    finally:
        os._exit(code)


def _confine(parent: int) -> None:
    """The child's limits: signals end it at once (Rust cannot see Python's handlers), its
    memory and CPU time bounded, no core file, Rust's panic messages not on the terminal nor in
    the output, and on Linux its end when the parent ends."""
    import faulthandler
    import resource

    faulthandler.disable()  # its report of a Rust abort would reach the terminal
    for number in HELD:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)  # held by the parent while it forked
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # nothing of the child's reaches the lesson being printed
    os.dup2(null, 2)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one sentence: no thread pool
    _lower_limit(resource.RLIMIT_CORE, 0)
    seconds = int(TOKENIZER_SECONDS) + 1  # a backstop should the parent be killed outright
    _lower_limit(resource.RLIMIT_CPU, seconds)
    held = _address_space()
    if held is not None:
        _lower_limit(resource.RLIMIT_AS, held + TOKENIZER_MEMORY)
    _die_with_parent(parent)


def _lower_limit(kind: int, value: int) -> None:
    """Set the limit ``kind`` to ``value``, or keep a lower one already set (by ulimit, say):
    a process may lower its limits, not raise them past the hard one."""
    import resource

    soft, hard = resource.getrlimit(kind)
    if soft != resource.RLIM_INFINITY:
        value = min(value, soft)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _address_space() -> int | None:
    """The process's address space in bytes (VmSize), None where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _die_with_parent(parent: int) -> None:
    """On Linux: SIGKILL when the parent ends (prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent ended before the request
        os._exit(1)


def _receive(read_end: int, deadline: float) -> bytes | None:
    """Everything the child writes, until it closes the pipe or ANSWER_MAX_BYTES is passed;
    None when the deadline passes first. A signal's handler (KeyboardInterrupt,
    attnviz.signals) raises out of the wait."""
    chunks: list[bytes] = []
    size = 0
    waiting = select.poll()
    waiting.register(read_end, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not waiting.poll(left * 1000):
            return None
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > ANSWER_MAX_BYTES:
            return b"".join(chunks)


def _kill(pid: int) -> None:
    """End the child now and reap it (it cannot have blocked SIGKILL)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(pid)


def _reap(pid: int) -> int:
    """The child's exit: its exit code, or -signal when a signal ended it (-1 if it was already
    reaped). Called once its pipe is closed or it was killed: it is ending."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return -1
    return os.waitstatus_to_exitcode(status)
