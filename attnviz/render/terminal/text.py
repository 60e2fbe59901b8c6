"""Text layout for the terminal: prose wrapped at spaces, blocks set side by side, weight shading
and bars; matrix tables are tables.py. What the lesson says lives in attnviz/lesson/.

Words are printed as ``rich.text.Text`` (markup is never parsed) after ``printable()`` (control
characters escaped). Colour is added only as styles, so NO_COLOR and a piped stdout give plain
text.
"""

from __future__ import annotations

import re
from bisect import bisect_right, insort
from collections.abc import Iterator, Sequence
from itertools import accumulate
from typing import NamedTuple

import numpy as np
from rich.cells import cell_len, get_character_cell_size
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.text import Text

from attnviz.labels import ELLIPSIS, fitting_prefix, mark_runs
from attnviz.render.terminal.theme import readable_on

# matplotlib's viridis at nine evenly spaced points: perceptually uniform and colour-blind safe,
# the same map the heatmaps use, hard-coded so the terminal path never imports matplotlib.
_VIRIDIS = (
    (0x44, 0x01, 0x54),
    (0x47, 0x2C, 0x7A),
    (0x3B, 0x51, 0x8B),
    (0x2C, 0x71, 0x8E),
    (0x21, 0x90, 0x8D),
    (0x27, 0xAD, 0x81),
    (0x5C, 0xC8, 0x63),
    (0xAA, 0xDC, 0x32),
    (0xFD, 0xE7, 0x25),
)

BAR_WIDTH = 24
MAX_UNBROKEN_GROUP = 40  # a bracketed group up to this many cells is kept on one line


def weight_style(weight: float, color_system: str | None = "truecolor") -> str:
    """How a cell holding ``weight`` in [0, 1] is shaded, for the terminal's colour system.

    truecolor: a viridis background (as in the heatmaps) with black or white text, whichever
    reads better. 256 colours: the 24-step grey ramp, which stays monotone where viridis would
    be rounded to unrelated palette colours. 16 colours: no background at all (the 16 colours
    carry no order), but dim for weights under 0.1, bold from 0.3 and reversed from 0.6.
    No colour: no style.
    """
    weight = min(max(weight, 0.0), 1.0)
    if color_system is None:
        return ""
    if color_system == "256":
        grey = round(weight * 23)
        return f"{'black' if grey > 11 else 'white'} on color({232 + grey})"
    if color_system != "truecolor":
        if weight >= 0.6:
            return "bold reverse"
        return "bold" if weight >= 0.3 else ("dim" if weight < 0.1 else "")
    foreground, background = weight_colours(weight)
    return f"{foreground} on {background}"


def weight_colours(weight: float) -> tuple[str, str]:
    """The text colour ("black" or "white") and the viridis background ("#rrggbb") of a cell
    holding ``weight`` in [0, 1]: the terminal's and the notebook's shading."""
    weight = min(max(weight, 0.0), 1.0)
    position = weight * (len(_VIRIDIS) - 1)
    low = int(np.floor(position))
    high = min(low + 1, len(_VIRIDIS) - 1)
    fraction = position - low
    red, green, blue = (
        round(a + (b - a) * fraction) for a, b in zip(_VIRIDIS[low], _VIRIDIS[high], strict=True)
    )
    # Black or white by WCAG's contrast ratio: at least 4.5:1 on every colour (theme.py).
    return readable_on((red, green, blue)), f"#{red:02x}{green:02x}{blue:02x}"


def pad_left(text: str, width: int) -> str:
    return text.rjust(width) if text.isascii() else " " * (width - cell_len(text)) + text


def pad_right(text: str, width: int) -> str:
    return text.ljust(width) if text.isascii() else text + " " * (width - cell_len(text))


class Block(NamedTuple):
    """Lines of text of a known width, ready to print or to set beside another block."""

    lines: list[Text]
    width: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        # The layout is final: emit each line's segments as they are, skipping Rich's
        # word-wrapping pass, which would only cost time.
        plain = console.color_system is None  # styles would be dropped: skip computing them
        for line in self.lines:
            if plain:
                yield Segment(line.plain)
            else:
                yield from line.render(console)
            yield Segment.line()


