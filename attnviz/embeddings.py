"""Token embeddings X [n, d_model]: seeded random vectors, or rows read from a word-vector file.

Formats:
  * GloVe / word2vec text: one ``word v1 v2 … v_d`` per line, an optional ``count dim`` header;
  * ``.npy``: an [n, d_model] array, one row per token of the sentence;
  * ``.npz``: an array ``X`` or ``embeddings`` (one row per token; an exported trace works), or a
    vocabulary as ``words`` [V] and ``vectors`` [V, d];
  * ``.json``: a vocabulary ``{"word": [v1, …, v_d], …}`` (or an exported trace).

An exported trace made with --positions gives its token embeddings E, without the positions
(X = E + PE): run with the same --positions, it gets the same X back. A model's export holds
each layer's input X [L, n, d_model]: ``layer`` (--layer, from 1) picks one.

A vocabulary lookup tries the exact token, then its lowercase form.
"""

from __future__ import annotations

import os
import shlex
import zlib
from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.config import MAX_D_MODEL
from attnviz.errors import FileProblem
from attnviz.files import (
    ArrayHeader,
    HeaderCheck,
    finite_matrix,
    human_size,
    load_json,
    load_npy,
    load_npz,
    npz_names,
    open_regular,
    require_readable,
)
from attnviz.provenance import EmbeddingsKind, EmbeddingsOrigin
from attnviz.trace_files import export_layer, layers_in, read_provenance, recorded_sentence

TEXT_EXTENSIONS = (".txt", ".vec", ".glove", ".w2v")
EMBEDDING_EXTENSIONS = (*TEXT_EXTENSIONS, ".npy", ".npz", ".json")


class OutOfVocabulary(str, Enum):
    """What to do with a word the embeddings file does not contain."""

    error = "error"  # stop and name the missing words
    random = "random"  # give them seeded random vectors, and say so


class Embeddings(NamedTuple):
    """X and where it came from."""

    X: FloatArray  # [n, d_model]
    origin: EmbeddingsOrigin  # how X was made, as the trace's provenance records it
    notes: tuple[str, ...] = ()  # things the user should be told


def word_vector(word: str, d_model: int, seed: int) -> FloatArray:
    """A standard-normal vector for ``word``, fixed by (seed, lowercase word).  -> [d_model]

    The generator is seeded from a hash of the word rather than drawn in sentence order, so a
    word gets the same vector in every sentence, "The" and "the" share one, and the numbers are
    the same on every machine (CRC-32 and numpy's PCG64 are platform-independent; Python's own
    hash() is salted per process and would not be).
    """
    # "surrogatepass": a lone surrogate (from argv bytes that are not UTF-8) still hashes.
    word_hash = zlib.crc32(word.lower().encode("utf-8", "surrogatepass"))
    rng = np.random.default_rng([seed, word_hash])
    return rng.standard_normal(d_model)


def random_embeddings(tokens: Sequence[str], d_model: int, seed: int) -> FloatArray:
    """Seeded random embeddings, one row per token.  [n] -> [n, d_model]"""
    return np.stack([word_vector(token, d_model, seed) for token in tokens])


