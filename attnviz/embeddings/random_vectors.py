"""Seeded random embeddings: one standard-normal vector per word, the same in every sentence."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from attnviz.arguments import given, token_list
from attnviz.arrays import FloatArray
from attnviz.config import MAX_D_MODEL
from attnviz.errors import AttnvizError, shown_number
from attnviz.tokens import check_token_count


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
    """Seeded random embeddings, one row per token, for 1 to MAX_TOKENS tokens (as a sentence
    may have).  [n] -> [n, d_model]"""
    check_token_count(token_list("tokens", tokens), "random_embeddings was given", "Give fewer.")
    given(d_model=d_model, seed=seed)
    if not 1 <= d_model <= MAX_D_MODEL or seed < 0:
        raise AttnvizError(
            f"d_model={d_model}, seed={shown_number(seed)}: give d_model from 1 to "
            f"{MAX_D_MODEL} and a seed of 0 or more."
        )
    return np.stack([word_vector(token, d_model, seed) for token in tokens])
