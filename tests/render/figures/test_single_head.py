"""One head's picture: a 1920 × 1080 landscape for a projector, the heatmap on the left, the
focus word's bars and the caption on the right, a title of two lines at most, every text large
enough for the back of a room, and a caption that says what a toy model's answer is."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import attnviz
from attnviz.lesson.caveats import readout_note
from attnviz.render.figures.captions import caption_of
from attnviz.render.figures.heatmap import build_figure, save_heatmap
from attnviz.render.figures.saving import DPI
from attnviz.render.figures.single_head_layout import MIN_ROOM_FONT
from attnviz.render.figures.words import word_label_texts
from attnviz.tokens import find_focus
from attnviz.trace import AttentionTrace
from render.pictures import (
    IT_SENTENCE,
    WORDS,
    assert_readable,
    distinct_colours,
    it_focus,
    labels_of,
    summary_panel,
    trace_of,
    words_of,
)

from support import shown

EIGHTEEN = (
    "the extraordinarily sleepy animal did not cross the busy street because it was too "
    "tired to walk any further"
)
SENTENCES = {
    "3 words": "I am good",
    "11 words": IT_SENTENCE,
    "18 words": EIGHTEEN,
    "26 words": " ".join(WORDS),
}
POINTER = readout_note("pointer", ["it"])
WORD = readout_note("word", ["it"])


def one_head(sentence: str, focus: str | None = "it") -> Figure:
    trace = trace_of(sentence)
    chosen = find_focus(trace.tokens, focus) if focus and focus in trace.tokens else None
    return build_figure(trace, shown(trace, (1,), chosen))


def bars(figure: Figure) -> Axes:
    return summary_panel(figure)


def bar_lengths(axes: Axes) -> list[float]:
    return [bar.get_width() for bar in axes.patches if not bar.get_hatch()]


@pytest.mark.slow
@pytest.mark.parametrize("name", SENTENCES)
@pytest.mark.parametrize("focus", [True, False])
def test_one_head_is_a_1920_by_1080_landscape_with_a_title_of_two_lines(
    name: str, focus: bool
) -> None:
    figure = one_head(SENTENCES[name], "it" if focus else None)
    width, height = figure.get_size_inches() * DPI
    assert (round(width), round(height)) == (1920, 1080)
    assert len(figure.get_suptitle().splitlines()) <= 2
    assert_readable(figure)


@pytest.mark.slow
@pytest.mark.parametrize("name", SENTENCES)
def test_every_word_of_one_head_is_large_enough_for_the_back_of_a_room(name: str) -> None:
    """Titles, word labels, axis titles, the bars' numbers and the caption at MIN_ROOM_FONT
    points or more (21 px at 150 dpi); the heatmap's own cells print their weights only where
    they fit, as in every heatmap."""
    figure = one_head(SENTENCES[name])
    texts = [figure._suptitle, *figure.texts]  # type: ignore[attr-defined]
    for axes in figure.axes:
        texts += [axes.title, axes.xaxis.label, axes.yaxis.label, *axes.texts]
        texts += [*axes.get_xticklabels(), *axes.get_yticklabels()]
    sizes = {text.get_text(): text.get_fontsize() for text in texts if text.get_text()}
    small = {text: size for text, size in sizes.items() if size < MIN_ROOM_FONT}
    assert small == {}
    assert len(sizes) > 10


@pytest.mark.slow
def test_up_to_20_words_every_word_is_labelled_on_both_axes_and_beside_its_bar() -> None:
    figure = one_head(EIGHTEEN)
    heatmap = figure.axes[0]
    words = EIGHTEEN.split()
    assert len(labels_of(heatmap, x=True)) == len(labels_of(heatmap, x=False)) == len(words)
    assert len(labels_of(bars(figure), x=False)) == len(words)


@pytest.mark.slow
def test_the_bars_are_the_focus_words_row_and_name_it_in_bold() -> None:
    trace = trace_of(IT_SENTENCE)
    focus = it_focus(trace)
    figure = build_figure(trace, shown(trace, (1,), focus))
    panel = bars(figure)
    assert panel.get_title() == 'Where "it" looks'
    assert bar_lengths(panel) == pytest.approx(trace.weights[1, focus.index])
    bold = [t.get_text() for t in labels_of(panel, x=False) if t.get_fontweight() == "bold"]
    assert bold == ["it"]
    words = word_label_texts(panel, x=False)
    printed = [text.get_text().strip() for text in panel.texts if text not in words]
    assert printed == [f"{w:.2f}" for w in trace.weights[1, focus.index]]
    assert len(figure.axes) == 3  # the heatmap, its colour bar, the bars


def test_without_a_focus_word_the_right_side_is_the_caption_alone() -> None:
    figure = one_head("I am good", focus=None)
    assert len(figure.axes) == 2  # the heatmap and its colour bar
    assert "Each row sums to 1; d_model 8, 2 heads, d_k 4." in caption_of(figure)


@pytest.mark.slow
def test_a_masked_key_is_a_hatched_bar_not_a_zero() -> None:
    trace = trace_of("The cat sat on it")
    causal = replace(trace, mask=np.tril(np.ones((5, 5), dtype=bool)))
    focus = find_focus(causal.tokens, "sat")
    panel = bars(build_figure(causal, shown(causal, (0,), focus)))
    hatched = [bar for bar in panel.patches if bar.get_hatch()]
    assert [round(bar.get_y() + bar.get_height() / 2) for bar in hatched] == [3, 4]
    words = word_label_texts(panel, x=False)
    printed = [text.get_text().strip() for text in panel.texts if text not in words]
    assert len(printed) == 3  # "The", "cat", "sat": no number for a masked key


@pytest.mark.slow
def test_one_head_png_is_1920_by_1080_pixels(tmp_path: Path) -> None:
    trace = trace_of(IT_SENTENCE)
    path = tmp_path / "one.png"
    save_heatmap(trace, shown(trace, (0,), it_focus(trace)), path)
    pixels = matplotlib.image.imread(path)
    assert pixels.shape[:2] == (1080, 1920)
    assert distinct_colours(pixels) > 100  # not blank


def coref_figure(model: str, *, focus: str | None = "it", head: int | None = None) -> Figure:
    shown_run = attnviz.explain(IT_SENTENCE, model=model, focus=focus)
    figure = attnviz.heatmap(shown_run, head=head)
    assert isinstance(figure, Figure)
    return figure


@pytest.mark.slow
@pytest.mark.parametrize("focus", ["it", None, "animal"])
def test_a_coref_picture_says_its_row_is_the_answer_by_construction(focus: str | None) -> None:
    """Whatever word the picture follows, the caption says the pointer readout's sentence."""
    assert POINTER is not None and WORD is not None
    figure = coref_figure("coref", focus=focus)
    caption = caption_of(figure)
    assert POINTER in caption and WORD not in caption
    assert len(figure.get_suptitle().splitlines()) <= 2
    assert_readable(figure)


