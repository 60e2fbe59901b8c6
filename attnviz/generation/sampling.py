"""From the logits of the last position to the next token, every cut worked out.

    p = softmax(logits / T)                       T: the temperature (greedy: no sampling)
    top-k:  keep the k largest p                  the k-th largest logit is the threshold
    top-p:  keep the fewest largest p whose sum reaches P (the "nucleus", Holtzman et al. 2019)
    renormalise the survivors, p' = p / Σ p_kept; draw u ~ U[0, 1) and take the token whose
    interval [Σ_{j<i} p'_j, Σ_{j≤i} p'_j) holds u, largest p' first

In this order, as Hugging Face transformers' ``generate`` applies its warpers (temperature,
then top-k, then top-p). Greedy decoding takes argmax(logits), the first of equal ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, option

#: How many of the most likely tokens a choice keeps, to show them.
SHOWN = 10


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen: greedy (every field None), or sampled from the softmax of
    logits / temperature after the top-k and top-p cuts; validated where it is made."""

    temperature: float | None = None  # T > 0; 1 when only a cut is given
    top_k: int | None = None  # keep the k most likely tokens
    top_p: float | None = None  # keep the fewest most likely tokens whose probabilities reach P

    def __post_init__(self) -> None:
        t, k, p = self.temperature, self.top_k, self.top_p
        if t is not None and not (_finite(t) and 0 < t <= 100):
            raise AttnvizError(
                f"{option('temperature', t)}: give a temperature above 0 and at most 100 "
                "(1 leaves the model's probabilities as they are; leave it out for greedy)."
            )
        if k is not None and k < 1:
            raise AttnvizError(f"{option('top_k', k)}: keep at least 1 token.")
        if p is not None and not (_finite(p) and 0 < p <= 1):
            raise AttnvizError(
                f"{option('top_p', p)}: give a probability above 0 and at most 1 (0.9 keeps the "
                "most likely tokens until their probabilities sum to 0.9)."
            )

    @property
    def greedy(self) -> bool:
        return self.temperature is None and self.top_k is None and self.top_p is None

    @property
    def applied_temperature(self) -> float:
        return 1.0 if self.temperature is None else self.temperature


