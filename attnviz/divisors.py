"""Why the scores are divided by √d_k and not by the square root of the number of words, in the
library's own words: ``attnviz scaling``'s second experiment (attnviz.analysis.scaling)."""

from __future__ import annotations

from collections.abc import Sequence

from attnviz.analysis.scaling import LENGTHS, DivisorRow, divisor_experiment
from attnviz.errors import AttnvizError, option


def divisor_rows(
    lengths: Sequence[int] = LENGTHS, *, d_k: int = 64, queries: int = 400, seed: int = 0
) -> list[DivisorRow]:
    """For each sentence length n: one query's scores of its keys 1 and 2, and how flat every
    row comes out, with the scores divided by √d_k (fixed) and by √n (the number of keys).

    >>> import attnviz
    >>> short, long = attnviz.divisor_rows([2, 256])
    >>> short.pair_by_d_k == long.pair_by_d_k, short.pair_by_n == long.pair_by_n
    (True, False)
    """
    if not 1 <= queries <= 100_000:
        raise AttnvizError(f"{option('queries', queries)} is out of range; use 1 to 100000.")
    if seed < 0:
        raise AttnvizError(f"{option('seed')} must be 0 or more, got {seed}.")
    return divisor_experiment(lengths, d_k=d_k, n_queries=queries, seed=seed)
