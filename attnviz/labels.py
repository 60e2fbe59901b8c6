"""Numbers and words as they appear in every view: fixed-point numbers with no negative zero,
subscript head numbers, repeated words numbered (the:1, the:2), long words cut to a width.

Plain Python (and Rich's cell measure, imported when a label is cut): shared by the terminal,
the figures and the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnviz.arguments import digits
from attnviz.tokens import printable

_SUBSCRIPT_DIGITS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")

ELLIPSIS = "…"
MASKED = "−∞"  # a masked score: set to minus infinity before the softmax
MAX_LABEL_WIDTH = 10  # a longer word is cut to this many cells in headers and row labels


def subscript(number: int) -> str:
    """``12`` -> ``₁₂``, for head numbers in names such as Q₁ and W_Q₂."""
    return str(number).translate(_SUBSCRIPT_DIGITS)


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


def fit_label(word: str, width: int = MAX_LABEL_WIDTH) -> str:
    """A label cut to ``width`` cells with an ellipsis, keeping an occurrence suffix (":2")."""
    from rich.cells import cell_len  # here: `attnviz --help` imports this module, not Rich

    text = printable(word)
    if cell_len(text) <= width:
        return text
    stem, colon, number = text.rpartition(":")
    suffix = f"{ELLIPSIS}:{number}" if colon and stem and digits(number) else ELLIPSIS
    if suffix != ELLIPSIS:
        text = stem
    return text[: fitting_prefix(text, width - cell_len(suffix))] + suffix


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
        counts[token.casefold()] = counts.get(token.casefold(), 0) + 1
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        key = token.casefold()
        if counts[key] == 1:
            labels.append(token)
        else:
            seen[key] = seen.get(key, 0) + 1
            labels.append(f"{token}:{seen[key]}")
    return labels


def plural(count: int, noun: str) -> str:
    """``1 layer``, ``6 layers``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
