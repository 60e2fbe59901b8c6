"""Numbers and words as they appear in every view: fixed-point numbers with no negative zero,
subscript head numbers, repeated words numbered (the:1, the:2), long words cut to a width.

Plain Python (and Rich's cell measure, imported when a label is cut): shared by the terminal,
the figures and the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnviz.arguments import digits
from attnviz.tokens import printable, word_key

_SUBSCRIPT_DIGITS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
_SUPERSCRIPT_DIGITS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")

ELLIPSIS = "…"
MASKED = "−∞"  # a masked score: set to minus infinity before the softmax
MAX_LABEL_WIDTH = 10  # a longer word is cut to this many cells in headers and row labels
#: The most zero-width code points (combining marks, joiners) kept in a row: Unicode's
#: stream-safe text format (UAX #15) allows 30 non-starters in a row, more than any script
#: needs. They take no cells, so a cut by cells alone kept a word of 19,990 marks whole.
MAX_MARKS = 30
#: The most code points a label keeps for each cell of its width: a letter and three marks.
CODE_POINTS_PER_CELL = 4


def subscript(number: int) -> str:
    """``12`` -> ``₁₂``, for head numbers in names such as Q₁ and W_Q₂."""
    return str(number).translate(_SUBSCRIPT_DIGITS)


def superscript(number: int) -> str:
    """``6`` -> ``⁶``, ``-3`` -> ``⁻³``, for powers of ten such as 4.5 × 10⁶."""
    return str(number).translate(_SUPERSCRIPT_DIGITS)


def format_number(value: float, decimals: int) -> str:
    """Fixed-point text with no negative zero (-0.001 at 2 decimals prints as 0.00); scientific
    notation from a million up, so a huge value never needs a column wider than the screen."""
    if math.isinf(value):
        return MASKED if value < 0 else "∞"
    if abs(value) >= 1e6:
        return f"{value:.{decimals}e}"
    text = f"{value:.{decimals}f}"
    if text.startswith("-") and float(text) == 0.0:
        text = text[1:]
    return text


def reciprocal(n: int, decimals: int) -> str:
    """1/n written with the sign it deserves at ``decimals``: "1/4 = 0.25", but "1/8 ≈ 0.12"
    (0.125 is not 0.12: a rounded value is never written as equal)."""
    text = format_number(1 / n, decimals)
    return f"1/{n} {'=' if float(text) == 1 / n else '≈'} {text}"


def fit_label(word: str, width: int = MAX_LABEL_WIDTH) -> str:
    """A label cut to ``width`` cells with an ellipsis, keeping an occurrence suffix (":2")."""
    from rich.cells import cell_len  # here: `attnviz --help` imports this module, not Rich

    text = elide_marks(printable(word))
    if cell_len(text) <= width and len(text) <= CODE_POINTS_PER_CELL * width:
        return text
    stem, colon, number = text.rpartition(":")
    suffix = f"{ELLIPSIS}:{number}" if colon and stem and digits(number) else ELLIPSIS
    if suffix != ELLIPSIS:
        text = stem
    room = width - cell_len(suffix)
    # Cut by cells, and by code points too: zero-width marks take no cells.
    return text[: min(fitting_prefix(text, room), CODE_POINTS_PER_CELL * max(room, 0))] + suffix


def mark_runs(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds more than MAX_MARKS zero-width code points in a row: for each such
    run, the span (start, end) past its first MAX_MARKS, to be elided."""
    # Fewer non-ASCII code points than a run needs: nothing to look for (the usual case,
    # measured without a loop in Python).
    if len(text) - len(text.encode("ascii", "ignore")) <= MAX_MARKS:
        return []
    from rich.cells import get_character_cell_size

    runs, start = [], 0
    for position, char in enumerate([*text, "x"]):  # "x" ends a run at the end of the text
        if not char.isascii() and get_character_cell_size(char) == 0:
            continue
        if position - start > MAX_MARKS:
            runs.append((start + MAX_MARKS, position))
        start = position + 1
    return runs


def elide_marks(text: str) -> str:
    """``text`` with each run of more than MAX_MARKS zero-width code points cut to MAX_MARKS
    and an ellipsis."""
    kept, end = [], 0
    for start, stop in mark_runs(text):
        kept += [text[end:start], ELLIPSIS]
        end = stop
    return "".join([*kept, text[end:]]) if kept else text


def fitting_prefix(text: str, cells: int, start: int = 0) -> int:
    """The end of the longest piece ``text[start:end]`` at most ``cells`` cells wide.

    A piece's width only grows as it grows, so the end is found by doubling a guess until it
    no longer fits, then bisecting: a few measurements of at most twice the answer's length,
    whatever the length of ``text`` (cutting one character at a time measured the whole word
    once per character: 16,000 characters took seconds).
    """
    from rich.cells import cell_len

    if cells < 0:
        return start
    low, high = start, start + max(cells, 1)  # text[start:low] fits; text[start:high] is tried
    while high < len(text) and cell_len(text[start:high]) <= cells:
        low, high = high, start + 2 * (high - start)
    high = min(high, len(text))
    while low < high:  # invariant: text[start:low] fits, text[start:high + 1] does not
        middle = (low + high + 1) // 2
        if cell_len(text[start:middle]) <= cells:
            low = middle
        else:
            high = middle - 1
    return low


def occurrence_labels(tokens: Sequence[str]) -> list[str]:
    """Words as labels, numbered where a word repeats: the:1 … the:2, as --focus the:2 names it."""
    counts: dict[str, int] = {}
    for token in tokens:
        counts[word_key(token)] = counts.get(word_key(token), 0) + 1
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        key = word_key(token)
        if counts[key] == 1:
            labels.append(token)
        else:
            seen[key] = seen.get(key, 0) + 1
            labels.append(f"{token}:{seen[key]}")
    return labels


def percent(share: float) -> str:
    """A share as a percentage, to one decimal (99.3%), to two where one would round a share
    below 1 up to 100.0% (99.96%), and never up to 100% below 1 (0.99999: 99.99%)."""
    text = f"{share:.1%}"
    if text != "100.0%" or share >= 1:
        return text
    text = f"{share:.2%}"
    return text if text != "100.00%" else f"{math.floor(share * 10_000) / 100:.2f}%"


def plural(count: int, noun: str) -> str:
    """``1 layer``, ``6 layers``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
