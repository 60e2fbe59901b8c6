"""Why the scores are divided by √d_k and not by the square root of the number of words, in the
library's own words: ``attnviz scaling``'s second experiment (attnviz.analysis.scaling)."""

from __future__ import annotations

from collections.abc import Sequence

from attnviz.analysis.scaling import LENGTHS, MAX_D_K, DivisorRow, divisor_experiment
from attnviz.arguments import bounded, given, whole
from attnviz.config import MAX_TOKENS
from attnviz.errors import AttnvizError, option
from attnviz.serial import one_at_a_time

#: The most random numbers the keys of the experiment may take (float64: 256 MB).
MAX_DRAWN = 2**25


@one_at_a_time
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
    lengths = bounded("lengths", lengths, "lengths=[2, 16, 256]")
    whole(**{f"lengths[{index}]": n for index, n in enumerate(lengths)})
    given(d_k=d_k, queries=queries, seed=seed)
    if not 1 <= d_k <= MAX_D_K:
        raise AttnvizError(f"{option('d_k', d_k)} is out of range; use 1 to {MAX_D_K}.")
    if lengths and max(lengths) > MAX_TOKENS:
        raise AttnvizError(
            f"lengths holds {max(lengths)}; a sentence has at most {MAX_TOKENS} tokens."
        )
    if not 1 <= queries <= 100_000:
        raise AttnvizError(f"{option('queries', queries)} is out of range; use 1 to 100000.")
    if seed < 0:
        raise AttnvizError(f"{option('seed')} must be 0 or more, got {seed}.")
    drawn = queries * max(lengths, default=0) * d_k  # the keys: [queries, longest, d_k]
    if drawn > MAX_DRAWN:
        raise AttnvizError(
            f"queries × longest length × d_k = {drawn:,} random numbers, more than "
            f"{MAX_DRAWN:,} ({MAX_DRAWN * 8 // 2**20} MB); use fewer queries, shorter lengths or "
            "a smaller d_k."
        )
    return divisor_experiment(lengths, d_k=d_k, n_queries=queries, seed=seed)
