"""`attnviz train --animate FILE.gif`: the focus rows over training, a frame per snapshot.

Each panel is one probe sentence in one layer: a bar for each word, the weight the focus word
gives it, the answer in green (the focus word in blue); each frame's title gives the step and
the held-out accuracy, and the footer what the model's answer is (a pointer readout's last row
is trained to be it). 1280 pixels wide, for a projector. matplotlib and Pillow (which
matplotlib brings) are imported here only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from attnviz.files import atomic_write
from attnviz.labels import percent
from attnviz.lesson.caveats import readout_note
from attnviz.render.figures.captions import caption_height, caption_lines, draw_caption
from attnviz.render.figures.fonts import text_width
from attnviz.render.figures.saving import new_figure, place_axes
from attnviz.render.figures.settings import draws
from attnviz.train import report
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Probe, Task

if TYPE_CHECKING:
    from matplotlib.container import BarContainer
    from matplotlib.figure import Figure
    from matplotlib.text import Text

MAX_FRAMES = 120  # longer runs are sampled evenly, the first and last snapshots kept
FRAME_MS = 120
LAST_FRAME_MS = 2500  # the result stays on screen before the loop starts again
FOCUS, ANSWER, OTHER = "#1f4e79", "#2e8b57", "#b0b8c0"
#: A GIF for a projector: 1280 pixels wide at 100 pixels an inch, its words readable at the back
#: of a room (16 points is 22 pixels).
WIDTH, DPI = 12.8, 100
MARGIN = 0.3  # inches around the picture
LEFT = 0.75  # inches left of the panels for the weights' axis
TITLE_FONT = 22.0  # points: the task, step and accuracy of each frame
PANEL_FONT = 16.0  # points: what each panel shows
WORD_FONT = 16.0  # points, the words under the bars, at most
AXIS_FONT = 13.0  # points, the weights' axis
FOOTER_FONT = 15.0  # points, what the model's answer is
PANEL = 1.15  # inches of bars in one panel
PANEL_TITLE = 1.6 * PANEL_FONT / 72  # inches above a panel's bars for what it shows
WORDS = 0.5  # inches under a panel's bars for its words


def frames_of(snapshots: Sequence[Snapshot]) -> list[Snapshot]:
    if len(snapshots) <= MAX_FRAMES:
        return list(snapshots)
    picks = np.linspace(0, len(snapshots) - 1, MAX_FRAMES).round().astype(int)
    return [snapshots[i] for i in sorted(set(picks.tolist()))]


def word_font(task: Task, width: float) -> float:
    """Points for the words under the bars: WORD_FONT, or less when the longest sentence's
    widest word would not fit its bar's share of ``width`` inches."""
    longest = max(len(probe.words) for probe in task.probes)
    widest = max(text_width(word, WORD_FONT) for probe in task.probes for word in probe.words)
    return WORD_FONT * min(1.0, 0.9 * (width / longest) / max(widest, 1e-6))


def footer_text(task: Task) -> list[str]:
    """What the green bar is: the model's answer by how it is read (a pointer's last row is
    trained to be it; an output layer's need not be looked at) — attnviz.lesson.caveats."""
    focus = task.probes[0].words[task.probes[0].focus]
    legend = f'Blue: "{focus}", the word whose row is shown; green: the answer the task asks for.'
    note = readout_note(task.readout.value, [focus], task.n_heads)
    return [legend, *([note] if note else [])]


class Frame(NamedTuple):
    """What every frame shares: the picture, its title (set frame by frame) and each panel's
    bars with the probe and layer whose row they show."""

    figure: Figure
    title: Text
    bars: list[tuple[BarContainer, Probe, int]]