@pytest.mark.slow
def test_a_coref_word_picture_says_where_it_looks_need_not_be_the_answer() -> None:
    assert POINTER is not None and WORD is not None
    caption = caption_of(coref_figure("coref-word"))
    assert WORD in caption and POINTER not in caption
    assert "by construction" not in caption


@pytest.mark.slow
def test_pictures_of_other_weights_say_nothing_of_a_readout() -> None:
    random = attnviz.heatmap(attnviz.explain(IT_SENTENCE, head=1))
    assert isinstance(random, Figure)
    assert "answer" not in words_of(random)


@pytest.mark.slow
def test_an_exported_coref_layer_read_back_keeps_its_sentence(tmp_path: Path) -> None:
    from attnviz.trace_files import export_trace, load_trace

    layer: AttentionTrace = attnviz.explain(IT_SENTENCE, model="coref").trace
    path = tmp_path / "coref.npz"
    export_trace(layer, path)
    (again,) = load_trace(path)
    figure = build_figure(again, shown(again, (0,), it_focus(again)))
    assert POINTER is not None and POINTER in caption_of(figure)


@pytest.mark.slow
@pytest.mark.parametrize("measure", ["weights", "rollout"])
def test_a_models_word_pieces_fit_one_heads_picture(measure: str) -> None:
    from support import has_model_extra

    if not has_model_extra():
        pytest.skip("needs the optional extra attnviz[model]")
    shown_run = attnviz.explain(IT_SENTENCE, model="minilm", layer=6, focus="it")
    figure = attnviz.heatmap(shown_run, head=None if measure == "rollout" else 12, measure=measure)
    assert isinstance(figure, Figure)
    assert (figure.get_size_inches() * DPI).round().tolist() == [1920, 1080]
    assert_readable(figure)  # 15 pieces, "because" turned at the labels' largest size


@pytest.mark.slow
def test_a_coref_picture_of_a_sentence_without_it_calls_no_row_the_answer() -> None:
    figure = attnviz.heatmap(attnviz.explain("the animal crossed the street", model="coref"))
    assert isinstance(figure, Figure)
    caption = caption_of(figure)
    assert "this sentence has none, so no row here is an answer" in caption
    assert POINTER is not None and POINTER not in caption
