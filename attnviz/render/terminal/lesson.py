"""The step-by-step lesson in the terminal: the blocks of attnviz.lesson drawn with Rich.

Nothing here computes attention or decides what is said; this module only lays the lesson out
(text.py) and paces it (--step). Colour is added only as styles, so NO_COLOR and a piped
stdout give plain text.
"""

from __future__ import annotations

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
from attnviz.render.terminal.tables import elides_columns, matrix_block
from attnviz.render.terminal.text import Block as TextBlock
from attnviz.render.terminal.text import bar, cell_width, pad_left, pad_right, side_by_side, wrap
from attnviz.render.terminal.theme import EXPORT_THEME
from attnviz.results import Analyses
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
    layers: Sequence[AttentionTrace] = (),
    analyses: Analyses | None = None,
) -> None:
    """Print the whole step-by-step lesson for ``trace``, as ``selection`` shows it
    (``blocks``: the lesson already written, as a command writes it once for every output;
    ``layers``: every layer of the run, for the focus view's rollout; ``analyses``: what the
    focus view shows of them, attnviz.lesson.build.lesson)."""
    options = options or LessonOptions()
    if blocks is None:
        blocks = lesson(trace, selection, options, layers=layers, analyses=analyses)
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
        # Wrapped already: as a block, its lines skip Rich's own wrapping pass, which would
        # measure and split every one of them again.
        return [TextBlock(lines=lines, width=max(cell_width(line.plain) for line in lines))]
    if isinstance(block, Heading):
        if block.level == "section":
            return [Rule(Text(block.text, style=HEADING_STYLES["section"]))]
        return [Text(block.text, style=HEADING_STYLES[block.level])]
    if isinstance(block, Matrix):
        return [matrix_block(block, options.decimals, width, color_system=colours)]
    if isinstance(block, Tables):
        return _tables(block.matrices, options.decimals, width, colours, squeeze=block.squeeze)
    if isinstance(block, Bars):
        return [_bars(block, width)]
    raise TypeError(f"unknown lesson block {block!r}")


#: Cells between tables set side by side.
TABLES_GAP = 3


def _tables(
    matrices: Sequence[Matrix],
    decimals: int,
    width: int,
    colours: str | None,
    *,
    squeeze: bool = False,
) -> list[RenderableType]:
    """Tables with the same rows in one row, words only at the left, when that fits; with
    ``squeeze``, in one row with columns elided to fit each its share of the width; else one
    under the other, each with its words."""
    row = [
        matrix_block(m, decimals, width, with_row_labels=index == 0, color_system=colours)
        for index, m in enumerate(matrices)
    ]
    arranged = side_by_side(row, gap=TABLES_GAP, max_width=width)
    # Squeezed only when a table alone would lose columns anyway (a model's d_k = 32 or 64):
    # narrower tables are stacked whole.
    if len(arranged) > 1 and squeeze and any(elides_columns(m, decimals, width) for m in matrices):
        arranged = side_by_side(
            _squeezed(matrices, decimals, width, colours), gap=TABLES_GAP, max_width=width
        )
    if len(arranged) > 1:
        arranged = [matrix_block(m, decimals, width, color_system=colours) for m in matrices]
    drawn: list[RenderableType] = []
    for position, table in enumerate(arranged):
        if position:
            drawn.append(Text())
        drawn.append(table)
    return drawn


def _squeezed(
    matrices: Sequence[Matrix], decimals: int, width: int, colours: str | None
) -> list[TextBlock]:
    """Each table within its share of ``width``: the first with its words, the others without,
    the columns elided in the middle as far as it takes."""
    labels = 1 + max(cell_len(fit_label(str(label))) for label in matrices[0].row_labels)
    share = (width - TABLES_GAP * (len(matrices) - 1) - labels) // len(matrices)
    blocks = [
        matrix_block(
            matrix,
            decimals,
            share + (labels if index == 0 else 0),
            with_row_labels=index == 0,
            color_system=colours,
        )
        for index, matrix in enumerate(matrices)
    ]
    # Titles wrapped to a narrow share may take more lines in one table than in another:
    # blank lines under the shorter ones keep every table's rows on the same lines.
    rules = [_rule_line(block) for block in blocks]
    aligned = []
    for block, rule in zip(blocks, rules, strict=True):
        titles, rest = block.lines[: rule - 1], block.lines[rule - 1 :]  # the header, the rule…
        lines = [*titles, *[Text()] * (max(rules) - rule), *rest]
        aligned.append(TextBlock(lines=lines, width=block.width))
    return aligned


