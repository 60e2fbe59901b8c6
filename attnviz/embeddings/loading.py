"""``load_embeddings``: X for the sentence's tokens from a file, read by its format's reader."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from attnviz.arguments import choice, token_list
from attnviz.arguments import path as checked_path
from attnviz.embeddings.array_files import (
    load_json_embeddings,
    load_npy_rows,
    load_npz_embeddings,
)
from attnviz.embeddings.record import Embeddings
from attnviz.embeddings.text_vectors import TEXT_EXTENSIONS, read_text_vectors
from attnviz.embeddings.vocabulary import (
    OutOfVocabulary,
    duplicates_note,
    from_vocabulary,
    lookup_forms,
)
from attnviz.errors import FileProblem
from attnviz.files import require_readable

EMBEDDING_EXTENSIONS = (*TEXT_EXTENSIONS, ".npy", ".npz", ".json")


def load_embeddings(
    path: Path,
    tokens: Sequence[str],
    *,
    oov: OutOfVocabulary = OutOfVocabulary.error,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    layer: int | None = None,
) -> Embeddings:
    """Read X for ``tokens`` from ``path``; see the package docstring for the formats.

    ``progress(bytes_read, file_size)`` is called while a text file is streamed. ``layer``
    (from 1) picks a layer's X from a model's export, which needs it; other files ignore it.
    """
    path = checked_path("path", path)
    tokens = token_list("tokens", tokens)
    oov = choice(OutOfVocabulary, oov, "oov")
    require_readable(path, "Embeddings")
    extension = path.suffix.lower()
    if extension not in EMBEDDING_EXTENSIONS:
        raise FileProblem(
            f"Embeddings file {path} has extension {extension or '(none)'!r}; use GloVe/word2vec "
            f"text ({', '.join(TEXT_EXTENSIONS)}), .npy, .npz or .json."
        )
    if extension == ".npy":
        return load_npy_rows(path, tokens)
    if extension == ".npz":
        return load_npz_embeddings(path, tokens, oov=oov, seed=seed, layer=layer)
    if extension == ".json":
        return load_json_embeddings(path, tokens, oov=oov, seed=seed, layer=layer)
    text = read_text_vectors(path, wanted=lookup_forms(tokens), progress=progress)
    return from_vocabulary(
        text.vectors,
        tokens,
        path,
        oov=oov,
        seed=seed,
        notes=duplicates_note(path, text.duplicates, "lines"),
    )
