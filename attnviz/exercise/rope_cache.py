"""Two questions about a layer's shape rather than its sums: one coordinate of a pair turned
by rotary positions (rope: q and k turn, v does not), and how many numbers a K/V cache keeps
for the sentence with grouped-query attention (cache)."""

from __future__ import annotations

import math

import numpy as np

from attnviz.exercise import mistakes
from attnviz.exercise.questions import Question
from attnviz.exercise.shown import Draft, finished, given, number, rounded
from attnviz.labels import subscript
from attnviz.lesson.examples import position_labels
from attnviz.positions import rope_frequencies, rope_pairs
from attnviz.trace import AttentionTrace

#: θ_i is shown to 4 decimals: the angle m·θ_i then keeps 2 or more for any sentence's m.
THETA_DECIMALS = 4


def rope(
    trace: AttentionTrace,
    *,
    head: int,
    row: int,
    column: int,
    layer: int = 0,
    matrix: str = "Q",
    decimals: int = 2,
) -> Question:
    """Coordinate ``column`` of q (or k, or v) of the word at position ``row`` after the
    rotary step: a' = a·cos(m·θ_i) − b·sin(m·θ_i), b' = a·sin(m·θ_i) + b·cos(m·θ_i), with
    (a, b) the pair ``column`` belongs to; v is not turned."""
    if trace.rope is None:
        raise ValueError("the trace has no rotary positions")
    firsts, seconds = rope_pairs(trace.d_k, trace.rope.pairing)
    pair = int(np.flatnonzero((firsts == column) | (seconds == column))[0])
    first, second_index = int(firsts[pair]), int(seconds[pair])
    second = column == second_index
    theta = rounded([rope_frequencies(trace.d_k, trace.rope.base)[pair]], THETA_DECIMALS)[0]
    index = head if matrix == "Q" else trace.kv_head(head)
    vector = getattr(trace, matrix)[index, row]
    a, b = rounded([vector[first], vector[second_index]], decimals)
    words = position_labels(trace)[0]
    angle = row * theta
    turned = (
        a * math.sin(angle) + b * math.cos(angle)
        if second
        else a * math.cos(angle) - b * math.sin(angle)
    )
    answer = a if matrix == "V" and not second else b if matrix == "V" else turned
    name = f"{matrix.lower()}{subscript(head + 1)} for '{words[row]}'"
    formula = "b' = a·sin(m·θ) + b·cos(m·θ)" if second else "a' = a·cos(m·θ) − b·sin(m·θ)"
    if matrix == "V":
        solution = [
            "RoPE turns q and k only: v enters the weighted sum as it was projected, so "
            f"coordinate {column + 1} stays {number(answer, decimals)}."
        ]
        unrounded: float | None = float(vector[column])
    else:
        solution = [
            f"  m·θ = {row} × {number(theta, THETA_DECIMALS)} = {number(angle, 4)} radians",
            f"  cos = {number(math.cos(angle), 4)}, sin = {number(math.sin(angle), 4)}",
            f"  {formula} = {number(turned, 4)}",
        ]
        rotated = trace.Q_rotated if matrix == "Q" else trace.K_rotated
        unrounded = None if rotated is None else float(rotated[index, row, column])
    return finished(
        Draft(
            kind="rope",
            text=(
                f"Rotary positions: '{words[row]}' is at position m = {row} (from 0). Coordinates "
                f"{first + 1} and {second_index + 1} of {name} are a pair (a, b) that turns by "
                f"m·θ with θ = {number(theta, THETA_DECIMALS)} radians. What is coordinate "
                f"{column + 1} of {name} after the rotary step?"
            ),
            givens=[
                given(
                    name + f", coordinates {first + 1} and {second_index + 1}",
                    ("a", "b"),
                    [a, b],
                    decimals,
                ),
                given("position", ("m",), [row], 0),
                given("angle per position (radians)", ("θ",), [theta], THETA_DECIMALS),
            ],
            answer=answer,
            decimals=decimals,
            solution=solution,
            checkpoints=[("the angle m·θ", angle), ("cos(m·θ)", math.cos(angle))],
            mistakes=mistakes.rope(a, b, row, theta, second, matrix),
            where=("rope", layer, head, row, column),
        ),
        unrounded=unrounded,
    )


def cache(
    trace: AttentionTrace, *, head: int = 0, row: int = 0, column: int = 0, layer: int = 0
) -> Question:
    """The numbers a K/V cache keeps for the sentence, per layer: 2·n·G·d_k."""
    n, h, groups, d_k = len(trace.key_tokens), trace.n_heads, trace.n_kv_heads, trace.d_k
    answer = 2 * n * groups * d_k
    sharing = (
        f"each of its G = {groups} key/value heads shared by {h // groups} query heads"
        if groups < h
        else f"a key/value head for each of its h = {h} heads"
    )
    return finished(
        Draft(
            kind="cache",
            text=(
                f"A model writing text keeps every token's K and V (its K/V cache). This layer has "
                f"{sharing}. How many numbers does its cache keep for these n = {n} tokens?"
            ),
            givens=[
                given(
                    "sizes",
                    ("n (tokens)", "h (query heads)", "G (key/value heads)", "d_k", "d_model"),
                    [n, h, groups, d_k, trace.d_model],
                    0,
                )
            ],
            answer=answer,
            decimals=0,
            solution=[
                f"K and V, each n·G·d_k: 2·n·G·d_k = 2·{n}·{groups}·{d_k} = {answer}",
            ],
            checkpoints=[("n·G·d_k, the numbers of K", n * groups * d_k)],
            mistakes=mistakes.cache(n, h, groups, d_k, trace.d_model),
            where=("qkv", layer, head, row, column),
        ),
        exact=True,
    )
