"""Which (layer, head) pairs send a focus word's attention where: ranking, no recomputation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from attnviz.selection import Selection
from attnviz.trace import AttentionTrace


class HeadLink(NamedTuple):
    """How much the focus word attends to one target in one head; layers and heads from 1."""

    layer: int
    head: int
    target: int  # token position of the target word
    weight: float


def focus_rows(layers: Sequence[AttentionTrace], selection: Selection) -> np.ndarray:
    """The focus word's shown weights in every layer and head.  -> [L, h, columns]

    Every layer is seen through the same selection (the layers share their tokens).
    """
    return np.stack([selection.focus_weights(layer.weights) for layer in layers])


def top_heads_per_target(rows: np.ndarray, per_target: int = 3) -> dict[int, list[HeadLink]]:
    """For each target word, the heads in which the focus word gives it the most weight.

    rows: [L, h, n] the focus word's weights (focus_rows); ties go to the earlier head.
    """
    n_layers, n_heads, n_tokens = rows.shape
    ranking: dict[int, list[HeadLink]] = {}
    for target in range(n_tokens):
        column = rows[:, :, target].ravel()
        best = np.argsort(-column, kind="stable")[:per_target]
        ranking[target] = [
            HeadLink(int(i) // n_heads + 1, int(i) % n_heads + 1, target, float(column[i]))
            for i in best
        ]
    return ranking


def top_target_per_head(rows: np.ndarray) -> list[HeadLink]:
    """Each head's favourite target for the focus word, strongest first.  rows: [L, h, n]"""
    links = [
        HeadLink(
            layer + 1, head + 1, int(np.argmax(rows[layer, head])), float(rows[layer, head].max())
        )
        for layer in range(rows.shape[0])
        for head in range(rows.shape[1])
    ]
    return sorted(links, key=lambda link: -link.weight)
