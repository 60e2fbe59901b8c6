"""The report of ``attnviz scaling``, and what every report shares (paragraphs, tables, signed
numbers): Rich tables of a few dozen cells, where rich.table's speed does not matter (the
lesson's tables are laid out by hand instead). ``attnviz heads`` is heads_report.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import isnan, log

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from attnviz.labels import format_number
from attnviz.render.terminal.text import wrap
from attnviz.results import STALLED, DivisorRow, ScalingRow


def paragraphs(console: Console, *texts: Text) -> list[RenderableType]:
    return [line for text in texts for line in wrap(text, console.width)]


def report_table(*columns: tuple[str, str], narrow: bool = False) -> Table:
    """A table without borders: a rule under the header, columns (header, justify); with
    ``narrow``, two spaces between columns instead of three."""
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        header_style="bold",
        collapse_padding=narrow,
    )
    for header, justify in columns:
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    return table


def signed(value: float) -> str:
    """A difference as text: +0.55, −0.02 (a true minus sign), — when there is none."""
    if value != value:  # NaN: no other row to compare with
        return "—"
    text = format_number(value, 2)
    return text.replace("-", "−") if text.startswith("-") else "+" + text


def plain_number(value: float) -> str:
    """A weight or a baseline: 0.38, — when there is none."""
    return "—" if value != value else format_number(value, 2)


def _percent(share: float) -> str:
    return f"{100 * share:.0f}%"


def _backward_table(rows: Sequence[ScalingRow], console: Console) -> list[RenderableType]:
    """The seeds' "more stable gradients": what the softmax passes back, without and with the
    scaling, for the same random upstream gradient, and a sentence of this run's numbers; nothing
    for rows without them (statistics made without an upstream gradient)."""
    if any(isnan(row.unscaled.backward) or isnan(row.scaled.backward) for row in rows):
        return []
    parts = paragraphs(
        console,
        Text("More stable gradients", style="bold cyan"),
        Text(
            "What backpropagation gets through the softmax: for an upstream gradient g on each "
            "row's weights, drawn from N(0, 1) (seeded, the same g without and with the "
            "scaling), the gradient at the softmax's input s is ∂L/∂s_j = w_j·(g_j − Σ_k "
            "w_k·g_k). ‖∂L/∂s‖ is its mean length over the rows; stalled, the share of rows "
            f"where it is below {STALLED}, rows that pass back almost nothing."
        ),
    )
    # One column per d_k, so that each statistic reads along a line as d_k grows; as many
    # d_k per table as fit the page.
    statistics: tuple[tuple[str, Callable[[ScalingRow], str]], ...] = (
        ("‖∂L/∂s‖", lambda row: format_number(row.unscaled.backward, 3)),
        ("‖∂L/∂s‖ ÷√d_k", lambda row: format_number(row.scaled.backward, 3)),
        ("stalled", lambda row: _percent(row.unscaled.stalled)),
        ("stalled ÷√d_k", lambda row: _percent(row.scaled.stalled)),
    )
    per_table = max(1, (console.width - 16) // 8)
    for start in range(0, len(rows), per_table):
        chunk = rows[start : start + per_table]
        table = report_table(("d_k", "left"), *((str(row.d_k), "right") for row in chunk))
        for name, cell in statistics:
            table.add_row(name, *(cell(row) for row in chunk))
        parts += [Text(), table]
    parts.append(Text())
    first, last = rows[0], rows[-1]
    if len(rows) > 1:
        parts += paragraphs(
            console,
            Text(
                f"From d_k = {first.d_k} to {last.d_k}, unscaled, ‖∂L/∂s‖ goes from "
                f"{format_number(first.unscaled.backward, 3)} to "
                f"{format_number(last.unscaled.backward, 3)} and the stalled rows from "
                f"{_percent(first.unscaled.stalled)} to {_percent(last.unscaled.stalled)}; "
                f"divided by √d_k, from {format_number(first.scaled.backward, 3)} to "
                f"{format_number(last.scaled.backward, 3)} and from "
                f"{_percent(first.scaled.stalled)} to {_percent(last.scaled.stalled)}."
            ),
        )
        parts.append(Text())
    return parts


def render_scaling(
    rows: Sequence[ScalingRow],
    console: Console,
    *,
    n_keys: int,
    divisor: Sequence[DivisorRow] = (),
) -> None:
    """The √d_k experiment as a table: each statistic without and with the scaling; then, with
    ``divisor``, what dividing by √n (the number of keys) instead would do."""
    flat = log(n_keys)
    parts: list[RenderableType] = paragraphs(
        console,
        Text("attnviz · why divide by √d_k", style="bold"),
        Text(
            f"For each d_k, random queries and keys with unit-variance components (seeded); each "
            f"query scores {n_keys} keys. Without scaling, q·k has variance d_k, so the softmax "
            "turns one-hot: its largest weight goes to 1, its entropy to 0 (flat would be "
            f"ln {n_keys} = {flat:.2f}), and its gradient ‖∂w/∂s‖ to 0, so learning stalls. "
            "Divided by √d_k, the variance stays near 1 and nothing changes with d_k."
        ),
    )
    parts.append(Text())
    table = report_table(
        ("d_k", "right"),
        *(
            (header, "right")
            for header in ("Var(q·k)", "÷√d_k", "max w", "÷√d_k", "entropy", "÷√d_k")
        ),
        ("‖∂w/∂s‖", "right"),
        ("÷√d_k", "right"),
    )
    for row in rows:
        u, s = row.unscaled, row.scaled
        table.add_row(
            str(row.d_k),
            format_number(u.score_variance, 1),
            format_number(s.score_variance, 2),
            format_number(u.max_weight, 2),
            format_number(s.max_weight, 2),
            format_number(u.entropy, 2),
            format_number(s.entropy, 2),
            format_number(u.gradient, 3),
            format_number(s.gradient, 3),
        )
    parts += [table, Text()]
    parts += _backward_table(rows, console)
    parts += paragraphs(
        console,
        Text(
            "Dividing the scores by √d_k is a softmax temperature: softmax(s / T) with T = √d_k. "
            "A higher temperature spreads the weights; T = √d_k is exactly the one that undoes "
            "the growth of q·k with d_k."
        ),
    )
    if divisor:
        parts += [Text(), *_divisor_part(divisor, console)]
    console.print(Group(*parts))


def _ratio(value: float) -> str:
    return format_number(value, 1) if value < 1e4 else f"{value:.1e}"


def _divisor_part(rows: Sequence[DivisorRow], console: Console) -> list[RenderableType]:
    """√d_k, not √n: the scores of one query and two keys as words are added, divided by the
    fixed √d_k and by √n, and how flat the rows come out; sentences of this run's numbers."""
    d_k = rows[0].d_k
    first, last = rows[0], rows[-1]
    parts = paragraphs(
        console,
        Text("√d_k, not √(number of words)", style="bold cyan"),
        Text(
            "The divisor is √d_k, the width of q and k, which the model fixes; it is not the "
            "square root of the number of keys n (the words of the sentence). Here d_k = "
            f"{d_k}, random q and k with standard normal components (seeded): one query scores "
            "its keys 1 and 2 while words are added to the sentence, and every query's row is "
            "measured by entropy / ln n (1 for a flat row, 0 for a one-hot one). w₁/w₂ = "
            "exp(s₁ − s₂) is how the query ranks the two keys, whatever else the row holds; "
            "each weight itself changes in both, as more words share the row."
        ),
    )
    table = report_table(
        ("n", "right"),
        ("s₁ ÷√d_k", "right"),
        ("s₁ ÷√n", "right"),
        ("w₁/w₂ ÷√d_k", "right"),
        ("w₁/w₂ ÷√n", "right"),
        ("flatness ÷√d_k", "right"),
        ("÷√n", "right"),
        narrow=True,
    )
    for row in rows:
        table.add_row(
            str(row.n_keys),
            format_number(row.pair_by_d_k[0], 2),
            format_number(row.pair_by_n[0], 2),
            _ratio(row.ratio_by_d_k),
            _ratio(row.ratio_by_n),
            format_number(row.flatness_by_d_k, 2),
            format_number(row.flatness_by_n, 2),
        )
    parts += [Text(), table, Text()]
    parts += paragraphs(
        console,
        Text(
            f"Divided by √d_k = √{d_k}, s₁ is {format_number(first.pair_by_d_k[0], 2)} and "
            f"w₁/w₂ {_ratio(first.ratio_by_d_k)} at every length: adding words changes no "
            f"score. Divided by √n, s₁ goes from {format_number(first.pair_by_n[0], 2)} at "
            f"n = {first.n_keys} to {format_number(last.pair_by_n[0], 2)} at n = "
            f"{last.n_keys} and w₁/w₂ from {_ratio(first.ratio_by_n)} to "
            f"{_ratio(last.ratio_by_n)}: the same query and key would weigh differently in a "
            f"longer sentence. The rows' flatness goes from {format_number(first.flatness_by_n, 2)}"
            f" to {format_number(last.flatness_by_n, 2)} (÷√d_k: "
            f"{format_number(first.flatness_by_d_k, 2)} to "
            f"{format_number(last.flatness_by_d_k, 2)}): short sentences would come out "
            "sharper and long ones flatter. The two divisors agree only where n = d_k."
        ),
    )
    return parts
