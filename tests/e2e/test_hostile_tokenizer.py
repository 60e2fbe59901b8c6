"""A model folder whose tokenizer.json is hostile, run by the installed command in a fresh
process under a memory limit: Ctrl-C and SIGTERM during a tokenizer that backtracks for minutes
end attnviz within a second (130, 143) and its tokenizer's child process with it; a panic, a
memory bomb, a WordLevel model without [UNK] and a normalizer that removes everything are one
line on stderr, no traceback and no Rust backtrace (in-process:
tests/model/test_tokenizer_hostile.py)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from model.hostile_tokenizers import (
    BACKTRACKING,
    NO_DIGITS,
    PANICKING,
    REMOVE_ALL,
    bert_folder,
    gpt2_folder,
    growing_replacements,
    split,
    word_level_without_unknown,
)

from attnviz.errors import ExitStatus

from support import installed_attnviz, needs_model, one_error_line

pytestmark = [
    needs_model,
    pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals, /proc and rlimits"),
]

#: attnviz's own memory limit in these tests: the tokenizer's 2 GiB more fit within it.
MEMORY_LIMIT = 6 * 1024**3


def limited() -> None:
    """In the child before exec: Ctrl-C not ignored (a background job's shell ignores it), and
    an address-space limit, so that a runaway tokenizer cannot take the machine."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def start(folder: Path, sentence: str) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.Popen(
        [installed_attnviz(), "explain", "-m", str(folder), sentence],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**environment, "COLUMNS": "100"},
        preexec_fn=limited,
    )


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(
    ("signal_name", "status", "said"),
    [
        ("SIGINT", ExitStatus.INTERRUPTED, "stopped by Ctrl-C"),
        ("SIGTERM", ExitStatus.TERMINATED, "stopped by SIGTERM"),
    ],
)
def test_a_signal_while_the_tokenizer_backtracks_ends_attnviz_within_a_second(
    tmp_path: Path, signal_name: str, status: ExitStatus, said: str
) -> None:
    folder = gpt2_folder(tmp_path / "slow", pre_tokenizer=split(BACKTRACKING))
    process = start(folder, NO_DIGITS)  # on main: minutes, the signal taking effect only after
    try:
        deadline = time.monotonic() + 30
        tokenizing: list[int] = []
        while not tokenizing and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            tokenizing = children(process.pid)
        assert tokenizing, process.communicate(timeout=15)
        time.sleep(1.0)  # well into the tokenizer's work
        assert process.poll() is None and all(alive(pid) for pid in tokenizing)
        sent = time.monotonic()
        process.send_signal(getattr(signal, signal_name))
        _, stderr = process.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert took < 1.0, took
    assert process.returncode == status
    one_error_line(stderr, said)
    assert not any(alive(pid) for pid in tokenizing)  # the tokenizer's process went too


def run(folder: Path, sentence: str = "I am a cat") -> subprocess.CompletedProcess[str]:
    process = start(folder, sentence)
    try:
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.parametrize(
    ("make", "sentence", "status", "fragment"),
    [
        (
            lambda path: gpt2_folder(path, pre_tokenizer=split(PANICKING)),
            "a" * 100,
            ExitStatus.BAD_FILE,
            "cannot split the sentence (Onig: Regex search error: retry-limit-in-match over)",
        ),
        (
            lambda path: gpt2_folder(path, normalizer=growing_replacements(4)),
            "I am a cat",
            ExitStatus.BAD_FILE,
            "took more than 2 GiB of memory",
        ),
        (
            lambda path: bert_folder(path, model=word_level_without_unknown()),
            "I am a zebra",
            ExitStatus.BAD_FILE,
            "Missing [UNK] token from the vocabulary",
        ),
        (
            lambda path: gpt2_folder(path, normalizer=REMOVE_ALL),
            "I am a cat",
            ExitStatus.BAD_INPUT,
            "leaves nothing of the sentence (no token)",
        ),
    ],
    ids=["panic", "memory bomb", "no unknown token", "nothing left"],
)
def test_a_hostile_tokenizer_is_one_line_and_its_exit_status(
    tmp_path: Path, make: object, sentence: str, status: ExitStatus, fragment: str
) -> None:
    assert callable(make)
    result = run(make(tmp_path / "model"), sentence)
    assert result.returncode == status, result.stderr
    line = one_error_line(result.stderr, fragment, "tokenizer.json")
    assert "panicked" not in result.stderr and "memory allocation" not in result.stderr, line
    assert result.stdout == ""


def test_the_tokenizer_ends_when_attnviz_is_killed_outright(tmp_path: Path) -> None:
    folder = gpt2_folder(tmp_path / "slow", pre_tokenizer=split(BACKTRACKING))
    process = start(folder, NO_DIGITS)
    try:
        deadline = time.monotonic() + 30
        tokenizing: list[int] = []
        while not tokenizing and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            tokenizing = children(process.pid)
        assert tokenizing, process.communicate(timeout=15)
        process.kill()  # SIGKILL: no handler runs; the kernel ends the child (PR_SET_PDEATHSIG)
        process.communicate(timeout=10)
        deadline = time.monotonic() + 1
        while any(alive(pid) for pid in tokenizing) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert not any(alive(pid) for pid in tokenizing)


def test_a_tokenizer_runs_under_limits_lower_than_its_own(tmp_path: Path) -> None:
    """ulimit -v and -t lower than the tokenizer's limits: the lower ones are kept, and a sound
    tokenizer works within them."""

    def tight() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))
        resource.setrlimit(resource.RLIMIT_CPU, (5, 5))

    environment = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    result = subprocess.run(
        [installed_attnviz(), "explain", "-m", str(gpt2_folder(tmp_path / "m")), "I am a cat"],
        capture_output=True,
        text=True,
        env={**environment, "COLUMNS": "100"},
        preexec_fn=tight,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "Sentence: I am a cat" in result.stdout
