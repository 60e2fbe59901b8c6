"""Which (layer, head) pairs send a focus word's attention where: ranking, no recomputation.

A large weight from the focus word to a target says little on its own: in some heads every
word looks at the same target (a word, or [CLS]), and the focus word merely follows the crowd.
So each link also carries its selectivity,

    selectivity = w(focus → target) − mean over the other words o of w(o → target),

the focus word's weight on the target minus the mean weight the other shown rows of the same
head give that target. Near 0: the head sends everyone there, so it says nothing about the
focus word; large: the focus word looks there and the others do not.

Which rows are "the other words": every row the selection shows (hidden [CLS]/[SEP] rows are
left out, merged words are one row each), except the focus word's own rows (all of its pieces
when pieces are shown, so "##ization" does not stand in for "token"), and, for each target,
except rows that may not attend to it (a causal mask's earlier words, whose 0 is not a choice).
A target the focus word itself may not attend to has no selectivity (NaN, ranked last).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import NamedTuple

import numpy as np

from attnviz.selection import Selection
from attnviz.trace import AttentionTrace


class RankBy(str, Enum):
    """What ``attnviz heads`` ranks (layer, head) pairs by."""

    selectivity = "selectivity"  # the focus word's weight minus the other words' mean weight
    weight = "weight"  # the focus word's weight alone


class HeadLink(NamedTuple):
    """How much the focus word attends to one target in one head; layers and heads from 1."""

    layer: int
    head: int
    target: int  # shown column of the target word
    weight: float  # the focus word's weight on the target
    selectivity: float  # weight minus the other rows' mean weight on it; NaN without others


class HeadWeights(NamedTuple):
    """The focus word's shown weights and the other words' mean, in every layer and head."""

    focus: np.ndarray  # [L, h, columns] the focus word's shown row of each head's weights
    others: np.ndarray  # [L, h, columns] mean weight the other shown rows give each column

    @property
    def selectivity(self) -> np.ndarray:
        """[L, h, columns] focus − others (NaN where no other row may see the column)."""
        return selectivity(self.focus, self.others)

    def key(self, rank_by: RankBy) -> np.ndarray:
        """[L, h, columns] what ``rank_by`` ranks by, NaN as −∞ so that it ranks last."""
        values = self.selectivity if rank_by is RankBy.selectivity else self.focus
        return np.where(np.isnan(values), -np.inf, values)


def focus_rows(layers: Sequence[AttentionTrace], selection: Selection) -> np.ndarray:
    """The focus word's shown weights in every layer and head.  -> [L, h, columns]

    Every layer is seen through the same selection (the layers share their tokens).
    """
    return np.stack([selection.focus_weights(layer.weights) for layer in layers])


def other_rows(selection: Selection, word_groups: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The shown rows that stand for other words than the focus word.

    word_groups: the trace's positions of each word's pieces (Provenance.groups). Every shown
    row except those holding a piece of the focus word.
    """
    if selection.focus is None:
        raise ValueError("this selection follows no word")
    index = selection.focus.index
    own = next((set(group) for group in word_groups if index in group), {index})
    return tuple(row for row, group in enumerate(selection.row_groups) if own.isdisjoint(group))


def others_mean(shown: np.ndarray, rows: Sequence[int], masked: np.ndarray) -> np.ndarray:
    """The mean weight the rows ``rows`` give each column, over the rows that may see it.

    shown: [h, n_rows, n_columns] one layer's weights as shown; masked: [n_rows, n_columns]
    bool, True where a row may not attend to a column. -> [h, n_columns], NaN for a column that
    none of ``rows`` may see (or when ``rows`` is empty).
    """
    chosen = list(rows)
    allowed = ~masked[chosen]  # [k, n_columns]
    counts = allowed.sum(axis=0)  # [n_columns]
    sums = np.where(allowed, shown[:, chosen], 0.0).sum(axis=1)  # [h, n_columns]
    with np.errstate(invalid="ignore", divide="ignore"):
        means: np.ndarray = sums / counts  # 0 / 0 is NaN: nobody else to compare with
    return means


def selectivity(focus: np.ndarray, others: np.ndarray) -> np.ndarray:
    """How much more the focus word looks at each word than the other words do.

    focus − others, [..., n], [..., n] -> [..., n]: in [−1, 1]; 0 when the focus word looks
    there exactly as much as the others on average.
    """
    difference: np.ndarray = focus - others
    return difference


