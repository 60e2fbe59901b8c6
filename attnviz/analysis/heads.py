"""Which (layer, head) pairs send a focus word's attention where, and how much of it is about
that word: ranking, no recomputation.

A large weight from the focus word i to a word j says little on its own: a head may do the same
in every row. Everyone may look at j (a sink such as [CLS], a popular word), or every row may look
as far back or ahead as j is from i (a previous-token head puts 1.00 on "because" from "it"
because it puts 1.00 on every row's previous word). So each (head, word) carries the two
baselines of attnviz.analysis.head_types, each a mean over the head's other rows r:

    w           = A[i, j]                    the focus word's weight
    by key      = mean_r A[r, j]             what the other rows give j
    by offset   = mean_r A[r, r + (j − i)]   what they give the word as far from them
    selectivity = w − by key
    specificity = w − max(by key, by offset)

Specificity is what ``attnviz heads`` ranks by: near 0, the head does this for every word, so it
says nothing specific to the focus word; high, the focus word looks there and the head's other
rows do not look there, nor as far away.

Which rows are "the other rows": every row of the trace with a choice (at least two keys it may
attend to), shown or not ([CLS] and [SEP] count even when a view hides them, so that a number
does not change with what is shown), except [PAD] rows and the focus word's own rows (all of its
pieces, so "##ization" does not stand in for "token"); for each key only the rows that may
attend to it. A word the focus word may not attend to (a later word under a causal mask: its 0
is no choice) has neither baseline (NaN, ranked last).

A word made of pieces (``--words``): w is the focus word's shown weight on it (its pieces' rows'
mean, summed over the word's pieces), each baseline the sum of its pieces' baselines, offsets
counted from the focus word's first piece.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz.analysis.head_types import (
    allowed_pairs,
    baselines,
    choice_rows,
    focus_self_argmax_count,
    run_head_types,
    self_argmax_count,
)
from attnviz.arrays import FloatArray
from attnviz.results import (
    FocusSurvey as FocusSurvey,
)
from attnviz.results import (
    HeadLink as HeadLink,
)
from attnviz.results import (
    HeadRanking as HeadRanking,
)
from attnviz.results import (
    HeadWeights as HeadWeights,
)
from attnviz.results import (
    RankBy as RankBy,
)
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace


def focus_rows(layers: Sequence[AttentionTrace], selection: Selection) -> np.ndarray:
    """The focus word's shown weights in every layer and head.  -> [L, h, columns]

    Every layer is seen through the same selection (the layers share their tokens).
    """
    return np.stack([selection.focus_weights(layer.weights) for layer in layers])


def own_positions(selection: Selection, word_groups: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The trace positions of the focus word's pieces (Provenance.groups), whether the view
    merges them or not."""
    if selection.focus is None:
        raise ValueError("this selection follows no word")
    index = selection.focus.index
    own = next((tuple(group) for group in word_groups if index in group), (index,))
    return tuple(sorted(own))


def position_baselines(
    trace: AttentionTrace, focus: int, own: Sequence[int]
) -> tuple[FloatArray, FloatArray, np.ndarray]:
    """Both baselines of the focus position's row in every head, over the trace's positions.

    own: the focus word's positions, left out of the other rows. -> (by key [h, n], by offset
    [h, n], [n] bool: the keys the focus word may attend, by any of its pieces); NaN where no
    other row counts, and for every key the focus word may not attend.
    """
    n = trace.n_tokens
    allowed = allowed_pairs(n, trace.mask)
    padding = trace.provenance.masking.padding
    rows = choice_rows(allowed, (*range(n - padding, n), *own))
    seen = np.any(allowed[list(own)], axis=0)
    by_key = np.full((trace.n_heads, n), np.nan)
    by_offset = np.full((trace.n_heads, n), np.nan)
    for head, weights in enumerate(np.asarray(trace.weights, dtype=np.float64)):
        key, offset = baselines(weights, focus, allowed, rows)
        by_key[head] = np.where(seen, key, np.nan)
        by_offset[head] = np.where(seen, offset, np.nan)
    return by_key, by_offset, seen


def column_totals(values: FloatArray, seen: np.ndarray, selection: Selection) -> FloatArray:
    """Per-position baselines summed over each shown column's positions that the focus word may
    attend (NaN when it may attend none, or one of them has no baseline).  [h, n] -> [h, columns]
    """
    columns = []
    for group in selection.column_groups:
        visible = [position for position in group if seen[position]]
        if visible:
            columns.append(values[:, visible].sum(axis=1))
        else:
            columns.append(np.full(values.shape[0], np.nan))
    return np.stack(columns, axis=1)


def head_weights(layers: Sequence[AttentionTrace], selection: Selection) -> HeadWeights:
    """The focus word's shown weights and both baselines, per layer and head.

    -> HeadWeights of [L, h, columns] each; every layer is seen through the same selection.
    """
    if selection.focus is None:
        raise ValueError("this selection follows no word")
    first = layers[0]
    own = own_positions(selection, first.provenance.groups(first.n_tokens))
    by_key, by_offset = [], []
    for layer in layers:
        key, offset, seen = position_baselines(layer, selection.focus.index, own)
        by_key.append(column_totals(key, seen, selection))
        by_offset.append(column_totals(offset, seen, selection))
    return HeadWeights(focus_rows(layers, selection), np.stack(by_key), np.stack(by_offset))


def _links(weights: HeadWeights, pairs: Sequence[tuple[int, int, int]]) -> list[HeadLink]:
    """HeadLinks of (layer, head, target) triples numbered from 0; layers and heads from 1."""
    return [
        HeadLink(
            layer + 1,
            head + 1,
            target,
            float(weights.focus[layer, head, target]),
            float(weights.by_key[layer, head, target]),
            float(weights.by_offset[layer, head, target]),
        )
        for layer, head, target in pairs
    ]


