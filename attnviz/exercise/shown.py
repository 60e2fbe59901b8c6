"""Numbers as a student is shown them, and the arithmetic every builder shares: rounding to the
shown decimals, a sum of products worked term by term, and the tolerance.

The tolerance: the answer is computed from the inputs *as shown*, so a student who uses them
and keeps full precision gets it exactly; asked for ``decimals`` decimals, rounding the answer
costs at most half a unit of the last decimal and rounding the intermediate results (the
products, the exponentials) about as much again. So an answer is right within one unit of its
last decimal: 0.01 for 2 decimals. A count (a cache size) is an exact whole number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.exercise.questions import Given, Mistake, Question, Slip, format_number

#: Decimals of the numbers a student is shown: two work by hand or on a calculator, and keep
#: a sum of eight products short.
SHOWN_DECIMALS = 2


def rounded(values: Sequence[float] | np.ndarray, decimals: int) -> tuple[float, ...]:
    """Each value rounded to ``decimals`` (−∞, a masked score, stays −∞)."""
    return tuple(
        float(v) if math.isinf(float(v)) else round(float(v), decimals) + 0.0
        for v in np.asarray(values, dtype=np.float64).ravel()
    )


def given(
    name: str, labels: Sequence[str], values: Sequence[float] | np.ndarray, decimals: int
) -> Given:
    """A Given whose values are rounded to ``decimals``, as shown."""
    return Given(name, tuple(labels), rounded(values, decimals), decimals)


def numbered(count: int) -> tuple[str, ...]:
    """ "1", "2", … "count": the labels of a vector's dimensions."""
    return tuple(str(i + 1) for i in range(count))


def tolerance(decimals: int) -> float:
    """One unit of the answer's last decimal (see the module's docstring)."""
    return 10.0**-decimals


def number(value: float, decimals: int) -> str:
    """A number in a worked solution; −∞ as a reader writes it."""
    if math.isinf(value):
        return "−∞" if value < 0 else "∞"
    return format_number(value, decimals)


def factor(value: float, decimals: int) -> str:
    """A number as a factor: a negative one in parentheses."""
    text = number(value, decimals)
    return f"({text})" if text.startswith("-") else text


class Worked:
    """A sum of products worked term by term from shown numbers: its lines, running sums
    (the checkpoints) and each term's single slips (left out, sign flipped)."""

    def __init__(
        self,
        left: Sequence[float] | np.ndarray,
        right: Sequence[float] | np.ndarray,
        decimals: int,
        *,
        names: Sequence[str] | None = None,
        added: float | None = None,
    ) -> None:
        self.terms = [float(a) * float(b) for a, b in zip(left, right, strict=True)]
        self.total = math.fsum(self.terms) + (added or 0.0)
        exact = 2 * decimals  # a product of two shown numbers has twice their decimals
        names = names or numbered(len(self.terms))
        self.lines = [
            f"  {name}: {factor(a, decimals)} × {factor(b, decimals)} = {number(t, exact)}"
            for name, a, b, t in zip(names, left, right, self.terms, strict=True)
        ]
        running = 0.0
        self.checkpoints: list[tuple[str, float]] = []
        self.slips: list[Slip] = []
        for index, term in enumerate(self.terms):
            running += term
            said = "product 1" if index == 0 else f"the sum of products 1 to {index + 1}"
            self.checkpoints.append((said, running))
            self.slips.append(Slip(index, f"left out product {names[index]}", self.total - term))
            self.slips.append(
                Slip(index, f"flipped the sign of product {names[index]}", self.total - 2 * term)
            )
        if added is not None:
            self.lines.append(f"  + the bias {number(added, decimals)}")
            self.checkpoints.append(("the sum with the bias", self.total))
            self.slips.append(Slip(len(self.terms), "left out the bias", self.total - added))
        self.sum_line = f"  sum = {number(self.total, exact)}"


class Draft(NamedTuple):
    """A question as a builder makes it, before ``finished`` adds the tolerance and drops the
    mistakes and slips that give the right answer."""

    kind: str
    text: str
    givens: Sequence[Given]
    answer: float
    decimals: int
    solution: Sequence[str]
    checkpoints: Sequence[tuple[str, float]]
    mistakes: Sequence[Mistake]
    where: tuple[str, int, int, int, int]
    slips: Sequence[Slip] = ()


def finished(draft: Draft, *, unrounded: float | None = None, exact: bool = False) -> Question:
    """The Question, its tolerance said in its text (``exact``: a count, no tolerance); the
    mistakes that give the right answer (within the tolerance) or no number at all are never
    offered, nor slips that do; the lesson's ``unrounded`` number said when it differs."""
    kind, text, givens, answer, decimals, solution, checkpoints, mistakes, where, slips = draft
    allowed = 0.0 if exact else tolerance(decimals)
    near = allowed * (1 + 1e-9) + 1e-12
    offered = tuple(m for m in mistakes if math.isfinite(m.value) and abs(m.value - answer) > near)
    kept = tuple(s for s in slips if math.isfinite(s.value) and abs(s.value - answer) > near)
    said = (
        "exactly"
        if exact
        else f"to {decimals} decimals (within {format_number(allowed, decimals)})"
    )
    lines = [*solution, f"Answer: {format_number(answer, decimals)}"]
    if unrounded is not None and abs(unrounded - answer) > 10.0 ** -(decimals + 2):
        lines.append(
            f"(From the numbers as shown; the lesson's unrounded number is "
            f"{format_number(unrounded, decimals + 2)}.)"
        )
    return Question(
        kind=kind,
        text=f"{text} Answer {said}.",
        givens=tuple(givens),
        answer=float(answer),
        decimals=decimals,
        tolerance=allowed,
        solution=tuple(lines),
        checkpoints=tuple((label, float(value)) for label, value in checkpoints),
        mistakes=offered,
        where=where,
        slips=kept,
    )


def rounded_array(array: FloatArray | np.ndarray, decimals: int) -> FloatArray:
    """An array of any shape rounded as ``rounded`` rounds (−∞ kept)."""
    values = np.asarray(array, dtype=np.float64)
    result: FloatArray = np.array(rounded(values, decimals), dtype=np.float64).reshape(values.shape)
    return result
