"""Ranking (layer, head) pairs by where the focus word looks, and what of it is specific."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import attnviz
from attnviz.analysis.head_types import trace_specificity
from attnviz.analysis.heads import (
    RankBy,
    focus_rows,
    focus_survey,
    head_weights,
    largest_weight_positions,
    own_positions,
    rank_heads,
    top_heads_per_target,
    top_target_per_head,
)
from attnviz.attention import causal_mask
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace

SENTENCE = "The animal didn't cross the street because it was too tired"


def layers() -> tuple[AttentionTrace, ...]:
    return tuple(
        attnviz.trace_attention(
            SENTENCE, config=attnviz.AttentionConfig(d_model=12, n_heads=3, seed=s)
        )
        for s in range(4)
    )


# Four words, focus "it" (row 2), target "cat" (column 0). Head 1 is a crowd head: every word
# gives "cat" 0.7, "it" included. Head 2 is selective: "it" gives "cat" 0.6, the others 0.1.
# Head 3 is a previous-token head: every row but the first puts 0.97 on the word before it, so
# "it" puts 0.97 on "sat" as every row does one word back.
CROWD = [[0.7, 0.1, 0.1, 0.1]] * 4
SELECTIVE = [
    [0.1, 0.3, 0.3, 0.3],
    [0.1, 0.3, 0.3, 0.3],
    [0.6, 0.2, 0.1, 0.1],
    [0.1, 0.3, 0.3, 0.3],
]
PREVIOUS = [
    [0.97, 0.01, 0.01, 0.01],
    [0.97, 0.01, 0.01, 0.01],
    [0.01, 0.97, 0.01, 0.01],
    [0.01, 0.01, 0.97, 0.01],
]


def hand_made(*heads: list[list[float]]) -> AttentionTrace:
    """A one-layer trace of "cat sat it ran" whose weights are ``heads`` [h, 4, 4]."""
    trace = attnviz.trace_attention(
        ["cat", "sat", "it", "ran"],
        config=attnviz.AttentionConfig(d_model=4 * len(heads), n_heads=len(heads)),
    )
    return replace(trace, weights=np.array(heads, dtype=np.float64))


def test_a_head_where_everyone_looks_at_the_target_is_not_specific() -> None:
    trace = hand_made(CROWD, SELECTIVE)
    weights = head_weights([trace], select(trace, ViewOptions(focus="it")))
    assert weights.focus.shape == weights.by_key.shape == weights.by_offset.shape == (1, 2, 4)
    np.testing.assert_allclose(weights.focus[0, :, 0], [0.7, 0.6])
    np.testing.assert_allclose(weights.by_key[0, :, 0], [0.7, 0.1])
    # "cat" is 2 before "it"; only "ran" (row 3) has a word 2 before it, "sat".
    np.testing.assert_allclose(weights.by_offset[0, :, 0], [0.1, 0.3])
    np.testing.assert_allclose(weights.selectivity[0, :, 0], [0.0, 0.5], atol=1e-12)
    np.testing.assert_allclose(weights.specificity[0, :, 0], [0.0, 0.3], atol=1e-12)


def test_a_previous_token_head_is_selective_but_not_specific() -> None:
    """The head of MiniLM's layer 1, head 3 in small: "it" puts 0.97 on the word before it, and
    so does every row; by the key baseline alone it looks selective (+0.95 − …), by the offset
    baseline it is not."""
    trace = hand_made(SELECTIVE, PREVIOUS)
    weights = head_weights([trace], select(trace, ViewOptions(focus="it")))
    sat = 1
    assert weights.focus[0, 1, sat] == pytest.approx(0.97)
    assert weights.by_offset[0, 1, sat] == pytest.approx(0.97)  # rows 1 and 3, one back
    assert weights.selectivity[0, 1, sat] == pytest.approx(0.97 - (0.01 + 0.01 + 0.01) / 3)
    assert weights.specificity[0, 1, sat] == pytest.approx(0.0, abs=1e-12)
    by_selectivity = top_target_per_head(weights, rank_by=RankBy.selectivity)
    by_specificity = top_target_per_head(weights)
    assert (by_selectivity[0].head, by_selectivity[0].target) == (2, sat)
    assert (by_specificity[0].head, by_specificity[0].target) == (1, 0)  # the selective head
    ranking = rank_heads([trace], select(trace, ViewOptions(focus="it")))
    assert ranking.rank_by is RankBy.specificity
    assert [t.type.value for t in ranking.types] == ["broad", "previous-token"]
    assert ranking.type_of(by_specificity[0]) == ranking.types[0]


def test_specificity_is_head_types_specificity_whatever_is_shown() -> None:
    """One definition: the trace's own rows, [CLS] and [SEP] included whether shown or not."""
    tokens = ["[CLS]", "the", "cat", "sat", "because", "it", "was", "tired", "[SEP]"]
    trace = attnviz.trace_attention(tokens, config=attnviz.AttentionConfig(d_model=12, n_heads=3))
    trace = replace(trace, provenance=trace.provenance._replace(special=(0, 8)))
    focus = tokens.index("it")
    expected = trace_specificity(trace, focus)  # [h, n]
    whole = head_weights([trace], select(trace, ViewOptions(focus="it")))
    np.testing.assert_allclose(whole.specificity[0], expected, atol=1e-12)
    hidden = head_weights([trace], select(trace, ViewOptions(focus="it", hide_special=True)))
    np.testing.assert_allclose(hidden.specificity[0], expected[:, 1:8], atol=1e-12)
    np.testing.assert_allclose(hidden.selectivity[0], whole.selectivity[0][:, 1:8], atol=1e-12)