@draws
def frame_figure(task: Task, n_layers: int) -> Frame:
    """The picture every frame is drawn on: a panel per probe sentence and layer, its bars at
    0, under a title left empty, over the footer saying what the model's answer is."""
    rows = len(task.probes) * n_layers
    panels_width = WIDTH - LEFT - MARGIN
    footer = caption_lines(footer_text(task), WIDTH - 2 * MARGIN, FOOTER_FONT)
    first_panel = MARGIN + 1.5 * TITLE_FONT / 72 + PANEL_TITLE
    step = PANEL + WORDS + PANEL_TITLE
    footer_top = first_panel + rows * step - PANEL_TITLE + 0.15
    height = round(footer_top + caption_height(footer, FOOTER_FONT) + MARGIN, 2)
    figure = new_figure(WIDTH, height)
    figure.set_dpi(DPI)  # a GIF for a screen: 1280 pixels wide
    title = figure.suptitle("", fontsize=TITLE_FONT, y=1 - MARGIN / height, va="top")
    font = word_font(task, panels_width)
    bars = []
    panel = 0
    for probe in task.probes:
        for layer in range(n_layers):
            axes = place_axes(figure, LEFT, first_panel + panel * step, panels_width, PANEL)
            panel += 1
            colours = [
                ANSWER if i == probe.answer else FOCUS if i == probe.focus else OTHER
                for i in range(len(probe.words))
            ]
            drawn = axes.bar(range(len(probe.words)), np.zeros(len(probe.words)), color=colours)
            axes.set_ylim(0, 1)
            axes.set_yticks([0, 0.5, 1])
            axes.tick_params(axis="y", labelsize=AXIS_FONT)
            axes.set_xticks(range(len(probe.words)), probe.words, fontsize=font)
            focus = report.quoted(probe.words[probe.focus])
            answer = report.quoted(probe.words[probe.answer])
            axes.set_title(
                f"layer {layer + 1}: where {focus} (blue) looks; green: {answer}, the answer",
                fontsize=PANEL_FONT,
                loc="left",
            )
            for spine in ("top", "right"):
                axes.spines[spine].set_visible(False)
            bars.append((drawn, probe, layer))
    draw_caption(figure, footer, MARGIN, footer_top, FOOTER_FONT)
    return Frame(figure, title, bars)


@draws
def save_animation(task: Task, snapshots: Sequence[Snapshot], path: Path) -> None:
    """Draw every frame, then write the GIF atomically (all frames or no file)."""
    from PIL import Image

    frames = frames_of(snapshots)
    figure, title, bars = frame_figure(task, frames[0].rows[0].shape[0])
    # The axes, words and titles are the same in every frame: drawn once, then each frame
    # restores that picture and draws only its bars and its title on it (blitting), about a
    # twentieth of the time of drawing the whole figure again.
    canvas = figure.canvas
    canvas.draw()
    background = canvas.copy_from_bbox(figure.bbox)  # type: ignore[attr-defined]
    # One palette for every frame, made once from a frame with every bar at full height (so
    # every bar's colour is in it): mapping a frame onto a palette takes a twentieth of the time
    # of choosing 64 colours for it anew, which was half the time of the whole GIF.
    for drawn, _, _ in bars:
        for rectangle in drawn:
            rectangle.set_height(1.0)
            rectangle.axes.draw_artist(rectangle)
    full_height = np.asarray(canvas.buffer_rgba())  # type: ignore[attr-defined]
    palette = Image.fromarray(full_height[..., :3].copy()).quantize(colors=64)
    images = []
    for snapshot in frames:
        canvas.restore_region(background)  # type: ignore[attr-defined]
        accuracy = percent(snapshot.accuracy)
        title.set_text(f"{task.name} · step {snapshot.step} · held-out accuracy {accuracy}")
        figure.draw_artist(title)
        for drawn, probe, layer in bars:
            index = task.probes.index(probe)
            for rectangle, weight in zip(drawn, snapshot.rows[index][layer, 0], strict=True):
                rectangle.set_height(float(weight))
                rectangle.axes.draw_artist(rectangle)
        rgba = np.asarray(canvas.buffer_rgba())  # type: ignore[attr-defined]
        frame = Image.fromarray(rgba[..., :3].copy())
        images.append(frame.quantize(palette=palette, dither=Image.Dither.NONE))
    durations = [FRAME_MS] * (len(images) - 1) + [LAST_FRAME_MS]

    def write(temporary: Path) -> None:
        with open(temporary, "wb") as stream:
            images[0].save(
                stream,
                format="GIF",
                save_all=True,
                append_images=images[1:],
                duration=durations,
                loop=0,
            )

    atomic_write(path, write)
