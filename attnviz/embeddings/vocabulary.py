"""Looking the sentence's words up in a vocabulary, and what to do with the words it lacks.

A lookup tries the exact token, then its lowercase form. A word the vocabulary does not hold is
an error naming it, or, with ``--oov random``, gets a seeded random vector at the file's own
scale; either way the person is told which words, and which of their words the file lists more
than once (the first is used).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.config import MAX_D_MODEL
from attnviz.embeddings.random_vectors import word_vector
from attnviz.embeddings.record import Embeddings, too_wide
from attnviz.errors import FileProblem, clipped, listed, option
from attnviz.provenance import EmbeddingsKind, EmbeddingsOrigin


class OutOfVocabulary(str, Enum):
    """What to do with a word the embeddings file does not contain."""

    error = "error"  # stop and name the missing words
    random = "random"  # give them seeded random vectors, and say so


def lookup_forms(tokens: Iterable[str]) -> set[str]:
    """Every form a lookup of ``tokens`` tries: each token as written and in lowercase."""
    return {form for token in tokens for form in (token, token.lower())}


def repeated_keys_note(path: Path, keys: list[str]) -> tuple[str, ...]:
    """Tell the user which of their words a JSON vocabulary has as a key more than once."""
    if not keys:
        return ()
    keys_listed = listed(keys, form=repr)
    return (
        f"{path.name} has {len(keys)} key(s) more than once; the first is used: {keys_listed}.",
    )


def duplicates_note(path: Path, duplicates: dict[str, list[int]], where: str) -> tuple[str, ...]:
    """Tell the user which of their words the file lists more than once, and which one is used."""
    if not duplicates:
        return ()
    shown = "; ".join(
        f"{clipped(word)!r} on {where} {listed(places)}"
        for word, places in list(duplicates.items())[:5]
    )
    more = f" (and {len(duplicates) - 5} more words)" if len(duplicates) > 5 else ""
    return (
        f"{path.name} lists {len(duplicates)} word(s) more than once; the first is used: "
        f"{shown}{more}.",
    )


def from_vocabulary(
    vocabulary: dict[str, FloatArray],
    tokens: Sequence[str],
    path: Path,
    *,
    oov: OutOfVocabulary,
    seed: int,
    notes: tuple[str, ...] = (),
) -> Embeddings:
    """X for ``tokens``, one vocabulary row each; the missing words refused or filled (``oov``)."""
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
        raise too_wide(path, max(widths))
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
    missing_listed = listed(unique_missing, form=repr)
    if missing and (oov is OutOfVocabulary.error or not found):
        if not found:
            advice = "no word of the sentence is in it; check that it is the right file"
        else:
            advice = (
                f"add them to the file, or pass {option('oov', 'random')} to give them seeded "
                "random vectors"
            )
        raise FileProblem(
            f"{len(unique_missing)} word(s) not in {path}: {missing_listed}; {advice}."
        )
    d_model = widths.pop()
    said = list(notes)
    scale = 1.0
    if missing:
        scale = _file_scale(list(found.values()))
        said.append(
            f"{len(unique_missing)} word(s) not in {path.name} got seeded random vectors "
            f"({option('oov', 'random')}, seed {seed}): {missing_listed}."
        )
    rows = [
        found[index] if index in found else scale * word_vector(token, d_model, seed)
        for index, token in enumerate(tokens)
    ]
    origin = EmbeddingsOrigin(
        EmbeddingsKind.FILE, path=str(path), vocabulary=True, seed=seed if missing else None
    )
    return Embeddings(X=np.stack(rows), origin=origin, notes=tuple(said))


def _file_scale(vectors: list[FloatArray]) -> float:
    """The standard deviation of the file's own numbers, so that random vectors for the missing
    words are not louder or quieter than the real ones.

    It is taken of the values divided by the largest, so vectors of 1e300 do not overflow when
    squared.
    """
    known = np.stack(vectors)
    largest = float(np.abs(known).max())
    return largest * float(np.std(known / largest)) if largest > 0 else 0.0
