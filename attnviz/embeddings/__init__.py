"""Token embeddings X [n, d_model]: seeded random vectors, or rows read from a word-vector file.

Formats:
  * GloVe / word2vec text: one ``word v1 v2 … v_d`` per line, an optional ``count dim`` header
    (``text_vectors``);
  * ``.npy``: an [n, d_model] array, one row per token of the sentence;
  * ``.npz``: an array ``X`` or ``embeddings`` (one row per token; an exported trace works), or a
    vocabulary as ``words`` [V] and ``vectors`` [V, d];
  * ``.json``: a vocabulary ``{"word": [v1, …, v_d], …}`` (or an exported trace).

An exported trace made with --positions gives its token embeddings E, without the positions
(X = E + PE): run with the same --positions, it gets the same X back. A model's export holds
each layer's input X [L, n, d_model]: ``layer`` (--layer, from 1) picks one (``array_files``).

A vocabulary lookup tries the exact token, then its lowercase form; a word it lacks is refused
by name or, with ``--oov random``, given a seeded random vector (``vocabulary``,
``random_vectors``). ``loading`` picks the reader by the file's extension.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from attnviz.embeddings.random_vectors import random_embeddings, word_vector
from attnviz.embeddings.record import Embeddings
from attnviz.embeddings.vocabulary import OutOfVocabulary

if TYPE_CHECKING:
    from attnviz.embeddings.loading import EMBEDDING_EXTENSIONS, load_embeddings
    from attnviz.embeddings.text_vectors import (
        MAX_LINE_BYTES,
        PROGRESS_EVERY,
        TEXT_EXTENSIONS,
        TextVectors,
        read_text_vectors,
    )

#: The file readers' names and their modules, imported when first used: seeded random
#: embeddings (`attnviz explain` without --embeddings) need neither the files nor their checks.
_READERS = {
    "EMBEDDING_EXTENSIONS": "loading",
    "load_embeddings": "loading",
    "MAX_LINE_BYTES": "text_vectors",
    "PROGRESS_EVERY": "text_vectors",
    "TEXT_EXTENSIONS": "text_vectors",
    "TextVectors": "text_vectors",
    "read_text_vectors": "text_vectors",
}


def __getattr__(name: str) -> Any:
    if name in _READERS:
        value = getattr(import_module(f"{__name__}.{_READERS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EMBEDDING_EXTENSIONS",
    "MAX_LINE_BYTES",
    "PROGRESS_EVERY",
    "TEXT_EXTENSIONS",
    "Embeddings",
    "OutOfVocabulary",
    "TextVectors",
    "load_embeddings",
    "random_embeddings",
    "read_text_vectors",
    "word_vector",
]
