"""The words along a panel's edges: thinned, cut, named like the terminal, turned only when
they must."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.axes import Axes

from attnviz.render.figures import words
from attnviz.render.figures.heatmap import build_figure
from attnviz.render.figures.words import label_positions, short_label, tick_step
from render.pictures import (
    IT_SENTENCE,
    assert_readable,
    it_focus,
    labels_of,
    summary_panel,
    trace_of,
)

from support import shown


@pytest.mark.parametrize(
    ("n_labels", "max_labels", "step"),
    [(2, 40, 1), (40, 40, 1), (41, 40, 2), (60, 40, 2), (60, 20, 3), (200, 40, 5), (5, 0, 5)],
)
def test_tick_step_shows_at_most_max_labels(n_labels: int, max_labels: int, step: int) -> None:
    assert tick_step(n_labels, max_labels) == step


def test_label_positions_thin_and_keep_the_focus_word() -> None:
    assert label_positions(6, 1) == [0, 1, 2, 3, 4, 5]
    assert label_positions(10, 3) == [0, 3, 6, 9]
    assert label_positions(10, 3, keep=5) == [0, 5, 9]  # 3 and 6 are too close to 5
    assert label_positions(10, 3, keep=6) == [0, 3, 6, 9]


@pytest.mark.slow
@given(n_labels=st.integers(1, 300), step=st.integers(1, 20), data=st.data())
def test_label_positions_are_spaced_at_least_a_step(
    n_labels: int, step: int, data: st.DataObject
) -> None:
    keep = data.draw(st.none() | st.integers(0, n_labels - 1))
    positions = label_positions(n_labels, step, keep)
    assert positions == sorted(set(positions))
    assert all(0 <= p < n_labels for p in positions)
    assert all(b - a >= step for a, b in zip(positions, positions[1:], strict=False))
    if keep is not None:
        assert keep in positions
    assert len(positions) <= -(-n_labels // step) + 1


def test_short_label_cuts_long_words_with_an_ellipsis() -> None:
    assert short_label("good") == "good"
    label = short_label("supercalifragilisticexpialidocious")
    assert len(label) == words.MAX_LABEL_CHARS and label.endswith("…")


def test_word_labels_name_pieces_as_the_terminal_does() -> None:
    pieces = ["[CLS]", "token", "##ization", "didn", "'", "t", "go", "[SEP]"]
    assert words.word_labels(pieces) == pieces  # WordPiece's own "##", nothing added
    assert words.word_labels(["a", "b", "a"]) == ["a:1", "b", "a:2"]
    assert words.word_labels(["didn", "'t"]) == ["didn", "'t"]  # GPT-2's pieces: no mark either
    assert words.word_labels(["a\x1b"]) == ["a\\x1b"]  # control characters escaped


def test_the_title_explains_hashes_only_where_a_continued_piece_is_drawn() -> None:
    labels = ["token", "##ization", "##"]
    assert words.any_continued(labels, [0, 1])
    assert not words.any_continued(labels, [0])  # "##ization" not drawn
    assert not words.any_continued(labels, [2])  # "##" typed as a word continues nothing


def x_rotations(axes: Axes) -> set[float]:
    return {text.get_rotation() for text in labels_of(axes, x=True)}


@pytest.mark.slow
def test_labels_are_horizontal_when_they_fit_and_turn_only_when_they_must() -> None:
    short = trace_of("I am good")
    figure = build_figure(short, shown(short, (0, 1), None))
    assert x_rotations(figure.axes[0]) == {0.0}
    long = trace_of("internationalisation of extraordinarily uncharacteristically long words")
    figure = build_figure(long, shown(long, (0, 1), None))
    assert x_rotations(figure.axes[0]) == {90.0}  # a word wider than its cell
    assert_readable(figure)
    eleven = trace_of(IT_SENTENCE)
    focus_panel = summary_panel(build_figure(eleven, shown(eleven, (0, 1), it_focus(eleven))))
    assert x_rotations(focus_panel) == {0.0}  # the focus panel's wider cells hold them flat
