"""The worked examples of the gradient step, as text that holds by hand at the digits shown.

Each result is printed to three significant digits (gradients run from millionths, in a trained
model, to units): fixed-point from 0.0001 up, else in scientific notation (9.62e-06). Its terms
are printed the same way, at the fewest digits, from the result's, at which a reader working
from the printed terms gets the printed result. Formats numbers attnviz.train.one_step
computed; computes nothing but the digits to print them with.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from attnviz.labels import format_number

#: Digits after the point in the gradient lesson's tables.
TABLE_DECIMALS = 3
#: Significant digits of a worked example's result.
SIGNIFICANT = 3
#: The most digits a term gets (float64 holds about 16 significant digits).
MOST_DIGITS = 15
#: Results smaller than this are printed in scientific notation.
SMALLEST_FIXED = 1e-4


def result_decimals(value: float) -> int:
    """Decimals that print ``value`` with SIGNIFICANT digits, at least the tables' 3."""
    if value == 0 or not math.isfinite(value):
        return TABLE_DECIMALS
    digits = SIGNIFICANT - 1 - math.floor(math.log10(abs(value)))
    return min(max(TABLE_DECIMALS, digits), MOST_DIGITS)


def is_tiny(value: float) -> bool:
    return 0 < abs(value) < SMALLEST_FIXED


def fixed(value: float, decimals: int) -> str:
    return format_number(float(value), decimals)


def scientific(value: float, digits: int) -> str:
    """``value`` as 9.62e-06: ``digits`` after the mantissa's point; 0 as 0."""
    return "0" if value == 0 else f"{float(value):.{digits}e}"


def holds_at(value: float, printed: str) -> bool:
    """Whether ``value`` rounds to ``printed`` (fixed or scientific): it lies less than half a
    unit of the printed last digit away (an exact half is refused, as readers round it
    differently)."""
    mantissa, _, exponent = printed.partition("e")
    unit = 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))
    return abs(value - float(printed)) < 0.5 * unit * (1 - 1e-9)


class Style:
    """How an example's numbers are printed: fixed decimals, or scientific when its result is
    tiny; ``digits`` after the point (of the mantissa)."""

    def __init__(self, result: float) -> None:
        self.tiny = is_tiny(result)
        self.start = SIGNIFICANT - 1 if self.tiny else result_decimals(result)
        self.printed_result = self.number(result, self.start)

    def number(self, value: float, digits: int) -> str:
        return scientific(value, digits) if self.tiny else fixed(value, digits)

    def term(self, value: float, digits: int) -> str:
        """A number as a factor: negative numbers in parentheses."""
        text = self.number(value, digits)
        return f"({text})" if text.startswith("-") else text

    def shown(self, value: float, digits: int) -> float:
        return float(self.number(value, digits))

    def fewest(self, holds: Callable[[int], bool]) -> int:
        """The fewest digits, from the result's, at which ``holds``."""
        for digits in range(self.start, MOST_DIGITS + 1):
            if holds(digits):
                return digits
        return MOST_DIGITS


def result(value: float) -> str:
    return Style(value).printed_result


def products(
    left: Sequence[float] | np.ndarray, right: Sequence[float] | np.ndarray, total: float
) -> str:
    """Σ a×b = total with every product written out, at digits that make it hold."""
    style = Style(total)
    pairs = list(zip(left, right, strict=True))

    def holds(digits: int) -> bool:
        by_hand = sum(style.shown(a, digits) * style.shown(b, digits) for a, b in pairs)
        return holds_at(by_hand, style.printed_result)

    digits = style.fewest(holds)
    terms = [f"{style.term(a, digits)}×{style.term(b, digits)}" for a, b in pairs]
    return f"{' + '.join(terms)} = {style.printed_result}"


