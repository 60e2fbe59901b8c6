"""How a worked example reads: the terms of a sum written out, at the decimals that make the
printed arithmetic hold where every term is shown. Formats attnviz.worked's records; computes
nothing but the decimals to print them with.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz import worked
from attnviz.render.labels import ELLIPSIS, format_number, subscript


class ExampleText:
    """Worked examples as text, for one lesson: its decimals and the labels of the trace's own
    positions (``queries``, ``keys``), and the names of hidden tokens a sum includes."""

    def __init__(
        self, decimals: int, queries: Sequence[str], keys: Sequence[str], hidden: str = ""
    ) -> None:
        self.decimals = decimals
        self.queries = queries
        self.keys = keys
        self.hidden = hidden

    def number(self, value: float) -> str:
        return format_number(float(value), self.decimals)

    def exact(self, value: float) -> str:
        """A number in a worked example: at least 2 decimals, or 1 / 2 = 0 would read as wrong."""
        return format_number(float(value), max(self.decimals, 2))

    def term(self, value: float) -> str:
        """A number as a factor: negative numbers in parentheses."""
        text = self.exact(value)
        return f"({text})" if text.startswith("-") else text

    def vector(self, values: np.ndarray, limit: int = 8) -> str:
        shown = [self.number(v) for v in values]
        if len(shown) > limit:
            shown = [*shown[: limit // 2], ELLIPSIS, *shown[-(limit // 2) :]]
        return "[" + ", ".join(shown) + "]"

    def terms(self, left: np.ndarray, right: np.ndarray) -> list[str]:
        """a×b terms of a dot product; past 6 terms, the first 3, an ellipsis and the last."""
        terms = [f"{self.term(a)}×{self.term(b)}" for a, b in zip(left, right, strict=True)]
        if len(terms) > 6:
            terms = [*terms[:3], ELLIPSIS, terms[-1]]
        return terms

    def projection(self, example: worked.ProjectionExample) -> str:
        """One number of Q as the row of X times the column of W_Q, term by term (+ bias)."""
        name = f"q_{self.queries[example.token]}[{example.column + 1}]"
        counted = [f"{len(example.x)} products"] if len(example.x) > 6 else []
        terms = self.terms(example.x, example.w)
        if example.bias is not None:
            counted.append(f"then b_Q{subscript(example.head + 1)}[{example.column + 1}]")
            terms.append(self.term(example.bias))
        if counted:
            name += f" ({', '.join(counted)})"
        return f"{name} = {' + '.join(terms)} = {self.exact(example.result)}"

    def dot_product(self, left: np.ndarray, right: np.ndarray, score: float, name: str) -> str:
        """q·k written out term by term; the result is the trace's score, not recomputed."""
        if len(left) > 6:
            name += f" ({len(left)} terms)"
        return f"{name} = {' + '.join(self.terms(left, right))} = {self.exact(score)}"

    def softmax(self, example: worked.SoftmaxExample) -> str:
        """One weight as exp(shifted) / Σ exp(shifted), from the same pieces softmax() uses."""
        exps = [f"exp({self.exact(s)})" for s in example.shifted]
        if len(exps) > 5:
            exps = [*exps[:2], ELLIPSIS, exps[-1]]
        hidden = f", {self.hidden} included" if self.hidden else ""
        j = example.key
        return (
            f"exp({self.exact(example.shifted[j])}) / ({' + '.join(exps)}{hidden}) = "
            f"{self.exact(example.exponentials[j])} / {self.exact(example.total)} = "
            f"{self.exact(example.result)}"
        )

    def weighted_sum(self, example: worked.WeightedSumExample, limit: int = 6) -> str:
        """z_i = Σ_j w_ij·v_j, largest weights first; the result is the trace's Z row.

        The sum runs over every token as computed, hidden ones ([CLS], [SEP]) included.
        """
        weights = example.weights
        order = example.order
        terms = [f"{self.exact(weights[j])}·v_{self.keys[j]}" for j in order[:limit]]
        if len(order) > limit:
            rest = float(weights[list(order[limit:])].sum())
            terms.append(
                f"{ELLIPSIS} ({len(order) - limit} more, weights summing to {self.exact(rest)})"
            )
        word = self.queries[example.query]
        return f"z_{word} = {' + '.join(terms)} = {self.vector(example.result)}"

    def output_sum(self, example: worked.OutputExample) -> str:
        """One output number as the sum of the heads' parts (and the bias), at the fewest
        decimals (from the lesson's) at which the printed parts add up to the printed result."""
        parts = [*example.head_blocks, *([] if example.bias is None else [example.bias])]
        decimals = max(self.decimals, 2)
        if len(example.head_blocks) <= 6:  # every part is shown: make the printed sum hold
            decimals = adding_up(parts, example.result, decimals)
        values = [format_number(float(v), decimals) for v in example.head_blocks]
        values = [f"({v})" if v.startswith("-") else v for v in values]
        if len(values) > 6:
            values = [*values[:3], ELLIPSIS, values[-1]]
        name = f"Σ_h (Z_h·W_O^(h))[{self.queries[example.token]}, {example.column + 1}]"
        if example.bias is not None:
            name += f" + b_O[{example.column + 1}]"
            bias = format_number(example.bias, decimals)
            values.append(f"({bias})" if bias.startswith("-") else bias)
        return f"{name} = {' + '.join(values)} = {format_number(example.result, decimals)}"


def adding_up(parts: Sequence[float], total: float, decimals: int, most: int = 8) -> int:
    """The fewest decimals, from ``decimals`` up to ``most``, at which ``parts`` printed add up
    to ``total`` printed: -0.0849 + -0.1649 = -0.2498 reads -0.08 + -0.16 = -0.25 at two
    decimals, but -0.085 + -0.165 = -0.250 at three."""
    for candidate in range(decimals, most + 1):
        printed = sum(float(format_number(float(part), candidate)) for part in parts)
        if format_number(printed, candidate) == format_number(float(total), candidate):
            return candidate
    return most
