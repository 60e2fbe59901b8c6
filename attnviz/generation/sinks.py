"""Attention sinks, with the numbers: how much weight a causal model's heads put on the first
token, and how little that adds; and what a sliding cache does to a held text with the first
token kept and dropped.

Head h adds Σ_j w_ij · f_h(x_j) to token i's output, f_h(x_j) = v_j^h · W_O^h (the value as it
reaches the output; attnviz.analysis.contribution). For the first token:

    weight   mean over i ≥ 1 of w_i0                      (row 0 can see only itself)
    size     ‖f_h(x_0)‖ / mean over j ≥ 1 of ‖f_h(x_j)‖   (its value against the others')
    share    mean over i ≥ 1 of ‖w_i0 f_h(x_0)‖ / Σ_j ‖w_ij f_h(x_j)‖

Xiao et al. (2023, StreamingLLM) named a token that takes much weight and adds little an
attention sink: softmax makes every row's weights sum to 1, so a head with nothing to add must
still put its weight somewhere.

The held text: its tokens read with the whole cache, and with a sliding window of W tokens that
keeps the first k and that drops them (k = 0); for each position, log p of the text's next
token and the total variation TV = ½·Σ|p − p′| between the whole cache's next-token
distribution and the window's. One pass with the window's mask gives the numbers a sliding
cache gives token by token (tests/generation/test_run.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.analysis.contribution import transformed_values, vector_norms
from attnviz.arrays import FloatArray
from attnviz.generation.decoder import Decoder, run_block
from attnviz.generation.run import Window, new_cache


@dataclass(frozen=True, eq=False)
class FirstToken:
    """Each layer's and head's figures for the first token, [layers, h] each."""

    weight: FloatArray  # mean weight the rows after it put on it
    size: FloatArray  # ‖f_h(x_0)‖ over the mean ‖f_h(x_j)‖ of the others
    share: FloatArray  # its mean share of ‖w·f‖ in those rows
    tokens: int  # n, the tokens read


def first_token(decoder: Decoder, ids: Sequence[int]) -> FirstToken:
    """The first token's weight, value size and contribution share in every layer and head, on
    ``ids`` read in one pass (at least two tokens)."""
    cache = new_cache(decoder, len(ids), None)
    _, _, attention = run_block(decoder, ids, cache, 0, rows=[])
    group = decoder.n_heads // decoder.n_kv_heads
    weight, size, share = [], [], []
    for layer, weights in enumerate(attention):
        values = np.repeat(cache.values(layer), group, axis=0)  # [h, n, d_k], head i's group
        norms = vector_norms(transformed_values(values, decoder.output_rows(layer)))  # [h, n]
        rows = np.asarray(weights, dtype=np.float64)[:, 1:, :]  # [h, n − 1, n]
        sizes = rows * norms[:, np.newaxis, :]
        weight.append(rows[..., 0].mean(axis=-1))
        size.append(norms[:, 0] / norms[:, 1:].mean(axis=-1))
        share.append((sizes[..., 0] / sizes.sum(axis=-1)).mean(axis=-1))
    return FirstToken(np.array(weight), np.array(size), np.array(share), len(ids))


@dataclass(frozen=True, eq=False)
class HeldText:
    """A held text read with the whole cache and with two sliding ones, position by position."""

    window: int  # W
    keep_first: int  # k of the window that keeps its first tokens
    log_p: dict[str, FloatArray]  # "whole", "keep", "drop": [n − 1] log p(token i + 1)
    tv: dict[str, FloatArray]  # "keep", "drop": [n − 1] TV from the whole cache's distribution


def held_text(decoder: Decoder, ids: Sequence[int], window: int, keep_first: int) -> HeldText:
    """``ids`` read three ways: the whole cache, a window of ``window`` tokens keeping the first
    ``keep_first`` (at least 1), and one keeping none."""
    n = len(ids)
    windows = {"whole": None, "keep": Window(window, keep_first), "drop": Window(window, 0)}
    probabilities: dict[str, FloatArray] = {}
    for name, shape in windows.items():
        cache = new_cache(decoder, n, shape)
        _, logits, _ = run_block(decoder, ids, cache, 0, rows=slice(None, -1))
        probabilities[name] = _softmax_rows(logits)
    following = np.asarray(ids[1:])
    log_p = {
        name: np.log(np.maximum(p[np.arange(n - 1), following], np.finfo(np.float64).tiny))
        for name, p in probabilities.items()
    }
    tv = {
        name: 0.5 * np.abs(probabilities[name] - probabilities["whole"]).sum(axis=-1)
        for name in ("keep", "drop")
    }
    return HeldText(window, keep_first, log_p, tv)


def _softmax_rows(logits: FloatArray) -> FloatArray:
    """softmax of each row, in float64, the row's largest subtracted first. [n, V] -> [n, V]"""
    shifted = np.asarray(logits, dtype=np.float64)
    shifted = shifted - shifted.max(axis=-1, keepdims=True)
    exponent = np.exp(shifted)
    result: FloatArray = exponent / exponent.sum(axis=-1, keepdims=True)
    return result