def negative_log(probability: float, loss: float) -> str:
    """−ln p = L, p at the decimals at which ln of the printed p gives the printed L."""
    printed = result(loss)

    def holds(decimals: int) -> bool:
        shown = float(fixed(probability, decimals))
        return shown > 0 and holds_at(-math.log(shown), printed)

    decimals = next(
        (d for d in range(result_decimals(probability), MOST_DIGITS + 1) if holds(d)),
        MOST_DIGITS,
    )
    return f"−ln {fixed(probability, decimals)} = {printed}"


def minus_target(probability: float, is_target: bool) -> str:
    """p − 1 (the referent) or p − 0 (any other choice): exact in decimals, so p's own digits."""
    decimals = max(result_decimals(probability), result_decimals(probability - 1.0))
    one = 1 if is_target else 0
    return f"{fixed(probability, decimals)} − {one} = {fixed(probability - one, decimals)}"


def softmax_backward(
    weights: np.ndarray, d_weights: np.ndarray, column: int, d_score: float
) -> tuple[str, str]:
    """The row's Σ_k w_k·∂L/∂w_k written out, then w_j·(∂L/∂w_j − Σ) = ∂L/∂s_j, both holding
    from the printed numbers (the second from the printed Σ). ∂L/∂w_j and Σ can be close, so
    Σ gets as many digits as the subtraction needs, and the terms at least as many."""
    total = float(np.dot(weights, d_weights))
    sum_style, style = Style(total), Style(d_score)
    pairs = list(zip(weights, d_weights, strict=True))

    def holds(printed_total: str, digits: int) -> bool:
        again = sum(sum_style.shown(w, digits) * sum_style.shown(g, digits) for w, g in pairs)
        by_hand = style.shown(weights[column], digits) * (
            style.shown(d_weights[column], digits) - float(printed_total)
        )
        return holds_at(again, printed_total) and holds_at(by_hand, style.printed_result)

    printed_total, digits = sum_style.printed_result, MOST_DIGITS
    found = False
    for total_digits in range(sum_style.start, MOST_DIGITS + 1):
        printed_total = sum_style.number(total, total_digits)
        for digits in range(max(total_digits, style.start), MOST_DIGITS + 1):
            if holds(printed_total, digits):
                found = True
                break
        if found:
            break
    terms = [f"{sum_style.term(w, digits)}×{sum_style.term(g, digits)}" for w, g in pairs]
    subtracted = f"({printed_total})" if printed_total.startswith("-") else printed_total
    weight = style.term(weights[column], digits)
    gradient = style.term(d_weights[column], digits)
    return (
        f"{' + '.join(terms)} = {printed_total}",
        f"{weight}×({gradient} − {subtracted}) = {style.printed_result}",
    )


def divided(value: float, divisor: float, quotient: float) -> str:
    """value / divisor = quotient, at digits at which the printed division holds; the divisor
    (√d_k) in fixed decimals."""
    style = Style(quotient)

    def holds(digits: int) -> bool:
        root = float(fixed(divisor, max(digits, TABLE_DECIMALS)))
        return holds_at(style.shown(value, digits) / root, style.printed_result)

    digits = style.fewest(holds)
    root = fixed(divisor, max(digits, TABLE_DECIMALS))
    return f"{style.number(value, digits)} / {root} = {style.printed_result}"


def update(weight: float, learning_rate: float, gradient: float, new: float) -> str:
    """w − lr×g = new, the learning rate as given, w and g at decimals at which it holds; the
    new weight to 3 significant digits of the change, so that the change shows."""
    change = learning_rate * gradient
    decimals = max(result_decimals(new), result_decimals(change))
    printed = fixed(new, decimals)

    def holds(digits: int) -> bool:
        by_hand = float(fixed(weight, digits)) - learning_rate * float(fixed(gradient, digits))
        return holds_at(by_hand, printed)

    digits = next((d for d in range(decimals, MOST_DIGITS + 1) if holds(d)), MOST_DIGITS)
    term = fixed(gradient, digits)
    term = f"({term})" if term.startswith("-") else term
    return f"{fixed(weight, digits)} − {learning_rate:g}×{term} = {printed}"
