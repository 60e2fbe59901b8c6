"""``attnviz scaling``: the experiment behind ÷√d_k, a row per d_k, then why the divisor is
√d_k and not √n (attnviz.api.divisors)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attnviz import arguments as check
from attnviz import limits
from attnviz.api.explanation import warn
from attnviz.api.surface import Surface
from attnviz.api.writing import check_outputs
from attnviz.serial import one_at_a_time

if TYPE_CHECKING:
    from attnviz.analysis.scaling import ScalingRow

#: d_k of the divisor experiment that attnviz scaling runs after its table.
DIVISOR_D_K = 64


def scaling_sizes(d_ks: str) -> tuple[list[int], tuple[str, ...]]:
    """The d_k sizes of ``attnviz scaling``, "4,16,64" -> [4, 16, 64], and a note for each
    capped."""
    from attnviz.analysis.scaling import parse_d_ks

    sizes, notes = parse_d_ks(d_ks)
    return sizes, tuple(notes)


def scaling_rows(sizes: Sequence[int], *, keys: int, queries: int, seed: int) -> list[ScalingRow]:
    """The √d_k experiment (``attnviz scaling``): a row per d_k."""
    from attnviz.analysis.scaling import scaling_experiment

    return scaling_experiment(sizes, n_keys=keys, n_queries=queries, seed=seed)


def run(
    d_ks: str, surface: Surface, *, keys: int, queries: int, seed: int, output: Path | None
) -> None:
    """``attnviz scaling``: the table and the divisor's experiment printed, the plot written;
    the work counted before it is done."""
    from attnviz.render.terminal.reports import render_scaling

    sizes, notes = scaling_sizes(d_ks)
    check_outputs(None, (output, "--output"))
    from attnviz.analysis.scaling import LENGTHS

    drawn_by_divisor = limits.divisor_numbers(LENGTHS, DIVISOR_D_K, queries)
    limits.check_scaling(sizes, n_keys=keys, n_queries=queries, divisor=drawn_by_divisor)
    surface.notes(notes)
    rows = scaling_rows(sizes, keys=keys, queries=queries, seed=seed)
    from attnviz.api.divisors import divisor_rows

    divisor = divisor_rows(d_k=DIVISOR_D_K, queries=queries, seed=seed)
    render_scaling(rows, surface.console(), n_keys=keys, divisor=divisor)
    if output is not None:
        from attnviz.render.figures.plots import save_scaling_plot

        save_scaling_plot(rows, output, n_keys=keys)
        surface.wrote(output)


@one_at_a_time
def scaling(
    d_ks: str | Sequence[int] = (4, 16, 64, 256, 1024),
    *,
    keys: int = 16,
    queries: int = 400,
    seed: int = 0,
) -> list[ScalingRow]:
    """The experiment behind ÷√d_k, as ``attnviz scaling`` runs it: for each d_k, ``queries``
    random queries scored against ``keys`` random keys, the softmax's statistics with and
    without the scaling. Sizes above 4096 are capped, with a warning.

    >>> import attnviz
    >>> rows = attnviz.scaling([4, 1024])
    >>> [row.d_k for row in rows], rows[1].unscaled.max_weight > rows[1].scaled.max_weight
    ([4, 1024], True)
    """
    check.given(keys=keys, queries=queries, seed=seed)
    sizes, notes = scaling_sizes(check.sizes_text(d_ks))
    warn(notes)
    return scaling_rows(sizes, keys=keys, queries=queries, seed=seed)
