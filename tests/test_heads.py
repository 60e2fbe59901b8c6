"""Ranking (layer, head) pairs by where the focus word looks, and how selectively."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

import attnviz
from attnviz.analysis.heads import (
    HeadLink,
    RankBy,
    focus_rows,
    head_weights,
    other_rows,
    others_mean,
    selectivity,
    top_heads_per_target,
    top_target_per_head,
)
from attnviz.attention import causal_mask
from attnviz.cli import app
from attnviz.render.demo import it_heads_text
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace

SENTENCE = "The animal didn't cross the street because it was too tired"
runner = CliRunner()


def layers() -> tuple[AttentionTrace, ...]:
    return tuple(
        attnviz.trace_attention(
            SENTENCE, config=attnviz.AttentionConfig(d_model=12, n_heads=3, seed=s)
        )
        for s in range(4)
    )


# Four words, focus "it" (row 2), target "cat" (column 0). Head 1 is a crowd head: every word
# gives "cat" 0.7, "it" included. Head 2 is selective: "it" gives "cat" 0.6, the others 0.1.
CROWD = [[0.7, 0.1, 0.1, 0.1]] * 4
SELECTIVE = [
    [0.1, 0.3, 0.3, 0.3],
    [0.1, 0.3, 0.3, 0.3],
    [0.6, 0.2, 0.1, 0.1],
    [0.1, 0.3, 0.3, 0.3],
]


def hand_made(*heads: list[list[float]]) -> AttentionTrace:
    """A one-layer trace of "cat sat it ran" whose weights are ``heads`` [h, 4, 4]."""
    trace = attnviz.trace_attention(
        ["cat", "sat", "it", "ran"],
        config=attnviz.AttentionConfig(d_model=4 * len(heads), n_heads=len(heads)),
    )
    return replace(trace, weights=np.array(heads, dtype=np.float64))


def test_a_head_where_everyone_looks_at_the_target_has_no_selectivity() -> None:
    trace = hand_made(CROWD, SELECTIVE)
    weights = head_weights([trace], select(trace, ViewOptions(focus="it")))
    assert weights.focus.shape == weights.others.shape == (1, 2, 4)
    crowd, selective = weights.selectivity[0, :, 0]  # both heads, column "cat"
    np.testing.assert_allclose(weights.focus[0, :, 0], [0.7, 0.6])
    np.testing.assert_allclose(weights.others[0, :, 0], [0.7, 0.1])
    assert crowd == pytest.approx(0.0) and selective == pytest.approx(0.5)


def test_ranking_by_weight_and_by_selectivity() -> None:
    trace = hand_made(CROWD, SELECTIVE)
    weights = head_weights([trace], select(trace, ViewOptions(focus="it")))
    by_weight = top_heads_per_target(weights, 2, rank_by=RankBy.weight)[0]
    by_selectivity = top_heads_per_target(weights, 2, rank_by=RankBy.selectivity)[0]
    assert [link.head for link in by_weight] == [1, 2]
    assert [link.head for link in by_selectivity] == [2, 1]
    best = by_selectivity[0]
    assert (best.layer, best.head, best.target, best.weight) == (1, 2, 0, 0.6)
    assert best.selectivity == pytest.approx(0.5)
    assert top_heads_per_target(weights, 2)[0] == by_selectivity  # selectivity by default
    # Each head's top word: "cat" for both by weight; by selectivity the selective head comes
    # first, and the crowd head, where "it" looks everywhere as the others do, last.
    heads_by_weight = top_target_per_head(weights, rank_by=RankBy.weight)
    assert [(link.head, link.target) for link in heads_by_weight] == [(1, 0), (2, 0)]
    heads_by_selectivity = top_target_per_head(weights, rank_by=RankBy.selectivity)
    assert heads_by_selectivity[0].head == 2 and heads_by_selectivity[0].target == 0
    assert heads_by_selectivity[1].head == 1
    assert heads_by_selectivity[1].selectivity == pytest.approx(0.0)
    assert [link.selectivity for link in heads_by_selectivity] == sorted(
        (link.selectivity for link in heads_by_selectivity), reverse=True
    )


def test_selectivity_is_the_focus_weight_minus_the_other_rows_mean() -> None:
    stack = layers()
    selection = select(stack[0], ViewOptions(focus="it"))
    weights = head_weights(stack, selection)
    focus = stack[0].tokens.index("it")
    others = [i for i in range(stack[0].n_tokens) if i != focus]
    for layer, trace in enumerate(stack):
        expected = trace.weights[:, focus, :] - trace.weights[:, others, :].mean(axis=1)
        np.testing.assert_allclose(weights.selectivity[layer], expected, atol=1e-12)
    np.testing.assert_array_equal(
        selectivity(np.array([0.5, 0.2]), np.array([0.1, 0.2])), [0.4, 0.0]
    )


def test_other_rows_leave_out_every_piece_of_the_focus_word_and_hidden_rows() -> None:
    tokens = ["[CLS]", "token", "##ization", "is", "hard", "[SEP]"]
    trace = attnviz.trace_attention(tokens)
    groups = ((0,), (1, 2), (3,), (4,), (5,))
    provenance = trace.provenance._replace(
        special=(0, 5), word_groups=groups, words=("[CLS]", "tokenization", "is", "hard", "[SEP]")
    )
    trace = replace(trace, provenance=provenance)
    pieces = select(trace, ViewOptions(focus="tokenization"))
    assert other_rows(pieces, groups) == (0, 3, 4, 5)  # not "##ization", row 2
    hidden = select(trace, ViewOptions(focus="tokenization", hide_special=True))
    assert other_rows(hidden, groups) == (2, 3)  # "is", "hard" of the shown rows
    merged = select(trace, ViewOptions(focus="tokenization", words=True))
    assert other_rows(merged, groups) == (0, 2, 3, 4)
    weights = head_weights([trace], hidden)
    shown = trace.weights[:, 1:5, 1:5]  # rows and columns without [CLS] and [SEP]
    np.testing.assert_allclose(weights.others[0], shown[:, 2:4, :].mean(axis=1))


def test_others_mean_leaves_out_rows_that_may_not_see_the_column() -> None:
    shown = np.array([[[1.0, 0.0], [0.5, 0.5], [0.2, 0.8]]])  # [h=1, 3 rows, 2 columns]
    masked = np.array([[False, True], [False, False], [False, False]])
    np.testing.assert_allclose(others_mean(shown, [0, 1, 2], masked), [[1.7 / 3, 1.3 / 2]])
    everyone_masked = np.array([[False, True], [False, True], [False, True]])
    assert math.isnan(others_mean(shown, [0, 1], everyone_masked)[0, 1])
    assert np.isnan(others_mean(shown, [], masked)).all()  # nobody else: nothing to compare


def test_under_a_causal_mask_later_words_have_no_selectivity() -> None:
    trace = attnviz.trace_attention(["cat", "sat", "it", "ran"])
    trace = replace(trace, mask=causal_mask(4))
    weights = head_weights([trace], select(trace, ViewOptions(focus="it")))
    assert np.isnan(weights.selectivity[0, :, 3]).all()  # "ran" comes after "it"
    # "cat" is seen by every row; "sat" by "sat", "it" and "ran" (not "cat", masked).
    for head in range(trace.n_heads):
        w = trace.weights[head]
        assert weights.others[0, head, 0] == pytest.approx(w[[0, 1, 3], 0].mean())
        assert weights.others[0, head, 1] == pytest.approx(w[[1, 3], 1].mean())
    links = top_target_per_head(weights)
    assert all(link.target != 3 for link in links)  # NaN ranks last


def test_top_heads_per_target_by_weight_are_the_largest_weights_in_that_column() -> None:
    stack = layers()
    weights = head_weights(stack, select(stack[0], ViewOptions(focus="it")))
    ranking = top_heads_per_target(weights, per_target=3, rank_by=RankBy.weight)
    rows = weights.focus
    for target, links in ranking.items():
        column = rows[:, :, target]
        assert [link.weight for link in links] == sorted(column.ravel(), reverse=True)[:3]
        best = links[0]
        assert column[best.layer - 1, best.head - 1] == best.weight  # numbered from 1
    by_selectivity = top_heads_per_target(weights, per_target=3)
    for target, links in by_selectivity.items():
        column = weights.selectivity[:, :, target]
        assert [link.selectivity for link in links] == sorted(column.ravel(), reverse=True)[:3]


def test_top_target_per_head_covers_every_head_strongest_first() -> None:
    stack = layers()
    weights = head_weights(stack, select(stack[0], ViewOptions(focus="it")))
    focus = stack[0].tokens.index("it")
    links = top_target_per_head(weights, rank_by=RankBy.weight)
    assert len(links) == 4 * 3
    assert [link.weight for link in links] == sorted((link.weight for link in links), reverse=True)
    for link in links:
        row = stack[link.layer - 1].weights[link.head - 1, focus]
        assert row.argmax() == link.target and row.max() == link.weight
    selective = top_target_per_head(weights)
    for link in selective:
        assert weights.selectivity[link.layer - 1, link.head - 1].argmax() == link.target


def test_focus_rows_are_the_focus_words_rows_as_the_selection_shows_them() -> None:
    stack = layers()
    selection = select(stack[0], ViewOptions(focus="it"))
    rows = focus_rows(stack, selection)
    focus = stack[0].tokens.index("it")
    assert rows.shape == (4, 3, stack[0].n_tokens)
    np.testing.assert_array_equal(rows[2], stack[2].weights[:, focus, :])


# -- the command ----------------------------------------------------------------------------


def second_table(stdout: str) -> list[tuple[str, float, float]]:
    """(head, w, sel) of each row of the report's last table."""
    rows = re.findall(r"^(L\d+ H\d+)\s+\S+\s+(\d\.\d\d)\s+([+−]\d\.\d\d)$", stdout, re.M)
    return [(head, float(w), float(sel.replace("−", "-"))) for head, w, sel in rows]