def wrap(text: Text, width: int) -> list[Text]:
    """``text`` in lines of at most ``width`` cells, broken at spaces outside brackets.

    A vector [0.12, -0.34], a shape [n, d_k] or a result "= 0.78" stays whole on its line,
    and an indented line (a worked example) continues two cells further in, so a formula never
    restarts at the left margin. Arithmetic is broken after an operator, never before one: a
    line that began "− 2.24" would read as a negative number, and one that began "+ 0.52" or
    "= 0.78" as a new statement. A line with no space to break at is cut after an operator,
    "0.61×", rather than inside a number or a negative one in parentheses, (-0.564). No line
    ends in spaces: piped output has no trailing blanks.
    """
    text = _marks_elided(text)  # zero-width marks take no cells: a cut by cells keeps them
    text.rstrip()  # trailing spaces alone must not make a line "too long"
    plain = text.plain
    width = max(width, 1)
    if cell_width(plain) <= width:
        return [text]
    indent = len(plain) - len(plain.lstrip(" "))
    if indent and indent + 2 > width:  # no room for the indent and a wide character: drop it
        text = text[indent:]
        plain, indent = text.plain, 0
    # Continuation lines keep two cells for text (a wide character), however narrow the
    # terminal, so every pass of the loop in _line_breaks moves forward.
    hang = min(indent + 2, width - 2) if indent else 0
    cuts = _line_breaks(plain, indent, width, hang)
    lines = text.divide(cuts)[::2]  # even pieces are the lines, odd ones the spaces between
    wrapped = []
    for number, line in enumerate(lines):
        line.rstrip()
        if line.plain.strip():  # a line of only the indent, on a terminal narrower than it
            wrapped.append(Text(" " * hang) + line if number else line)
    return wrapped or [Text()]


def _marks_elided(text: Text) -> Text:
    """A copy of ``text`` with each run of more than MAX_MARKS zero-width code points cut to
    MAX_MARKS and an ellipsis (labels.elide_marks), its styles kept."""
    runs = mark_runs(text.plain)
    if not runs:
        return text.copy()
    pieces = text.divide([cut for run in runs for cut in run])
    elided = Text()
    for number, piece in enumerate(pieces):
        if number % 2 == 0:
            elided.append_text(piece)
        else:  # a run's elided part
            elided.append(ELLIPSIS)
    return elided


def _line_breaks(plain: str, indent: int, width: int, hang: int) -> list[int]:
    """Where ``plain`` is divided into lines of ``width`` cells, continuations ``hang`` cells in:
    each line's end, then where the next one starts (after the spaces between)."""
    additive = _AdditiveWidths.of(plain)
    protected = _bracketed(plain, additive)
    anywhere = [space.start() for space in _SPACE.finditer(plain, indent + 1)]
    # "= 0.78" stays on one line too; so do "L = layer" and "0.08 / 1.15" while the line can
    # break elsewhere.
    outside = [p for p in anywhere if not protected[p] and plain[p - 1] != "="]
    preferred = {
        p for p in outside if plain[p + 1 : p + 2] not in ("=", "/") and plain[p - 1] != "/"
    }
    widths = additive or _PrefixWidths(plain, anywhere)
    # No line starts with a binary operator ("− 2.24" would read as a negative number). Where
    # the break chosen as above would start one, prose chooses again among its other spaces.
    # A worked example (an indented paragraph) does so too where the break would fall inside
    # a group that holds no other, "exp(m_old − m_new)", "[0.22, -0.34]"; rather than leave
    # its line short it breaks after an operator in a group of groups or after "=":
    # "exp(-0.01) / (exp(-0.65) + exp(-0.09) +", not "exp(-0.01) /". Elsewhere both break
    # where they did.
    before_operator = _before_operators(plain)
    allowed = [p for p in anywhere if p not in before_operator]
    allowed_outside = [p for p in outside if p not in before_operator]
    innermost = _innermost_groups(plain) if indent else [False] * len(plain)
    operators = [p for p in allowed if plain[p - 1] in _OPERATORS and not innermost[p]]

    def fitting(breaks: list[int], start: int, room: int) -> list[int]:
        # The breaks after start whose line fits room: a slice of the sorted breaks, found by
        # bisection as the width only grows (not a pass over every break for every line).
        first = bisect_right(breaks, start)
        end = bisect_right(breaks, room, first, key=lambda b: widths.between(start, b))
        return breaks[first:end]

    def chosen(outside: list[int], anywhere: list[int], start: int, room: int) -> int | None:
        fits = fitting(outside, start, room)
        better = [b for b in fits if b in preferred]
        if (
            better
            and fits
            and widths.between(start, better[-1]) >= 0.6 * widths.between(start, fits[-1])
        ):
            fits = better  # not next to an "=", unless that would leave the line short
        fits = fits or fitting(anywhere, start, room)
        return fits[-1] if fits else None

    def in_formula(cut: int | None, start: int, room: int) -> int | None:
        # After an operator, and not after "=" nor "/" ("= 6.4 / 19.1" whole) unless that
        # would leave the line short.
        formula = fitting(operators, start, room)
        kept = [b for b in formula if plain[b - 1] not in "=/"]
        if kept and widths.between(start, kept[-1]) >= 0.5 * room:
            formula = kept
        if formula and (cut is None or formula[-1] > cut):
            return formula[-1]
        return cut

    cuts: list[int] = []
    start, room = 0, width
    while widths.between(start, len(plain)) > room:
        cut = chosen(outside, anywhere, start, room)
        if cut in before_operator and not indent:
            cut = chosen(allowed_outside, allowed, start, room)
        elif cut is not None and (cut in before_operator or (indent and innermost[cut])):
            cut = chosen(allowed_outside, [], start, room)
            if cut is None or widths.between(start, cut) < 0.6 * room:
                cut = in_formula(cut, start, room)
            if cut is None:
                cut = next(reversed(fitting(allowed, start, room)), None)
        if cut is None:
            cut = _hard_cut(plain, start, room, additive)
        cuts.append(cut)
        start = cut
        while start < len(plain) and plain[start] == " ":
            start += 1
        cuts.append(start)
        room = width - hang
    return cuts


