"""The step-by-step lesson in the terminal: the blocks of attnviz.lesson drawn with Rich.

Nothing here computes attention or decides what is said; this module only lays the lesson out
(render/text.py) and paces it (--step). Colour is added only as styles, so NO_COLOR and a piped
stdout give plain text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.rule import Rule
from rich.text import Text

from attnviz.labels import fit_label
from attnviz.lesson.blocks import (
    Bars,
    Blank,
    Block,
    Heading,
    Matrix,
    Paragraph,
    Pause,
    SectionEnd,
    Tables,
    Worked,
)
from attnviz.lesson.build import lesson
from attnviz.lesson.options import LessonOptions
from attnviz.render.tables import matrix_block
from attnviz.render.text import Block as TextBlock
from attnviz.render.text import bar, pad_right, side_by_side, wrap
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

#: Terminal styles of the lesson's span styles and heading levels.
SPAN_STYLES = {"note": "yellow", "example": "green"}
HEADING_STYLES = {"title": "bold", "step": "bold cyan", "head": "bold", "section": "bold magenta"}

#: Called between steps with the next step's title; returns False to stop (--step pacing).
Pacer = Callable[[str], bool]


class _Stopped(Exception):
    """The teacher pressed q at a --step pause."""


def render_explain(
    trace: AttentionTrace,
    selection: Selection,
    console: Console,
    options: LessonOptions | None = None,
    *,
    pause: Pacer | None = None,
    blocks: Sequence[Block] | None = None,
) -> None:
    """Print the whole step-by-step lesson for ``trace``, as ``selection`` shows it
    (``blocks``: the lesson already written, as a command writes it once for every output)."""
    options = options or LessonOptions()
    if blocks is None:
        blocks = lesson(trace, selection, options)
    try:
        print_blocks(blocks, console, options, pause=pause)
    except _Stopped:
        console.print(Text("(stopped)", style="dim"))


def print_blocks(
    blocks: Sequence[Block],
    console: Console,
    options: LessonOptions,
    *,
    pause: Pacer | None = None,
) -> None:
    """Draw lesson blocks on ``console``: a section's blocks are printed together, in one render
    pass; at a Pause, with ``pause``, what is ready is printed and the teacher is waited for."""
    width = console.width  # Rich recomputes it on every call; once is enough
    pending: list[RenderableType] = []
    started = False

    def flush() -> None:
        if pending:
            console.print(Group(*pending))
            pending.clear()

    for block in blocks:
        if isinstance(block, Pause):
            if pause is not None and started:
                flush()
                if not pause(block.coming):
                    raise _Stopped
            started = True
        elif isinstance(block, SectionEnd):
            flush()
        else:
            pending.extend(_draw(block, console, options, width))
    flush()


def drawn_lines(block: Block, console: Console, options: LessonOptions) -> list[Text]:
    """``block`` as the terminal draws it at ``console``'s width, one styled Text a line: what
    a slide sets cell by cell, taken from Rich's own rendering (not from printed escape codes)."""
    if isinstance(block, Pause | SectionEnd):
        return []
    renderables = _draw(block, console, options, console.width)
    rendered = console.render_lines(Group(*renderables), console.options, pad=False)
    return [
        Text.assemble(*((s.text, s.style or "") for s in line if not s.control and s.text))
        for line in rendered
    ]


def _draw(
    block: Block, console: Console, options: LessonOptions, width: int
) -> list[RenderableType]:
    colours = console.color_system
    if isinstance(block, Blank):
        return [Text()]
    if isinstance(block, Worked):
        block = block.paragraph()
    if isinstance(block, Paragraph):
        text = Text.assemble(*((s.text, SPAN_STYLES.get(s.style, s.style)) for s in block.spans))
        lines = wrap(text, width)
        for line in lines:
            line.no_wrap = True  # wrapped already: Rich need not measure it again
        return list(lines)
    if isinstance(block, Heading):
        if block.level == "section":
            return [Rule(Text(block.text, style=HEADING_STYLES["section"]))]
        return [Text(block.text, style=HEADING_STYLES[block.level])]
    if isinstance(block, Matrix):
        return [matrix_block(block, options.decimals, width, color_system=colours)]
    if isinstance(block, Tables):
        return _tables(block.matrices, options.decimals, width, colours)
    if isinstance(block, Bars):
        return [_bars(block)]
    raise TypeError(f"unknown lesson block {block!r}")


def _tables(
    matrices: Sequence[Matrix], decimals: int, width: int, colours: str | None
) -> list[RenderableType]:
    """Tables with the same rows in one row, words only at the left, when that fits; else one
    under the other, each with its words."""
    row = [
        matrix_block(m, decimals, width, with_row_labels=index == 0, color_system=colours)
        for index, m in enumerate(matrices)
    ]
    arranged = side_by_side(row, gap=3, max_width=width)
    if len(arranged) > 1:
        arranged = [matrix_block(m, decimals, width, color_system=colours) for m in matrices]
    drawn: list[RenderableType] = []
    for position, table in enumerate(arranged):
        if position:
            drawn.append(Text())
        drawn.append(table)
    return drawn


def _bars(bars: Bars) -> TextBlock:
    labels = [fit_label(label) for label in bars.labels]
    label_width = max(cell_len(label) for label in labels)
    lines = []
    for label, weight, text in zip(labels, bars.weights, bars.texts, strict=True):
        line = Text(pad_right(label, label_width) + " ")
        line.append_text(bar(weight))
        line.append(" " + text)
        lines.append(line)
    return TextBlock(lines=lines, width=max(line.cell_len for line in lines))


#: A web font's remote source in Rich's SVG template: url("https://…") format("woff2").
_REMOTE_FONT = re.compile(r',\s*url\("https?://[^"]*"\)\s*format\("[^"]*"\)')


def offline(svg: str) -> str:
    """Rich's SVG without the web fonts it would fetch from a CDN: the font is the viewer's own
    Fira Code if installed (``local()``), else its monospace font; nothing is loaded remotely."""
    return _REMOTE_FONT.sub("", svg)


def save_lesson(
    trace: AttentionTrace,
    selection: Selection,
    options: LessonOptions,
    width: int,
    *,
    svg: Path | None = None,
    html: Path | None = None,
    blocks: Sequence[Block] | None = None,
) -> list[Path]:
    """The lesson (``blocks``, or written anew) drawn once more into a recording console,
    colours included, saved as SVG and/or HTML for slides; the paths written."""
    import io

    from attnviz.files import atomic_write

    if svg is None and html is None:
        return []
    recorder = Console(
        record=True,
        file=io.StringIO(),
        width=width,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
    )
    render_explain(trace, selection, recorder, options, blocks=blocks)
    written = []
    if svg is not None:
        title = "attnviz cross" if trace.is_cross else "attnviz explain"
        text = offline(recorder.export_svg(title=title, clear=False))
        atomic_write(svg, lambda path: path.write_text(text, encoding="utf-8"))
        written.append(svg)
    if html is not None:
        page = recorder.export_html(inline_styles=True, clear=False)
        atomic_write(html, lambda path: path.write_text(page, encoding="utf-8"))
        written.append(html)
    return written
