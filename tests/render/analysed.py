"""The analyses a renderer is handed, computed for a test as the API computes them
(attnviz.analysis.analyses): the renderers compute none themselves."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from attnviz.analysis.analyses import analyze, pictures
from attnviz.results import Analyses, Analysis
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace


def analysed(
    layers: Sequence[AttentionTrace],
    selection: Selection | None = None,
    wanted: Collection[Analysis] = tuple(Analysis),
) -> Analyses:
    """Every analysis of ``layers`` (the focus rows as ``selection`` shows them)."""
    return analyze(layers, wanted, selection)


def for_grid(layers: Sequence[AttentionTrace], measure: str = "contribution") -> Analyses:
    """What the layers × heads grid draws of ``layers``: head types and contributions."""
    return analyze(layers, pictures(measure, grid=True))
