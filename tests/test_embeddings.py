"""Every embeddings format loads; every broken file is refused with a message naming it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.embeddings import OutOfVocabulary, load_embeddings, random_embeddings, word_vector
from attnviz.errors import FileProblem

SAMPLES = Path(__file__).resolve().parent.parent / "sample_embeddings"
TOKENS = ["The", "cat", "sat"]
VOCABULARY = {
    "the": [1.0, 2.0, 3.0, 4.0],
    "cat": [0.5, -1.0, 0.0, 2.0],
    "sat": [-3.0, 1.0, 1.0, 0.0],
}
EXPECTED = np.array([VOCABULARY["the"], VOCABULARY["cat"], VOCABULARY["sat"]])


def glove_text(vocabulary: dict[str, list[float]]) -> str:
    return "".join(f"{w} {' '.join(str(v) for v in vector)}\n" for w, vector in vocabulary.items())


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "glove": tmp_path / "vectors.txt",
        "word2vec": tmp_path / "vectors.vec",
        "bom_crlf": tmp_path / "windows.txt",
        "json": tmp_path / "vectors.json",
        "npy": tmp_path / "rows.npy",
        "npz_rows": tmp_path / "rows.npz",
        "npz_vocab": tmp_path / "vocab.npz",
    }
    paths["glove"].write_text(glove_text(VOCABULARY), encoding="utf-8")
    paths["word2vec"].write_text("3 4\n" + glove_text(VOCABULARY), encoding="utf-8")
    paths["bom_crlf"].write_bytes(
        b"\xef\xbb\xbf" + glove_text(VOCABULARY).replace("\n", "\r\n").encode()
    )
    paths["json"].write_text(json.dumps(VOCABULARY), encoding="utf-8")
    np.save(paths["npy"], EXPECTED)
    np.savez(paths["npz_rows"], X=EXPECTED)
    np.savez(
        paths["npz_vocab"],
        words=np.array(list(VOCABULARY)),
        vectors=np.array(list(VOCABULARY.values())),
    )
    return paths


@pytest.mark.parametrize(
    "kind", ["glove", "word2vec", "bom_crlf", "json", "npy", "npz_rows", "npz_vocab"]
)
def test_every_format_loads_the_same_rows(files: dict[str, Path], kind: str) -> None:
    embeddings = load_embeddings(files[kind], TOKENS)
    np.testing.assert_array_equal(embeddings.X, EXPECTED)
    assert embeddings.notes == ()


def test_exact_word_is_preferred_over_lowercase(tmp_path: Path) -> None:
    path = tmp_path / "cased.txt"
    path.write_text("The 9 9\nthe 1 1\ncat 2 2\n", encoding="utf-8")
    X = load_embeddings(path, ["The", "the", "CAT"]).X
    assert X.tolist() == [[9, 9], [1, 1], [2, 2]]


def test_duplicate_word_first_wins(tmp_path: Path) -> None:
    path = tmp_path / "dup.txt"
    path.write_text("cat 1 1\ncat 2 2\n", encoding="utf-8")
    assert load_embeddings(path, ["cat"]).X.tolist() == [[1, 1]]


def test_missing_words_are_named(files: dict[str, Path]) -> None:
    with pytest.raises(FileProblem, match=r"2 word\(s\) not in .*'dog', 'ran'.*--oov random"):
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


def test_random_embeddings_shape_and_unit_scale() -> None:
    X = random_embeddings([f"w{i}" for i in range(200)], 16, seed=0)
    assert X.shape == (200, 16)
    assert 0.9 < X.std() < 1.1
