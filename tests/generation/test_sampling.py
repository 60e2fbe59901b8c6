"""From logits to the next token: the softmax at a temperature, the top-k and top-p cuts worked
out against literal loops, the draw, and refusals."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.errors import AttnvizError
from attnviz.generation.sampling import Sampling, choose, ranked, softmax, top_ranked

from support import examples


def test_softmax_of_huge_and_tiny_logits_is_finite_and_sums_to_one() -> None:
    for logits in ([1e308, -1e308, 0.0], [3e38, 3e38, -3e38], [-1e4, -1e4 - 1, -1e4 - 2]):
        p = softmax(np.array(logits), 0.01)
        assert np.isfinite(p).all() and abs(p.sum() - 1) < 1e-12


def test_the_temperature_divides_the_logits() -> None:
    logits = np.array([2.0, 1.0, 0.0])
    expected = np.exp(logits / 0.5) / np.exp(logits / 0.5).sum()
    np.testing.assert_allclose(softmax(logits, 0.5), expected, rtol=1e-12)


def test_greedy_takes_the_first_of_the_largest_logits() -> None:
    choice = choose(np.array([0.5, 3.0, 3.0, -1.0]), Sampling(), None)
    assert choice.greedy and choice.chosen == 1 and choice.draw is None and choice.kept == 1
    assert choice.shown.tolist() == [1, 2, 0, 3]  # by logit, ties by id


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.integers(-3, 3), min_size=1, max_size=40),
    st.integers(1, 12),
    st.booleans(),
)
def test_top_ranked_is_the_start_of_the_whole_order(values: list[int], n: int, nan: bool) -> None:
    # Few distinct logits: many ties, which both must order by id; a NaN goes last in both.
    logits = np.array(values, dtype=np.float32)
    if nan:
        logits[len(values) // 2] = np.nan

    def key(i: int) -> tuple[bool, float, int]:
        return bool(np.isnan(logits[i])), -float(logits[i]), i

    literal = sorted(range(len(values)), key=key)[:n]
    assert top_ranked(logits, n).tolist() == literal == ranked(logits)[:n].tolist()


def literal_top_k(logits: np.ndarray, k: int) -> set[int]:
    """Every token whose logit reaches the k-th largest (ties at it kept), one by one."""
    threshold = sorted(logits.tolist(), reverse=True)[k - 1]
    return {i for i, value in enumerate(logits.tolist()) if value >= threshold}


def literal_top_p(p: np.ndarray, order: list[int], top_p: float) -> list[int]:
    """The most likely tokens, taken one by one until their probabilities reach top_p."""
    kept, total = [], 0.0
    for token in order:
        if total >= top_p and kept:
            break
        kept.append(token)
        total += p[token]
    return kept


@settings(max_examples=examples(60), deadline=None)
@given(
    logits=st.lists(st.integers(-6, 6), min_size=2, max_size=12),
    k=st.integers(1, 12),
    top_p=st.floats(0.05, 1.0),
    temperature=st.sampled_from([0.5, 1.0, 2.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_cuts_keep_what_a_literal_loop_keeps(
    logits: list[int], k: int, top_p: float, temperature: float, seed: int
) -> None:
    array = np.array(logits, dtype=np.float64) / 2  # ties are common: they must be handled
    k = min(k, len(logits))
    choice = choose(array, Sampling(temperature, k, top_p), np.random.default_rng(seed))
    after_k = literal_top_k(array, k)
    assert choice.after_top_k == len(after_k)
    p = softmax(array, temperature)
    p_k = np.where(np.isin(np.arange(len(array)), list(after_k)), p, 0)
    p_k /= p_k.sum()
    order = [int(i) for i in ranked(array) if int(i) in after_k]
    kept = literal_top_p(p_k, order, top_p)
    # Sums in another order may put a token exactly at P on either side: compare away from it.
    sums = np.cumsum([p_k[i] for i in order])
    if np.min(np.abs(sums - top_p)) > 1e-9:
        assert choice.kept == len(kept)
        assert choice.chosen in kept
        renormalised = np.zeros(len(array))
        renormalised[kept] = p_k[kept] / p_k[kept].sum()
        shown = choice.shown
        np.testing.assert_allclose(choice.renormalised, renormalised[shown], atol=1e-12)
    assert choice.draw is not None and 0 <= choice.draw < 1


def test_the_draw_falls_in_the_chosen_tokens_interval() -> None:
    logits = np.log(np.array([0.5, 0.3, 0.2]))
    for seed in range(40):
        choice = choose(logits, Sampling(temperature=1.0), np.random.default_rng(seed))
        assert choice.draw is not None
        edges = np.cumsum([0.5, 0.3, 0.2])
        expected = int(np.searchsorted(edges, choice.draw, side="right"))
        assert choice.chosen == expected


def test_the_same_seed_draws_the_same_tokens() -> None:
    logits = np.random.default_rng(1).normal(size=50)
    sampling = Sampling(temperature=1.3, top_k=20, top_p=0.9)
    first = [choose(logits, sampling, rng).chosen for rng in [np.random.default_rng(7)] * 30]
    second = [choose(logits, sampling, rng).chosen for rng in [np.random.default_rng(7)] * 30]
    assert first == second and len(set(first)) > 1


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"temperature": 0.0}, "temperature=0.0"),
        ({"temperature": -1.0}, "temperature=-1.0"),
        ({"temperature": float("nan")}, "temperature=nan"),
        ({"top_k": 0}, "top_k=0"),
        ({"top_p": 0.0}, "top_p=0.0"),
        ({"top_p": 1.5}, "top_p=1.5"),
    ],
)
def test_settings_it_cannot_use_are_refused(fields: dict[str, float], fragment: str) -> None:
    with pytest.raises(AttnvizError, match=re.escape(fragment)):
        Sampling(**fields)  # type: ignore[arg-type]