def top_heads_per_target(
    weights: HeadWeights, per_target: int = 3, *, rank_by: RankBy = RankBy.specificity
) -> dict[int, list[HeadLink]]:
    """For each shown column, the ``per_target`` heads that rank highest for it by ``rank_by``.
    Ties go to the earlier head."""
    key = weights.key(rank_by)
    n_layers, n_heads, n_columns = key.shape
    ranking: dict[int, list[HeadLink]] = {}
    for target in range(n_columns):
        best = np.argsort(-key[:, :, target].ravel(), kind="stable")[:per_target]
        ranking[target] = _links(weights, [(*divmod(int(i), n_heads), target) for i in best])
    return ranking


def top_target_per_head(
    weights: HeadWeights,
    *,
    rank_by: RankBy = RankBy.specificity,
    targets: Sequence[int] | None = None,
) -> list[HeadLink]:
    """Each head's top target for the focus word by ``rank_by``, highest first (ties: the
    earlier head); ``targets``: the columns that may be a head's top target (all by default)."""
    key = weights.key(rank_by)
    if targets is not None:
        key = np.where(np.isin(np.arange(key.shape[-1]), list(targets)), key, -np.inf)
    links = _links(
        weights,
        [
            (layer, head, int(np.argmax(key[layer, head])))
            for layer in range(key.shape[0])
            for head in range(key.shape[1])
        ],
    )
    return sorted(links, key=lambda link: -key[link.layer - 1, link.head - 1, link.target])


def word_columns(selection: Selection, special: Sequence[int]) -> tuple[int, ...]:
    """The shown columns that are words of the sentence, not only special tokens ([CLS], [SEP],
    <|endoftext|>); every column when the sentence shows nothing else."""
    markers = set(special)
    words = tuple(
        i for i, group in enumerate(selection.column_groups) if not markers.issuperset(group)
    )
    return words or tuple(range(len(selection.column_groups)))


def rank_heads(
    layers: Sequence[AttentionTrace],
    selection: Selection,
    *,
    per_word: int = 3,
    rank_by: RankBy = RankBy.specificity,
) -> HeadRanking:
    """Where the focus word of ``selection`` looks in every layer and head, ranked by
    ``rank_by``: each shown word's ``per_word`` top heads (fewer when there are fewer heads),
    each head's top word, and every head's type."""
    if selection.focus is None:
        raise ValueError("rank_heads follows a focus word; the selection has none")
    weights = head_weights(layers, selection)
    n_layers, n_heads = len(layers), layers[0].n_heads
    ranking = top_heads_per_target(weights, min(per_word, n_layers * n_heads), rank_by=rank_by)
    # [CLS], [SEP] and the like are markers, not words: a head that parks weight there is a
    # sink (its type says so), not a head that reads a word, so they are not ranked as targets.
    words = word_columns(selection, layers[0].provenance.special)
    ranking = {target: links for target, links in ranking.items() if target in words}
    key = weights.key(rank_by)
    order = sorted(ranking, key=lambda t: -key[ranking[t][0].layer - 1, ranking[t][0].head - 1, t])
    return HeadRanking(
        words=selection.column_words,
        focus=selection.focus.label,
        rank_by=rank_by,
        weights=weights,
        per_word=ranking,
        word_order=tuple(order),
        per_head=top_target_per_head(weights, rank_by=rank_by, targets=words),
        types=tuple(run_head_types(layers)),
        column_groups=selection.column_groups,
        focus_position=selection.focus.index,
        own_word_rows=self_argmax_count(layers),
        focus_own_word=focus_self_argmax_count(layers, selection.focus.index),
    )


def largest_weight_positions(layers: Sequence[AttentionTrace], focus: int) -> np.ndarray:
    """The position on which the focus position's row puts its largest weight, in every layer
    and head, over the whole row ([CLS] and [SEP] included; ties: the earlier position).
    -> [L, h] int"""
    return np.stack([np.argmax(layer.weights[:, focus], axis=-1) for layer in layers])


def focus_survey(
    layers: Sequence[AttentionTrace], selection: Selection, target: int
) -> FocusSurvey:
    """Where the focus word of ``selection`` looks most in each head (over whole rows, hidden
    [CLS] and [SEP] included), and its heads for the shown column ``target``."""
    from attnviz.labels import occurrence_labels

    if selection.focus is None:
        raise ValueError("focus_survey follows a focus word; the selection has none")
    tops = largest_weight_positions(layers, selection.focus.index)  # [L, h]
    labels = occurrence_labels(layers[0].tokens)
    heads: dict[int, list[tuple[int, int]]] = {}
    for (layer, head), position in np.ndenumerate(tops):
        heads.setdefault(int(position), []).append((layer + 1, head + 1))
    order = sorted(heads, key=lambda position: (-len(heads[position]), position))
    weights = head_weights(layers, selection)
    column = selection.column_groups[target]
    on_target = [
        link
        for link in _links(
            weights, [(layer, head, target) for layer, head in np.ndindex(tops.shape)]
        )
        if int(tops[link.layer - 1, link.head - 1]) in column
    ]
    strongest = top_heads_per_target(weights, 1, rank_by=RankBy.weight)[target][0]
    specific = top_heads_per_target(weights, 1, rank_by=RankBy.specificity)[target][0]
    return FocusSurvey(
        n_heads=int(tops.size),
        tops=tuple((labels[position], tuple(heads[position])) for position in order),
        target=selection.column_words[target],
        offset=column[0] - selection.focus.index,
        target_heads=tuple(sorted(on_target, key=lambda link: -link.weight)),
        strongest=strongest,
        specific=specific,
    )
