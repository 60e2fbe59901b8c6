"""Slides of the lesson (--slides DIR): one 16:9 picture per step, and per head where a step
shows several heads, each as SVG and as PNG, for a projector.

A slide shows what the terminal shows of its step: the step's blocks (attnviz/lesson/) are
drawn by render/terminal.py into a Rich console recording in truecolor, and every styled run
of that text is set at its cell with matplotlib, in the colours Rich's own SVG export (--svg)
gives the terminal's styles on its dark background. The font is DejaVu Sans Mono, which
matplotlib ships, and the SVG keeps the text as paths: a slide looks the same on any machine,
offline.

Sizes are for the back row: a PNG is 1920 × 1080 pixels and the text is set at 32 px (44 px for
titles), so a line of it is about 37 px tall. A step longer than a slide goes on over the next
ones, titled "(continued)"; the text never shrinks to fit.

matplotlib is imported inside the functions that draw.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rich.cells import cell_len
from rich.color import blend_rgb
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.terminal_theme import SVG_EXPORT_THEME, TerminalTheme
from rich.text import Text

from attnviz.lesson.blocks import Blank, Block, Heading, Matrix, Pause
from attnviz.lesson.build import lesson
from attnviz.lesson.options import LessonOptions
from attnviz.outputs import make_folder
from attnviz.render.terminal import HEADING_STYLES, drawn_lines
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: A full-HD projector's pixels, 16:9; the SVG has the same proportions.
SLIDE_WIDTH_PX, SLIDE_HEIGHT_PX = 1920, 1080
TEXT_PX = 32  # the body's font size: readable at the back of a classroom
TITLE_PX = 44  # a slide's title, shrunk to no less than TEXT_PX when it is long
MARGIN_PX = 56  # left and right
TOP_PX = 40  # above the title
BOTTOM_PX = 40  # below the last line
LINE_SPACING = 1.2  # a line's height in font sizes; a shaded table row fills all of it
#: DejaVu Sans Mono: every glyph advances 1233/2048 of the font size; its ascent and descent.
ADVANCE = 1233 / 2048
ASCENT, DESCENT = 1901 / 2048, 483 / 2048
FONT = "DejaVu Sans Mono"

LINE_PX = TEXT_PX * LINE_SPACING
BODY_TOP_PX = TOP_PX + TITLE_PX * 1.6
#: The terminal width the lesson is laid out at, and the lines a slide holds.
COLUMNS = int((SLIDE_WIDTH_PX - 2 * MARGIN_PX) / (TEXT_PX * ADVANCE))
MAX_LINES = int((SLIDE_HEIGHT_PX - BODY_TOP_PX - BOTTOM_PX) / LINE_PX)


def _slide_theme() -> TerminalTheme:
    """The colours of the terminal's styles: those of Rich's SVG export (--svg), a dark theme,
    but with black and white pure, the text of shaded cells: a projector washes colours out, and
    grey on green is hard to read from afar."""
    palette: list[tuple[int, int, int]] = [SVG_EXPORT_THEME.ansi_colors[i] for i in range(16)]
    palette[0], palette[7] = (0, 0, 0), (255, 255, 255)
    return TerminalTheme(
        SVG_EXPORT_THEME.background_color,
        SVG_EXPORT_THEME.foreground_color,
        palette[:8],
        palette[8:],
    )


THEME = _slide_theme()

#: A file name save_slides could have written: 01-title.svg, 12-head2-weights-2.png, …
SLIDE_FILE = re.compile(r"\d{2,}-[a-z0-9-]+\.(?:svg|png)")


class Slide(NamedTuple):
    """One slide: its file name (without extension), its title, its lines of text."""

    name: str  # "05-head1-scores": the place in the lesson, then what it shows
    title: Text  # the step's heading, styled as in the terminal
    lines: tuple[Text, ...]  # at most MAX_LINES lines of at most COLUMNS cells, styled


class _Part(NamedTuple):
    """A step (or the header) of the lesson, before it is cut into slides."""

    name: str  # "head1-scores"
    title: Text
    blocks: list[Block]  # its body: what follows its headings


def plan_slides(
    trace: AttentionTrace,
    selection: Selection,
    options: LessonOptions | None = None,
    *,
    blocks: Sequence[Block] | None = None,
) -> list[Slide]:
    """The lesson of ``trace`` as ``selection`` shows it (``options.steps``: those steps, after
    the header; ``blocks``: the lesson already written), cut into slides: the header, then one
    per step and head, each continued on further slides while it has more than MAX_LINES
    lines."""
    options = options or LessonOptions()
    if blocks is None:
        blocks = lesson(trace, selection, options)
    console = _recorder()
    cut: list[tuple[str, Text, list[Text]]] = []
    for part in _parts(blocks, selection.heads):
        drawn = [_drawn(block, console, options) for block in part.blocks]
        for page, lines in enumerate(_pages(drawn)):
            if page == 0:
                cut.append((part.name, part.title, lines))
            else:
                more = part.title.copy()
                more.append(" (continued)", style="dim")
                cut.append((f"{part.name}-{page + 1}", more, lines))
    digits = max(2, len(str(len(cut))))
    return [
        Slide(f"{number:0{digits}d}-{name}", title, tuple(lines))
        for number, (name, title, lines) in enumerate(cut, start=1)
    ]


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


def save_slide(slide: Slide, *paths: Path) -> None:
    """Draw ``slide`` once and write it to each of ``paths`` (.svg, .png), atomically and
    byte for byte the same each time (render/figures.py save_figure)."""
    from matplotlib import rc_context

    from attnviz.render.figures import save_figure

    figure = draw_slide(slide)
    for path in paths:
        with rc_context({"svg.fonttype": "path"}):  # glyphs as outlines: no font needed
            save_figure(figure, path)


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
    console = _recorder()
    title_px = _title_size(slide.title)
    title = _fit(slide.title, title_px)
    _draw_line(axes, title, console, top=TOP_PX, font_px=title_px, height=title_px)
    for row, line in enumerate(slide.lines):
        top = BODY_TOP_PX + row * LINE_PX
        _draw_line(axes, line, console, top=top, font_px=TEXT_PX, height=LINE_PX)
    return figure


# -- the lesson, cut into slides ----------------------------------------------------------------


def _parts(blocks: Sequence[Block], heads: Sequence[int]) -> list[_Part]:
    """The header, then each step as a part of its own, named by its key in the table of steps
    (attnviz/lesson/steps.py) and, for a step in each head, its head; a step showing several
    heads (the focus view) is one part per head. ``heads``, numbered from 0, are the heads
    shown."""
    header, steps = _at_pauses(blocks)
    title = Heading("attnviz", "title")
    if header and isinstance(header[0], Heading):
        title, header = header[0], header[1:]
    parts = [_Part("title", _heading_text(title), header)]
    section: Heading | None = None  # the latest section: a head, all heads, the focus view
    for pause, body in steps:
        body = _trimmed(body)
        opening = _leading(body, "section")
        if opening is not None:
            section, body = opening, _trimmed(body[1:])
        name = _step_name(pause)
        step = _leading(body, "step")
        title_text = _step_title(section, step, pause)
        groups = _per_head(body[1:] if step is not None else body)
        for index, group in enumerate(groups):
            suffix = f"-head{heads[index] + 1}" if len(groups) > 1 and index < len(heads) else ""
            parts.append(_Part(name + suffix, title_text, _trimmed(group)))
    return parts


def _step_name(pause: Pause) -> str:
    """What a step's slides are called: "tokens", "head2-weights"."""
    name = pause.key or f"step{pause.step}"
    return name if pause.head is None else f"head{pause.head + 1}-{name}"


