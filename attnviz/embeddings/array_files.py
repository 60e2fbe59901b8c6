"""Embeddings from ``.npy``, ``.npz`` and ``.json`` files: rows per token (an array, an exported
trace, one layer of a model's export), or a vocabulary of words and vectors.

An array's shape is checked from its header before it is read: [n, d_model] for the sentence's
n tokens (or [layers, n, d_model] in a model's export) is the only size a command can use.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.config import MAX_D_MODEL
from attnviz.embeddings.record import Embeddings, too_wide
from attnviz.embeddings.vocabulary import (
    OutOfVocabulary,
    duplicates_note,
    from_vocabulary,
    lookup_forms,
    repeated_keys_note,
)
from attnviz.errors import FileProblem, clipped
from attnviz.files import (
    ArrayHeader,
    HeaderCheck,
    finite_matrix,
    load_json,
    load_npy,
    load_npz,
    npz_names,
)
from attnviz.provenance import EmbeddingsKind, EmbeddingsOrigin
from attnviz.trace_files import export_layer, layers_in, read_provenance, recorded_sentence


def load_npy_rows(path: Path, tokens: Sequence[str]) -> Embeddings:
    """An [n, d_model] array, one row per token."""
    array = load_npy(path, "Embeddings", check=_rows_check(path, len(tokens), layered=False))
    rows = finite_matrix(array, name="the array", source=path, ndim=2)
    return _rows_per_token(rows, tokens, path, file_tokens=None)


def load_npz_embeddings(
    path: Path, tokens: Sequence[str], *, oov: OutOfVocabulary, seed: int, layer: int | None
) -> Embeddings:
    """A vocabulary (``words`` and ``vectors``) or one array of rows per token.

    Only the arrays it will use are read, each checked from its header first.
    """
    names = npz_names(path, "Embeddings")
    if "words" in names and "vectors" in names:
        return _npz_vocabulary(path, tokens, oov=oov, seed=seed)
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


def _npz_vocabulary(
    path: Path, tokens: Sequence[str], *, oov: OutOfVocabulary, seed: int
) -> Embeddings:
    """``words`` [V] and ``vectors`` [V, d]: the sentence's words looked up."""
    arrays = load_npz(path, "Embeddings", keys=("words", "vectors"), check=_width_check(path))
    words = [str(word) for word in np.asarray(arrays["words"]).reshape(-1)]
    vectors = finite_matrix(arrays["vectors"], name="the array vectors", source=path, ndim=2)
    if len(words) != len(vectors):
        raise FileProblem(f"Embeddings file {path}: {len(words)} words but {len(vectors)} vectors.")
    vocabulary: dict[str, FloatArray] = {}
    entries_of: dict[str, list[int]] = {}
    wanted = lookup_forms(tokens)
    for entry, (word, vector) in enumerate(zip(words, vectors, strict=True), start=1):
        vocabulary.setdefault(word, vector)
        if word in wanted:
            entries_of.setdefault(word, []).append(entry)
    duplicates = {word: places for word, places in entries_of.items() if len(places) > 1}
    return from_vocabulary(
        vocabulary,
        tokens,
        path,
        oov=oov,
        seed=seed,
        notes=duplicates_note(path, duplicates, "entries"),
    )


def load_json_embeddings(
    path: Path, tokens: Sequence[str], *, oov: OutOfVocabulary, seed: int, layer: int | None
) -> Embeddings:
    """A vocabulary ``{"word": [numbers], …}``, or an exported trace's rows."""
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
        str(word): finite_matrix(
            vector,
            name=f"the vector of {word!r}",
            source=path,
            ndim=1,
        )
        for word, vector in data.items()
    }
    wanted = lookup_forms(tokens)
    return from_vocabulary(
        vocabulary,
        tokens,
        path,
        oov=oov,
        seed=seed,
        notes=repeated_keys_note(path, [key for key in repeated_keys if key in wanted]),
    )


def _width_check(path: Path) -> HeaderCheck:
    """Refuse, before reading it, an array of vectors wider than any d_model attnviz runs."""

    def check(name: str, header: ArrayHeader) -> None:
        if name != "words" and len(header.shape) >= 2 and header.shape[-1] > MAX_D_MODEL:
            raise too_wide(path, header.shape[-1])

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
    recorded = made[index].embeddings if index < len(made) else None
    origin = EmbeddingsOrigin(
        EmbeddingsKind.FILE,
        path=str(path),
        vocabulary=False,
        architecture=None if recorded is None else recorded.architecture,
        layer=index + 1,
        input=None if recorded is None else recorded.input,
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
        made_for = f"the sentence {clipped(sentence)!r} (tokens " if sentence else "the tokens "
        theirs, ours = clipped(" ".join(file_tokens)), clipped(" ".join(tokens))
        raise FileProblem(
            f"Embeddings file {path} was made for {made_for}{theirs!r}"
            f"{')' if sentence else ''}, not {ours!r}; use the same sentence."
        )