def test_selectivity_is_the_weight_minus_every_other_rows_mean() -> None:
    stack = layers()
    selection = select(stack[0], ViewOptions(focus="it"))
    weights = head_weights(stack, selection)
    focus = stack[0].tokens.index("it")
    others = [i for i in range(stack[0].n_tokens) if i != focus]
    for layer, trace in enumerate(stack):
        expected = trace.weights[:, focus, :] - trace.weights[:, others, :].mean(axis=1)
        np.testing.assert_allclose(weights.selectivity[layer], expected, atol=1e-12)
        link = top_target_per_head(weights)[0]
        assert link.specificity == pytest.approx(
            weights.specificity[link.layer - 1, link.head - 1, link.target]
        )


def test_the_focus_words_pieces_are_not_other_rows_and_merged_words_sum_their_pieces() -> None:
    tokens = ["[CLS]", "token", "##ization", "is", "hard", "[SEP]"]
    trace = attnviz.trace_attention(tokens)
    groups = ((0,), (1, 2), (3,), (4,), (5,))
    provenance = trace.provenance._replace(
        special=(0, 5), word_groups=groups, words=("[CLS]", "tokenization", "is", "hard", "[SEP]")
    )
    trace = replace(trace, provenance=provenance)
    pieces = select(trace, ViewOptions(focus="tokenization"))
    assert own_positions(pieces, groups) == (1, 2)
    weights = head_weights([trace], pieces)
    a = trace.weights
    others = [0, 3, 4, 5]  # not "##ization", row 2
    np.testing.assert_allclose(weights.by_key[0, :, 4], a[:, others, 4].mean(axis=1))
    merged = select(trace, ViewOptions(focus="tokenization", words=True))
    words = head_weights([trace], merged)
    np.testing.assert_allclose(words.focus[0, :, 1], a[:, 1:3, 1:3].sum(axis=2).mean(axis=1))
    np.testing.assert_allclose(
        words.by_key[0, :, 1], weights.by_key[0, :, 1] + weights.by_key[0, :, 2]
    )
    np.testing.assert_allclose(
        words.by_offset[0, :, 1], weights.by_offset[0, :, 1] + weights.by_offset[0, :, 2]
    )


def test_under_a_causal_mask_later_words_have_no_baseline() -> None:
    trace = attnviz.trace_attention(["cat", "sat", "it", "ran"])
    trace = replace(trace, mask=causal_mask(4))
    weights = head_weights([trace], select(trace, ViewOptions(focus="it")))
    assert np.isnan(weights.specificity[0, :, 3]).all()  # "ran" comes after "it"
    # "cat" is seen by every row with a choice ("sat", "ran"; "cat" itself has none);
    # "sat" by "sat" and "ran".
    for head in range(trace.n_heads):
        w = trace.weights[head]
        assert weights.by_key[0, head, 0] == pytest.approx(w[[1, 3], 0].mean())
        assert weights.by_key[0, head, 1] == pytest.approx(w[[1, 3], 1].mean())
        # one back from "it": "sat" → "cat", "ran" → "it"
        assert weights.by_offset[0, head, 1] == pytest.approx((w[1, 0] + w[3, 2]) / 2)
    links = top_target_per_head(weights)
    assert all(link.target != 3 for link in links)  # NaN ranks last
    assert math.isnan(links[0]._replace(by_key=math.nan, by_offset=math.nan).specificity)


@pytest.mark.parametrize("rank_by", list(RankBy))
def test_each_ranking_is_sorted_by_its_own_measure(rank_by: RankBy) -> None:
    stack = layers()
    weights = head_weights(stack, select(stack[0], ViewOptions(focus="it")))
    values = weights.values(rank_by)
    for target, links in top_heads_per_target(weights, 3, rank_by=rank_by).items():
        assert [link.measure(rank_by) for link in links] == pytest.approx(
            sorted(values[:, :, target].ravel(), reverse=True)[:3]
        )
    per_head = top_target_per_head(weights, rank_by=rank_by)
    assert len(per_head) == 4 * 3
    measures = [link.measure(rank_by) for link in per_head]
    assert measures == sorted(measures, reverse=True)
    for link in per_head:
        assert np.argmax(values[link.layer - 1, link.head - 1]) == link.target


def test_focus_rows_are_the_focus_words_rows_as_the_selection_shows_them() -> None:
    stack = layers()
    selection = select(stack[0], ViewOptions(focus="it"))
    rows = focus_rows(stack, selection)
    focus = stack[0].tokens.index("it")
    assert rows.shape == (4, 3, stack[0].n_tokens)
    np.testing.assert_array_equal(rows[2], stack[2].weights[:, focus, :])


def test_the_survey_counts_where_the_focus_word_looks_most_in_every_head() -> None:
    trace = hand_made(CROWD, SELECTIVE, PREVIOUS)
    selection = select(trace, ViewOptions(focus="it"))
    np.testing.assert_array_equal(largest_weight_positions([trace], 2), [[0, 0, 1]])
    survey = focus_survey([trace], selection, 0)  # "cat"
    assert survey.n_heads == 3 and survey.target == "cat" and survey.offset == -2
    assert survey.tops == (("cat", ((1, 1), (1, 2))), ("sat", ((1, 3),)))
    assert [(link.head, link.weight) for link in survey.target_heads] == [(1, 0.7), (2, 0.6)]
    assert survey.strongest.head == 1 and survey.specific.head == 2