def _finite(value: float) -> bool:
    """Whether ``value`` is a finite number (an int too large for a float is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


@dataclass(frozen=True, eq=False)
class Choice:
    """One next-token choice, worked out: the most likely tokens before and after the cuts."""

    chosen: int  # the token id chosen
    shown: np.ndarray  # [SHOWN] ids, most likely first (by logit; ties by id)
    logits: FloatArray  # [SHOWN] their logits
    probabilities: FloatArray  # [SHOWN] softmax(logits / T) over the whole vocabulary
    kept: int  # how many tokens survive the cuts (the vocabulary when greedy)
    after_top_k: int  # how many survive top-k alone (the vocabulary without it)
    threshold_logit: float | None  # top-k: the k-th largest logit, which a kept token reaches
    nucleus_mass: float | None  # top-p: the kept tokens' probability before renormalising
    renormalised: FloatArray  # [SHOWN] p' of the shown tokens, 0 for the cut
    draw: float | None  # u, the uniform number drawn; None when greedy
    chosen_probability: float  # p of the chosen token at temperature T, before the cuts
    temperature: float
    greedy: bool
    vocabulary: int  # V
    top_k: int | None = None  # as asked
    top_p: float | None = None
    # Where the draw landed: the chosen token's stretch [start, end) of [0, 1), the kept tokens'
    # p′ laid end to end, largest first; None when greedy.
    interval: tuple[float, float] | None = None


def softmax(logits: FloatArray, temperature: float = 1.0) -> FloatArray:
    """softmax(logits / T), the largest subtracted first so that no exponent overflows; in
    float64 whatever the logits' dtype, so that a probability of 1e-30 is not rounded to 0.
    [V] -> [V]"""
    values = np.asarray(logits, dtype=np.float64)
    # (x − max) / T, not x / T − max / T: the difference is ≤ 0, and a difference too large for
    # a float is −∞, whose exponent is 0 (its probability is below any float's anyway).
    with np.errstate(over="ignore"):
        scaled = (values - values.max()) / temperature
    exponent: FloatArray = np.exp(scaled)
    probabilities: FloatArray = exponent / exponent.sum()
    return probabilities


def ranked(logits: FloatArray) -> np.ndarray:
    """Token ids by logit, largest first, equal logits by id (a stable sort).  [V] -> [V]"""
    return np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")


def top_ranked(logits: FloatArray, n: int) -> np.ndarray:
    """ranked(logits)[:n] without sorting the whole vocabulary: the tokens whose logit reaches
    the n-th largest (found by a partial sort, O(V)), then those few sorted stably, so that
    equal logits still come by id. A greedy token needs only these (SmolLM2: 5 of 49,152).
    [V] -> [min(n, V)]"""
    values = -np.asarray(logits, dtype=np.float64)
    n = min(n, values.shape[0])
    if n < 1:
        return np.zeros(0, np.intp)
    nth = np.partition(values, n - 1)[n - 1]
    if np.isnan(nth):  # fewer than n numbers: the whole order, NaN last as argsort puts it
        return ranked(logits)[:n]
    candidates = np.flatnonzero(values <= nth)  # ascending ids: a stable sort keeps them so
    return candidates[np.argsort(values[candidates], kind="stable")][:n]


def choose(logits: FloatArray, sampling: Sampling, rng: np.random.Generator | None) -> Choice:
    """The next token from the last position's ``logits`` [V], as ``sampling`` says; ``rng``
    draws one number per sampled token (None is allowed only for greedy decoding)."""
    vocabulary = int(np.asarray(logits).shape[0])
    temperature = sampling.applied_temperature
    probabilities = softmax(logits, temperature)
    order = top_ranked(logits, SHOWN) if sampling.greedy else ranked(logits)
    kept = vocabulary
    threshold = mass = draw = None
    interval: tuple[float, float] | None = None
    after_top_k = vocabulary
    if sampling.greedy:
        chosen = int(order[0])
        renormalised = np.zeros(vocabulary)
        renormalised[chosen] = 1.0
        kept = 1
    else:
        assert rng is not None  # sampling draws
        if sampling.top_k is not None and sampling.top_k < vocabulary:
            # Hugging Face's TopKLogitsWarper keeps every token whose logit reaches the k-th
            # largest: ties at the threshold are kept with it.
            threshold = float(np.asarray(logits, dtype=np.float64)[order[sampling.top_k - 1]])
            after_top_k = int((np.asarray(logits, dtype=np.float64) >= threshold).sum())
        kept = after_top_k
        survivors = probabilities[order[:kept]] / probabilities[order[:kept]].sum()
        if sampling.top_p is not None:
            # Keep token i (largest first) while the tokens before it sum to less than P: the
            # fewest tokens whose probabilities reach P, and at least one.
            before = np.concatenate([[0.0], np.cumsum(survivors)[:-1]])
            kept = max(1, int((before < sampling.top_p).sum()))
            mass = float(survivors[:kept].sum())
        weights = probabilities[order[:kept]]
        weights = weights / weights.sum()
        renormalised = np.zeros(vocabulary)
        renormalised[order[:kept]] = weights
        draw = float(rng.random())
        edges = np.cumsum(weights)
        index = min(int(np.searchsorted(edges, draw * edges[-1], side="right")), kept - 1)
        chosen = int(order[index])
        interval = (float(edges[index - 1]) if index else 0.0, float(edges[index]))
    shown = order[: min(SHOWN, vocabulary)]
    return Choice(
        chosen=chosen,
        shown=shown,
        logits=np.asarray(logits, dtype=np.float64)[shown],
        probabilities=probabilities[shown],
        kept=kept,
        after_top_k=after_top_k,
        threshold_logit=threshold,
        nucleus_mass=mass,
        renormalised=renormalised[shown],
        draw=draw,
        chosen_probability=float(probabilities[chosen]),
        temperature=temperature,
        greedy=sampling.greedy,
        vocabulary=vocabulary,
        top_k=sampling.top_k,
        top_p=sampling.top_p,
        interval=interval,
    )
