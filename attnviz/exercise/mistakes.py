"""What each common mistake gives, from the numbers exactly as the student is shown them.

One function per kind of question; each returns every mistake that kind can be read as, with
the number it leads to. Which of them is named for an answer is Question.check's business
(a mistake whose number is the right answer is dropped where the question is made). Arrays
are the shown numbers (−∞ for a masked score); indices are from 0.
"""

from __future__ import annotations

import math

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.exercise.questions import Mistake


def _softmax_at(row: FloatArray, index: int) -> float:
    """softmax(row)[index], the row's largest allowed entry subtracted (−∞ gives 0)."""
    allowed = np.isfinite(row)
    shifted = np.where(allowed, row - row[allowed].max(), -np.inf)
    exponentials = np.exp(shifted)
    return float(exponentials[index] / exponentials.sum())


def projection(
    x: FloatArray, w: FloatArray, column: int, matrix: str, bias: float | None
) -> list[Mistake]:
    """x: [d_model] the token's row of X; w: [d_model, d_k] the head's W; the answer is
    x·w[:, column] (+ bias). Another column of W, or the bias left out."""
    found = [
        Mistake(
            f"column_{other + 1}",
            f"used column {other + 1} of W_{matrix} instead of column {column + 1}",
            float(x @ w[:, other]) + (bias or 0.0),
        )
        for other in range(w.shape[1])
        if other != column
    ]
    if w.shape[0] == w.shape[1]:  # a row of W has as many entries as x: it can be taken
        found.append(
            Mistake(
                "row_for_column",
                f"took row {column + 1} of W_{matrix} for column {column + 1}",
                float(x @ w[column]) + (bias or 0.0),
            )
        )
    if bias is not None:
        found.append(Mistake("forgot_bias", "left out the bias", float(x @ w[:, column])))
    return found


def score(q_i: FloatArray, k_j: FloatArray, q_j: FloatArray, k_i: FloatArray) -> list[Mistake]:
    """[d_k] each: the answer is q_i·k_j."""
    d_k = len(q_i)
    return [
        Mistake("transposed", "used k_i·q_j for q_i·k_j", float(k_i @ q_j)),
        Mistake("queries_only", "used the key word's q for its k (q_i·q_j)", float(q_i @ q_j)),
        Mistake("keys_only", "used the query word's k for its q (k_i·k_j)", float(k_i @ k_j)),
        Mistake(
            "scaled_early",
            "divided by √d_k already (that is the next step)",
            float(q_i @ k_j) / math.sqrt(d_k),
        ),
    ]


def scaled(score_value: float, d_k: int, n: int, d_model: int) -> list[Mistake]:
    """The answer is score / √d_k."""
    return [
        Mistake("forgot_scale", "forgot to divide by √d_k", score_value),
        Mistake("divided_by_d_k", "divided by d_k instead of √d_k", score_value / d_k),
        Mistake(
            "divided_by_sqrt_n",
            "divided by √n (the number of words) instead of √d_k",
            score_value / math.sqrt(n),
        ),
        Mistake(
            "multiplied", "multiplied by √d_k instead of dividing", score_value * math.sqrt(d_k)
        ),
        Mistake(
            "divided_by_sqrt_d_model",
            "divided by √d_model instead of √d_k",
            score_value / math.sqrt(d_model),
        ),
    ]


def softmax(scaled_matrix: FloatArray, row: int, column: int) -> list[Mistake]:
    """scaled_matrix: [n_queries, n_keys] the head's scaled scores, −∞ where masked; the answer
    is softmax(scaled_matrix[row])[column]."""
    values = scaled_matrix[row]
    allowed = np.isfinite(values)
    found = [
        Mistake(
            "softmax_by_column",
            "took the softmax down the column instead of along the row",
            _softmax_at(scaled_matrix[:, column], row),
        ),
        Mistake(
            "no_exponential",
            "divided the score by the row's sum without exponentials",
            float(values[column] / values[allowed].sum()),
        ),
        Mistake(
            "sum_without_exponentials",
            "exponentiated the score but not the sum (exp(s_ij) / Σ s_ik)",
            float(math.exp(values[column]) / values[allowed].sum()),
        ),
    ]
    if not allowed.all():
        # exp(−∞) read as exp(0) = 1: each masked key adds 1 to the sum
        total = float(np.exp(values[allowed]).sum()) + float((~allowed).sum())
        found.append(
            Mistake(
                "counted_masked",
                "counted the masked keys as exp(0) = 1",
                float(math.exp(values[column]) / total),
            )
        )
    return found


def weight(scores_row: FloatArray, column: int, d_k: int) -> list[Mistake]:
    """scores_row: [n_keys] raw scores q·k (−∞ where masked); the answer is
    softmax(scores_row / √d_k)[column]."""
    n = int(np.isfinite(scores_row).sum())
    return [
        Mistake(
            "softmax_unscaled",
            "took the softmax of the unscaled scores",
            _softmax_at(scores_row, column),
        ),
        Mistake(
            "divided_by_d_k",
            "divided by d_k instead of √d_k",
            _softmax_at(scores_row / d_k, column),
        ),
        Mistake(
            "divided_by_sqrt_n",
            "divided by √n (the number of words) instead of √d_k",
            _softmax_at(scores_row / math.sqrt(n), column),
        ),
    ]


