"""The questions about the softmax and what feeds it: a scaled score (scaled), a weight from
its row of scaled scores (softmax), a trained model's weight from raw scores (weight), and one
block's update of FlashAttention's running sum ℓ (blockwise)."""

from __future__ import annotations

import math

import numpy as np

from attnviz import worked
from attnviz.arrays import FloatArray
from attnviz.exercise import mistakes
from attnviz.exercise.questions import Question, Slip
from attnviz.exercise.shown import factor as factor_text
from attnviz.exercise.shown import finished, given, number, rounded
from attnviz.lesson.examples import position_labels
from attnviz.trace import AttentionTrace

#: Weights lie in [0, 1]: a third decimal tells the mistakes apart.
WEIGHT_DECIMALS = 3


def scaled(
    trace: AttentionTrace, *, head: int, row: int, column: int, layer: int = 0, decimals: int = 2
) -> Question:
    """scaled[head][row, column] = scores[head][row, column] / √d_k."""
    query_words, key_words = position_labels(trace)
    score = rounded([trace.scores[head, row, column]], decimals)[0]
    width, n = trace.score_width, len(trace.key_tokens)
    d_k = "d_k" if width == trace.d_k else "d_k + d_rope"
    pair = f"'{query_words[row]}' and '{key_words[column]}'"
    answer = score / math.sqrt(width)
    return finished(
        kind="scaled",
        text=f"In head {head + 1}, what is the scaled score of {pair}?",
        givens=[
            given(f"raw score q·k of {pair} (head {head + 1})", ("q·k",), [score], decimals),
            given("sizes", (d_k, "n (words)", "d_model"), [width, n, trace.d_model], 0),
        ],
        answer=answer,
        decimals=decimals,
        solution=[
            f"scaled = q·k / √{d_k} = {number(score, decimals)} / √{width} = "
            f"{number(score, decimals)} / {number(math.sqrt(width), 4)} = {number(answer, 4)}"
        ],
        checkpoints=[(f"√{d_k}", math.sqrt(width))],
        mistakes=mistakes.scaled(score, width, n, trace.d_model),
        where=("scaled", layer, head, row, column),
        unrounded=float(trace.scaled[head, row, column]),
    )


def _softmax_lines(
    row: FloatArray, column: int, words: tuple[str, ...] | list[str]
) -> tuple[float, list[str], list[tuple[str, float]], list[Slip]]:
    """softmax(row)[column] worked from shown scores: the answer, the lines, the checkpoints
    (m, each exp(s − m), their sum) and the single slips (a key left out of the sum, the
    division forgotten)."""
    allowed = np.isfinite(row)
    m = float(row[allowed].max())
    exponentials = np.where(allowed, np.exp(np.where(allowed, row - m, 0.0)), 0.0)
    total = math.fsum(exponentials)
    answer = float(exponentials[column] / total)
    lines = [f"  m = the row's largest score = {number(m, 2)}"]
    checkpoints: list[tuple[str, float]] = [("m, the row's largest score", m)]
    slips: list[Slip] = []
    for k, word in enumerate(words):
        if not allowed[k]:
            lines.append(f"  '{word}': masked, exp(−∞) = 0")
            continue
        lines.append(
            f"  '{word}': exp({number(row[k], 2)} − {factor_text(m, 2)}) = "
            f"{number(exponentials[k], 4)}"
        )
        checkpoints.append((f"exp(s − m) for '{word}'", float(exponentials[k])))
        if total - exponentials[k] > 0:
            left_out = exponentials[column] / (total - exponentials[k])
            slips.append(Slip(len(checkpoints) - 1, f"left '{word}' out of the sum", left_out))
    checkpoints.append(("Σ exp(s − m)", total))
    slips.append(
        Slip(len(checkpoints) - 1, "did not divide by the sum", float(exponentials[column]))
    )
    lines += [
        f"  Σ = {number(total, 4)}",
        f"  weight = {number(exponentials[column], 4)} / {number(total, 4)} = {number(answer, 4)}",
    ]
    return answer, lines, checkpoints, slips


def softmax(
    trace: AttentionTrace, *, head: int, row: int, column: int, layer: int = 0, decimals: int = 2
) -> Question:
    """weights[head][row, column] = softmax of the row of scaled scores, at ``column``."""
    query_words, key_words = position_labels(trace)
    masked = trace.masked
    shown = np.array(
        [
            rounded(np.where(masked[i], -np.inf, trace.scaled[head, i]), decimals)
            for i in range(len(query_words))
        ]
    )
    answer, lines, checkpoints, slips = _softmax_lines(shown[row], column, key_words)
    pair = f"'{query_words[row]}' give '{key_words[column]}'"
    return finished(
        kind="softmax",
        text=(
            f"Head {head + 1}'s scaled scores are below, a row per query word. What weight "
            f"does {pair}?"
        ),
        givens=[
            given(f"scaled scores of '{word}' (head {head + 1})", key_words, shown[i], decimals)
            for i, word in enumerate(query_words)
        ],
        answer=answer,
        decimals=WEIGHT_DECIMALS,
        solution=[f"The softmax along the row of '{query_words[row]}':", *lines],
        checkpoints=checkpoints,
        mistakes=mistakes.softmax(shown, row, column),
        where=("weights", layer, head, row, column),
        slips=slips,
        unrounded=float(trace.weights[head, row, column]),
    )


