"""attnviz.analysis.compare: the words two sentences share, aligned in order, and the total
variation between a focus word's rows, checked against literal loops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnviz.analysis.compare import Alignment, align_words, compare_rows, total_variation

TIRED = "The animal didn't cross the street because it was too tired".split()
WIDE = "The animal didn't cross the street because it was too wide".split()


def test_same_length_sentences_share_every_word_but_the_changed_one() -> None:
    alignment = align_words(TIRED, WIDE)
    assert alignment.pairs == tuple((i, i) for i in range(10))
    assert alignment.only_a == (10,) and alignment.only_b == (10,)


def test_different_lengths_align_the_shared_words_in_order() -> None:
    a = "the cat sat on the mat".split()
    b = "the black cat sat on the red mat today".split()
    alignment = align_words(a, b)
    assert [(a[i], b[j]) for i, j in alignment.pairs] == [
        ("the", "the"), ("cat", "cat"), ("sat", "sat"), ("on", "on"), ("the", "the"),
        ("mat", "mat"),
    ]  # fmt: skip
    assert alignment.only_a == ()
    assert [b[j] for j in alignment.only_b] == ["black", "red", "today"]


def test_repeated_words_pair_in_order_then_words_in_another_order_by_text() -> None:
    a = ["a", "b", "a", "c", "a"]
    b = ["a", "a", "c", "b"]
    alignment = align_words(a, b)
    # a a c in order (the longest common subsequence), then A's b with B's b, which crosses.
    assert alignment.pairs == ((0, 0), (1, 3), (2, 1), (3, 2))
    assert alignment.only_a == (4,) and alignment.only_b == ()


def test_swapped_words_are_shared_not_only_in_one_sentence() -> None:
    a = "the animal didn't cross the street".split()
    b = "the street didn't cross the animal".split()
    alignment = align_words(a, b)
    assert alignment.only_a == () and alignment.only_b == ()
    assert (a.index("animal"), b.index("animal")) in alignment.pairs


def test_nothing_shared_or_nothing_at_all() -> None:
    assert align_words(["x"], ["y"]) == Alignment((), (0,), (0,))
    assert align_words([], ["y"]) == Alignment((), (), (0,))


def test_the_words_only_one_sentence_has_are_grouped_by_the_place_they_stand_in() -> None:
    assert align_words(TIRED, WIDE).changed == ((10, (10,), (10,)),)
    a = "the cat sat on the mat".split()
    b = "the black cat sat on the red mat today".split()
    # "black" after one shared word, "red" after five, "today" after all six; A has none.
    assert align_words(a, b).changed == ((1, (), (1,)), (5, (), (6,)), (6, (), (8,)))
    a, b = ["street", "it", "was", "tired"], ["it", "ate", "was", "wide"]
    # A place counts the shared words before it in its own sentence: "street" stands before
    # "it", "ate" after it; "tired" and "wide" both after "was".
    assert align_words(a, b).changed == ((0, (0,), ()), (1, (), (1,)), (2, (3,), (3,)))
    assert align_words(a, a).changed == ()


def longest_common_subsequence(a: list[str], b: list[str]) -> int:
    """By brute recursion, for the short lists hypothesis draws."""
    if not a or not b:
        return 0
    if a[0] == b[0]:
        return 1 + longest_common_subsequence(a[1:], b[1:])
    return max(longest_common_subsequence(a[1:], b), longest_common_subsequence(a, b[1:]))


def longest_increasing_chain(pairs: list[tuple[int, int]]) -> int:
    """The most pairs that increase in both columns at once (pairs sorted by A's column)."""
    best = [1] * len(pairs)
    for k, (i, j) in enumerate(pairs):
        for m in range(k):
            if pairs[m][0] < i and pairs[m][1] < j:
                best[k] = max(best[k], best[m] + 1)
    return max(best, default=0)


words = st.lists(st.sampled_from(["the", "it", "cat", "was"]), max_size=7)


@pytest.mark.slow
@given(words, words)
def test_the_alignment_is_a_longest_common_subsequence(a: list[str], b: list[str]) -> None:
    alignment = align_words(a, b)
    # Every word both have pairs as often as both have it; an in-order chain of the pairs is
    # as long as the longest common subsequence (the order is kept where it can be).
    assert len(alignment.pairs) == sum(min(a.count(w), b.count(w)) for w in set(a))
    assert all(a[i] == b[j] for i, j in alignment.pairs)
    assert longest_increasing_chain(list(alignment.pairs)) == longest_common_subsequence(a, b)
    assert sorted([i for i, _ in alignment.pairs] + list(alignment.only_a)) == list(range(len(a)))
    assert sorted([j for _, j in alignment.pairs] + list(alignment.only_b)) == list(range(len(b)))


def literal_tv(row_a: np.ndarray, row_b: np.ndarray, alignment: Alignment) -> float:
    """½·(Σ over the shared words |w_A − w_B| + |A's weight on its own words − B's on its own|),
    one word at a time."""
    total = 0.0
    for i, j in alignment.pairs:
        total += abs(float(row_a[i]) - float(row_b[j]))
    only_a = 0.0
    for i in alignment.only_a:
        only_a += float(row_a[i])
    only_b = 0.0
    for j in alignment.only_b:
        only_b += float(row_b[j])
    return 0.5 * (total + abs(only_a - only_b))


@pytest.mark.slow
@given(words, words, st.integers(0, 2**32 - 1))
def test_tv_is_the_literal_loop_and_stays_between_0_and_1(
    a: list[str], b: list[str], seed: int
) -> None:
    if not a or not b:
        return
    rng = np.random.default_rng(seed)
    row_a, row_b = rng.dirichlet(np.ones(len(a))), rng.dirichlet(np.ones(len(b)))
    alignment = align_words(a, b)
    tv = total_variation(row_a, row_b, alignment)
    assert tv == pytest.approx(literal_tv(row_a, row_b, alignment), abs=1e-12)
    assert -1e-12 <= tv <= 1 + 1e-12


def test_tv_by_hand() -> None:
    alignment = align_words(["it", "cat", "tired"], ["it", "cat", "wide"])
    row_a = np.array([0.2, 0.7, 0.1])
    row_b = np.array([0.2, 0.1, 0.7])
    # ½·(|0.2 − 0.2| + |0.7 − 0.1| + |0.1 − 0.7|) = ½·(0 + 0.6 + 0.6) = 0.6
    assert total_variation(row_a, row_b, alignment) == pytest.approx(0.6)
    assert total_variation(row_a, row_a, align_words(["x"] * 3, ["x"] * 3)) == 0.0


def rows(*weights: list[float]) -> np.ndarray:
    return np.array([[w] for w in weights])  # [layers, 1 head, columns]


def test_heads_are_ranked_by_tv_and_moves_name_a_change_of_top_word() -> None:
    a, b = ["the", "cat", "it", "tired"], ["the", "cat", "it", "wide"]
    comparison = compare_rows(
        rows([0.1, 0.8, 0.05, 0.05], [0.1, 0.1, 0.1, 0.7]),
        rows([0.8, 0.1, 0.05, 0.05], [0.1, 0.1, 0.1, 0.7]),
        a,
        b,
        focus="it",
        layers=[1, 2],
        heads=[0],
        n_layers=2,
    )
    first, second = comparison.heads
    assert (first.layer, first.head, first.top_a, first.top_b) == (1, 1, 1, 0)
    assert first.tv == pytest.approx(0.7) and first.moves
    # from "tired" to "wide": the word that was changed, in both; no move
    assert (second.layer, second.tv, second.moves) == (2, 0.0, False)
    assert comparison.moved == (first,)
    assert comparison.n_heads == 1 and comparison.n_layers == 2


def test_words_only_one_sentence_has_count_as_one_place_only_where_they_stand_together() -> None:
    a = ["street", "it", "was", "tired"]
    b = ["it", "ate", "was", "wide"]  # "street"/"ate" stand apart; "tired"/"wide" together
    comparison = compare_rows(
        rows([0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]),
        rows([0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]),
        a,
        b,
        focus="it",
        layers=[1, 2],
        heads=[0],
        n_layers=2,
    )
    by_layer = {change.layer: change for change in comparison.heads}
    assert (a[by_layer[1].top_a], b[by_layer[1].top_b]) == ("street", "ate")
    assert by_layer[1].moves  # before "it" in A, after it in B: not the same place
    assert (a[by_layer[2].top_a], b[by_layer[2].top_b]) == ("tired", "wide")
    assert not by_layer[2].moves
