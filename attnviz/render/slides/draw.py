"""A slide drawn with matplotlib, every styled run of its text set at its cell, and the slides
saved as SVG and PNG. matplotlib is imported inside the functions that draw."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from attnviz.lesson.blocks import Block
from attnviz.lesson.options import LessonOptions
from attnviz.outputs import make_folder
from attnviz.render.figures.settings import draws
from attnviz.render.slides.layout import (
    ADVANCE,
    ASCENT,
    BODY_TOP_PX,
    DESCENT,
    FONT,
    LINE_PX,
    MARGIN_PX,
    SLIDE_FILE,
    SLIDE_HEIGHT_PX,
    SLIDE_WIDTH_PX,
    TEXT_PX,
    THEME,
    TITLE_PX,
    TOP_PX,
    Slide,
    recorder,
)
from attnviz.render.slides.plan import plan_slides
from attnviz.render.terminal.theme import style_colours
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@draws
def save_slides(
    trace: AttentionTrace,
    selection: Selection,
    options: LessonOptions | None,
    folder: Path,
    *,
    blocks: Sequence[Block] | None = None,
) -> tuple[list[Path], tuple[str, ...]]:
    """Write every slide into ``folder`` (created if missing; outputs.check_folder has checked
    it) as NAME.svg and NAME.png, each atomically; the paths written, in lesson order, and a
    note when the folder holds slides this lesson did not write (they are left as they are)."""
    slides = plan_slides(trace, selection, options, blocks=blocks)
    make_folder(folder)
    written = []
    for slide in slides:
        paths = [folder / f"{slide.name}{extension}" for extension in (".svg", ".png")]
        save_slide(slide, *paths)
        written += paths
    from attnviz.render.figures import missing_glyphs_note

    words = [*trace.tokens, *(trace.key_tokens if trace.is_cross else ())]
    return written, (
        *_others_note(folder, written),
        *missing_glyphs_note(words, family=FONT, what="the slides' font"),
    )


@draws
def save_slide(slide: Slide, *paths: Path) -> None:
    """Draw ``slide`` once and write it to each of ``paths`` (.svg, .png), atomically and
    byte for byte the same each time (render/figures.py save_figure)."""
    from matplotlib import rc_context

    from attnviz.render.figures import save_figure

    figure = draw_slide(slide)
    for path in paths:
        with rc_context({"svg.fonttype": "path"}):  # glyphs as outlines: no font needed
            save_figure(figure, path)


@draws
def draw_slide(slide: Slide) -> Figure:
    """A 16:9 figure of ``slide`` (1920 × 1080 pixels as PNG): the title, then each line of
    text cell by cell, shaded cells filled edge to edge as in the terminal."""
    from attnviz.render.figures import DPI, new_figure

    figure = new_figure(
        SLIDE_WIDTH_PX / DPI, SLIDE_HEIGHT_PX / DPI, facecolor=THEME.background_color.hex
    )
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    axes.set_xlim(0, SLIDE_WIDTH_PX)
    axes.set_ylim(SLIDE_HEIGHT_PX, 0)  # pixels from the top left, as lines are counted
    axes.set_axis_off()
    console = recorder()
    title_px = _title_size(slide.title)
    title = _fit(slide.title, title_px)
    _draw_line(axes, title, console, top=TOP_PX, font_px=title_px, height=title_px)
    for row, line in enumerate(slide.lines):
        top = BODY_TOP_PX + row * LINE_PX
        _draw_line(axes, line, console, top=top, font_px=TEXT_PX, height=LINE_PX)
    return figure


# -- drawing ------------------------------------------------------------------------------------


def _title_size(title: Text) -> float:
    """TITLE_PX, or smaller (down to TEXT_PX) so that a long title still fits one line."""
    room = SLIDE_WIDTH_PX - 2 * MARGIN_PX
    return max(TEXT_PX, min(TITLE_PX, room / (max(1, title.cell_len) * ADVANCE)))


def _fit(title: Text, font_px: float) -> Text:
    """``title`` cut with an ellipsis when even at ``font_px`` it is wider than the slide: at
    a space when one is in its second half, so that no word is cut in the middle."""
    cells = int((SLIDE_WIDTH_PX - 2 * MARGIN_PX) / (font_px * ADVANCE))
    if title.cell_len <= cells:
        return title
    cut = title.copy()
    cut.truncate(cells - 1)
    space = cut.plain.rstrip().rfind(" ")
    if space > len(cut.plain) // 2:
        cut = cut[: space + 1]
    cut.append("…", style=title.get_style_at_offset(recorder(), len(cut) - 1))
    return cut


class _Fill(NamedTuple):
    """A background colour behind ``width`` cells of a line, from ``cell``."""

    cell: int
    width: int
    colour: str


class _Run(NamedTuple):
    """Text of one colour and face set from ``cell``, one cell per character."""

    cell: int
    text: str
    colour: str
    bold: bool
    italic: bool


def _pieces(line: Text, console: Console) -> tuple[list[_Fill], list[_Run]]:
    """A line of styled text as the backgrounds and the runs of text to draw: neighbouring
    characters of the same colour and face in one run, whatever their backgrounds (so a row
    of shaded cells is a few runs, not one per cell), a wide character alone on its cells."""
    fills: list[_Fill] = []
    runs: list[_Run] = []
    cell = 0
    # A Text's own style is its segments' base (Text.render leaves it out).
    base = console.get_style(line.style) if line.style else None
    for segment in Segment.apply_style(line.render(console), base):
        style = segment.style or Style.null()
        colour, background = _colours(style)
        width = cell_len(segment.text)
        if background is not None:
            fills.append(_Fill(cell, width, background))
        face = (colour, bool(style.bold), bool(style.italic))
        for offset, text in _runs(segment.text):
            last = runs[-1] if runs else None
            joins = (
                last is not None
                and (last.colour, last.bold, last.italic) == face
                and last.cell + len(last.text) == cell + offset
                and cell_len(last.text) == len(last.text)
                and cell_len(text) == len(text)
            )
            if last is not None and joins:
                runs[-1] = last._replace(text=last.text + text)
            else:
                runs.append(_Run(cell + offset, text, *face))
        cell += width
    return fills, [run for run in runs if run.text.strip()]


def _draw_line(
    axes: Axes, line: Text, console: Console, *, top: float, font_px: float, height: float
) -> None:
    """One line of styled text whose box starts ``top`` pixels down and is ``height`` tall:
    each run at its cell, as in the terminal; backgrounds fill their cells edge to edge."""
    from matplotlib.patches import Rectangle

    from attnviz.render.figures import DPI

    advance = font_px * ADVANCE
    baseline = top + (height - (ASCENT + DESCENT) * font_px) / 2 + ASCENT * font_px
    fills, runs = _pieces(line, console)
    for fill in fills:
        axes.add_patch(
            Rectangle(
                (MARGIN_PX + fill.cell * advance, top),
                fill.width * advance,
                height,
                facecolor=fill.colour,
                linewidth=0,
                antialiased=False,  # neighbouring cells meet with no seam between them
            )
        )
    for run in runs:
        axes.text(
            MARGIN_PX + run.cell * advance,
            baseline,
            run.text,
            color=run.colour,
            fontfamily=FONT,
            fontsize=font_px * 72 / DPI,  # points
            fontweight="bold" if run.bold else "normal",
            fontstyle="italic" if run.italic else "normal",
            va="baseline",
            ha="left",
            parse_math=False,  # "$" is a dollar sign, never TeX
        )


def _runs(text: str) -> list[tuple[int, str]]:
    """``text`` as runs of one-cell characters, each with the cell it starts at; a character
    of another width (a wide one, two cells) is a run of its own, so that what follows it
    stays on its cells whatever width the font gives it. A zero-width mark stays with the
    character before it."""
    runs: list[tuple[int, str]] = []
    cell = 0
    single = False  # whether the last run holds one-cell characters only
    for char in text:
        width = cell_len(char)
        if runs and (width == 0 or (width == 1 and single)):
            start, run = runs[-1]
            runs[-1] = (start, run + char)
        else:
            runs.append((cell, char))
            single = width == 1
        cell += width
    return runs


def _colours(style: Style) -> tuple[str, str | None]:
    """The text colour and background colour (None: the slide's own) of a terminal style, as
    --svg draws it (render/terminal/theme.py)."""
    colour, background = style_colours(style, THEME)
    return colour.hex, None if background is None else background.hex


def _others_note(folder: Path, written: Sequence[Path]) -> tuple[str, ...]:
    """A note naming slide files in ``folder`` that this lesson did not write (an earlier,
    longer lesson's, say): they are kept, but are not part of these slides."""
    ours = {path.name for path in written}
    others = sorted(
        path.name
        for path in folder.iterdir()
        if SLIDE_FILE.fullmatch(path.name) and path.name not in ours
    )
    if not others:
        return ()
    shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
    return (
        f"{folder} also holds {len(others)} slide files that these slides are not ({shown}); "
        "they were left as they are.",
    )
