"""Ranking (layer, head) pairs by where the focus word looks."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

import attnviz
from attnviz.analysis.heads import focus_rows, top_heads_per_target, top_target_per_head
from attnviz.cli import app
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


def test_top_heads_per_target_are_the_largest_weights_in_that_column() -> None:
    stack = layers()
    focus = stack[0].tokens.index("it")
    rows = np.stack([layer.weights[:, focus, :] for layer in stack])  # [L, h, n]
    ranking = top_heads_per_target(rows, per_target=3)
    for target, links in ranking.items():
        column = rows[:, :, target]
        assert [link.weight for link in links] == sorted(column.ravel(), reverse=True)[:3]
        best = links[0]
        assert column[best.layer - 1, best.head - 1] == best.weight  # numbered from 1


def test_top_target_per_head_covers_every_head_strongest_first() -> None:
    stack = layers()
    focus = stack[0].tokens.index("it")
    links = top_target_per_head(np.stack([layer.weights[:, focus, :] for layer in stack]))
    assert len(links) == 4 * 3
    assert [link.weight for link in links] == sorted((link.weight for link in links), reverse=True)
    for link in links:
        row = stack[link.layer - 1].weights[link.head - 1, focus]
        assert row.argmax() == link.target and row.max() == link.weight


def test_heads_command_in_random_mode() -> None:
    result = CliRunner().invoke(app, ["heads", SENTENCE, "--heads", "4", "--d-model", "16"])
    assert result.exit_code == 0, result.stderr
    assert "where does 'it' look, in every head" in result.stdout
    assert "1 layer × 4 heads" in result.stdout
    assert "weights are random" in result.stdout


def test_heads_needs_a_focus_word() -> None:
    result = CliRunner().invoke(app, ["heads", "I am good"])
    assert result.exit_code == 3
    assert "--focus WORD" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_focus_rows_are_the_focus_words_rows_as_the_selection_shows_them() -> None:
    stack = layers()
    selection = select(stack[0], ViewOptions(focus="it"))
    rows = focus_rows(stack, selection)
    focus = stack[0].tokens.index("it")
    assert rows.shape == (4, 3, stack[0].n_tokens)
    np.testing.assert_array_equal(rows[2], stack[2].weights[:, focus, :])