def load_embeddings(
    path: Path,
    tokens: Sequence[str],
    *,
    oov: OutOfVocabulary = OutOfVocabulary.error,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    layer: int | None = None,
) -> Embeddings:
    """Read X for ``tokens`` from ``path``; see the module docstring for the formats.

    ``progress(bytes_read, file_size)`` is called while a text file is streamed. ``layer``
    (from 1) picks a layer's X from a model's export, which needs it; other files ignore it.
    """
    require_readable(path, "Embeddings")
    extension = path.suffix.lower()
    if extension not in EMBEDDING_EXTENSIONS:
        raise FileProblem(
            f"Embeddings file {path} has extension {extension or '(none)'!r}; use GloVe/word2vec "
            f"text ({', '.join(TEXT_EXTENSIONS)}), .npy, .npz or .json."
        )
    if extension == ".npy":
        array = load_npy(path, "Embeddings", check=_rows_check(path, len(tokens), layered=False))
        rows = finite_matrix(array, name="the array", source=path, ndim=2)
        return _rows_per_token(rows, tokens, path, file_tokens=None)
    if extension == ".npz":
        # Only the arrays it will use are read, each checked from its header first.
        names = npz_names(path, "Embeddings")
        if "words" in names and "vectors" in names:
            arrays = load_npz(
                path, "Embeddings", keys=("words", "vectors"), check=_width_check(path)
            )
            words = [str(word) for word in np.asarray(arrays["words"]).reshape(-1)]
            vectors = finite_matrix(arrays["vectors"], name="vectors", source=path, ndim=2)
            if len(words) != len(vectors):
                raise FileProblem(
                    f"Embeddings file {path}: {len(words)} words but {len(vectors)} vectors."
                )
            vocabulary: dict[str, FloatArray] = {}
            entries_of: dict[str, list[int]] = {}
            wanted = _lookup_forms(tokens)
            for entry, (word, vector) in enumerate(zip(words, vectors, strict=True), start=1):
                vocabulary.setdefault(word, vector)
                if word in wanted:
                    entries_of.setdefault(word, []).append(entry)
            duplicates = {word: places for word, places in entries_of.items() if len(places) > 1}
            return _from_vocabulary(
                vocabulary,
                tokens,
                path,
                oov=oov,
                seed=seed,
                notes=_duplicates_note(path, duplicates, "entries"),
            )
        key: str | None = next((name for name in ("X", "embeddings") if name in names), None)
        if "E" in names and "PE" in names:
            key = "E"  # a trace with positions: its token embeddings
        if key is None and len(names) == 1:
            key = names[0]
        if key is None:
            raise FileProblem(
                f"Embeddings file {path} has arrays {sorted(names)}; name the one-row-per-token "
                "array X (or save only that array), or give words and vectors."
            )
        extras = load_npz(path, "Embeddings", keys=("tokens", "config"))
        file_tokens = None
        if "tokens" in extras:
            file_tokens = [str(t) for t in extras["tokens"].reshape(-1)]
            _require_same_tokens(file_tokens, tokens, path)
        rows_check = _rows_check(path, len(tokens), layered=file_tokens is not None)
        value = load_npz(path, "Embeddings", keys=(key,), check=rows_check)[key]
        if file_tokens is not None and layers_in(value, 2) is not None:
            return _layer_rows(value, extras.get("config"), tokens, path, file_tokens, layer)
        rows = finite_matrix(value, name=key, source=path, ndim=2)
        return _rows_per_token(rows, tokens, path, file_tokens=file_tokens)
    if extension == ".json":
        data, repeated_keys = load_json(path, "Embeddings")
        if not isinstance(data, dict) or not data:
            raise FileProblem(
                f'Embeddings file {path} must hold a JSON object {{"word": [numbers], …}}.'
            )
        tokens_in_file = data.get("tokens")
        if "X" in data and isinstance(tokens_in_file, list):
            key = "E" if "E" in data and "PE" in data else "X"  # E: a trace with positions
            file_tokens = [str(t) for t in tokens_in_file]
            if layers_in(data[key], 2) is not None:
                return _layer_rows(data[key], data.get("config"), tokens, path, file_tokens, layer)
            rows = finite_matrix(data[key], name=key, source=path, ndim=2)
            return _rows_per_token(rows, tokens, path, file_tokens=file_tokens)
        vocabulary = {
            str(word): finite_matrix(vector, name=f"the vector of {word!r}", source=path, ndim=1)
            for word, vector in data.items()
        }
        wanted = _lookup_forms(tokens)
        return _from_vocabulary(
            vocabulary,
            tokens,
            path,
            oov=oov,
            seed=seed,
            notes=_repeated_keys_note(path, [key for key in repeated_keys if key in wanted]),
        )
    text = read_text_vectors(path, wanted=_lookup_forms(tokens), progress=progress)
    return _from_vocabulary(
        text.vectors,
        tokens,
        path,
        oov=oov,
        seed=seed,
        notes=_duplicates_note(path, text.duplicates, "lines"),
    )


def _lookup_forms(tokens: Iterable[str]) -> set[str]:
    return {form for token in tokens for form in (token, token.lower())}


def _too_wide(path: Path, width: int | str, where: str = "", verb: str = "has") -> FileProblem:
    """``where`` names the place that says so (", line 1: its header", verb "declares")."""
    return FileProblem(
        f"Embeddings file {path}{where} {verb} vectors of {width} numbers; attnviz takes at most "
        f"{MAX_D_MODEL} (its largest d_model), so use vectors of at most {MAX_D_MODEL} dimensions."
    )


