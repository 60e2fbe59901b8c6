"""attnviz.render.figures.compare_figure: the two rows of each head over the aligned words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.analysis.compare import align_words
from attnviz.render.figures.captions import caption_of
from attnviz.render.figures.compare_figure import (
    aligned_slots,
    build_comparison_figure,
    save_comparison_figure,
)
from render.pictures import assert_readable, words_of

TIRED = "The animal didn't cross the street because it was too tired"


def test_slots_keep_reading_order_with_the_words_that_differ_in_place() -> None:
    a = "the cat sat on the mat because it was tired".split()
    b = "the black cat sat because it was very tired".split()
    slots = aligned_slots(align_words(a, b), a, b)
    assert [slot.label for slot in slots] == [
        "the", "black (B)", "cat", "sat", "on (A)", "the (A)", "mat (A)", "because", "it",
        "was", "very (B)", "tired",
    ]  # fmt: skip
    assert slots[1].a is None and slots[4].b is None and (slots[2].a, slots[2].b) == (1, 2)


@pytest.mark.slow  # matplotlib draws and saves a picture
def test_one_panel_per_head_with_every_weight_printed(tmp_path: Path) -> None:
    pair = attnviz.compare(TIRED, TIRED.replace("tired", "wide"), model="coref")
    figure = build_comparison_figure(pair.comparison, top=5)
    assert len(figure.axes) == 2 + 1  # coref: 2 layers × 1 head, and the colour bar
    first = figure.axes[0]
    assert first.get_title(loc="left") == (
        "Layer 2, head 1 · TV 1.00 · moves from 'animal' to 'street'"
    )
    texts = [text.get_text() for text in first.texts]
    assert len(texts) == 2 * 10 + 2  # 10 shared words in both rows, tired in A, wide in B
    assert texts.count("1.00") == 2
    path = tmp_path / "compare.png"
    save_comparison_figure(pair.comparison, path, top=1)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not np.isnan(pair.comparison.heads[0].tv)


def test_with_words_in_another_order_every_word_has_one_slot() -> None:
    a = "the animal saw a cat near the street".split()
    b = "the street saw a dog near the animal".split()
    alignment = align_words(a, b)
    slots = aligned_slots(alignment, a, b)
    assert sorted(slot.a for slot in slots if slot.a is not None) == list(range(len(a)))
    assert sorted(slot.b for slot in slots if slot.b is not None) == list(range(len(b)))
    shared = [slot for slot in slots if slot.a is not None and slot.b is not None]
    assert all(a[slot.a] == b[slot.b] for slot in shared)  # type: ignore[index]


@pytest.mark.slow  # matplotlib draws the title
def test_the_title_names_both_sentences_the_weights_and_for_a_trained_model_the_caution() -> None:
    wide = TIRED.replace("tired", "wide")
    for model, cautioned in (("coref", True), (None, False)):
        pair = attnviz.compare(TIRED, wide, model=model)
        weights = pair.a.trace.provenance.weights
        figure = build_comparison_figure(
            pair.comparison, top=1, sentences=(TIRED, wide), weights=weights
        )
        title = words_of(figure)
        assert f"A: {TIRED}" in title and f"B: {wide}" in title
        assert f"weights: {weights.describe(with_layer=False)}" in title
        assert ("A caution:" in title) is cautioned
        assert len(figure.get_suptitle().splitlines()) <= 2
        assert_readable(figure)


@pytest.mark.slow  # matplotlib draws the title
def test_a_short_pair_keeps_its_panel_titles_clear_of_the_colour_bar() -> None:
    pair = attnviz.compare("I am good", "I am fine", focus="am")
    weights = pair.a.trace.provenance.weights
    sentences = ("I am good", "I am fine")
    figure = build_comparison_figure(pair.comparison, top=2, sentences=sentences, weights=weights)
    titles = [axes.get_title(loc="left") for axes in figure.axes[:2]]
    heads = pair.comparison.heads[:2]
    assert [title.split(" · ")[0] for title in titles] == [f"Layer 1, head {h.head}" for h in heads]
    assert any(" · moves from " in title for title in titles)  # wider than the cells
    title = "Where 'am' looks in sentences A and B: the heads that changed most\n"
    assert figure.get_suptitle().startswith(title)  # whole, not cut
    assert_readable(figure)


@pytest.mark.slow  # matplotlib draws the title
def test_the_panels_share_one_colour_bar_of_the_weights_0_to_1() -> None:
    pair = attnviz.compare(TIRED, TIRED.replace("tired", "wide"), model="coref")
    figure = build_comparison_figure(pair.comparison, top=2)
    images = [axes.get_images()[0] for axes in figure.axes if axes.get_images()]
    assert len(images) == 2
    colour_bar = images[0].colorbar
    assert colour_bar is not None and colour_bar.ax is figure.axes[-1]
    assert colour_bar.ax.get_ylim() == (0.0, 1.0)
    assert all(image.get_clim() == (0.0, 1.0) for image in images)  # one scale for every panel
    assert "weight (0–1)" in colour_bar.ax.get_ylabel()


@pytest.mark.slow  # matplotlib draws the title
@pytest.mark.parametrize(("model", "readout"), [("coref", "pointer"), ("coref-word", "word")])
def test_a_toy_models_comparison_says_what_its_answer_is(model: str, readout: str) -> None:
    from attnviz.lesson.caveats import readout_note

    wide = TIRED.replace("tired", "wide")
    pair = attnviz.compare(TIRED, wide, model=model)
    weights = pair.a.trace.provenance.weights
    figure = build_comparison_figure(
        pair.comparison, top=1, sentences=(TIRED, wide), weights=weights
    )
    other = "word" if readout == "pointer" else "pointer"
    assert readout_note(readout, ["it"]) in caption_of(figure)
    assert readout_note(other, ["it"]) not in caption_of(figure)
