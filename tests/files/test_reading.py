"""Reading refuses what is not a regular file, checks sizes before spending them, and names
numbers attnviz cannot compute with."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import run
from attnviz.errors import ExitStatus, FileProblem
from attnviz.files import (
    finite_matrix,
    load_json,
    load_npy,
    load_npz,
    open_regular,
    reading,
    require_readable,
)


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The command's exit status and its stderr (any warning would fail the test)."""
    status = run(argv)
    return status, capsys.readouterr().err


def one_error_line(stderr: str, *phrases: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


@pytest.mark.parametrize("kind", ["fifo", "link to fifo", "/dev/zero", "link to /dev/zero"])
def test_a_fifo_or_a_device_is_refused_without_being_read(tmp_path: Path, kind: str) -> None:
    os.mkfifo(tmp_path / "fifo")
    path = {"fifo": tmp_path / "fifo", "/dev/zero": Path("/dev/zero")}.get(kind)
    if path is None:
        path = tmp_path / "vectors.npz"
        path.symlink_to(tmp_path / "fifo" if kind.endswith("fifo") else Path("/dev/zero"))
    said = "named pipe (FIFO)" if "fifo" in kind else "is a device"
    with pytest.raises(FileProblem, match=re.escape(said)):
        open_regular(path, "Embeddings")  # O_NONBLOCK: a FIFO never blocks
    for load in (load_npy, load_npz, load_json):
        with pytest.raises(FileProblem, match=re.escape(said)):
            load(path, "Embeddings")


def test_a_file_swapped_for_a_fifo_after_the_check_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(tmp_path / "fifo")
    monkeypatch.setattr(reading, "require_readable", lambda path, what: None)  # the check passed
    with pytest.raises(FileProblem, match=r"named pipe \(FIFO\)"):
        open_regular(tmp_path / "fifo", "Weights")


def test_a_name_too_long_and_a_dangling_link_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_name = str(tmp_path / ("a" * 300 + ".json"))
    for option in ("-e", "-w"):
        status, stderr = cli(["explain", "I am good", option, long_name], capsys)
        assert status == ExitStatus.BAD_FILE
        one_error_line(stderr, "File name too long")
    (tmp_path / "gone.txt").symlink_to(tmp_path / "nothing.txt")
    with pytest.raises(FileProblem, match=r"gone.txt is a link to .*nothing.txt, which does not"):
        require_readable(tmp_path / "gone.txt", "Embeddings")


@pytest.mark.parametrize(
    ("number", "refused"),
    [
        ("1" + "0" * 308, False),  # 1e308: the largest power of ten float64 holds
        ("2" + "0" * 308, True),
        ("-" + "1" * 400, True),
        ("1" * 5001, True),  # beyond Python's 4300-digit limit for int()
        ("1e308", False),
    ],
)
def test_json_numbers_beyond_float64_are_refused_by_name(
    tmp_path: Path, number: str, refused: bool
) -> None:
    (tmp_path / "n.json").write_text(f'{{"a": [{number}, 1]}}', encoding="utf-8")
    if refused:
        with pytest.raises(FileProblem, match=r"holds the number .*beyond float64's range"):
            load_json(tmp_path / "n.json", "Embeddings")
    else:
        assert len(load_json(tmp_path / "n.json", "Embeddings").value["a"]) == 2


def test_finite_matrix_names_the_real_problem() -> None:
    with pytest.raises(FileProblem, match="not a 3-d array of numbers of equal length"):
        finite_matrix([[[0.0] * 4] * 8, [[0.0] * 3] * 8], name="W_Q", source="w.json", ndim=3)
    huge = np.full((2, 2), np.longdouble("1e400"))
    if np.isfinite(huge).all():  # a platform whose longdouble is wider than float64
        with pytest.raises(FileProblem, match=r"beyond float64's range \(first at index \[0, 0\]"):
            finite_matrix(huge, name="X", source="x.npy", ndim=2)
    with pytest.raises(FileProblem, match="beyond float64's range"):
        finite_matrix([[10**400, 1]], name="X", source="given", ndim=2)
    with pytest.raises(FileProblem, match="holds NaN or infinity"):
        finite_matrix([[np.inf, 1]], name="X", source="given", ndim=2)


@pytest.mark.parametrize(
    ("weights", "said"),
    [
        ({"W_Q": [[[0] * 4] * 8, [[0] * 4] * 7]}, "W_Q in {} is not a 3-d array of numbers"),
        ({"W_Q": [[[1e400]]]}, "W_Q in {} holds NaN or infinity"),  # 1e400 reads as infinity
        # An array's name is given as written, not capitalised into another one (B_V).
        (
            {key: np.zeros((2, 4)).tolist() for key in ("b_Q", "b_K")}
            | {"b_V": [[1e400, 0, 0, 0], [0] * 4], "b_O": [0] * 8},
            "b_V in {} holds NaN or infinity",
        ),
    ],
)
def test_broken_weights_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], weights: dict[str, object], said: str
) -> None:
    document = {key: np.zeros((2, 8, 4)).tolist() for key in ("W_Q", "W_K", "W_V")}
    document["W_O"] = np.zeros((8, 8)).tolist()
    path = tmp_path / "w.json"
    path.write_text(json.dumps(document | weights).replace("Infinity", "1e400"), encoding="utf-8")
    status, stderr = cli(["explain", "I am good", "-w", str(path)], capsys)
    assert status == ExitStatus.BAD_FILE
    one_error_line(stderr, said.format(path))


def test_a_longdouble_npy_beyond_float64_is_one_accurate_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = np.full((3, 8), np.longdouble("1e400"))
    if not np.isfinite(huge).all():
        pytest.skip("this platform's longdouble is float64")
    np.save(tmp_path / "x.npy", huge)
    status, stderr = cli(["explain", "I am good", "-e", str(tmp_path / "x.npy")], capsys)
    assert status == ExitStatus.BAD_FILE
    one_error_line(stderr, "holds numbers beyond float64's range (first at index [0, 0])")
    assert "NaN" not in stderr
