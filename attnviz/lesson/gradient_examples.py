"""The worked examples of the gradient step, as text that holds by hand at the digits shown.

Each result is printed to about three significant digits (gradients run from thousandths to
units); its terms at the fewest decimals, from the result's, at which a reader working from the
printed terms gets the printed result. Formats numbers attnviz.train.one_step computed; computes
nothing but the decimals to print them with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from attnviz.labels import format_number
from attnviz.lesson.examples import fewest_decimals, rounds_to, sum_of_products_holds

#: Digits after the point in the gradient lesson's tables.
TABLE_DECIMALS = 3
#: Significant digits of a worked example's result.
SIGNIFICANT = 3
MOST_DECIMALS = 8


def result_decimals(value: float) -> int:
    """Decimals that print ``value`` with SIGNIFICANT digits, at least the tables' 3."""
    if value == 0 or not math.isfinite(value):
        return TABLE_DECIMALS
    digits = SIGNIFICANT - 1 - math.floor(math.log10(abs(value)))
    return min(max(TABLE_DECIMALS, digits), MOST_DECIMALS)


def fixed(value: float, decimals: int) -> str:
    return format_number(float(value), decimals)


def term(value: float, decimals: int) -> str:
    """A number as a factor: negative numbers in parentheses."""
    text = fixed(value, decimals)
    return f"({text})" if text.startswith("-") else text


def result(value: float) -> str:
    return fixed(value, result_decimals(value))


def products(
    left: Sequence[float] | np.ndarray, right: Sequence[float] | np.ndarray, total: float
) -> str:
    """Σ a×b = total with every product written out, at decimals that make it hold."""
    printed = result(total)
    start = result_decimals(total)
    decimals = fewest_decimals(sum_of_products_holds(left, right, (), printed), start)
    terms = [f"{term(a, decimals)}×{term(b, decimals)}" for a, b in zip(left, right, strict=True)]
    return f"{' + '.join(terms)} = {printed}"


def negative_log(probability: float, loss: float) -> str:
    """−ln p = L, p at the decimals at which ln of the printed p gives the printed L."""
    printed = result(loss)

    def holds(decimals: int) -> bool:
        shown = float(fixed(probability, decimals))
        return shown > 0 and rounds_to(-math.log(shown), printed)

    decimals = fewest_decimals(holds, result_decimals(probability))
    return f"−ln {fixed(probability, decimals)} = {printed}"


def minus_target(probability: float, is_target: bool) -> str:
    """p − 1 (the referent) or p − 0 (any other choice): exact in decimals, so p's own digits."""
    decimals = max(result_decimals(probability), result_decimals(probability - 1.0))
    one = 1 if is_target else 0
    return f"{fixed(probability, decimals)} − {one} = {fixed(probability - one, decimals)}"


def softmax_backward(
    weights: np.ndarray, d_weights: np.ndarray, column: int, d_score: float
) -> tuple[str, str]:
    """The row's Σ_k w_k·∂L/∂w_k written out, then w_j·(∂L/∂w_j − Σ) = ∂L/∂s_j, at decimals at
    which both hold from the printed numbers (the second from the printed Σ)."""
    total = float(np.dot(weights, d_weights))
    printed_total, printed_result = result(total), result(d_score)

    def holds(decimals: int) -> bool:
        def shown(value: float) -> float:
            return float(fixed(value, decimals))

        again = sum(shown(w) * shown(g) for w, g in zip(weights, d_weights, strict=True))
        by_hand = shown(weights[column]) * (shown(d_weights[column]) - float(printed_total))
        return rounds_to(again, printed_total) and rounds_to(by_hand, printed_result)

    start = min(result_decimals(total), result_decimals(d_score))
    decimals = fewest_decimals(holds, start)
    terms = [
        f"{term(w, decimals)}×{term(g, decimals)}" for w, g in zip(weights, d_weights, strict=True)
    ]
    weight, gradient = weights[column], d_weights[column]
    return (
        f"{' + '.join(terms)} = {printed_total}",
        f"{term(weight, decimals)}×({term(gradient, decimals)} − {_signed_total(printed_total)})"
        f" = {printed_result}",
    )


def _signed_total(printed: str) -> str:
    """The printed Σ as subtracted: in parentheses when negative."""
    return f"({printed})" if printed.startswith("-") else printed


def divided(value: float, divisor: float, quotient: float) -> str:
    """value / divisor = quotient, at decimals at which the printed division holds."""
    printed = result(quotient)

    def holds(decimals: int) -> bool:
        return rounds_to(float(fixed(value, decimals)) / float(fixed(divisor, decimals)), printed)

    decimals = fewest_decimals(holds, result_decimals(quotient))
    return f"{fixed(value, decimals)} / {fixed(divisor, decimals)} = {printed}"


def update(weight: float, learning_rate: float, gradient: float, new: float) -> str:
    """w − lr×g = new, the learning rate as given, w and g at decimals at which it holds; the
    new weight to 3 significant digits of the change, so that the change shows."""
    printed = fixed(new, max(result_decimals(new), result_decimals(learning_rate * gradient)))

    def holds(decimals: int) -> bool:
        by_hand = float(fixed(weight, decimals)) - learning_rate * float(fixed(gradient, decimals))
        return rounds_to(by_hand, printed)

    decimals = fewest_decimals(holds, len(printed.partition(".")[2]))
    return f"{fixed(weight, decimals)} − {learning_rate:g}×{term(gradient, decimals)} = {printed}"
