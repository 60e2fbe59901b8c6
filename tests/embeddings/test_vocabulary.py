"""Words are looked up as written, then in lowercase; the missing ones are named, or filled with
seeded random vectors at the file's own scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import run
from attnviz.embeddings import OutOfVocabulary, load_embeddings, word_vector
from attnviz.errors import FileProblem, command_line

from .sample_files import VOCABULARY


def test_exact_word_is_preferred_over_lowercase(tmp_path: Path) -> None:
    path = tmp_path / "cased.txt"
    path.write_text("The 9 9\nthe 1 1\ncat 2 2\n", encoding="utf-8")
    X = load_embeddings(path, ["The", "the", "CAT"]).X
    assert X.tolist() == [[9, 9], [1, 1], [2, 2]]


def test_missing_words_are_named(files: dict[str, Path]) -> None:
    with pytest.raises(FileProblem, match=r"2 word\(s\) not in .*'dog', 'ran'.*--oov random"):
        with command_line():
            load_embeddings(files["glove"], ["the", "dog", "ran"])
    with pytest.raises(FileProblem, match=r"'dog', 'ran'; .*pass oov=\"random\" to give them"):
        load_embeddings(files["glove"], ["the", "dog", "ran"])


def test_oov_random_fills_missing_words_at_the_file_scale_and_says_so(
    files: dict[str, Path],
) -> None:
    embeddings = load_embeddings(files["glove"], ["the", "dog"], oov=OutOfVocabulary.random, seed=5)
    scale = np.std(np.array(VOCABULARY["the"]))
    np.testing.assert_allclose(embeddings.X[1], scale * word_vector("dog", 4, 5))
    assert "'dog'" in embeddings.notes[0] and "random" in embeddings.notes[0]


def test_no_known_word_at_all_is_an_error_even_with_oov_random(files: dict[str, Path]) -> None:
    with pytest.raises(FileProblem, match="no word of the sentence"):
        load_embeddings(files["glove"], ["dog"], oov=OutOfVocabulary.random)


def test_empty_vectors_are_refused_as_such_not_as_a_d_model(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text('{"I": [], "am": [], "good": []}', encoding="utf-8")
    np.savez(tmp_path / "empty.npz", words=np.array(["I", "am"]), vectors=np.zeros((2, 0)))
    for name in ("empty.json", "empty.npz"):
        with pytest.raises(FileProblem, match=f"{name} holds empty vectors"):
            load_embeddings(tmp_path / name, ["I", "am"])


def test_oov_random_with_huge_finite_vectors_stays_finite_and_quiet(tmp_path: Path) -> None:
    # Warnings are errors in the tests: squaring 1e300 for the scale would fail here.
    (tmp_path / "big.json").write_text('{"i": [1e300, -1e300], "am": [-1e300, 1e300]}')
    embeddings = load_embeddings(tmp_path / "big.json", ["i", "am", "new"], oov="random")
    assert np.isfinite(embeddings.X).all()
    assert 1e299 < np.abs(embeddings.X[2]).max() < 1e302  # the file's own scale


def test_oov_random_with_huge_vectors_names_the_overflow_not_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "big.json").write_text('{"i": [1e300, -1e300], "am": [-1e300, 1e300]}')
    status = run(["explain", "I am good", "-e", str(tmp_path / "big.json"), "--oov", "random"])
    stderr = capsys.readouterr().err
    assert status == 3
    assert stderr.startswith("error: The numbers overflow float64") and stderr.count("\n") == 1
    assert "NaN" not in stderr
