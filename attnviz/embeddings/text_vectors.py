"""GloVe / word2vec text files: one ``word v1 v2 … v_d`` per line, an optional ``count dim``
header, streamed so that only the sentence's words are kept, whatever the file's size."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.config import MAX_D_MODEL
from attnviz.embeddings.record import too_wide
from attnviz.errors import FileProblem
from attnviz.files import human_size, open_regular

TEXT_EXTENSIONS = (".txt", ".vec", ".glove", ".w2v")


class TextVectors(NamedTuple):
    """The wanted words' vectors from a text file, and the words it lists more than once."""

    vectors: dict[str, FloatArray]
    duplicates: dict[str, list[int]]  # word -> every line it is on, the first (used) included


#: How often, in lines, read_text_vectors reports how far it has read.
PROGRESS_EVERY = 8192

#: Longest line of a word-vector text file. A line is one word and at most MAX_D_MODEL numbers,
#: about 50 kB even with 20 digits each; a longer one is not a word-vector line, and is refused
#: before more of it is read (a file with no newline at all would otherwise be read whole).
MAX_LINE_BYTES = 1_000_000


def read_text_vectors(
    path: Path,
    wanted: set[str],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> TextVectors:
    """Stream a GloVe/word2vec text file, keeping only the ``wanted`` words' vectors.

    Checks every line's length (so a broken file is reported with its line number), but parses
    numbers only for wanted words, so memory stays near the size of those rows whatever the
    file's size: a line is read only up to MAX_LINE_BYTES, and vectors wider than MAX_D_MODEL
    are refused at the first line. The first occurrence of a duplicated word wins.
    ``progress(bytes_read, file_size)`` is called every PROGRESS_EVERY lines.
    """
    vectors: dict[str, FloatArray] = {}
    lines_of: dict[str, list[int]] = {}
    dimension: int | None = None
    try:
        with open_regular(path, "Embeddings") as handle:
            total = os.fstat(handle.fileno()).st_size
            lines = iter(partial(handle.readline, MAX_LINE_BYTES + 1), b"")
            for line_number, raw in enumerate(lines, start=1):
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    raise _line_too_long(path, line_number)
                if progress is not None and line_number % PROGRESS_EVERY == 0:
                    progress(handle.tell(), total)
                if line_number == 1:
                    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark
                word, n_values = _word_and_count(raw)
                if word is None:
                    continue
                try:
                    text_word = word.decode("utf-8")
                except UnicodeDecodeError:
                    raise _not_utf8(path, line_number) from None
                if dimension is None:
                    declared = _declared_width(raw, word, n_values, path, line_number)
                    if declared is not None:
                        dimension = declared
                        continue
                    dimension = _first_width(n_values, path, line_number)
                if n_values != dimension:
                    raise FileProblem(
                        f"Embeddings file {path}, line {line_number}: {n_values} values, "
                        f"expected {dimension} like the lines before; fix or remove that line."
                    )
                if text_word not in wanted:
                    continue
                lines_of.setdefault(text_word, []).append(line_number)
                if text_word not in vectors:
                    vectors[text_word] = _parse_vector(raw, text_word, path, line_number)
            if progress is not None:
                progress(total, total)
    except OSError as error:
        raise FileProblem(f"Cannot read embeddings file {path}: {error.strerror}.") from None
    if dimension is None:
        raise FileProblem(f"Embeddings file {path} is empty; it needs lines 'word v1 v2 …'.")
    duplicates = {word: lines for word, lines in lines_of.items() if len(lines) > 1}
    return TextVectors(vectors=vectors, duplicates=duplicates)


def _line_too_long(path: Path, line_number: int) -> FileProblem:
    """A line cut at MAX_LINE_BYTES is too long to be a word and its vector."""
    return FileProblem(
        f"Embeddings file {path}, line {line_number}: longer than "
        f"{human_size(MAX_LINE_BYTES)}, while a line holds one word and at most "
        f"{MAX_D_MODEL} numbers; is it a GloVe/word2vec text file?"
    )


def _not_utf8(path: Path, line_number: int) -> FileProblem:
    """A file in another encoding, with the command that converts it."""
    return FileProblem(
        f"Embeddings file {path}, line {line_number}: not UTF-8 text (Latin-1?); "
        f"convert the file, e.g. iconv -f latin1 -t utf-8 {shlex.quote(str(path))} "
        f"> {shlex.quote(str(path.with_name(path.stem + '.utf8' + path.suffix)))}."
    )


def _declared_width(
    raw: bytes, word: bytes, n_values: int, path: Path, line_number: int
) -> int | None:
    """The width a word2vec header ("<vocabulary size> <dim>") declares; None for a word line."""
    if not (n_values == 1 and word.isdigit() and _is_count(raw)):
        return None
    declared = raw.split()[1]
    if len(declared) > 9 or int(declared) > MAX_D_MODEL:
        shown = declared.decode()
        if len(shown) > 12:
            shown = f"{shown[:6]}… ({len(shown)} digits)"
        raise too_wide(path, shown, f", line {line_number}: its header", "declares")
    return int(declared)


def _first_width(n_values: int, path: Path, line_number: int) -> int:
    """The width the first word line sets for every line after it."""
    if n_values > MAX_D_MODEL:
        raise too_wide(path, n_values, f", line {line_number},")
    if n_values == 0:
        raise FileProblem(
            f"Embeddings file {path}, line {line_number}: a word with no numbers; "
            "each line must be 'word v1 v2 …'."
        )
    return n_values


def _word_and_count(raw: bytes) -> tuple[bytes | None, int]:
    """The first field of a line and how many fields follow it, without splitting the numbers.

    A 300-dimensional GloVe line is ~3 KB; counting its single spaces in C is several times
    faster than splitting it into 301 strings, which matters for a 1 GB file. Lines with tabs
    or runs of spaces take the general path.
    """
    line = raw.strip()
    if not line:
        return None, 0
    if b"\t" in line or b"  " in line or b"\r" in line or b"\x0b" in line or b"\x0c" in line:
        parts = line.split()
        return parts[0], len(parts) - 1
    first_space = line.find(b" ")
    if first_space < 0:
        return line, 0
    return line[:first_space], line.count(b" ")


def _is_count(raw: bytes) -> bool:
    parts = raw.split()
    return len(parts) == 2 and all(part.isdigit() for part in parts)


def _parse_vector(raw: bytes, word: str, path: Path, line_number: int) -> FloatArray:
    try:
        vector = np.array(raw.split()[1:], dtype=np.float64)
    except ValueError:
        raise FileProblem(
            f"Embeddings file {path}, line {line_number}: a value of {word!r} is not a number."
        ) from None
    if not np.isfinite(vector).all():
        if any(b"n" in value.lower() for value in raw.split()[1:]):  # nan, inf, infinity
            what = "NaN or infinity; replace it with finite numbers"
        else:  # a number such as 1e400, which float64 cannot hold
            what = "a number beyond float64's range (about ±1.8e308); use smaller numbers"
        raise FileProblem(
            f"Embeddings file {path}, line {line_number}: the vector of {word!r} holds {what}."
        )
    return vector
