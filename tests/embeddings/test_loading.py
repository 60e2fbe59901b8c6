"""Every embeddings format loads the same rows; every broken file is refused with a message
naming it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.config import MAX_D_MODEL
from attnviz.embeddings import load_embeddings
from attnviz.errors import FileProblem

from .sample_files import EXPECTED, TOKENS

SAMPLES = Path(__file__).resolve().parents[2] / "sample_embeddings"


@pytest.mark.parametrize(
    "kind", ["glove", "word2vec", "bom_crlf", "json", "npy", "npz_rows", "npz_vocab"]
)
def test_every_format_loads_the_same_rows(files: dict[str, Path], kind: str) -> None:
    embeddings = load_embeddings(files[kind], TOKENS)
    np.testing.assert_array_equal(embeddings.X, EXPECTED)
    assert embeddings.notes == ()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("short.txt", "the 1 2 3\ncat 1 2\n", r"line 2: 2 values, expected 3"),
        ("nan.txt", "the 1 nan 3\n", r"line 1: the vector of 'the' holds NaN"),
        ("inf.json", '{"the": [1, Infinity]}', "NaN or infinity"),
        ("word.txt", "the 1 x 3\n", "line 1: a value of 'the' is not a number"),
        ("empty.txt", "", "is empty"),
        ("bad.json", '{"the": [1, 2', "not valid JSON"),
        ("list.json", "[1, 2]", "JSON object"),
        ("ragged.json", '{"the": [1, 2], "cat": [1]}', "mixes vector lengths"),
        ("strings.json", '{"the": ["a", "b"]}', "not a 1-d array of numbers"),
        ("latin1.txt", "caf\xe9 1 2\n", "line 1: not UTF-8"),
        ("vectors.csv", "the,1,2\n", "extension '.csv'"),
    ],
)
def test_broken_files_are_refused(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1" if "latin1" in name else "utf-8"))
    with pytest.raises(FileProblem, match=message):
        load_embeddings(path, ["the"])


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(FileProblem, match="not found"):
        load_embeddings(tmp_path / "nope.txt", ["the"])
    with pytest.raises(FileProblem, match="is a folder"):
        load_embeddings(tmp_path, ["the"])


@pytest.mark.parametrize("name", ["toy8d.txt", "toy8d.json", "toy8d_vocab.npz", "minilm384d.txt"])
def test_sample_embeddings_cover_the_seed_sentences(name: str) -> None:
    for sentence in [
        "I am good",
        "Thinking Machines",
        "The animal didn't cross the street because it was too tired",
        "A dog ate the food because it was hungry",
        "the cat jumped over the lazy dog",
    ]:
        tokens = attnviz.tokenize(sentence)
        width = 384 if name.startswith("minilm") else 8
        assert load_embeddings(SAMPLES / name, tokens).X.shape == (len(tokens), width)


def test_sample_npy_is_i_am_good() -> None:
    rows = load_embeddings(SAMPLES / "i_am_good.npy", ["I", "am", "good"]).X
    np.testing.assert_array_equal(
        rows, load_embeddings(SAMPLES / "toy8d.txt", ["I", "am", "good"]).X
    )


def test_no_note_without_duplicates(files: dict[str, Path]) -> None:
    for kind in ("glove", "json", "npz_vocab"):
        assert load_embeddings(files[kind], TOKENS).notes == ()


def test_vectors_wider_than_any_d_model_are_refused_before_they_are_read(tmp_path: Path) -> None:
    wide = np.zeros((3, MAX_D_MODEL + 1))
    np.save(tmp_path / "wide.npy", wide)
    np.savez(tmp_path / "wide.npz", words=np.array(["a", "b", "c"]), vectors=wide)
    (tmp_path / "wide.json").write_text(json.dumps({"a": wide[0].tolist()}), encoding="utf-8")
    (tmp_path / "wide.txt").write_text("a" + " 0" * (MAX_D_MODEL + 1) + "\n", encoding="utf-8")
    for name in ("wide.npy", "wide.npz", "wide.json", "wide.txt"):
        with pytest.raises(FileProblem, match=f"vectors of {MAX_D_MODEL + 1} numbers"):
            load_embeddings(tmp_path / name, ["a", "b", "c"])
