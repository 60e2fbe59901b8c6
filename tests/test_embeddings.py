"""Every embeddings format loads; every broken file is refused with a message naming it."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz import embeddings as embeddings_module
from attnviz.cli import run
from attnviz.config import MAX_D_MODEL
from attnviz.embeddings import (
    PROGRESS_EVERY,
    OutOfVocabulary,
    load_embeddings,
    random_embeddings,
    read_text_vectors,
    word_vector,
)
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


def test_duplicate_words_first_wins_and_the_note_says_which_lines(tmp_path: Path) -> None:
    path = tmp_path / "dup.txt"
    path.write_text("cat 1 1\ndog 5 5\ncat 2 2\nbird 0 0\ncat 3 3\nbird 9 9\n", encoding="utf-8")
    embeddings = load_embeddings(path, ["cat", "dog"])
    assert embeddings.X.tolist() == [[1, 1], [5, 5]]
    # Only the sentence's words are reported: "bird" repeats too, but nobody asked for it.
    assert embeddings.notes == (
        "dup.txt lists 1 word(s) more than once; the first is used: 'cat' on lines 1, 3, 5.",
    )


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


def test_no_note_without_duplicates(files: dict[str, Path]) -> None:
    for kind in ("glove", "json", "npz_vocab"):
        assert load_embeddings(files[kind], TOKENS).notes == ()


def test_tabs_runs_of_spaces_and_trailing_spaces_are_read_like_single_spaces(
    tmp_path: Path,
) -> None:
    path = tmp_path / "spacing.txt"
    # The original word2vec tool ends every line with a space; some files use tabs.
    path.write_bytes(b"the 1 2 3 4 \ncat\t0.5\t-1\t0\t2\nsat  -3 1   1 0\r\n")
    np.testing.assert_array_equal(load_embeddings(path, TOKENS).X, EXPECTED)


def test_latin1_file_is_refused_with_its_line_and_how_to_convert(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("the 1 2\ncaf\xe9 3 4\n".encode("latin-1"))
    with pytest.raises(FileProblem, match=r"latin1.txt, line 2: not UTF-8 .* iconv -f latin1") as e:
        load_embeddings(path, ["the"])
    # The command to copy names the file by the path given, and the converted copy beside it.
    assert f"-t utf-8 {path} > {tmp_path / 'latin1.utf8.txt'}." in e.value.message


def test_word2vec_header_is_skipped_and_sets_the_dimension(tmp_path: Path) -> None:
    path = tmp_path / "w2v.vec"
    path.write_text("2 3\nthe 1 2 3\ncat 1 2\n", encoding="utf-8")
    with pytest.raises(FileProblem, match="line 3: 2 values, expected 3"):
        load_embeddings(path, ["the"])


def test_progress_is_reported_up_to_the_file_size(tmp_path: Path) -> None:
    path = tmp_path / "many.txt"
    path.write_text("".join(f"w{i} 1 2\n" for i in range(20_000)), encoding="utf-8")
    calls: list[tuple[int, int]] = []
    read_text_vectors(path, {"w7"}, progress=lambda done, total: calls.append((done, total)))
    size = path.stat().st_size
    assert len(calls) == 20_000 // PROGRESS_EVERY + 1
    assert all(total == size for _, total in calls)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert calls[-1] == (size, size)


def test_a_large_text_file_is_streamed_keeping_only_the_wanted_rows(tmp_path: Path) -> None:
    """Memory stays near the size of the rows kept, not of the file (here 40 MB)."""
    row = " ".join(f"{v:.6f}" for v in np.random.default_rng(0).standard_normal(300))
    path = tmp_path / "big.txt"
    with path.open("w", encoding="utf-8") as handle:
        for i in range(15_000):
            handle.write(f"word{i} {row}\n")
    assert path.stat().st_size > 30_000_000
    tracemalloc.start()
    try:
        text = read_text_vectors(path, {"word3", "word14999", "absent"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sorted(text.vectors) == ["word14999", "word3"]
    assert peak < 1_000_000, f"peak {peak} bytes while streaming"


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


def test_a_word_with_a_no_break_space_is_one_word(tmp_path: Path) -> None:
    """glove.840B has words such as '.\\xa0.\\xa0.': only ASCII whitespace separates fields."""
    path = tmp_path / "nbsp.txt"
    path.write_text("the 1 2\n.\xa0.\xa0. 3 4\n", encoding="utf-8")
    assert load_embeddings(path, ["the"]).X.tolist() == [[1, 2]]
    assert load_embeddings(path, [".\xa0.\xa0."]).X.tolist() == [[3, 4]]


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


def test_vectors_wider_than_any_d_model_are_refused_before_they_are_read(tmp_path: Path) -> None:
    wide = np.zeros((3, MAX_D_MODEL + 1))
    np.save(tmp_path / "wide.npy", wide)
    np.savez(tmp_path / "wide.npz", words=np.array(["a", "b", "c"]), vectors=wide)
    (tmp_path / "wide.json").write_text(json.dumps({"a": wide[0].tolist()}), encoding="utf-8")
    (tmp_path / "wide.txt").write_text("a" + " 0" * (MAX_D_MODEL + 1) + "\n", encoding="utf-8")
    for name in ("wide.npy", "wide.npz", "wide.json", "wide.txt"):
        with pytest.raises(FileProblem, match=f"vectors of {MAX_D_MODEL + 1} numbers"):
            load_embeddings(tmp_path / name, ["a", "b", "c"])


def test_a_line_longer_than_the_limit_is_refused_with_its_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embeddings_module, "MAX_LINE_BYTES", 16)
    path = tmp_path / "vectors.txt"
    path.write_bytes(b"aa 1 2 3 4 5 6 7\n" + b"bb 1 2 3 4 5 6 7")  # 16 bytes and a newline
    assert read_text_vectors(path, {"bb"}).vectors["bb"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    path.write_bytes(b"aa 1 2 3 4 5 6 7\n" + b"bbb 1 2 3 4 5 6 7\n")
    with pytest.raises(FileProblem, match=r"vectors.txt, line 2: longer than 16 bytes"):
        read_text_vectors(path, {"b"})
    path.write_bytes(b"a" * 10_000)  # no newline at all
    with pytest.raises(FileProblem, match=r"vectors.txt, line 1: longer than 16 bytes"):
        read_text_vectors(path, {"b"})


@pytest.mark.parametrize(
    ("value", "said"),
    [("1e400", "beyond float64's range"), ("nan", "NaN or infinity"), ("-inf", "NaN or infinity")],
)
def test_a_text_value_that_is_not_finite_says_why(tmp_path: Path, value: str, said: str) -> None:
    (tmp_path / "v.txt").write_text(f"the 1 {value}\n", encoding="utf-8")
    with pytest.raises(FileProblem, match=f"line 1: the vector of 'the' holds .*{said}"):
        load_embeddings(tmp_path / "v.txt", ["the"])