def _width_check(path: Path) -> HeaderCheck:
    """Refuse, before reading it, an array of vectors wider than any d_model attnviz runs."""

    def check(name: str, header: ArrayHeader) -> None:
        if name != "words" and len(header.shape) >= 2 and header.shape[-1] > MAX_D_MODEL:
            raise _too_wide(path, header.shape[-1])

    return check


def _rows_check(path: Path, n_tokens: int, *, layered: bool) -> HeaderCheck:
    """Refuse, before reading it, an array that is not [n, d_model] (or, in a model's export,
    [layers, n, d_model]) for the sentence's n tokens: the only size the command can use."""
    width_check = _width_check(path)

    def check(name: str, header: ArrayHeader) -> None:
        shape = header.shape
        if len(shape) != 2 and not (layered and len(shape) == 3):
            label = f"{name[:1].upper()}{name[1:]}" if name == "the array" else name
            raise FileProblem(
                f"{label} in {path} has {len(shape)} dimensions {list(shape)}; expected 2."
            )
        width_check(name, header)
        if shape[-2] != n_tokens:
            raise _row_count(path, shape[-2], n_tokens)

    return check


def _row_count(path: Path, rows: int, n_tokens: int) -> FileProblem:
    return FileProblem(
        f"Embeddings file {path} has {rows} rows but the sentence has {n_tokens} "
        "tokens; a .npy/.npz array needs exactly one row per token."
    )


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
                    raise FileProblem(
                        f"Embeddings file {path}, line {line_number}: longer than "
                        f"{human_size(MAX_LINE_BYTES)}, while a line holds one word and at most "
                        f"{MAX_D_MODEL} numbers; is it a GloVe/word2vec text file?"
                    )
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
                    raise FileProblem(
                        f"Embeddings file {path}, line {line_number}: not UTF-8 text (Latin-1?); "
                        f"convert the file, e.g. iconv -f latin1 -t utf-8 {shlex.quote(str(path))} "
                        f"> {shlex.quote(str(path.with_name(path.stem + '.utf8' + path.suffix)))}."
                    ) from None
                if dimension is None and n_values == 1 and word.isdigit() and _is_count(raw):
                    declared = raw.split()[1]  # word2vec header: "<vocabulary size> <dim>"
                    if len(declared) > 9 or int(declared) > MAX_D_MODEL:
                        shown = declared.decode()
                        if len(shown) > 12:
                            shown = f"{shown[:6]}… ({len(shown)} digits)"
                        raise _too_wide(
                            path, shown, f", line {line_number}: its header", "declares"
                        )
                    dimension = int(declared)
                    continue
                if dimension is None:
                    dimension = n_values
                    if dimension > MAX_D_MODEL:
                        raise _too_wide(path, dimension, f", line {line_number},")
                    if dimension == 0:
                        raise FileProblem(
                            f"Embeddings file {path}, line {line_number}: a word with no numbers; "
                            "each line must be 'word v1 v2 …'."
                        )
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


def _repeated_keys_note(path: Path, keys: list[str]) -> tuple[str, ...]:
    if not keys:
        return ()
    listed = ", ".join(repr(key) for key in keys[:10])
    return (f"{path.name} has {len(keys)} key(s) more than once; the first is used: {listed}.",)


def _duplicates_note(path: Path, duplicates: dict[str, list[int]], where: str) -> tuple[str, ...]:
    """Tell the user which of their words the file lists more than once, and which one is used."""
    if not duplicates:
        return ()
    shown = "; ".join(
        f"{word!r} on {where} {', '.join(map(str, places[:5]))}"
        + (f" and {len(places) - 5} more" if len(places) > 5 else "")
        for word, places in list(duplicates.items())[:5]
    )
    more = f" (and {len(duplicates) - 5} more words)" if len(duplicates) > 5 else ""
    return (
        f"{path.name} lists {len(duplicates)} word(s) more than once; the first is used: "
        f"{shown}{more}.",
    )


