"""The questions whose answer is a sum of products: an entry of Q, K or V (projection), a raw
score q·k (score), an entry of z (z) and an entry of Concat·W_O (output). Each takes its
numbers from one trace, shows them rounded, and computes the answer from what is shown."""

from __future__ import annotations

import numpy as np

from attnviz import worked
from attnviz.exercise import mistakes
from attnviz.exercise.questions import Question
from attnviz.exercise.shown import (
    Draft,
    Worked,
    finished,
    given,
    number,
    numbered,
    rounded,
    rounded_array,
)
from attnviz.labels import subscript
from attnviz.lesson.examples import position_labels
from attnviz.trace import AttentionTrace


def projection(
    trace: AttentionTrace,
    *,
    head: int,
    row: int,
    column: int,
    layer: int = 0,
    matrix: str = "Q",
    decimals: int = 2,
) -> Question:
    """Q[head][row, column] (or K, V) = x_row · column ``column`` of the head's W."""
    example = worked.projection(trace, head, row, column, matrix)
    words = position_labels(trace)[0 if matrix == "Q" else 1]
    index = head if matrix == "Q" else trace.kv_head(head)
    h = subscript(head + 1)
    w_full = np.asarray(getattr(trace, f"W_{matrix}")[index], dtype=np.float64)
    x = np.array(rounded(example.x, decimals))
    w = rounded_array(w_full, decimals)
    bias = None if example.bias is None else rounded([example.bias], decimals)[0]
    sum_ = Worked(x, w[:, column], decimals, added=bias)
    dims = numbered(len(x))
    givens = [given(f"x for '{words[row]}' (its row of X)", dims, x, decimals)]
    givens += [
        given(f"W_{matrix}{h} column {c + 1}", dims, w[:, c], decimals) for c in range(w.shape[1])
    ]
    if bias is not None:
        givens.append(given(f"b_{matrix}{h}[{column + 1}]", ("bias",), [bias], decimals))
    name = f"{matrix}{h}['{words[row]}', {column + 1}]"
    return finished(
        Draft(
            kind="projection",
            text=(
                f"What is {name}, entry {column + 1} of {matrix.lower()} for '{words[row]}' in "
                f"head {head + 1}: x · column {column + 1} of W_{matrix}{h}"
                + (" + its bias" if bias is not None else "")
                + "?"
            ),
            givens=givens,
            answer=sum_.total,
            decimals=decimals,
            solution=[
                f"{name} = Σ_m x[m]·W_{matrix}{h}[m, {column + 1}], product by product:",
                *sum_.lines,
                sum_.sum_line,
            ],
            checkpoints=sum_.checkpoints,
            mistakes=mistakes.projection(x, w, column, matrix, bias),
            where=("qkv", layer, head, row, column),
            slips=sum_.slips,
        ),
        unrounded=example.result,
    )


def score(
    trace: AttentionTrace, *, head: int, row: int, column: int, layer: int = 0, decimals: int = 2
) -> Question:
    """scores[head][row, column] = q_row · k_column (turned with rotary positions)."""
    queries, keys = (np.asarray(a, dtype=np.float64) for a in trace.scored_vectors(head))
    query_words, key_words = position_labels(trace)
    q_i, k_j = (np.array(rounded(v, decimals)) for v in (queries[row], keys[column]))
    turned = " (turned by RoPE)" if trace.rope is not None else ""
    h = subscript(head + 1)
    dims = numbered(len(q_i))
    givens = [
        given(f"q for '{query_words[row]}'{turned}", dims, q_i, decimals),
        given(f"k for '{key_words[column]}'{turned}", dims, k_j, decimals),
    ]
    found = []
    if not trace.is_cross:  # the other word's q and k exist only in self-attention
        q_j, k_i = (np.array(rounded(v, decimals)) for v in (queries[column], keys[row]))
        givens += [
            given(f"q for '{query_words[column]}'{turned}", dims, q_j, decimals),
            given(f"k for '{key_words[row]}'{turned}", dims, k_i, decimals),
        ]
        found = mistakes.score(q_i, k_j, q_j, k_i)
    sum_ = Worked(q_i, k_j, decimals)
    pair = f"'{query_words[row]}' and '{key_words[column]}'"
    return finished(
        Draft(
            kind="score",
            text=(
                f"In head {head + 1}, what is the raw score of {pair}, q_{query_words[row]} · "
                f"k_{key_words[column]} (before ÷√d_k)?"
            ),
            givens=givens,
            answer=sum_.total,
            decimals=decimals,
            solution=[
                f"scores{h}[{pair}] = Σ_c q[c]·k[c], product by product:",
                *sum_.lines,
                sum_.sum_line,
            ],
            checkpoints=sum_.checkpoints,
            mistakes=found,
            where=("scores", layer, head, row, column),
            slips=sum_.slips,
        ),
        unrounded=float(trace.scores[head, row, column]),
    )


