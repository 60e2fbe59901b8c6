"""The lesson cut into slides: the header, then one slide per step and head, each continued on
further slides while it has more lines than a slide holds; a slide's lines are the terminal's
own rendering of the step's blocks (render/terminal/lesson.py drawn_lines)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

from rich.console import Console
from rich.text import Text

from attnviz.lesson.blocks import Blank, Block, Heading, Matrix, Pause, Tables
from attnviz.lesson.build import lesson
from attnviz.lesson.options import LessonOptions
from attnviz.render.slides.layout import MAX_LINES, Slide, recorder
from attnviz.render.terminal.lesson import HEADING_STYLES, drawn_lines
from attnviz.results import Analyses
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace


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
    analyses: Analyses | None = None,
) -> list[Slide]:
    """The lesson of ``trace`` as ``selection`` shows it (``options.steps``: those steps, after
    the header; ``blocks``: the lesson already written; ``analyses``: what its focus view shows,
    attnviz.lesson.build.lesson), cut into slides: the header, then one
    per step and head, each continued on further slides while it has more than MAX_LINES
    lines."""
    options = options or LessonOptions()
    if blocks is None:
        blocks = lesson(trace, selection, options, analyses=analyses)
    console = recorder()
    cut: list[tuple[str, Text, list[Text]]] = []
    for part in _parts(blocks, selection.heads):
        drawn = [
            _drawn(piece, console, options)
            for block in part.blocks
            for piece in _paired(block, console, options)
        ]
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


def _paired(block: Block, console: Console, options: LessonOptions) -> list[Block]:
    """``block``, or for tables too wide to stand side by side on a slide, the fewest groups
    of neighbouring tables that do, each its own block with a blank line between: Q alone
    then K beside V, rather than all three one under the other, a slide and a half tall. The
    groups are taken from the end, so the first table, the one the step's prose works
    through, is the one left alone."""
    if not isinstance(block, Tables) or len(block.matrices) < 2:
        return [block]
    matrices = block.matrices
    if _side_by_side(matrices, console, options):
        return [block]
    groups: list[tuple[Matrix, ...]] = []
    end = len(matrices)
    while end > 0:
        start = next(s for s in range(end) if _side_by_side(matrices[s:end], console, options))
        groups.insert(0, matrices[start:end])
        end = start
    pieces: list[Block] = []
    for group in groups:
        pieces += [*([Blank()] if pieces else []), Tables(group)]
    return pieces


def _side_by_side(matrices: Sequence[Matrix], console: Console, options: LessonOptions) -> bool:
    """Whether the terminal sets ``matrices`` side by side at a slide's width (one table
    always is): stacked, they would take more lines than all of them apart."""
    if len(matrices) < 2:
        return True
    together = len(drawn_lines(Tables(tuple(matrices)), console, options))
    apart = sum(len(drawn_lines(matrix, console, options)) for matrix in matrices)
    return together < apart


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