def _rule_line(block: TextBlock) -> int:
    """The index of a table's rule, the line under its column words."""
    return next((index for index, line in enumerate(block.lines) if line.plain.startswith("─")), 0)


def _bars(bars: Bars, width: int) -> TextBlock:
    """One line per word: its label, its bar and number; with a second bar (a contribution's
    share, a rollout), the numbers between and the second bar and number, under a line naming
    the columns."""
    labels = [fit_label(label) for label in bars.labels]
    label_width = max(cell_len(label) for label in labels)
    if not bars.second:
        lines = []
        for label, weight, text in zip(labels, bars.weights, bars.texts, strict=True):
            line = Text(pad_right(label, label_width) + " ")
            line.append_text(bar(weight))
            line.append(" " + text)
            lines.append(line)
        return TextBlock(lines=lines, width=max(line.cell_len for line in lines))
    return _paired_bars(bars, labels, label_width, width)


#: The gap between the columns of paired bars, and the longest and shortest bar they draw.
PAIRED_GAP = 2
PAIRED_BAR_WIDTH = (4, 16)


def _paired_bars(bars: Bars, labels: list[str], label_width: int, width: int) -> TextBlock:
    """Two bars per word with numbers, the columns named above, fitted to ``width`` cells."""
    headings = (*bars.headings, "", "", "")[:3]
    first_text = max(cell_len(text) for text in bars.texts)
    second_text = max(cell_len(text) for text in bars.second_texts)
    between = max([cell_len(text) for text in bars.between] + [cell_len(headings[1])])
    fixed = label_width + 1 + (1 + first_text) + (1 + second_text)
    fixed += 2 * PAIRED_GAP + between if bars.between else PAIRED_GAP
    least, most = PAIRED_BAR_WIDTH
    bar_width = max(least, min(most, (width - fixed) // 2))
    first = max(bar_width + 1 + first_text, cell_len(headings[0]))
    gap = " " * PAIRED_GAP
    top = pad_right("", label_width + 1) + pad_right(headings[0], first) + gap
    if bars.between:
        top += pad_left(headings[1], between) + gap
    lines = [Text.assemble(((top + headings[2]).rstrip(), "dim"))]  # a span: blocks keep it
    betweens = bars.between or ("",) * len(labels)
    for index, label in enumerate(labels):
        line = Text(pad_right(label, label_width) + " ")
        line.append_text(bar(bars.weights[index], bar_width))
        line.append(pad_right(" " + pad_left(bars.texts[index], first_text), first - bar_width))
        line.append(gap)
        if bars.between:
            line.append(pad_left(betweens[index], between) + gap)
        line.append_text(bar(bars.second[index], bar_width))
        line.append(" " + pad_left(bars.second_texts[index], second_text))
        lines.append(line)
    return TextBlock(lines=lines, width=max(line.cell_len for line in lines))


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
    colours included, saved as SVG (every character at its cell, terminal_svg.py) and/or
    HTML for slides, both in EXPORT_THEME (theme.py: every number at least 4.5:1 on its
    cell); the paths written."""
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
        drawn = recorder.export_text(styles=True, clear=False).splitlines()
        lines = [Text.from_ansi(line) for line in drawn]
        from attnviz.render.terminal.terminal_svg import (
            lesson_svg,  # only for --svg: not at start-up
        )

        text = lesson_svg(lines, title, width)
        atomic_write(svg, lambda path: path.write_text(text, encoding="utf-8"))
        written.append(svg)
    if html is not None:
        page = recorder.export_html(theme=EXPORT_THEME, inline_styles=True, clear=False)
        atomic_write(html, lambda path: path.write_text(page, encoding="utf-8"))
        written.append(html)
    return written