def z(weights_row: FloatArray, values: FloatArray, keys: FloatArray) -> list[Mistake]:
    """weights_row, values, keys: [n_keys] the query's weights and column c of V and of K; the
    answer is Σ_j w_j·v_j[c]."""
    return [
        Mistake(
            "weighted_keys", "weighted the keys instead of the values", float(weights_row @ keys)
        ),
        Mistake("unweighted_sum", "added the values without their weights", float(values.sum())),
        Mistake(
            "mean_of_values",
            "took the plain mean of the values (every weight 1/n)",
            float(values.mean()),
        ),
    ]


def output(z_heads: FloatArray, w_o: FloatArray, column: int, bias: float | None) -> list[Mistake]:
    """z_heads: [h, d_k] each head's z of the word; w_o: [h·d_k, d_model]; the answer is
    Concat·W_O[:, column] (+ bias) = Σ_h z_h·W_O^(h)[:, column] (+ bias)."""
    d_k = z_heads.shape[1]
    concat = z_heads.reshape(-1)
    added = bias or 0.0
    found = [
        Mistake(
            "added_heads",
            "added the heads' z instead of concatenating them",
            float(z_heads.sum(axis=0) @ w_o[:d_k, column]) + added,
        ),
        Mistake(
            "first_head_only", "used head 1's z only", float(z_heads[0] @ w_o[:d_k, column]) + added
        ),
    ]
    if w_o.shape[0] == w_o.shape[1]:  # a row of W_O is as long as Concat: it can be taken
        found.append(
            Mistake(
                "row_for_column",
                f"took row {column + 1} of W_O for column {column + 1}",
                float(concat @ w_o[column]) + added,
            )
        )
    if bias is not None:
        found.append(Mistake("forgot_bias", "left out the bias", float(concat @ w_o[:, column])))
    return found


def rope(
    a: float, b: float, position: int, theta: float, second: bool, matrix: str
) -> list[Mistake]:
    """The pair (a, b) at ``position`` turned by position·θ; the answer is a' (or b' with
    ``second``) for q and k, and for v the coordinate as it was (v is not turned)."""

    def turned(angle: float) -> float:
        if second:
            return a * math.sin(angle) + b * math.cos(angle)
        return a * math.cos(angle) - b * math.sin(angle)

    angle = position * theta
    if matrix == "V":
        return [Mistake("rotated_v", "rotated V (RoPE turns q and k only)", turned(angle))]
    return [
        Mistake("turned_backwards", "turned the pair the other way (−m·θ)", turned(-angle)),
        Mistake("degrees", "took m·θ in degrees instead of radians", turned(math.radians(angle))),
        Mistake("counted_from_1", "counted positions from 1 instead of 0", turned(angle + theta)),
        Mistake(
            "swapped_sin_cos",
            "swapped sin and cos",
            a * math.sin(angle) - b * math.cos(angle)
            if not second
            else a * math.cos(angle) + b * math.sin(angle),
        ),
    ]


def cache(n: int, h: int, groups: int, d_k: int, d_model: int) -> list[Mistake]:
    """The answer is 2·n·G·d_k numbers per layer (K and V for each key/value head)."""
    return [
        Mistake(
            "no_sharing", "kept a K and V for every query head (h instead of G)", 2 * n * h * d_k
        ),
        Mistake("keys_only", "counted K only (forgot the 2 for V)", n * groups * d_k),
        Mistake("d_model_for_d_k", "used d_model instead of d_k", 2 * n * groups * d_model),
        Mistake("one_token", "counted one token instead of n", 2 * groups * d_k),
    ]


def blockwise(m_old: float, l_old: float, block: FloatArray) -> list[Mistake]:
    """block: [b] the block's scaled scores (−∞ where masked); the answer is
    ℓ_new = exp(m_old − m_new)·ℓ_old + Σ_j exp(s_j − m_new), m_new = max(m_old, max s_j)."""
    allowed = block[np.isfinite(block)]
    m_new = max(m_old, float(allowed.max())) if allowed.size else m_old
    new_terms = float(np.exp(allowed - m_new).sum())
    return [
        Mistake(
            "forgot_rescale", "forgot to rescale ℓ_old by exp(m_old − m_new)", l_old + new_terms
        ),
        Mistake(
            "rescaled_backwards",
            "rescaled by exp(m_new − m_old) instead of exp(m_old − m_new)",
            math.exp(m_new - m_old) * l_old + new_terms,
        ),
        Mistake(
            "old_maximum",
            "took the block's exponentials under the old maximum m_old",
            math.exp(m_old - m_new) * l_old + float(np.exp(allowed - m_old).sum()),
        ),
        Mistake("left_out_old", "left out ℓ_old", new_terms),
    ]
