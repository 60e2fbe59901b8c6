"""What the tests of pictures share: sentences, traces, and checks that a figure is readable."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

import attnviz
from attnviz.render.figures.captions import caption_of
from attnviz.render.figures.words import word_label_texts
from attnviz.tokens import Focus, find_focus
from attnviz.trace import AttentionTrace

IT_SENTENCE = "The animal didn't cross the street because it was too tired"
WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()
SIXTY = " ".join([*WORDS, *WORDS, "and", "then", "it", "was", "over", "now", "ok", "end"])


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
    # The suptitle has no public getter; the caption is one of the figure's own texts.
    for text in [*texts, figure._suptitle, *figure.texts]:  # type: ignore[attr-defined]
        if text.get_text():
            box = text.get_window_extent(renderer)
            assert inner.contains(box.x0, box.y0) and inner.contains(box.x1, box.y1), text
    # An axis title is clear of the words along its axis.
    for axes in figure.axes:
        for name, title in (("x", axes.xaxis.label), ("y", axes.yaxis.label)):
            if title.get_visible() and title.get_text():
                box = title.get_window_extent(renderer)
                for label in labels_of(axes, x=name == "x"):
                    assert not box.overlaps(label.get_window_extent(renderer)), (
                        title.get_text(),
                        label.get_text(),
                    )
    # A panel's titles (a matplotlib Axes has three places for one) cover no other panel.
    for axes in figure.axes:
        titles = [axes.title, axes._left_title, axes._right_title]  # type: ignore[attr-defined]
        for title in (title for title in titles if title.get_text()):
            box = title.get_window_extent(renderer)
            for other in (other for other in figure.axes if other is not axes):
                assert not box.overlaps(other.get_window_extent(renderer)), title.get_text()
    # The title and the caption cover no panel, nor its words, numbers or titles.
    for text in [figure._suptitle, *figure.texts]:  # type: ignore[attr-defined]
        if not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        for axes in figure.axes:
            drawn = axes.get_tightbbox(renderer)
            assert drawn is None or not box.overlaps(drawn), (text.get_text(), axes.get_title())


def words_of(figure: Figure) -> str:
    """Everything the figure says in words, its title and then its caption, as one line."""
    return " ".join([*figure.get_suptitle().split(), caption_of(figure)]).strip()


def summary_panel(figure: Figure) -> Axes:
    return next(axes for axes in figure.axes if axes.get_title().startswith("Where"))


def tick_texts(axes: Axes, x: bool) -> list[str]:
    return [t.get_text() for t in labels_of(axes, x=x)]