def _from_vocabulary(
    vocabulary: dict[str, FloatArray],
    tokens: Sequence[str],
    path: Path,
    *,
    oov: OutOfVocabulary,
    seed: int,
    notes: tuple[str, ...] = (),
) -> Embeddings:
    widths = {len(vector) for vector in vocabulary.values()}
    if len(widths) > 1:
        raise FileProblem(
            f"Embeddings file {path} mixes vector lengths {sorted(widths)}; all must be equal."
        )
    if widths == {0}:
        raise FileProblem(
            f"Embeddings file {path} holds empty vectors; each word needs its numbers, "
            "[v1, …, v_d]."
        )
    if widths and max(widths) > MAX_D_MODEL:
        raise _too_wide(path, max(widths))
    found: dict[int, FloatArray] = {}
    missing: list[str] = []
    for index, token in enumerate(tokens):
        vector = vocabulary.get(token)
        if vector is None:
            vector = vocabulary.get(token.lower())
        if vector is None:
            missing.append(token)
        else:
            found[index] = vector
    unique_missing = list(dict.fromkeys(missing))
    listed = ", ".join(repr(word) for word in unique_missing[:10])
    if len(unique_missing) > 10:
        listed += f" and {len(unique_missing) - 10} more"
    if missing and (oov is OutOfVocabulary.error or not found):
        if not found:
            advice = "no word of the sentence is in it; check that it is the right file"
        else:
            advice = "add them to the file, or pass --oov random to give them seeded random vectors"
        raise FileProblem(f"{len(unique_missing)} word(s) not in {path}: {listed}; {advice}.")
    d_model = widths.pop()
    said = list(notes)
    rows: list[FloatArray] = []
    scale = 1.0
    if missing:
        # Random vectors at the file's own scale, so the filled words are not louder or
        # quieter than the real ones. The standard deviation is taken of the values divided by
        # the largest, so vectors of 1e300 do not overflow when squared.
        known = np.stack(list(found.values()))
        largest = float(np.abs(known).max())
        scale = largest * float(np.std(known / largest)) if largest > 0 else 0.0
        said.append(
            f"{len(unique_missing)} word(s) not in {path.name} got seeded random vectors "
            f"(--oov random, seed {seed}): {listed}."
        )
    for index, token in enumerate(tokens):
        if index in found:
            rows.append(found[index])
        else:
            rows.append(scale * word_vector(token, d_model, seed))
    origin = EmbeddingsOrigin(
        EmbeddingsKind.FILE, path=str(path), vocabulary=True, seed=seed if missing else None
    )
    return Embeddings(X=np.stack(rows), origin=origin, notes=tuple(said))


def _layer_rows(
    value: object,
    config: object,
    tokens: Sequence[str],
    path: Path,
    file_tokens: list[str],
    layer: int | None,
) -> Embeddings:
    """Layer ``layer``'s input X from a model's export, X [L, n, d_model] -> [n, d_model]."""
    layers = finite_matrix(value, name="X", source=path, ndim=3)
    index = export_layer(len(layers), layer, f"embeddings file {path}")
    try:
        made = read_provenance(config, path)
    except FileProblem:
        made = ()  # a config it cannot read: the rows themselves are all it needs
    architecture = made[index].embeddings.architecture if index < len(made) else None
    origin = EmbeddingsOrigin(
        EmbeddingsKind.FILE,
        path=str(path),
        vocabulary=False,
        architecture=architecture,
        layer=index + 1,
    )
    return _rows_per_token(layers[index], tokens, path, file_tokens=file_tokens, origin=origin)


def _rows_per_token(
    rows: FloatArray,
    tokens: Sequence[str],
    path: Path,
    *,
    file_tokens: list[str] | None,
    origin: EmbeddingsOrigin | None = None,
) -> Embeddings:
    if file_tokens is not None:
        _require_same_tokens(file_tokens, tokens, path)
    if rows.shape[0] != len(tokens):
        raise _row_count(path, rows.shape[0], len(tokens))
    if rows.shape[1] == 0:
        raise FileProblem(f"Embeddings file {path} has rows of width 0.")
    return Embeddings(
        X=rows,
        origin=origin or EmbeddingsOrigin(EmbeddingsKind.FILE, path=str(path), vocabulary=False),
    )


def _require_same_tokens(file_tokens: Sequence[str], tokens: Sequence[str], path: Path) -> None:
    """An export's rows are for the tokens it was made for: refuse another sentence."""
    if list(file_tokens) != list(tokens):
        # A model's export holds its tokenizer's pieces: the sentence as written finds them.
        sentence = recorded_sentence(path)
        made_for = f"the sentence {sentence!r} (tokens " if sentence else "the tokens "
        raise FileProblem(
            f"Embeddings file {path} was made for {made_for}{' '.join(file_tokens)!r}"
            f"{')' if sentence else ''}, not {' '.join(tokens)!r}; use the same sentence."
        )
