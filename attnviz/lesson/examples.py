"""How a worked example reads: the terms of a sum written out, at the decimals that make the
printed arithmetic hold where every term is shown. Formats attnviz.worked's records; computes
nothing but the decimals to print them with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from attnviz import worked
from attnviz.labels import (
    ELLIPSIS,
    MASKED,
    fit_label,
    format_number,
    occurrence_labels,
    subscript,
)
from attnviz.trace import AttentionTrace

#: The most terms a sum is written out with; past that, the first three, an ellipsis, the last.
MOST_TERMS = 8
#: The most decimals a worked example is printed with to make its arithmetic hold.
MOST_DECIMALS = 8


def rounds_to(value: float, printed: str) -> bool:
    """Whether ``value`` rounds to ``printed``: it lies less than half a unit of the printed
    last digit away. An exact half is refused, as readers round a tie differently (0.01 / 2.00
    is 0.005: 0.01 at school, 0.00 to even), so the example gets more decimals instead."""
    if printed == MASKED:
        return value == -np.inf
    decimals = len(printed.partition(".")[2])
    return abs(value - float(printed)) < 0.5 * 10.0**-decimals * (1 - 1e-9)


def read_back(printed: str) -> float:
    """The value a reader takes from a printed number: −∞ for a masked score."""
    return -np.inf if printed == MASKED else float(printed)


def fewest_decimals(holds: Callable[[int], bool], start: int) -> int:
    """The fewest decimals from ``start`` (up to MOST_DECIMALS) for an example's terms at which
    ``holds``: at which they give its printed result when a reader works it by hand. The result
    keeps the tables' decimals; only the terms get more, which makes the error of the rounded
    terms as small as needed (more decimals on both sides would not: the result's rounding
    shrinks as fast as the terms')."""
    for decimals in range(start, MOST_DECIMALS + 1):
        if holds(decimals):
            return decimals
    return MOST_DECIMALS


def sum_of_products_holds(
    left: Sequence[float] | np.ndarray,
    right: Sequence[float] | np.ndarray,
    added: Sequence[float],
    result: str,
) -> Callable[[int], bool]:
    """Whether Σ a×b (+ the ``added`` terms), worked from the terms printed at the decimals
    given, rounds to the printed ``result``."""

    def holds(decimals: int) -> bool:
        def printed(value: float) -> float:
            return float(format_number(float(value), decimals))

        total = sum(printed(a) * printed(b) for a, b in zip(left, right, strict=True))
        total += sum(printed(value) for value in added)
        return rounds_to(total, result)

    return holds


#: A word named in a worked example ("q_animal", "k_the:2") is cut to this many cells: a
#: tokenizer's 5-million-character special token printed whole in every line would flood the
#: terminal (and take Rich a minute to wrap).
MAX_NAMED_WIDTH = 40


def position_labels(trace: AttentionTrace) -> tuple[list[str], list[str]]:
    """The labels of the trace's own positions, queries and keys, as every worked example names
    them: word pieces as computed, hidden tokens included, repeats numbered ("the:1")."""
    queries = occurrence_labels([fit_label(token, MAX_NAMED_WIDTH) for token in trace.tokens])
    keys = (
        occurrence_labels([fit_label(token, MAX_NAMED_WIDTH) for token in trace.key_tokens])
        if trace.is_cross
        else queries
    )
    return queries, keys


class ExampleText:
    """Worked examples as text, for one lesson: its decimals and the labels of the trace's own
    positions (``queries``, ``keys``).

    An example's result is printed at the tables' decimals (at least 2). Where every term is
    written out, the terms are printed at the fewest decimals (from the same) at which they give
    that result by hand: 0.61×0.06 + … is worked from the numbers as shown. Where a sum is too
    long to write out, its terms are elided and printed at the result's decimals.
    """

    def __init__(self, decimals: int, queries: Sequence[str], keys: Sequence[str]) -> None:
        self.decimals = decimals
        self.queries = queries
        self.keys = keys
        self.least = max(decimals, 2)  # 1 / 2 = 0 would read as wrong

    def number(self, value: float) -> str:
        return format_number(float(value), self.decimals)

    def exact(self, value: float, decimals: int | None = None) -> str:
        """A number in a worked example: at least 2 decimals."""
        return format_number(float(value), self.least if decimals is None else decimals)

    def term(self, value: float, decimals: int | None = None) -> str:
        """A number as a factor: negative numbers in parentheses."""
        text = self.exact(value, decimals)
        return f"({text})" if text.startswith("-") else text

    def products_decimals(
        self,
        left: Sequence[float] | np.ndarray,
        right: Sequence[float] | np.ndarray,
        result: float,
        added: Sequence[float] = (),
        limit: int = MOST_TERMS,
    ) -> int:
        """The decimals ``products`` prints its terms with: the fewest at which the written-out
        sum gives the printed result; the result's own when the sum is elided."""
        if len(left) > limit:
            return self.least
        holds = sum_of_products_holds(left, right, added, self.exact(result))
        return fewest_decimals(holds, self.least)

    def products(
        self,
        left: Sequence[float] | np.ndarray,
        right: Sequence[float] | np.ndarray,
        result: float,
        added: Sequence[float] = (),
        limit: int = MOST_TERMS,
    ) -> str:
        """Σ a×b (+ added) = result, written out; past ``limit`` products, elided."""
        written_out = len(left) <= limit
        printed = self.exact(result)
        decimals = self.products_decimals(left, right, result, added, limit)
        pairs = list(zip(left, right, strict=True))
        # Only the terms written are formatted: a page writes thousands of these sums.
        terms = [
            f"{self.term(a, decimals)}×{self.term(b, decimals)}"
            for a, b in (pairs if written_out else [*pairs[:3], pairs[-1]])
        ]
        if not written_out:
            terms.insert(3, ELLIPSIS)
        terms += [self.term(value, decimals) for value in added]
        return f"{' + '.join(terms)} = {printed}"

    def projection(self, example: worked.ProjectionExample) -> str:
        """One number of Q as the row of X times the column of W_Q, term by term (+ bias)."""
        name = f"q_{self.queries[example.token]}[{example.column + 1}]"
        counted = [f"{len(example.x)} products"] if len(example.x) > MOST_TERMS else []
        added: list[float] = []
        if example.bias is not None:
            counted.append(f"then b_Q{subscript(example.head + 1)}[{example.column + 1}]")
            added.append(example.bias)
        if counted:
            name += f" ({', '.join(counted)})"
        return f"{name} = {self.products(example.x, example.w, example.result, added)}"

    def dot_product(self, example: worked.DotProductExample) -> str:
        """q·k written out term by term; the result is the trace's score, not recomputed."""
        name = f"q_{self.queries[example.query]} · k_{self.keys[example.key]}"
        if len(example.q) > MOST_TERMS:
            name += f" ({len(example.q)} terms)"
        return f"{name} = {self.products(example.q, example.k, example.result)}"

    def scaling_decimals(self, example: worked.ScalingExample) -> int:
        """The fewest decimals at which the printed score / √d_k gives the printed result."""
        result = self.exact(example.result)

        def holds(decimals: int) -> bool:
            score = float(self.exact(example.score, decimals))
            root = float(self.exact(example.sqrt_d_k, decimals))
            return rounds_to(score / root, result)

        return fewest_decimals(holds, self.least)

    def scaling(self, example: worked.ScalingExample) -> str:
        """score / √d_k = scaled, at the decimals at which the printed division holds."""
        result = self.exact(example.result)
        decimals = self.scaling_decimals(example)
        return (
            f"{self.exact(example.score, decimals)} / {self.exact(example.sqrt_d_k, decimals)} = "
            f"{result}"
        )

    def softmax_decimals(self, example: worked.SoftmaxExample, limit: int = 12) -> int:
        """The fewest decimals at which exp of each printed number, the printed sum (when every
        term is written out) and the printed division of ``softmax`` all hold."""
        j = example.key
        written_out = len(example.shifted) <= limit
        result = self.exact(example.result)

        def holds(decimals: int) -> bool:
            def shown(value: float) -> float:
                return read_back(self.exact(value, decimals))

            numerator = self.exact(example.exponentials[j], decimals)
            total = self.exact(example.total, decimals)
            return (
                rounds_to(float(np.exp(shown(example.shifted[j]))), numerator)
                and rounds_to(float(numerator) / float(total), result)
                and (
                    not written_out
                    or rounds_to(sum(float(np.exp(shown(s))) for s in example.shifted), total)
                )
            )

        return fewest_decimals(holds, self.least)

    def softmax(self, example: worked.SoftmaxExample, limit: int = 12) -> str:
        """One weight as exp(shifted) / Σ exp(shifted), from the same pieces softmax() uses, at
        the decimals at which exp of each printed number, the printed sum (when every term is
        written out) and the printed division all hold."""
        j = example.key
        result = self.exact(example.result)
        decimals = self.softmax_decimals(example, limit)
        exps = [f"exp({self.exact(s, decimals)})" for s in example.shifted]
        if len(exps) > limit:
            exps = [*exps[:3], ELLIPSIS, exps[-1]]
        return (
            f"exp({self.exact(example.shifted[j], decimals)}) / ({' + '.join(exps)}) = "
            f"{self.exact(example.exponentials[j], decimals)} / "
            f"{self.exact(example.total, decimals)} = {result}"
        )

    def _exp_decimals(
        self,
        example: worked.SoftmaxExample,
        exponents: np.ndarray,
        exponentials: np.ndarray,
        total: float,
        limit: int,
        most: int,
        also: Callable[[int], bool] = lambda decimals: True,
    ) -> tuple[int, int] | None:
        """The decimals of the exponents (from the tables', up to ``most``) and of the
        exponentials at which exp(exponent_j) / Σ exp(exponent_k) holds by hand: exp of the
        printed exponent gives the printed numerator, the printed exponentials add up to the
        printed sum (when every term is written out), the printed division gives the weight,
        and ``also`` holds at the exponents' decimals. The exponentials get as few decimals as
        that allows, fewer than the exponents' when they are large (exp(3.50) = 33.1: the
        third digit of 33.12 is not known from 3.50). None when no such decimals exist."""
        j = example.key
        written_out = len(exponents) <= limit
        result = self.exact(example.result)
        for exponent_decimals in range(self.least, most + 1):
            if not also(exponent_decimals):
                continue
            shown = [read_back(self.exact(s, exponent_decimals)) for s in exponents]
            for decimals in (*range(self.least, -1, -1), *range(self.least + 1, most + 1)):
                numerator, printed_total = (
                    self.exact(exponentials[j], decimals),
                    self.exact(total, decimals),
                )
                if float(printed_total) == 0:
                    continue
                if (
                    rounds_to(float(np.exp(shown[j])), numerator)
                    and rounds_to(float(numerator) / float(printed_total), result)
                    and (
                        not written_out
                        or rounds_to(sum(float(np.exp(s)) for s in shown), printed_total)
                    )
                ):
                    return exponent_decimals, decimals
        return None

    def _exp_line(
        self,
        example: worked.SoftmaxExample,
        exponents: np.ndarray,
        exponentials: np.ndarray,
        total: float,
        found: tuple[int, int],
        limit: int,
    ) -> str:
        """exp(exponent_j) / (Σ exp(exponent_k)) = numerator / total = weight, at ``found``."""
        exponent_decimals, decimals = found
        j = example.key
        exps = [f"exp({self.exact(s, exponent_decimals)})" for s in exponents]
        if len(exps) > limit:
            exps = [*exps[:3], ELLIPSIS, exps[-1]]
        return (
            f"exp({self.exact(exponents[j], exponent_decimals)}) / ({' + '.join(exps)}) = "
            f"{self.exact(exponentials[j], decimals)} / {self.exact(total, decimals)} = "
            f"{self.exact(example.result)}"
        )

    def _subtraction_holds(self, example: worked.SoftmaxExample, decimals: int) -> bool:
        """Whether s_ij − m_i, both printed at ``decimals``, is the printed shifted score."""
        assert example.scaled is not None
        j = example.key
        difference = float(self.exact(example.scaled[j], decimals)) - float(
            self.exact(example.maximum, decimals)
        )
        return self.exact(difference, decimals) == self.exact(example.shifted[j], decimals)

    def _shifted_decimals(self, example: worked.SoftmaxExample, limit: int) -> tuple[int, int]:
        found = self._exp_decimals(
            example,
            example.shifted,
            example.exponentials,
            example.total,
            limit,
            MOST_DECIMALS,
            also=lambda decimals: self._subtraction_holds(example, decimals),
        )
        return found or (MOST_DECIMALS, MOST_DECIMALS)

    def shifted_softmax(self, example: worked.SoftmaxExample, limit: int = 12) -> tuple[str, str]:
        """The weight as attnviz computes it, exp(s_ij − m_i) / Σ_k exp(s_ik − m_i): the
        subtraction s_ij − m_i = shifted from the scaled table's numbers, and the line, both
        holding by hand at the digits shown."""
        assert example.scaled is not None
        found = self._shifted_decimals(example, limit)
        decimals, j = found[0], example.key
        subtraction = (
            f"{self.exact(example.scaled[j], decimals)} − {self.term(example.maximum, decimals)}"
            f" = {self.exact(example.shifted[j], decimals)}"
        )
        line = self._exp_line(
            example, example.shifted, example.exponentials, example.total, found, limit
        )
        return subtraction, line

    def softmax_unshifted(self, example: worked.SoftmaxExample, limit: int = 12) -> str | None:
        """One weight as exp(s_ij) / Σ_k exp(s_ik) with the scaled scores as the table shows
        them (at most one decimal more); None where that cannot hold by hand (scores so large
        that their exponentials need more digits than the table has) or would print in
        scientific notation (a sum of a million or more)."""
        exponentials = example.unshifted_exponentials
        if example.scaled is None or exponentials is None:
            return None
        if not 0 < example.unshifted_total < 1e6:
            return None
        found = self._exp_decimals(
            example, example.scaled, exponentials, example.unshifted_total, limit, self.least + 1
        )
        if found is None:
            return None
        return self._exp_line(
            example, example.scaled, exponentials, example.unshifted_total, found, limit
        )

    def weighted_sum(self, example: worked.WeightedSumExample, limit: int = 6) -> str:
        """z_i = Σ_j w_ij·v_j, largest weights first, naming the value vectors; no numbers on
        the right, since rounded weights times the rounded rows of V need not give Z's rounded
        row: weighted_sum_element works one number out exactly.

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
        return f"z_{word} = {' + '.join(terms)}"

    def weighted_sum_element(
        self, example: worked.WeightedSumExample, column: int = 0, limit: int = 12
    ) -> str:
        """One number of z_i, Σ_j w_ij×v_j[column], in the weighted sum's order: the vector
        sum above, worked by hand for its first number."""
        order = list(example.order)
        values = example.values[order, column]
        name = f"z_{self.queries[example.query]}[{column + 1}]"
        if len(order) > limit:
            name += f" ({len(order)} terms)"
        sum_text = self.products(
            example.weights[order], values, float(example.result[column]), limit=limit
        )
        return f"{name} = {sum_text}"

    def output_sum(self, example: worked.OutputExample, limit: int = 16) -> str:
        """One output number as the sum of the heads' parts (and the bias), at the fewest
        decimals at which the printed parts add up to the printed result."""
        parts = [*example.head_blocks, *([] if example.bias is None else [example.bias])]
        written_out = len(example.head_blocks) <= limit
        result = self.exact(example.result)
        decimals = (
            fewest_decimals(
                sum_of_products_holds([1.0] * len(parts), parts, (), result), self.least
            )
            if written_out
            else self.least
        )
        values = [self.term(v, decimals) for v in example.head_blocks]
        if not written_out:
            values = [*values[:3], ELLIPSIS, values[-1]]
        name = f"Σ_h (Z_h·W_O^(h))[{self.queries[example.token]}, {example.column + 1}]"
        if example.bias is not None:  # the bias first, so that it is told from the heads' parts
            name = f"b_O[{example.column + 1}] + {name}"
            values.insert(0, self.term(example.bias, decimals))
        return f"{name} = {' + '.join(values)} = {result}"

    def contribution_decimals(self, example: worked.ContributionExample) -> tuple[int, int]:
        """(terms, sizes): the fewest decimals at which the printed ‖w·f‖ and row total give
        the printed share, and then the fewest, from those, at which the printed w × ‖f‖ gives
        that printed ‖w·f‖."""
        share = self.exact(example.share)

        def share_holds(decimals: int) -> bool:
            norm = float(self.exact(example.norm, decimals))
            total = float(self.exact(example.total, decimals))
            return total != 0 and rounds_to(norm / total, share)

        sizes = fewest_decimals(share_holds, self.least)
        norm = self.exact(example.norm, sizes)
        holds = sum_of_products_holds([example.weight], [example.transformed_norm], (), norm)
        return fewest_decimals(holds, sizes), sizes

    def contribution(self, example: worked.ContributionExample) -> tuple[str, str]:
        """What one key adds, as two lines that hold by hand: ‖w·f(key)‖ = w × ‖f(key)‖, then
        its share, ‖w·f(key)‖ / the row's total."""
        terms, sizes = self.contribution_decimals(example)
        key = self.keys[example.key]
        norm = self.exact(example.norm, sizes)
        product = (
            f"‖w·f(x_{key})‖ = {self.exact(example.weight, terms)}×"
            f"{self.exact(example.transformed_norm, terms)} = {norm}"
        )
        share = f"{norm} / {self.exact(example.total, sizes)} = {self.exact(example.share)}"
        return product, share

    def contribution_length(self, example: worked.ContributionExample, d_model: int) -> str:
        """Where ‖f(key)‖ comes from: the length of f = v·W_O^(h), √ of its d_model squares'
        sum, the sum at the decimals at which its root gives the printed length."""
        terms, _ = self.contribution_decimals(example)
        key = self.keys[example.key]
        length = self.exact(example.transformed_norm, terms)
        squares = example.transformed_norm**2

        def holds(decimals: int) -> bool:
            return rounds_to(float(self.exact(squares, decimals)) ** 0.5, length)

        summed = self.exact(squares, fewest_decimals(holds, self.least))
        return (
            f"‖f(x_{key})‖ = √(f₁² + … + f_{d_model}²) = √{summed} = {length}, "
            f"f(x_{key}) = v_{key}·W_O^({example.head + 1})"
        )