def _before_operators(plain: str) -> set[int]:
    """The spaces of ``plain`` right before a binary operator ("a − b", "a + b", "a = b"): no
    line may start with one, so none of them is a place to break."""
    return {
        position
        for spaces in _BEFORE_OPERATOR.finditer(plain)
        for position in range(spaces.start(), spaces.end())
    }


def _innermost_groups(plain: str) -> list[bool]:
    """For each character of ``plain``, whether it lies in a bracketed group that holds no
    other: a function's argument, exp(m_old − m_new), a vector [0.12, -0.34]."""
    inside = [False] * len(plain)
    opened: list[list[int]] = []  # [position, whether it holds a group] of each open bracket
    for bracket in _BRACKET.finditer(plain):
        position, char = bracket.start(), bracket.group()
        if char in "([{":
            if opened:
                opened[-1][1] = 1
            opened.append([position, 0])
        elif opened:
            start, holds_a_group = opened.pop()
            if not holds_a_group:
                inside[start : position + 1] = [True] * (position + 1 - start)
    return inside


def _bracketed(plain: str, additive: _AdditiveWidths | None = None) -> list[bool]:
    """For each character of ``plain``, whether it lies in a bracketed group of at most
    MAX_UNBROKEN_GROUP cells (a vector, a shape, "(11 tokens)"), whose spaces are not broken
    at; a long parenthesis of prose is broken like the text around it. ``additive``: the
    widths of ``plain``'s characters, when they add up."""
    protected = [False] * len(plain)
    opened: list[int] = []
    for bracket in _BRACKET.finditer(plain):  # only the brackets: a text is mostly words
        position, char = bracket.start(), bracket.group()
        if char in "([{":
            opened.append(position)
        elif opened:
            start = opened.pop()
            if additive is not None:
                short = additive.between(start, position + 1) <= MAX_UNBROKEN_GROUP
            else:  # measures ≤ 40 cells of the group, however long it is
                short = fitting_prefix(plain, MAX_UNBROKEN_GROUP, start) > position
            if short:
                protected[start : position + 1] = [True] * (position + 1 - start)
    return protected


_NOT_PRINTABLE_ASCII = re.compile("[^ -~]")
_SPACE = re.compile(" ")
_BRACKET = re.compile(r"[()\[\]{}]")
# An operator written between spaces, as the worked examples do: "a + b", "a − b", "a = b".
# A sign written against its number ("-0.56", "−∞") is not one.
_OPERATORS = "+-−×·÷/=≈"
_BEFORE_OPERATOR = re.compile(f" +(?=[{re.escape(_OPERATORS)}](?: |$))")
# A number, a sign against it, a negative one in parentheses: "0.063", "-2.24", "(-0.564)",
# "1e-05", "−∞". The hard cut of a line with no space to break at falls outside them.
_NUMBER = re.compile(r"\([-−](?:\d[\d.]*(?:e[-+]?\d+)?|∞)\)|[-−]?(?:\d[\d.]*(?:e[-+]?\d+)?|∞)")


def cell_width(text: str) -> int:
    """Rich's cell_len of ``text``, with only the characters that are not printable ASCII
    looked up: Rich measures each character of a text it has not seen in Python, and the
    lesson's text, mostly ASCII, is new each time (see _AdditiveWidths for when widths add up)."""
    if "\u200d" in text or "\ufe0f" in text:
        return cell_len(text)
    others = _NOT_PRINTABLE_ASCII.findall(text)
    return len(text) + sum(get_character_cell_size(other) - 1 for other in others)


