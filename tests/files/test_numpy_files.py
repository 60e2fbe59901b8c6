"""``.npy`` and ``.npz`` are read without pickle, each array's size checked from its headers before
a byte of it is decompressed."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attnviz.embeddings import load_embeddings
from attnviz.errors import FileProblem
from attnviz.files import NPZ_FLOOR_BYTES, load_npy, load_npz, npz_names


def deflated(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.slow
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
