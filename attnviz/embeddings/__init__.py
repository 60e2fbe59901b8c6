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

from attnviz.embeddings.loading import EMBEDDING_EXTENSIONS, load_embeddings
from attnviz.embeddings.random_vectors import random_embeddings, word_vector
from attnviz.embeddings.record import Embeddings
from attnviz.embeddings.text_vectors import (
    MAX_LINE_BYTES,
    PROGRESS_EVERY,
    TEXT_EXTENSIONS,
    TextVectors,
    read_text_vectors,
)
from attnviz.embeddings.vocabulary import OutOfVocabulary

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
