"""The logit lens (nostalgebraist 2020): the residual stream after each layer, read as if it were
the last one, through the model's final norm and its output layer.

    h_ℓ = the residual stream at one position after layer ℓ (ℓ = 0: the token's embedding)
    p_ℓ = softmax(final_norm(h_ℓ)·W_unembᵀ)

Only the last layer's h was trained to be read this way; the middle layers were not, and their
readings are a view, sometimes a misleading one (the tuned lens, Belrose et al. 2023, trains a
map for each layer because of it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.generation.decoder import Decoder, run_block
from attnviz.generation.run import new_cache
from attnviz.generation.sampling import ranked, softmax


@dataclass(frozen=True, eq=False)
class LensReading:
    """What one layer's residual stream at the position reads as, [layers + 1] of each."""

    top_ids: np.ndarray  # [layers + 1, top] the most likely tokens, most likely first
    top_probabilities: FloatArray  # [layers + 1, top]
    final_rank: np.ndarray  # [layers + 1] the rank (from 1) of the last layer's top token (or
    # of the token followed)
    final_probability: FloatArray  # [layers + 1] its probability at each layer
    position: int  # the position read


def read_layers(
    states: Sequence[FloatArray], decoder: Decoder, top: int, follow: int | None = None
) -> LensReading:
    """The lens over ``states`` (one residual-stream vector [d_model] per layer, the embedding
    first) at one position; the rank and probability of token ``follow`` at each layer (by
    default the last layer's top token)."""
    ids, probabilities = [], []
    every = []
    for state in states:
        _, logits = decoder.logits(np.asarray(state)[np.newaxis])
        p = softmax(logits[0])
        order = ranked(logits[0])
        ids.append(order[:top])
        probabilities.append(p[order[:top]])
        every.append((p, order))
    final = int(ids[-1][0]) if follow is None else follow
    rank = [int(np.flatnonzero(order == final)[0]) + 1 for _, order in every]
    final_p = [float(p[final]) for p, _ in every]
    return LensReading(
        np.array(ids), np.array(probabilities), np.array(rank), np.array(final_p), -1
    )


def logit_lens(decoder: Decoder, ids: Sequence[int], position: int, top: int = 5) -> LensReading:
    """The lens at ``position`` (from 0) of ``ids``, read in one pass."""
    states: list[FloatArray] = []
    cache = new_cache(decoder, len(ids), None)
    run_block(decoder, ids, cache, 0, rows=[position], states=states)
    reading = read_layers([state[0] for state in states], decoder, top)
    return LensReading(
        reading.top_ids,
        reading.top_probabilities,
        reading.final_rank,
        reading.final_probability,
        position,
    )