def _step_title(section: Heading | None, step: Heading | None, pause: Pause) -> Text:
    """A step's slide title, styled as the terminal styles its headings: "Head 1 of 2 · Step
    3 · Raw scores Q·Kᵀ"; the focus view, which has no step heading, is titled by its section."""
    if step is None:
        return _heading_text(section or Heading(pause.coming, "section"))
    if section is None:
        return _heading_text(step)
    return Text.assemble(_heading_text(section), " · ", _heading_text(step))


def _at_pauses(
    blocks: Sequence[Block],
) -> tuple[list[Block], list[tuple[Pause, list[Block]]]]:
    """The header's blocks (before the first Pause), and each step's Pause and blocks."""
    header: list[Block] = []
    steps: list[tuple[Pause, list[Block]]] = []
    for block in blocks:
        if isinstance(block, Pause):
            steps.append((block, []))
        elif steps:
            steps[-1][1].append(block)
        else:
            header.append(block)
    return header, steps


def _leading(body: Sequence[Block], level: str) -> Heading | None:
    """The heading of ``level`` that ``body`` starts with, if it does."""
    first = body[0] if body else None
    return first if isinstance(first, Heading) and first.level == level else None


def _trimmed(body: Sequence[Block]) -> list[Block]:
    """``body`` without blank lines at its start and end."""
    kept = list(body)
    while kept and isinstance(kept[0], Blank):
        kept.pop(0)
    while kept and isinstance(kept[-1], Blank):
        kept.pop()
    return kept


