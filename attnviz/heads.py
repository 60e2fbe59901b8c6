"""Which (layer, head) pairs send a focus word's attention where: ranking, no recomputation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from attnviz.trace import AttentionTrace


class HeadLink(NamedTuple):
    """How much the focus word attends to one target in one head; layers and heads from 1."""

    layer: int
    head: int
    target: int  # token position of the target word
    weight: float


def focus_rows(layers: Sequence[AttentionTrace], focus: int) -> np.ndarray:
    """The focus word's weights in every layer and head.  -> [L, h, n]"""
    return np.stack([layer.weights[:, focus, :] for layer in layers])


def top_heads_per_target(
    layers: Sequence[AttentionTrace], focus: int, per_target: int = 3
) -> dict[int, list[HeadLink]]:
    """For each target word, the heads in which the focus word gives it the most weight."""
    rows = focus_rows(layers, focus)
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


def top_target_per_head(layers: Sequence[AttentionTrace], focus: int) -> list[HeadLink]:
    """Each head's favourite target for the focus word, strongest first."""
    rows = focus_rows(layers, focus)
    links = [
        HeadLink(
            layer + 1, head + 1, int(np.argmax(rows[layer, head])), float(rows[layer, head].max())
        )
        for layer in range(rows.shape[0])
        for head in range(rows.shape[1])
    ]
    return sorted(links, key=lambda link: -link.weight)
