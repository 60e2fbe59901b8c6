"""Line figures (the √d_k experiment, the focus word's lines), with matplotlib's object API.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from attnviz.errors import AttnvizError, option
from attnviz.lesson.caveats import short_attention_caveat
from attnviz.render.figures import image_format_of, new_figure, save_figure
from attnviz.render.figures.captions import caption_height, draw_caption
from attnviz.render.figures.fonts import truncate_words
from attnviz.render.figures.measures import is_trained
from attnviz.render.figures.settings import draws
from attnviz.render.figures.titles import FigureText, readout_sentences
from attnviz.results import ScalingRow
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@draws
def save_scaling_plot(rows: Sequence[ScalingRow], path: Path, *, n_keys: int) -> None:
    """Three panels against d_k (log scale): largest weight, entropy, gradient size; each with
    and without ÷√d_k. Written atomically, in the format the extension names."""
    image_format_of(path)
    d_ks = [row.d_k for row in rows]
    figure = new_figure(14, 3.6, layout="constrained")
    panels = (
        ("variance of the scores", "score_variance", None),
        ("largest softmax weight", "max_weight", (0, 1.05)),
        ("softmax entropy (nats)", "entropy", (0, 1.08 * math.log(n_keys))),
        ("gradient size ‖∂w/∂s‖", "gradient", (0, None)),
    )
    for index, (title, field, limits) in enumerate(panels):
        axes = figure.add_subplot(1, 4, index + 1)
        axes.plot(d_ks, [getattr(r.unscaled, field) for r in rows], "o-", color="#d95f02",
                  label="q·k")  # fmt: skip
        axes.plot(d_ks, [getattr(r.scaled, field) for r in rows], "s-", color="#1b9e77",
                  label="q·k / √d_k")  # fmt: skip
        axes.set_xscale("log", base=2)
        axes.set_xticks(d_ks, [str(d) for d in d_ks])
        axes.set_xlabel("d_k")
        axes.set_title(title)
        if field == "score_variance":
            axes.set_yscale("log", base=2)
        if limits is not None:
            axes.set_ylim(*limits)
        if field == "entropy":
            axes.axhline(math.log(n_keys), color="grey", linestyle=":", label=f"flat: ln {n_keys}")
        axes.grid(alpha=0.3)
        if index in (0, 2):
            axes.legend(fontsize=8)
    figure.suptitle(f"Why divide by √d_k: softmax over {n_keys} keys, random unit-variance q and k")
    save_figure(figure, path)


LINES_TITLE_FONT = 10.0  # points, the lines figure's title
LINES_CAPTION_FONT = 9.0  # points, its caption
LINES_MARGIN = 0.15  # inches around the caption

# Okabe–Ito: distinguishable with every common colour-vision deficiency.
HEAD_COLOURS = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#F0E442",
    "#000000",
)


@draws
def save_lines_figure(trace: AttentionTrace, selection: Selection, path: Path) -> None:
    """build_lines_figure, written atomically in the format the extension names."""
    image_format_of(path)
    save_figure(build_lines_figure(trace, selection), path)


@draws
def build_lines_figure(trace: AttentionTrace, selection: Selection) -> Figure:
    """The classic illustration: the sentence written twice, and from the focus word on the
    left a line to every word on the right, as thick and as opaque as its attention weight,
    one colour per head of the selection."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from matplotlib.lines import Line2D

    heads, focus, focus_row = selection.heads, selection.focus, selection.focus_row
    if focus is None or focus_row is None:
        raise AttnvizError(
            f"{option('style', 'lines')} follows one word: name it with "
            f"{option('focus', metavar='WORD')} (the default, 'it', is not in the sentence)."
        )
    if len(heads) > len(HEAD_COLOURS):
        raise AttnvizError(
            f"{option('style', 'lines')} gives each head its own colour and has "
            f"{len(HEAD_COLOURS)}; this trace has {len(heads)} heads, so pick one with "
            f"{option('head')}."
        )
    weights = selection.focus_weights(trace.weights)
    queries = [printable(word) for word in selection.row_words]
    keys = [printable(word) for word in selection.column_words]
    rows = max(len(queries), len(keys))
    height = min(max(2.5, 0.32 * rows + 1.6), 40.0)
    figure = new_figure(6.4, height, layout="constrained")
    axes = figure.add_subplot()
    font = 11 if rows <= 30 else max(5, 11 - (rows - 30) // 10)
    for row, word in enumerate(queries):
        weight = "bold" if row == focus_row else "normal"
        axes.text(0.0, -row, word, ha="right", va="center", fontsize=font, fontweight=weight)
    for row, word in enumerate(keys):
        axes.text(1.0, -row, word, ha="left", va="center", fontsize=font)
    handles = []
    # Each head's lines end a little apart, so heads going to the same word stay visible.
    spread = min(0.6 / max(len(heads), 1), 0.15)
    for rank, head in enumerate(heads):
        colour = HEAD_COLOURS[rank % len(HEAD_COLOURS)]
        offset = (rank - (len(heads) - 1) / 2) * spread
        for column, weight in enumerate(weights[head]):
            if weight < 0.005:
                continue
            axes.plot(
                [0.03, 0.97],
                [-focus_row + offset, -column + offset],
                color=colour,
                linewidth=0.5 + 9.0 * float(weight),
                alpha=min(1.0, 0.35 + 0.65 * float(weight)),
                solid_capstyle="round",
            )
        handles.append(Line2D([], [], color=colour, linewidth=4, label=f"head {head + 1}"))
    axes.set_xlim(-0.45, 1.45)
    axes.set_ylim(-rows + 0.4, 1.6)  # room above the first word for the legend
    axes.axis("off")
    axes.legend(handles=handles, loc="upper center", ncol=min(4, len(handles)), frameon=False,
                bbox_to_anchor=(0.5, 1.0), fontsize=9)  # fmt: skip
    origin = trace.provenance.weights
    kind = "random weights, not learned" if origin.is_random else printable(origin.describe())
    about = f"Where “{printable(focus.word)}” looks: line thickness and opacity = attention weight"
    text = FigureText(
        partial(truncate_words, about),
        about=(kind,),
        # A trained model's lines are read as explanations: the caution, and what a toy
        # model's answer is, in the caption.
        notes=(
            *readout_sentences(origin, trace.n_heads, trace.tokens),
            *([short_attention_caveat()] if is_trained(trace) else []),
        ),
    )
    room = figure.get_figwidth() - 2 * LINES_MARGIN
    caption = text.caption((room, LINES_TITLE_FONT), room, LINES_CAPTION_FONT)
    if caption:
        # The caption under the lines: the picture grows by its height, the lines keep theirs.
        below = caption_height(caption, LINES_CAPTION_FONT) + 2 * LINES_MARGIN
        figure.set_figheight(height + below)
        engine = figure.get_layout_engine()
        assert isinstance(engine, ConstrainedLayoutEngine)  # as new_figure was asked
        engine.set(rect=(0, below / (height + below), 1, 1 - below / (height + below)))
        draw_caption(figure, caption, LINES_MARGIN, height + LINES_MARGIN, LINES_CAPTION_FONT)
    figure.suptitle("\n".join(text.title(room, LINES_TITLE_FONT)), fontsize=LINES_TITLE_FONT)
    return figure
