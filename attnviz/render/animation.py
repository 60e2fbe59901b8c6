"""`attnviz train --animate FILE.gif`: the focus rows over training, a frame per snapshot.

Each panel is one probe sentence in one layer: a bar for each word, the weight the focus word
gives it, the answer in green (the focus word in blue); each frame's title gives the step and
the held-out accuracy. matplotlib and Pillow (which matplotlib brings) are imported here only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from attnviz.files import atomic_write
from attnviz.render.figures.saving import new_figure
from attnviz.train import report
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Task

MAX_FRAMES = 120  # longer runs are sampled evenly, the first and last snapshots kept
FRAME_MS = 120
LAST_FRAME_MS = 2500  # the result stays on screen before the loop starts again
FOCUS, ANSWER, OTHER = "#1f4e79", "#2e8b57", "#b0b8c0"


def frames_of(snapshots: Sequence[Snapshot]) -> list[Snapshot]:
    if len(snapshots) <= MAX_FRAMES:
        return list(snapshots)
    picks = np.linspace(0, len(snapshots) - 1, MAX_FRAMES).round().astype(int)
    return [snapshots[i] for i in sorted(set(picks.tolist()))]


def save_animation(task: Task, snapshots: Sequence[Snapshot], path: Path) -> None:
    """Draw every frame, then write the GIF atomically (all frames or no file)."""
    from PIL import Image

    frames = frames_of(snapshots)
    n_layers = frames[0].rows[0].shape[0]
    rows = len(task.probes) * n_layers
    width = max(6.0, 0.55 * max(len(p.words) for p in task.probes) + 1.5)
    figure = new_figure(width, 1.0 + 1.35 * rows)
    figure.set_dpi(80)  # a GIF for a screen: 80 pixels an inch keeps it small
    title = figure.suptitle("", fontsize=13)
    bars = []
    panel = 0
    for probe in task.probes:
        for layer in range(n_layers):
            axes = figure.add_subplot(rows, 1, panel + 1)
            panel += 1
            colours = [
                ANSWER if i == probe.answer else FOCUS if i == probe.focus else OTHER
                for i in range(len(probe.words))
            ]
            drawn = axes.bar(range(len(probe.words)), np.zeros(len(probe.words)), color=colours)
            axes.set_ylim(0, 1)
            axes.set_yticks([0, 0.5, 1])
            axes.set_xticks(range(len(probe.words)), probe.words, fontsize=9)
            focus = report.quoted(probe.words[probe.focus])
            answer = report.quoted(probe.words[probe.answer])
            axes.set_title(
                f"layer {layer + 1}: where {focus} (blue) looks; green: {answer}, the answer",
                fontsize=10,
                loc="left",
            )
            for spine in ("top", "right"):
                axes.spines[spine].set_visible(False)
            bars.append((drawn, probe, layer))
    figure.subplots_adjust(
        left=0.07, right=0.98, top=1 - 0.7 / (1.0 + 1.35 * rows), bottom=0.04, hspace=0.9
    )
    # The axes, words and titles are the same in every frame: drawn once, then each frame
    # restores that picture and draws only its bars and its title on it (blitting), about a
    # twentieth of the time of drawing the whole figure again.
    canvas = figure.canvas
    canvas.draw()
    background = canvas.copy_from_bbox(figure.bbox)  # type: ignore[attr-defined]
    images = []
    for snapshot in frames:
        canvas.restore_region(background)  # type: ignore[attr-defined]
        accuracy = report.percent(snapshot.accuracy)
        title.set_text(f"{task.name} · step {snapshot.step} · held-out accuracy {accuracy}")
        figure.draw_artist(title)
        for drawn, probe, layer in bars:
            index = task.probes.index(probe)
            for rectangle, weight in zip(drawn, snapshot.rows[index][layer, 0], strict=True):
                rectangle.set_height(float(weight))
                rectangle.axes.draw_artist(rectangle)
        rgba = np.asarray(canvas.buffer_rgba())  # type: ignore[attr-defined]
        images.append(Image.fromarray(rgba[..., :3].copy()).quantize(colors=64))
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
