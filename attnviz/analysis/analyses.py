"""Every analysis a run's surfaces show, computed once: the API asks for those its surfaces
need and hands the record (attnviz.results.Analyses) to each of them, so that a page and a
notebook cell of the same explanation, or a heatmap and its per-head files, share one
computation and no renderer imports an analysis.

- contributions: ‖w_ij·f_h(x_j)‖ and shares, per layer (analysis/contribution.py);
- rollout: R_l = Â_l·R_{l−1}, Â = ½·mean_h A + ½·I, through every layer (analysis/rollout.py);
- head types: each head's scores over its whole matrix and its type (analysis/head_types.py);
- own-word rows: which rows look most at their own word, of those that can say (the same);
- focus rows: the focus word's shown row in every layer and head (analysis/heads.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from attnviz.analysis.contribution import contributions
from attnviz.analysis.head_types import counted_rows, self_argmax_rows, trace_head_types
from attnviz.analysis.rollout import trace_rollout
from attnviz.results import Analyses, Analysis, OwnRows
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

_T = TypeVar("_T")

#: What the lesson page shows beside its weights, and its lessons' focus views.
PAGE = frozenset({Analysis.contributions, Analysis.rollout, Analysis.head_types, Analysis.own_rows})
#: What the lesson's focus view shows of the layer it follows a word in (for_lesson).
LESSON = PAGE
#: What a notebook cell shows of a model's layers.
NOTEBOOK = frozenset({Analysis.focus_rows})


def pictures(measure: str, *, grid: bool) -> frozenset[Analysis]:
    """What ``attnviz heatmap`` draws of a run: each head's type above its panel in the layers
    × heads grid (``grid``), and what ``measure`` (--measure: "weights", "contribution",
    "rollout") colours the panels with."""
    wanted = {Analysis.head_types} if grid else set()
    if measure == "contribution":
        wanted.add(Analysis.contributions)
    elif measure == "rollout":
        wanted.add(Analysis.rollout)
    return frozenset(wanted)


def for_pictures(
    layers: Sequence[AttentionTrace], trace: AttentionTrace, measure: str, *, grid: bool
) -> Analyses:
    """What ``attnviz heatmap`` draws of ``trace`` (one of ``layers``), computed once for the
    picture and its per-head files (pictures): the contributions of ``trace`` alone, or of
    every layer for the layers × heads grid (``grid``); the rollout through every layer."""
    every = grid or measure == "rollout"
    return analyze(layers if every else (trace,), pictures(measure, grid=grid))


def for_lesson(
    layers: Sequence[AttentionTrace],
    trace: AttentionTrace,
    selection: Selection,
    known: Analyses | None = None,
) -> Analyses:
    """What the lesson of ``trace`` (one of ``layers``, or alone when ``layers`` is ()) shows
    of the analyses (LESSON): the contributions and head types of ``trace`` alone, the rollout
    through every layer, with those ``known`` already holds kept."""
    return analyze(layers or (trace,), LESSON, selection, known, only=trace)


def analyze(
    layers: Sequence[AttentionTrace],
    wanted: Collection[Analysis],
    selection: Selection | None = None,
    known: Analyses | None = None,
    *,
    only: AttentionTrace | None = None,
) -> Analyses:
    """The analyses ``wanted`` of ``layers`` (focus rows as ``selection`` shows them), with
    those ``known`` already holds of the same layers kept, not computed again; ``only``: the
    contributions and head types of that layer alone (the others' entries stay None). What
    cannot be had stays None: rollout and head types of cross-attention, focus rows with no
    focus word."""
    layers = tuple(layers)
    if known is not None and not _same(known.layers, layers):
        known = None  # another run's: nothing of it holds here
    if known is not None and known.selection is not selection:
        known = _with(known, selection=selection, focus_rows=None)  # rows of another view
    cross = any(layer.is_cross for layer in layers)
    found = known or Analyses(layers, selection)
    each = [i for i, layer in enumerate(layers) if only is None or layer is only]
    if Analysis.contributions in wanted:
        found = _with(
            found,
            contributions=_filled(
                found.contributions, layers, each, lambda i: contributions(layers[i])
            ),
        )
    if Analysis.rollout in wanted and found.rollout is None and layers and not cross:
        found = _with(found, rollout=trace_rollout(layers))
    if Analysis.head_types in wanted and not cross:
        found = _with(
            found,
            head_types=_filled(
                found.head_types, layers, each, lambda i: tuple(trace_head_types(layers[i], i + 1))
            ),
        )
    if Analysis.own_rows in wanted and not cross:
        found = _with(
            found, own_rows=_filled(found.own_rows, layers, each, lambda i: own_rows(layers[i]))
        )
    if (
        Analysis.focus_rows in wanted
        and found.focus_rows is None
        and selection is not None
        and selection.focus is not None
        and layers
    ):
        # Only the page and the notebook ask: the lesson at a terminal never loads the heads
        # command's module (start-up, tests/e2e/test_processes.py).
        from attnviz.analysis.heads import focus_rows

        found = _with(found, focus_rows=focus_rows(layers, selection))
    return found


def own_rows(trace: AttentionTrace) -> OwnRows:
    """Which rows of ``trace``'s heads look most at their own word, of those that count
    (analysis.head_types: self_argmax_rows, counted_rows; [PAD] rows never count)."""
    padding = trace.provenance.masking.padding
    return OwnRows(
        own=self_argmax_rows(trace.weights, trace.mask, padding=padding),
        counted=counted_rows(trace.weights, trace.mask, padding=padding),
    )


def _filled(
    entries: tuple[_T | None, ...] | None,
    layers: Sequence[AttentionTrace],
    each: Sequence[int],
    compute: Callable[[int], _T],
) -> tuple[_T | None, ...]:
    """``entries`` (one a layer, or None) with those of the layers ``each`` computed where
    they are not yet."""
    filled: list[_T | None] = list(entries) if entries is not None else [None] * len(layers)
    for index in each:
        if filled[index] is None:
            filled[index] = compute(index)
    return tuple(filled)


def _same(a: Sequence[AttentionTrace], b: Sequence[AttentionTrace]) -> bool:
    """The very same traces, in order (compared as objects: their arrays are not compared)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _with(found: Analyses, **fields: Any) -> Analyses:
    return replace(found, **fields)
