"""Resources bounded before they are spent: inputs that never end, archives that expand to
gigabytes, lines without end and a terminal a hundred million columns wide.

Each test makes its hostile input, runs the installed command in a fresh process under a memory cap
(RLIMIT_AS) and a time limit, and checks the answer: one ``error:`` line naming the problem, a
named exit code, no traceback, nothing on stdout, or, for the terminal width, a normal lesson.
The tests of the same limits in-process, which a plain pytest runs, are in files/ and
embeddings/ and, for the width, test_limits_cli.py.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attnviz.config import MAX_D_MODEL
from attnviz.errors import ExitStatus
from attnviz.files import NPZ_FLOOR_BYTES
from attnviz.render.options import MAX_WIDTH

from support import installed_attnviz, steps_spec

#: Address space for the command: Python, numpy and Rich take a few hundred MB of it; reading
#: any of these inputs whole would take more.
MEMORY_CAP = 1_500_000_000
TIMEOUT = 20  # seconds; each command answers in about one


def capped_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def attnviz(*arguments: str, cwd: Path, columns: str = "100") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [installed_attnviz(), *arguments],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=capped_memory,
        cwd=cwd,
        env={**os.environ, "COLUMNS": columns, "NO_COLOR": "1"},
    )


def refused(result: subprocess.CompletedProcess[str], *phrases: str) -> str:
    """The one error line of a command refused as a bad file, after checking it is just that."""
    assert result.returncode == ExitStatus.BAD_FILE, result.stderr
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert result.stdout == ""
    for phrase in phrases:
        assert phrase in lines[0]
    return lines[0]


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def zip_bomb(path: Path, member: str, n_bytes: int, others: dict[str, np.ndarray]) -> None:
    """An .npz whose ``member`` is a float64 .npy of ``n_bytes`` zeros, deflated about 1000×,
    beside the real arrays ``others``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in others.items():
            archive.writestr(f"{name}.npy", npy_bytes(array))
        header = io.BytesIO()
        shape = {"descr": "<f8", "fortran_order": False, "shape": (n_bytes // 8,)}
        np.lib.format.write_array_header_1_0(header, shape)
        with archive.open(f"{member}.npy", "w", force_zip64=True) as stream:
            stream.write(header.getvalue())
            zeros = bytes(1 << 22)
            for start in range(0, n_bytes, len(zeros)):
                stream.write(zeros[: n_bytes - start])


# -- not regular files ---------------------------------------------------------------------


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A FIFO nobody writes to, links to it and to /dev/zero, and folders, under file names."""
    os.mkfifo(tmp_path / "fifo")
    for extension in (".txt", ".npy", ".npz", ".json"):
        (tmp_path / f"fifo{extension}").symlink_to(tmp_path / "fifo")
        (tmp_path / f"zero{extension}").symlink_to("/dev/zero")
        (tmp_path / f"folder{extension}").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("option", "name", "said"),
    [
        ("-e", "fifo.txt", "is a named pipe (FIFO)"),
        ("-e", "fifo.npz", "is a named pipe (FIFO)"),
        ("-e", "fifo.json", "is a named pipe (FIFO)"),
        ("-e", "zero.txt", "(a link to /dev/zero) is a device"),
        ("-e", "zero.npy", "(a link to /dev/zero) is a device"),
        ("-e", "/dev/zero", "is a device"),
        ("-e", "folder.txt", "is a folder; give a file"),
        ("-w", "fifo.npz", "is a named pipe (FIFO)"),
        ("-w", "zero.json", "(a link to /dev/zero) is a device"),
        ("-w", "folder.npz", "is a folder; give a file"),
    ],
)
def test_what_is_not_a_regular_file_is_refused_at_once(
    hostile: Path, option: str, name: str, said: str
) -> None:
    result = attnviz("explain", "I am good", option, name, cwd=hostile)
    refused(result, name, said)


# -- text files: lines and vectors ---------------------------------------------------------


def test_a_huge_file_without_a_newline_is_refused_at_its_first_megabyte(tmp_path: Path) -> None:
    with (tmp_path / "one-line.txt").open("wb") as handle:
        handle.truncate(1_500_000_000)  # sparse: 1.5 GB of NUL bytes, no newline
    result = attnviz("explain", "I am good", "-e", "one-line.txt", cwd=tmp_path)
    refused(result, "one-line.txt, line 1: longer than 1 MB")


def test_a_line_of_fifty_million_values_is_refused_at_its_first_megabyte(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_bytes(b"i " + b"0 " * 50_000_000 + b"\nam 1\n")
    result = attnviz("explain", "I am good", "-e", "long.txt", cwd=tmp_path)
    refused(result, "long.txt, line 1: longer than 1 MB")


def test_vectors_wider_than_any_d_model_are_refused_at_the_first_line(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_bytes(b"i " + b"0 " * 400_000 + b"\n")
    (tmp_path / "header.vec").write_text("3 " + "9" * 5000 + "\ni 1 2\n", encoding="utf-8")
    result = attnviz("explain", "I am good", "-e", "wide.txt", cwd=tmp_path)
    refused(result, "line 1, has vectors of 400000 numbers", f"at most {MAX_D_MODEL}")
    result = attnviz("explain", "I am good", "-e", "header.vec", cwd=tmp_path)
    refused(result, "its header declares vectors of 999999… (5000 digits) numbers")


# -- npz: declared sizes checked before decompressing ----------------------------------------

BOMB_BYTES = 2 * NPZ_FLOOR_BYTES + 8_000_000  # ~136 MB of zeros in ~140 kB


@pytest.mark.parametrize(("option", "member"), [("-e", "X"), ("-w", "W_Q")])
def test_an_archive_that_expands_a_thousand_times_is_refused_from_its_headers(
    tmp_path: Path, option: str, member: str
) -> None:
    others = {} if member == "X" else {k: np.zeros((2, 8, 4)) for k in ("W_K", "W_V")}
    others |= {} if member == "X" else {"W_O": np.zeros((8, 8))}
    zip_bomb(tmp_path / "bomb.npz", member, BOMB_BYTES, others)
    assert (tmp_path / "bomb.npz").stat().st_size < BOMB_BYTES // 100
    result = attnviz("explain", "I am good", option, "bomb.npz", cwd=tmp_path)
    refused(result, f"{member}' would expand from", "to 136 MB", "64× its compressed size")


def test_an_unused_huge_member_is_never_read(tmp_path: Path) -> None:
    rows = np.arange(24.0).reshape(3, 8)
    zip_bomb(tmp_path / "x.npz", "unused", BOMB_BYTES, {"X": rows})
    tokens = steps_spec("tokens")
    result = attnviz("explain", "I am good", "-e", "x.npz", "--steps", tokens, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_an_npy_header_claiming_more_than_its_zip_entry_holds_is_refused(tmp_path: Path) -> None:
    small = npy_bytes(np.zeros((3, 8)))
    lie = small.replace(b"(3, 8)", b"(3, 9)")  # the same header length, a larger array
    with zipfile.ZipFile(tmp_path / "lie.npz", "w") as archive:
        archive.writestr("X.npy", lie)
    result = attnviz("explain", "I am good", "-e", "lie.npz", cwd=tmp_path)
    refused(result, "not a valid .npz file ('X' declares an array [3, 9] of 216 bytes")


# -- the terminal's width --------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["10000000", "100000000"])
def test_a_huge_terminal_width_is_clamped(tmp_path: Path, columns: str) -> None:
    sentence = "The animal didn't cross the street because it was too tired"
    result = attnviz("explain", sentence, cwd=tmp_path, columns=columns)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= MAX_WIDTH
    assert len(result.stdout) < 200_000


# -- numbers and names that used to raise tracebacks ------------------------------------------


def weights_json(big: str) -> str:
    weights = {key: np.zeros((2, 8, 4)).tolist() for key in ("W_Q", "W_K", "W_V")}
    weights["W_O"] = np.zeros((8, 8)).tolist()
    return json.dumps(weights).replace("0.0", big, 1)


@pytest.mark.parametrize("digits", [400, 5001])
def test_a_json_integer_beyond_float64_is_refused_by_name(tmp_path: Path, digits: int) -> None:
    big = "1" * digits
    (tmp_path / "w.json").write_text(weights_json(big), encoding="utf-8")
    vocabulary = json.dumps({"i": [0.5, 1], "am": [1, 2], "good": [2, 3]})
    (tmp_path / "e.json").write_text(vocabulary.replace("0.5", big), encoding="utf-8")
    for option, name in (("-w", "w.json"), ("-e", "e.json")):
        result = attnviz("explain", "I am good", option, name, cwd=tmp_path)
        refused(result, f"holds the number 11111111… ({digits} digits), beyond float64's range")