def test_heads_command_in_random_mode() -> None:
    result = runner.invoke(app, ["heads", SENTENCE, "--heads", "4", "--d-model", "16"])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "where does 'it' look, in every head" in text
    assert "1 layer × 4 heads" in text
    assert "weights are random" in text
    assert "sel, the selectivity, is w minus the mean weight the other words give" in text
    assert "Ranked by selectivity" in text
    assert "looks at it most beyond what the others do" in text
    assert all(line == line.rstrip() for line in result.stdout.splitlines())


def test_heads_ranks_by_selectivity_unless_asked_for_the_weight() -> None:
    args = ["heads", SENTENCE, "--heads", "4", "--d-model", "16", "--seed", "0"]
    by_selectivity = second_table(runner.invoke(app, args).stdout)
    assert len(by_selectivity) == 4
    assert [sel for _, _, sel in by_selectivity] == sorted(
        (sel for _, _, sel in by_selectivity), reverse=True
    )
    result = runner.invoke(app, [*args, "--rank-by", "weight"])
    assert result.exit_code == 0, result.stderr
    assert "favourite word for 'it', strongest first" in result.stdout
    by_weight = second_table(result.stdout)
    assert [w for _, w, _ in by_weight] == sorted((w for _, w, _ in by_weight), reverse=True)
    # With this seed the two orders differ: head 3 gives its word more weight, head 4 is more
    # selective.
    assert by_selectivity[0][0] == "L1 H4" and by_weight[0][0] == "L1 H3"
    result = runner.invoke(app, [*args, "--rank-by", "loudness"])
    assert result.exit_code == 2 and "loudness" in result.stderr


