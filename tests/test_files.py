"""Reading refuses what is not a regular file and checks sizes before spending them; atomic
writes: a failed or interrupted write leaves the old file as it was and no debris."""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attnviz import files
from attnviz.cli import run
from attnviz.embeddings import load_embeddings
from attnviz.errors import ExitStatus, FileProblem, OutputProblem
from attnviz.files import (
    NPZ_FLOOR_BYTES,
    atomic_write,
    finite_matrix,
    load_json,
    load_npy,
    load_npz,
    npz_names,
    open_regular,
    require_readable,
)


def half_written(path: Path, error: BaseException) -> None:
    path.write_bytes(b"half of a fi")
    raise error


def test_a_complete_write_replaces_the_file_with_ordinary_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    atomic_write(target, lambda path: path.write_bytes(b"new and complete"))
    assert target.read_bytes() == b"new and complete"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's private 0600
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


@pytest.mark.parametrize("error", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_write_keeps_the_old_file_and_leaves_nothing(
    tmp_path: Path, error: BaseException
) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(type(error)):
        atomic_write(target, lambda path: half_written(path, error))
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_an_os_error_becomes_one_message(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    with pytest.raises(OutputProblem, match=r"Cannot write .*out.bin: No space left"):
        atomic_write(
            target, lambda path: half_written(path, OSError(28, "No space left on device"))
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("extension", [".npz", ".json"])
def test_ctrl_c_during_an_export_keeps_the_previous_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extension: str
) -> None:
    target = tmp_path / f"trace{extension}"
    assert run(["explain", "I am good", "--export", str(target)]) == 0
    before = target.read_bytes()

    def interrupted(temporary: Path, *args: object, **kwargs: object) -> None:
        half_written(temporary, KeyboardInterrupt())

    monkeypatch.setattr(Path, "write_text", interrupted)
    monkeypatch.setattr(
        np, "savez", lambda handle, **arrays: half_written(Path(handle.name), KeyboardInterrupt())
    )
    status = run(["explain", "I am good", "--seed", "7", "--export", str(target)])
    assert status == ExitStatus.INTERRUPTED
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


# -- reading: only regular files, sizes checked before anything is spent ----------------------


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
    monkeypatch.setattr(files, "require_readable", lambda path, what: None)  # the check passed
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


def deflated(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_only_the_members_asked_for_are_decompressed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zeros = npy_bytes(np.zeros(NPZ_FLOOR_BYTES // 8 + 1000))  # 64 MB that deflate to 62 kB
    deflated(tmp_path / "a.npz", {"X.npy": npy_bytes(np.ones((3, 2))), "huge.npy": zeros})
    assert load_npz(tmp_path / "a.npz", "Embeddings", keys=("X",))["X"].shape == (3, 2)
    assert npz_names(tmp_path / "a.npz", "Embeddings") == ("X", "huge")
    with pytest.raises(FileProblem, match=r"'huge' would expand from 6\d\.\d kB to 64 MB"):
        load_npz(tmp_path / "a.npz", "Embeddings")


def test_a_check_refuses_an_array_from_its_header_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    np.savez(tmp_path / "x.npz", X=np.ones((1000, 8)))
    np.save(tmp_path / "x.npy", np.ones((1000, 8)))

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the array was read")

    monkeypatch.setattr(np.lib.format, "read_array", never)
    for path in (tmp_path / "x.npz", tmp_path / "x.npy"):
        with pytest.raises(FileProblem, match="has 1000 rows but the sentence has 3 tokens"):
            load_embeddings(path, ["I", "am", "good"])


def test_headers_that_claim_more_than_the_file_holds_are_refused(tmp_path: Path) -> None:
    lie = npy_bytes(np.zeros((3, 8))).replace(b"(3, 8)", b"(3, 9)")
    (tmp_path / "lie.npy").write_bytes(lie)
    with pytest.raises(FileProblem, match=r"cut short: its header declares an array \[3, 9\]"):
        load_npy(tmp_path / "lie.npy", "Embeddings")
    with zipfile.ZipFile(tmp_path / "lie.npz", "w") as archive:
        archive.writestr("X.npy", lie)
    with pytest.raises(FileProblem, match=r"'X' declares an array \[3, 9\] of 216 bytes"):
        load_npz(tmp_path / "lie.npz", "Embeddings")


def test_a_raw_member_and_a_two_byte_archive_say_what_they_are(tmp_path: Path) -> None:
    deflated(tmp_path / "raw.npz", {"X.npy": npy_bytes(np.ones((3, 8))), "tokens": b"I am good"})
    with pytest.raises(FileProblem, match="its member 'tokens' is not a .npy array"):
        load_embeddings(tmp_path / "raw.npz", ["I", "am", "good"])
    (tmp_path / "pk.npz").write_bytes(b"PK")
    with pytest.raises(FileProblem, match=r"not a valid .npz file \(File is not a zip file\)"):
        load_npz(tmp_path / "pk.npz", "Weights")
    np.savez(tmp_path / "objects.npz", X=np.array([{}, None], dtype=object))
    with pytest.raises(FileProblem, match="holds Python objects, which would need pickle"):
        load_npz(tmp_path / "objects.npz", "Weights")


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
