"""Selections: what a view shows of one trace, computed from it, never a second trace."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz.core import cross_layers, trace_layers
from attnviz.errors import AttnvizError, command_line
from attnviz.options import TraceOptions
from attnviz.selection import ViewOptions, choose_layer, select
from attnviz.trace import AttentionTrace

IT = "The animal didn't cross the street because it was too tired"


def padded() -> AttentionTrace:
    return trace_layers("I think it works", TraceOptions(pad_to=7)).layers[0]


def with_words(trace: AttentionTrace) -> AttentionTrace:
    """The trace with a tokenizer's word groups: "it" and "works" as pieces of one word."""
    provenance = trace.provenance._replace(
        word_groups=((0,), (1,), (2, 3), (4,), (5,), (6,)),
        words=("I", "think", "itworks", "[PAD]", "[PAD]", "[PAD]"),
    )
    return attnviz.AttentionTrace(**{**vars(trace), "provenance": provenance})


def test_the_whole_trace_is_shown_as_it_is() -> None:
    trace = attnviz.trace_attention(IT)
    selection = select(trace)
    assert selection.is_whole and selection.heads == (0, 1)
    assert selection.focus is not None and selection.focus.index == trace.tokens.index("it")
    np.testing.assert_array_equal(selection.rows(trace.X), trace.X)
    np.testing.assert_array_equal(selection.pairs(trace.weights[1], total=True), trace.weights[1])
    np.testing.assert_array_equal(selection.focus_weights(trace.weights), trace.weights[:, 7])


def test_hiding_special_tokens_leaves_their_rows_and_columns_out() -> None:
    trace = padded()
    selection = select(trace, ViewOptions(hide_special=True))
    assert selection.hidden == (4, 5, 6) and selection.row_words == ("I", "think", "it", "works")
    shown = selection.pairs(trace.weights[0], total=True)
    np.testing.assert_array_equal(shown, trace.weights[0][:4, :4])
    # Padding gets no weight, so the shown rows still sum to 1; the padding rows are not shown.
    np.testing.assert_allclose(shown.sum(-1), 1.0)
    assert selection.masked_pairs(trace.masked).shape == (4, 4)


def test_merging_pieces_means_rows_and_sums_weight_columns() -> None:
    trace = with_words(padded())
    selection = select(trace, ViewOptions(words=True, hide_special=True))
    assert selection.row_words == ("I", "think", "itworks")
    assert selection.row_groups == ((0,), (1,), (2, 3))
    np.testing.assert_allclose(selection.rows(trace.X)[2], trace.X[2:4].mean(0))
    weights = selection.pairs(trace.weights[1], total=True)
    np.testing.assert_allclose(weights[0, 2], trace.weights[1, 0, 2] + trace.weights[1, 0, 3])
    np.testing.assert_allclose(weights[2, 0], trace.weights[1, 2:4, 0].mean())
    np.testing.assert_allclose(weights.sum(-1), 1.0)  # rows of means of rows that sum to 1
    scores = selection.pairs(trace.scores[1])
    np.testing.assert_allclose(scores[2, 2], trace.scores[1, 2:4, 2:4].mean())


def test_a_word_split_into_pieces_is_found_as_the_word_at_its_first_piece() -> None:
    trace = with_words(padded())
    selection = select(trace, ViewOptions(focus="itworks"))
    assert selection.focus is not None and selection.focus.index == 2
    assert selection.focus_row == 2


def test_a_repeated_focus_word_says_which_one_it_follows() -> None:
    selection = select(attnviz.trace_attention("the cat saw the dog"), ViewOptions(focus="the"))
    assert selection.focus is not None and selection.focus.index == 0
    assert 'Use focus="the:2" for the second.' in selection.notes[0]
    with command_line():
        said = select(attnviz.trace_attention("the cat saw the dog"), ViewOptions(focus="the"))
    assert "Use --focus the:2 for the second." in said.notes[0]
    second = select(attnviz.trace_attention("the cat saw the dog"), ViewOptions(focus="the:2"))
    assert second.focus is not None and second.focus.index == 3 and not second.notes


def test_cross_attention_follows_no_word_unless_asked() -> None:
    trace = cross_layers("I did it", "it is done").layers[0]
    assert select(trace).focus is None
    chosen = select(trace, ViewOptions(focus="done"))
    assert chosen.focus is not None and chosen.column_words == ("I", "did", "it")


@pytest.mark.parametrize(
    ("view", "message"),
    [
        (ViewOptions(head=3), "heads are numbered 1 to 2"),
        (ViewOptions(words=True), "words needs model"),
        (ViewOptions(focus="nope"), "not in the sentence"),
    ],
)
def test_views_that_do_not_exist_are_refused(view: ViewOptions, message: str) -> None:
    with pytest.raises(AttnvizError, match=message):
        select(attnviz.trace_attention("I am good"), view)


def test_hiding_every_token_and_layers_that_do_not_exist_are_refused() -> None:
    trace = attnviz.trace_attention(["[PAD]"])
    only_special = AttentionTrace(
        **{**vars(trace), "provenance": trace.provenance._replace(special=(0,))}
    )
    with pytest.raises(AttnvizError, match="would hide every token"):
        select(only_special, ViewOptions(hide_special=True))
    with pytest.raises(AttnvizError, match="layer needs model"):
        choose_layer((trace,), 1)
    with pytest.raises(AttnvizError, match="--layer needs --model"), command_line():
        choose_layer((trace,), 1)
    assert choose_layer((trace,), None) is trace
