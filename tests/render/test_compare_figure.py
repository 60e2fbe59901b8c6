"""attnviz.render.compare_figure: the two rows of each head over the aligned words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.analysis.compare import align_words
from attnviz.render.compare_figure import (
    aligned_slots,
    build_comparison_figure,
    save_comparison_figure,
)

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
    assert len(figure.axes) == 2  # coref: 2 layers × 1 head
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
        title = " ".join(figure.get_suptitle().split())
        assert f"A: {TIRED}" in title and f"B: {wide}" in title
        assert f"weights: {weights.describe(with_layer=False)}" in title
        assert ("A caution:" in title) is cautioned