class _AdditiveWidths:
    """The width of every prefix of a text, added up from its characters' widths: what Rich's
    cell_len measures of any piece of it, with no measuring of pieces (each cut first measured
    its candidate lines anew, most of the wrapping's time). Rich's widths add up character by
    character unless the text holds a zero-width joiner or an emoji variation selector, whose
    sequences it measures as a whole: ``of`` gives None for those."""

    def __init__(self, prefix: list[int]) -> None:
        self.prefix = prefix  # prefix[p]: cells of plain[:p]

    @classmethod
    def of(cls, plain: str) -> _AdditiveWidths | None:
        if "\u200d" in plain or "\ufe0f" in plain:
            return None
        sizes = [1] * len(plain)  # printable ASCII; the others looked up one by one
        for other in _NOT_PRINTABLE_ASCII.finditer(plain):
            sizes[other.start()] = get_character_cell_size(other.group())
        return cls([0, *accumulate(sizes)])

    def between(self, start: int, end: int) -> int:
        """Cells of plain[start:end]."""
        return self.prefix[end] - self.prefix[start]

    def fitting(self, start: int, cells: int) -> int:
        """The end of the longest piece plain[start:end] at most ``cells`` cells wide."""
        return max(bisect_right(self.prefix, self.prefix[start] + cells) - 1, start)


class _PrefixWidths:
    """The width of plain[:p] at every space and after it, measured a word at a time: no
    grapheme spans a space, so the widths add up, and a paragraph is measured once (not once
    per line and candidate break, which grew with the square of its length)."""

    def __init__(self, plain: str, spaces: list[int]) -> None:
        self.plain = plain
        self.measured = {0: 0}
        previous = 0
        for position in sorted({*spaces, *(p + 1 for p in spaces), len(plain)}):
            self.measured[position] = self.measured[previous] + cell_len(plain[previous:position])
            previous = position
        self.known = sorted(self.measured)

    def between(self, start: int, end: int) -> int:
        """Cells of plain[start:end]."""
        for position in (start, end):
            if position not in self.measured:  # after a hard cut inside a word: measured from
                below = self.known[bisect_right(self.known, position) - 1]  # the point before it
                self.measured[position] = self.measured[below] + cell_len(
                    self.plain[below:position]
                )
                insort(self.known, position)
        return self.measured[end] - self.measured[start]


def _hard_cut(plain: str, start: int, room: int, additive: _AdditiveWidths | None) -> int:
    """Where a line with no space to break at must be cut to fit ``room`` cells: the longest
    piece from ``start`` that fits (labels.fitting_prefix: measured on about the piece's
    length, not the paragraph's), but always one character at least.

    In a formula the cut moves back to just after an operator ("0.61×" then "(-0.30)"), else
    to a place that is neither inside a number (nor in "(-0.564)") nor before an operator,
    leaving the line at least half as long if it can.
    """
    if additive is not None:
        end = max(additive.fitting(start, room), start + 1)
    else:
        end = max(fitting_prefix(plain, room, start), start + 1)
    if end >= len(plain):
        return end
    # The numbers that reach into the line: found from a little before it, as one may start
    # there, and a little past its end, as one may cross it.
    window = max(start - 32, 0)
    numbers = [
        (window + n.start(), window + n.end()) for n in _NUMBER.finditer(plain[window : end + 32])
    ]
    inside = {position for first, last in numbers for position in range(first + 1, last)}
    signed = {first for first, _ in numbers}  # a line may start with "-0.30" or "(-0.30)"
    before_operator = {start + p for p in _before_operators(plain[start : end + 32])}
    safe = [
        cut
        for cut in range(end, start, -1)
        if cut not in inside
        and cut not in before_operator
        and (plain[cut] not in _OPERATORS or cut in signed)
    ]
    after_operator = [cut for cut in safe if plain[cut - 1] in _OPERATORS]
    half = start + (end - start) // 2
    return (after_operator or [cut for cut in safe if cut >= half] or safe or [end])[0]


def side_by_side(blocks: Sequence[Block], gap: int, max_width: int) -> list[Block]:
    """Blocks in one row when they fit ``max_width``, else each on its own."""
    if sum(b.width for b in blocks) + gap * (len(blocks) - 1) > max_width:
        return list(blocks)
    height = max(len(b.lines) for b in blocks)
    lines = []
    for index in range(height):
        line = Text()
        for position, block in enumerate(blocks):
            part = block.lines[index] if index < len(block.lines) else Text()
            line.append_text(part)
            if position < len(blocks) - 1:
                line.append(" " * (block.width - part.cell_len + gap))
        lines.append(line)
    return [Block(lines=lines, width=sum(b.width for b in blocks) + gap * (len(blocks) - 1))]


def bar(weight: float, width: int = BAR_WIDTH) -> Text:
    """A horizontal bar of ``weight`` × ``width`` cells, in eighths of a cell."""
    eighths = round(min(max(weight, 0.0), 1.0) * width * 8)
    full, remainder = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[remainder].strip()
    text = Text("█" * full + partial, style="cyan")
    text.append(" " * (width - full - len(partial)))
    return text