def weight(
    trace: AttentionTrace, *, head: int, row: int, column: int, layer: int = 0, decimals: int = 2
) -> Question:
    """weights[head][row, column] from the row's raw scores: scale, then the softmax."""
    query_words, key_words = position_labels(trace)
    allowed = ~trace.masked[row]
    raw = np.array(rounded(np.where(allowed, trace.scores[head, row], -np.inf), decimals))
    width = trace.score_width
    scaled_row = raw / math.sqrt(width)
    answer, lines, checkpoints, slips = _softmax_lines(scaled_row, column, key_words)
    origin = trace.provenance.weights
    model, model_layer = origin.model or "the model", origin.layer or layer + 1
    pair = f"'{query_words[row]}' give '{key_words[column]}'"
    return finished(
        kind="weight",
        text=(
            f"In {model}'s layer {model_layer}, head {head + 1}, the raw scores q·k of "
            f"'{query_words[row]}' are below. What weight does {pair}?"
        ),
        givens=[
            given(f"raw scores q·k of '{query_words[row]}'", key_words, raw, decimals),
            given("sizes", ("d_k",), [width], 0),
        ],
        answer=answer,
        decimals=WEIGHT_DECIMALS,
        solution=[
            f"Scale each score by 1/√{width} = {number(1 / math.sqrt(width), 4)}, then the "
            "softmax along the row:",
            *lines,
        ],
        checkpoints=checkpoints,
        mistakes=mistakes.weight(raw, column, width),
        where=("weights", layer, head, row, column),
        slips=slips,
        unrounded=float(trace.weights[head, row, column]),
    )


def blockwise(
    trace: AttentionTrace, *, head: int, row: int, column: int, layer: int = 0, decimals: int = 2
) -> Question:
    """ℓ after block ``column`` (from 0; at least 1, so that there is an old ℓ) of the online
    softmax of ``row`` in ``head``: ℓ_new = exp(m_old − m_new)·ℓ_old + Σ_j exp(s_j − m_new)."""
    words = position_labels(trace)[1]
    online = worked.blockwise(trace, head, row).online
    update = online.updates[column]
    m_old = rounded([update.m_old], decimals)[0]
    l_old = rounded([update.l_old], WEIGHT_DECIMALS)[0]
    block = np.array(rounded(update.scores, decimals))
    block_words = words[update.start : update.stop]
    allowed = block[np.isfinite(block)]
    m_new = max(m_old, float(allowed.max())) if allowed.size else m_old
    factor = math.exp(m_old - m_new)
    new_terms = [math.exp(s - m_new) for s in allowed]
    answer = factor * l_old + math.fsum(new_terms)
    return finished(
        kind="blockwise",
        text=(
            f"FlashAttention takes the keys of '{words[row]}' (head {head + 1}) "
            f"{online.block} at a time. After the blocks before this one, m_old and ℓ_old are "
            f"below, with the scaled scores of block {column + 1}. What is ℓ_new?"
        ),
        givens=[
            given("running maximum", ("m_old",), [m_old], decimals),
            given("running sum", ("ℓ_old",), [l_old], WEIGHT_DECIMALS),
            given(f"scaled scores of block {column + 1}", block_words, block, decimals),
        ],
        answer=answer,
        decimals=WEIGHT_DECIMALS,
        solution=[
            f"  m_new = max(m_old, the block's scores) = {number(m_new, decimals)}",
            f"  factor = exp(m_old − m_new) = exp({number(m_old, decimals)} − "
            f"{factor_text(m_new, decimals)}) = {number(factor, 4)}",
            "  the block's terms exp(s − m_new): " + ", ".join(number(t, 4) for t in new_terms),
            f"  ℓ_new = {number(factor, 4)} × {number(l_old, WEIGHT_DECIMALS)} + "
            f"{number(math.fsum(new_terms), 4)} = {number(answer, 4)}",
        ],
        checkpoints=[("m_new", m_new), ("exp(m_old − m_new)", factor)],
        mistakes=mistakes.blockwise(m_old, l_old, block),
        where=("blockwise", layer, head, row, column),
        unrounded=update.l_new,
    )