def test_heads_report_fits_80_columns_with_fewer_heads_than_ranks() -> None:
    result = runner.invoke(app, ["heads", "I am it"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert all(line == line.rstrip() for line in lines)  # no empty 3rd rank for 2 heads
    header = next(line for line in lines if line.startswith("word"))
    assert "2nd" in header and "3rd" not in header


def test_heads_needs_a_focus_word() -> None:
    result = runner.invoke(app, ["heads", "I am good"])
    assert result.exit_code == 3
    assert "--focus WORD" in result.stderr and len(result.stderr.strip().splitlines()) == 1


# -- the demo's sentence about the heads ------------------------------------------------------


def test_demo_names_the_strongest_and_the_most_selective_head() -> None:
    strongest = HeadLink(6, 12, 1, 0.647, 0.268)
    selective = HeadLink(4, 2, 1, 0.640, 0.554)
    text = it_heads_text(strongest, selective)
    assert "largest weight in layer 6, head 12: 0.65" in text
    assert "the other words ([CLS] and [SEP] not counted) give 'animal' 0.38 on average" in text
    assert "selectivity (weight − the others' mean) is 0.27" in text
    assert "In layer 4, head 2, 'it' gives 'animal' 0.64 and the others 0.09" in text
    assert "selectivity 0.55, the most selective head" in text
    same = it_heads_text(selective, selective)
    assert "layer 4, head 2: 0.64" in same and "the highest of any head" in same
    assert "layer 6" not in same
