"""`attnviz train --animate`: a GIF at least 1280 pixels wide, its words large enough for a room,
and a footer that says what the model's answer is, as its readout makes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from attnviz.api import train as training
from attnviz.lesson.caveats import readout_note
from attnviz.render.figures.captions import caption_of
from attnviz.render.live.animation import AXIS_FONT, frame_figure, save_animation
from attnviz.train.tasks import Readout
from render.pictures import distinct_colours


@pytest.mark.slow
def test_the_gif_is_at_least_1280_pixels_wide_and_no_taller_than_a_screen(
    tmp_path: Path,
) -> None:
    trained = training.train("coref", steps=3, until=None)
    path = tmp_path / "coref.gif"
    save_animation(trained.task, trained.snapshots, path)
    with Image.open(path) as animation:
        width, height = animation.size
        assert width >= 1280 and height <= 1080
        assert animation.n_frames == len(trained.snapshots)
        animation.seek(animation.n_frames - 1)
        last = np.asarray(animation.convert("RGB"), dtype=np.float64) / 255
    assert distinct_colours(last) > 5  # bars, words and text, not a blank frame


@pytest.mark.parametrize(("readout", "other"), [("pointer", "word"), ("word", "pointer")])
def test_the_footer_says_what_the_models_answer_is(readout: str, other: str) -> None:
    task = training.make_task("coref", readout)
    assert task.readout is Readout(readout)
    footer = caption_of(frame_figure(task, task.n_layers).figure)
    assert readout_note(readout, ["it"]) in footer
    assert readout_note(other, ["it"]) not in footer


@pytest.mark.slow
@pytest.mark.parametrize("name", ["coref", "reverse", "induction"])
def test_every_word_is_readable_and_none_overlaps(name: str) -> None:
    task = training.make_task(name)
    figure, title, bars = frame_figure(task, task.n_layers)
    title.set_text(f"{task.name} · step 400 · held-out accuracy 100.0%")
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    texts = [title, *figure.texts]
    for axes in figure.axes:
        words = [label for label in axes.get_xticklabels() if label.get_text()]
        boxes = sorted((label.get_window_extent(renderer) for label in words), key=lambda b: b.x0)
        assert not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:], strict=False)), name
        texts += [axes.title, *words, *axes.get_yticklabels()]
    page = figure.bbox
    for text in (text for text in texts if text.get_text()):
        assert text.get_fontsize() >= AXIS_FONT, text.get_text()
        box = text.get_window_extent(renderer)
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, text.get_text()
        assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, text.get_text()
    assert len(bars) == len(task.probes) * task.n_layers
