"""``.npy``, ``.npz`` and ``.json`` embeddings: rows for the sentence's own tokens, vocabularies,
and damaged or pickled files refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.embeddings import load_embeddings
from attnviz.errors import FileProblem

from .sample_files import TOKENS, VOCABULARY


def test_npy_with_wrong_row_count_or_shape(tmp_path: Path) -> None:
    np.save(tmp_path / "rows.npy", np.ones((2, 4)))
    with pytest.raises(FileProblem, match="2 rows but the sentence has 3 tokens"):
        load_embeddings(tmp_path / "rows.npy", TOKENS)
    np.save(tmp_path / "flat.npy", np.ones(4))
    with pytest.raises(FileProblem, match="1 dimensions"):
        load_embeddings(tmp_path / "flat.npy", TOKENS)


def test_pickled_npy_is_refused_and_never_unpickled(tmp_path: Path) -> None:
    path = tmp_path / "evil.npy"
    np.save(path, np.array([{"x": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(FileProblem, match="refuses pickle"):
        load_embeddings(path, ["a", "b"])
    npz = tmp_path / "evil.npz"
    np.savez(npz, X=np.array([{"x": 1}], dtype=object))
    with pytest.raises(FileProblem, match="refuses pickle"):
        load_embeddings(npz, ["a"])


def test_corrupt_and_truncated_binary_files(tmp_path: Path) -> None:
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    with pytest.raises(FileProblem, match="not a valid .npz"):
        load_embeddings(tmp_path / "junk.npz", ["a"])
    np.save(tmp_path / "full.npy", np.ones((3, 4)))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "full.npy").read_bytes()[:-10])
    with pytest.raises(FileProblem, match="not a valid .npy"):
        load_embeddings(tmp_path / "cut.npy", ["a", "b", "c"])


def test_exported_trace_works_as_embeddings_only_for_its_own_tokens(tmp_path: Path) -> None:
    trace = attnviz.trace_attention("I am good")
    attnviz.export_trace(trace, tmp_path / "trace.npz")
    np.testing.assert_array_equal(
        load_embeddings(tmp_path / "trace.npz", list(trace.tokens)).X, trace.X
    )
    with pytest.raises(FileProblem, match="was made for the tokens"):
        load_embeddings(tmp_path / "trace.npz", ["I", "am", "bad"])


def test_duplicates_in_npz_and_json_vocabularies_first_wins_and_say_so(tmp_path: Path) -> None:
    npz = tmp_path / "vocab.npz"
    np.savez(npz, words=np.array(["cat", "cat", "dog"]), vectors=np.array([[1, 1], [2, 2], [3, 3]]))
    embeddings = load_embeddings(npz, ["cat"])
    assert embeddings.X.tolist() == [[1, 1]]
    assert "'cat' on entries 1, 2" in embeddings.notes[0]
    json_path = tmp_path / "vocab.json"
    json_path.write_text('{"cat": [1, 1], "dog": [3, 3], "cat": [2, 2]}', encoding="utf-8")
    embeddings = load_embeddings(json_path, ["cat", "dog"])
    assert embeddings.X.tolist() == [[1, 1], [3, 3]]  # Python's json alone would keep [2, 2]
    assert embeddings.notes == (
        "vocab.json has 1 key(s) more than once; the first is used: 'cat'.",
    )


def test_truncated_npz_and_json_are_refused_naming_the_file(tmp_path: Path) -> None:
    whole = tmp_path / "whole.npz"
    np.savez(whole, words=np.array(["the"]), vectors=np.ones((1, 4)))
    for cut in (10, len(whole.read_bytes()) // 2, len(whole.read_bytes()) - 5):
        broken = tmp_path / f"cut{cut}.npz"
        broken.write_bytes(whole.read_bytes()[:cut])
        with pytest.raises(FileProblem, match=f"cut{cut}.npz is not a valid .npz"):
            load_embeddings(broken, ["the"])
    cut_json = tmp_path / "cut.json"
    cut_json.write_text(json.dumps(VOCABULARY)[:-7], encoding="utf-8")
    with pytest.raises(FileProblem, match=r"cut.json is not valid JSON: .* line 1, column"):
        load_embeddings(cut_json, ["the"])
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(FileProblem, match="deep.json"):
        load_embeddings(deep, ["the"])


@pytest.mark.parametrize(
    ("values", "says"),
    [
        (np.zeros((3, 4), dtype="datetime64[D]"), "holds dates (datetime64[D]), not numbers"),
        (np.ones((3, 4), dtype="timedelta64[s]"), "holds time spans"),
        (np.full((3, 4), "1.5"), "holds text (<U3), not numbers"),
        (np.full((3, 4), b"1"), "holds bytes"),
        (np.ones((3, 4), dtype=bool), "holds true/false values (bool), not numbers"),
    ],
    ids=["dates", "time spans", "text", "bytes", "booleans"],
)
def test_arrays_of_anything_but_numbers_are_refused_naming_the_file_and_the_fix(
    tmp_path: Path, values: np.ndarray, says: str
) -> None:
    """numpy would turn each into numbers silently: a date into its days since 1970, "1.5" into
    1.5, True into 1."""
    npy, npz, vocabulary = tmp_path / "rows.npy", tmp_path / "rows.npz", tmp_path / "words.npz"
    np.save(npy, values)
    np.savez(npz, X=values)
    np.savez(vocabulary, words=np.array(["i", "am", "good"]), vectors=values)
    for path in (npy, npz, vocabulary):
        with pytest.raises(FileProblem) as refused:
            load_embeddings(path, ["I", "am", "good"])
        assert says in str(refused.value) and str(path) in str(refused.value)
        assert "astype(np.float32)" in str(refused.value)


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({"i": [1, "1"], "am": [1, 2], "good": [3, 4]}, 'holds "1"'),
        ({"i": [True, 1], "am": [1, 2], "good": [3, 4]}, "holds true"),
        ({"i": [False, False], "am": [1, 2], "good": [3, 4]}, "holds false"),
        ({"i": [None, 1], "am": [1, 2], "good": [3, 4]}, "holds null"),
        ({"tokens": ["I", "am", "good"], "X": [[1, "2"], [1, 2], [3, 4]]}, 'holds "2"'),
        ({"tokens": ["I", "am", "good"], "X": [[1, 2], [True, 2], [3, 4]]}, "holds true"),
    ],
    ids=["quoted", "true among numbers", "all false", "null", "quoted row", "true in a row"],
)
def test_json_vectors_of_quoted_numbers_or_true_are_refused(
    tmp_path: Path, document: dict[str, object], says: str
) -> None:
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FileProblem) as refused:
        load_embeddings(path, ["I", "am", "good"])
    message = str(refused.value)
    assert says in message and str(path) in message and "without quotes" in message
