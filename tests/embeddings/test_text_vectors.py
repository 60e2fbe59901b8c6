"""GloVe/word2vec text files are streamed line by line: each broken line named, only the
sentence's words kept."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from attnviz.embeddings import PROGRESS_EVERY, load_embeddings, read_text_vectors, text_vectors
from attnviz.errors import FileProblem

from .sample_files import EXPECTED, TOKENS


def test_duplicate_word_first_wins(tmp_path: Path) -> None:
    path = tmp_path / "dup.txt"
    path.write_text("cat 1 1\ncat 2 2\n", encoding="utf-8")
    assert load_embeddings(path, ["cat"]).X.tolist() == [[1, 1]]


def test_duplicate_words_first_wins_and_the_note_says_which_lines(tmp_path: Path) -> None:
    path = tmp_path / "dup.txt"
    path.write_text("cat 1 1\ndog 5 5\ncat 2 2\nbird 0 0\ncat 3 3\nbird 9 9\n", encoding="utf-8")
    embeddings = load_embeddings(path, ["cat", "dog"])
    assert embeddings.X.tolist() == [[1, 1], [5, 5]]
    # Only the sentence's words are reported: "bird" repeats too, but nobody asked for it.
    assert embeddings.notes == (
        "dup.txt lists 1 word(s) more than once; the first is used: 'cat' on lines 1, 3, 5.",
    )


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


@pytest.mark.slow
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


def test_a_word_with_a_no_break_space_is_one_word(tmp_path: Path) -> None:
    """glove.840B has words such as '.\\xa0.\\xa0.': only ASCII whitespace separates fields."""
    path = tmp_path / "nbsp.txt"
    path.write_text("the 1 2\n.\xa0.\xa0. 3 4\n", encoding="utf-8")
    assert load_embeddings(path, ["the"]).X.tolist() == [[1, 2]]
    assert load_embeddings(path, [".\xa0.\xa0."]).X.tolist() == [[3, 4]]


def test_a_line_longer_than_the_limit_is_refused_with_its_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_vectors, "MAX_LINE_BYTES", 16)
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