def z(
    trace: AttentionTrace, *, head: int, row: int, column: int, layer: int = 0, decimals: int = 2
) -> Question:
    """Z[head][row, column] = Σ_j w_row,j · v_j[column]."""
    query_words, key_words = position_labels(trace)
    kv = trace.kv_head(head)
    w_row = np.array(rounded(trace.weights[head, row], decimals + 1))
    v_col = np.array(rounded(trace.V[kv][:, column], decimals))
    k_col = np.array(rounded(trace.K[kv][:, column], decimals))
    h = subscript(head + 1)
    sum_ = Worked(w_row, v_col, decimals + 1, names=key_words)
    return finished(
        Draft(
            kind="z",
            text=(
                f"In head {head + 1}, what is entry {column + 1} of z for '{query_words[row]}', "
                f"Σ_j w_j·v_j[{column + 1}]?"
            ),
            givens=[
                given(
                    f"weights of '{query_words[row]}' (head {head + 1})",
                    key_words,
                    w_row,
                    decimals + 1,
                ),
                given(f"V{h} column {column + 1}", key_words, v_col, decimals),
                given(f"K{h} column {column + 1}", key_words, k_col, decimals),
            ],
            answer=sum_.total,
            decimals=decimals,
            solution=[
                f"z{h}['{query_words[row]}'][{column + 1}] = Σ_j w_j·v_j[{column + 1}], "
                "word by word:",
                *sum_.lines,
                sum_.sum_line,
            ],
            checkpoints=sum_.checkpoints,
            mistakes=mistakes.z(w_row, v_col, k_col),
            where=("z", layer, head, row, column),
            slips=sum_.slips,
        ),
        unrounded=float(trace.Z[head, row, column]),
    )


def output(
    trace: AttentionTrace, *, head: int, row: int, column: int, layer: int = 0, decimals: int = 2
) -> Question:
    """output[row, column] = Concat[row] · W_O[:, column] (+ b_O[column]); ``head`` unused
    (the output mixes every head) but kept in ``where`` as given."""
    words = position_labels(trace)[0]
    example = worked.output_element(trace, row, column)
    z_heads = np.array(rounded(trace.Z[:, row], decimals)).reshape(trace.n_heads, trace.d_k)
    w_o_full = np.asarray(trace.W_O, dtype=np.float64)
    w_o = rounded_array(w_o_full, decimals)
    bias = None if example.bias is None else rounded([example.bias], decimals)[0]
    concat = z_heads.reshape(-1)
    sum_ = Worked(concat, w_o[:, column], decimals, added=bias)
    dims = numbered(trace.d_k)
    givens = [
        given(f"z{subscript(i + 1)} for '{words[row]}' (head {i + 1})", dims, z_heads[i], decimals)
        for i in range(trace.n_heads)
    ]
    rows = numbered(len(concat))
    givens.append(given(f"W_O column {column + 1}", rows, w_o[:, column], decimals))
    if trace.d_model == len(concat):  # a row as long as Concat: one to take for the column
        givens.append(given(f"W_O row {column + 1}", rows, w_o[column], decimals))
    if bias is not None:
        givens.append(given(f"b_O[{column + 1}]", ("bias",), [bias], decimals))
    found = mistakes.output(z_heads, w_o, column, bias)
    return finished(
        Draft(
            kind="output",
            text=(
                f"What is entry {column + 1} of the output for '{words[row]}': Concat = "
                f"[z₁ | … | z{subscript(trace.n_heads)}] times column {column + 1} of W_O"
                + (" + its bias" if bias is not None else "")
                + "?"
            ),
            givens=givens,
            answer=sum_.total,
            decimals=decimals,
            solution=[
                f"Concat = [z₁ | … ] = ({', '.join(number(v, decimals) for v in concat)})",
                f"output['{words[row]}', {column + 1}] = Σ_m Concat[m]·W_O[m, {column + 1}]:",
                *sum_.lines,
                sum_.sum_line,
            ],
            checkpoints=sum_.checkpoints,
            mistakes=found,
            where=("output", layer, head, row, column),
            slips=sum_.slips,
        ),
        unrounded=example.result,
    )