def head_weights(layers: Sequence[AttentionTrace], selection: Selection) -> HeadWeights:
    """The focus word's shown weights and the other rows' mean, per layer and head.

    -> HeadWeights of [L, h, columns] each; every layer is seen through the same selection.
    """
    first = layers[0]
    rows = other_rows(selection, first.provenance.groups(first.n_tokens))
    focus_row = selection.focus_row
    others = []
    for layer in layers:
        shown = np.stack([selection.pairs(w, total=True) for w in layer.weights])
        masked = selection.masked_pairs(layer.masked)  # [rows, columns]
        mean = others_mean(shown, rows, masked)
        # A word the focus word may not see (a later word, under a causal mask): its 0 is no
        # choice of the head's, so there is nothing to compare.
        mean[:, masked[focus_row]] = np.nan
        others.append(mean)
    return HeadWeights(focus_rows(layers, selection), np.stack(others))


def _links(weights: HeadWeights, pairs: Sequence[tuple[int, int, int]]) -> list[HeadLink]:
    """HeadLinks of (layer, head, target) triples numbered from 0; layers and heads from 1."""
    focus, selective = weights.focus, weights.selectivity
    return [
        HeadLink(
            layer + 1,
            head + 1,
            target,
            float(focus[layer, head, target]),
            float(selective[layer, head, target]),
        )
        for layer, head, target in pairs
    ]


def top_heads_per_target(
    weights: HeadWeights, per_target: int = 3, *, rank_by: RankBy = RankBy.selectivity
) -> dict[int, list[HeadLink]]:
    """For each shown column, the ``per_target`` heads that rank highest for it by ``rank_by``:
    the focus word's weight on it, or its selectivity. Ties go to the earlier head."""
    key = weights.key(rank_by)
    n_layers, n_heads, n_columns = key.shape
    ranking: dict[int, list[HeadLink]] = {}
    for target in range(n_columns):
        best = np.argsort(-key[:, :, target].ravel(), kind="stable")[:per_target]
        ranking[target] = _links(weights, [(*divmod(int(i), n_heads), target) for i in best])
    return ranking


def top_target_per_head(
    weights: HeadWeights, *, rank_by: RankBy = RankBy.selectivity
) -> list[HeadLink]:
    """Each head's top target for the focus word by ``rank_by``, highest first (ties: the
    earlier head)."""
    key = weights.key(rank_by)
    links = _links(
        weights,
        [
            (layer, head, int(np.argmax(key[layer, head])))
            for layer in range(key.shape[0])
            for head in range(key.shape[1])
        ],
    )
    return sorted(links, key=lambda link: -key[link.layer - 1, link.head - 1, link.target])


class HeadRanking(NamedTuple):
    """Every (layer, head) ranked by where the focus word looks (``attnviz heads``)."""

    words: tuple[str, ...]  # the shown columns' words, as written
    focus: str  # the focus word's label ("it", or "the:2")
    rank_by: RankBy
    weights: HeadWeights  # [L, h, columns] the focus word's weights and the others' mean
    per_word: dict[int, list[HeadLink]]  # each shown column's top heads, best first
    word_order: tuple[int, ...]  # the columns, by how high their best head ranks
    per_head: list[HeadLink]  # each head's top word, highest first


def rank_heads(
    layers: Sequence[AttentionTrace],
    selection: Selection,
    *,
    per_word: int = 3,
    rank_by: RankBy = RankBy.selectivity,
) -> HeadRanking:
    """Where the focus word of ``selection`` looks in every layer and head, ranked by
    ``rank_by``: each shown word's ``per_word`` top heads (fewer when there are fewer heads),
    and each head's top word."""
    if selection.focus is None:
        raise ValueError("rank_heads follows a focus word; the selection has none")
    weights = head_weights(layers, selection)
    n_layers, n_heads = len(layers), layers[0].n_heads
    ranking = top_heads_per_target(weights, min(per_word, n_layers * n_heads), rank_by=rank_by)
    key = weights.key(rank_by)
    order = sorted(ranking, key=lambda t: -key[ranking[t][0].layer - 1, ranking[t][0].head - 1, t])
    return HeadRanking(
        words=selection.column_words,
        focus=selection.focus.label,
        rank_by=rank_by,
        weights=weights,
        per_word=ranking,
        word_order=tuple(order),
        per_head=top_target_per_head(weights, rank_by=rank_by),
    )