def _per_head(body: list[Block]) -> list[list[Block]]:
    """A body with several heads' parts ("head" headings: the focus view's bars) cut before
    each head after the first; what comes before the first head stays with it."""
    starts = [
        i for i, block in enumerate(body) if isinstance(block, Heading) and block.level == "head"
    ]
    if len(starts) < 2:
        return [body]
    cuts = [0, *starts[1:], len(body)]
    return [body[start:end] for start, end in pairwise(cuts)]


def _heading_text(heading: Heading) -> Text:
    return Text.assemble((heading.text, HEADING_STYLES.get(heading.level, "bold")))


def _recorder() -> Console:
    """A console that records the terminal's output, colours as a truecolor terminal has them,
    at the width a slide holds, whatever the environment says (NO_COLOR, TERM=dumb, COLUMNS):
    the slides are the same wherever they are made."""
    return Console(
        file=io.StringIO(),
        width=COLUMNS,
        height=MAX_LINES,  # with both sizes given, Rich uses them even on a dumb terminal
        force_terminal=True,
        color_system="truecolor",
        no_color=False,
        highlight=False,
        force_jupyter=False,
        legacy_windows=False,
    )


class _Drawn(NamedTuple):
    """A block as the terminal draws it."""

    lines: list[Text]  # at most COLUMNS cells each, styles included
    header: list[Text]  # a table's title, column words and rule, shown again where it goes on


def _drawn(block: Block, console: Console, options: LessonOptions) -> _Drawn:
    """``block`` as the terminal draws it at COLUMNS cells."""
    if isinstance(block, Blank):
        return _Drawn([Text()], [])
    lines = drawn_lines(block, console, options)
    header: list[Text] = []
    if isinstance(block, Matrix):  # its head ends with the rule under the column words
        rule = next((i for i, line in enumerate(lines) if _is_rule(line.plain)), None)
        header = lines[: rule + 1] if rule is not None and rule < MAX_LINES // 2 else []
    return _Drawn(lines, header)


def _is_rule(text: str) -> bool:
    return bool(text.strip()) and set(text.strip()) == {"─"}


def _pages(blocks: Sequence[_Drawn]) -> list[list[Text]]:
    """Blocks' lines on slides of MAX_LINES: a block that fits on a slide starts the next one
    rather than being cut; a longer one fills the slide and goes on over the next, where a
    table shows its title, column words and rule again."""
    pages: list[list[Text]] = [[]]
    for block in blocks:
        lines = list(block.lines)
        if pages[-1] and len(pages[-1]) + len(lines) > MAX_LINES >= len(lines):
            pages.append([])
        going_on = False  # whether the block began on an earlier slide
        while lines:
            page = pages[-1]
            if not page:
                while lines and not lines[0].plain.strip():
                    lines.pop(0)  # no slide starts with a blank line
                if going_on and lines:
                    page.extend(block.header)
            room = MAX_LINES - len(page)
            if len(lines) <= room:
                page.extend(lines)
                break
            cut = _cut(lines, room)
            page.extend(lines[:cut])
            lines = lines[cut:]
            pages.append([])
            going_on = True
    for page in pages:
        while page and not page[-1].plain.strip():
            page.pop()
    return [page for page in pages if page] or [[]]


def _cut(lines: Sequence[Text], room: int) -> int:
    """How many of a block's lines go on a slide with ``room`` lines left: up to its last
    blank line there (between two tables, say) if that fills at least half the room, else
    as many as fit."""
    blanks = [i for i in range(max(1, room // 2), room + 1) if not lines[i].plain.strip()]
    return blanks[-1] if blanks else room


# -- drawing ------------------------------------------------------------------------------------


def _title_size(title: Text) -> float:
    """TITLE_PX, or smaller (down to TEXT_PX) so that a long title still fits one line."""
    room = SLIDE_WIDTH_PX - 2 * MARGIN_PX
    return max(TEXT_PX, min(TITLE_PX, room / (max(1, title.cell_len) * ADVANCE)))


def _fit(title: Text, font_px: float) -> Text:
    """``title`` cut with an ellipsis when even at ``font_px`` it is wider than the slide."""
    cells = int((SLIDE_WIDTH_PX - 2 * MARGIN_PX) / (font_px * ADVANCE))
    if title.cell_len <= cells:
        return title
    cut = title.copy()
    cut.truncate(cells, overflow="ellipsis")
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
    Rich's SVG export gives them: reverse swaps the two, dim blends the text 40 % into the
    background."""
    colour = THEME.foreground_color
    if style.color is not None and not style.color.is_default:
        colour = style.color.get_truecolor(THEME)
    background = None
    if style.bgcolor is not None and not style.bgcolor.is_default:
        background = style.bgcolor.get_truecolor(THEME, foreground=False)
    if style.reverse:
        colour, background = background or THEME.background_color, colour
    if style.dim:
        colour = blend_rgb(colour, background or THEME.background_color, 0.4)
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
