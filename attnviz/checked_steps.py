"""The step functions as attnviz offers them to Python users (attnviz.softmax, attnviz.project,
…): each checks what it is given, in one sentence naming the fix, then calls attention.py's
textbook function. Arrays of numbers of the shapes the step multiplies; its result refused
before numpy allocates it when it would take more than limits.MAX_TRACE_BYTES (an
np.broadcast_to view of a few bytes may stand for terabytes); a softmax of scores that have
none (NaN, +∞, a row of −∞ alone) refused, naming the row. Inside attnviz the callers check
their inputs once instead (attention_inputs.checked_inputs) and call attention.py directly.
"""

from __future__ import annotations

import numpy as np

from attnviz import arguments as check
from attnviz import attention
from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError
from attnviz.limits import check_result


def project(x: FloatArray, w: FloatArray, b: FloatArray | None = None) -> FloatArray:
    """attention.project, checked.  [n, d_model], [h, d_model, d_k], optional [h, d_k] ->
    [h, n, d_k]"""
    check.arrays(x=(x, 1), w=(w, 2))
    check.same_size("project", ("x's columns", x.shape[-1]), ("w's rows", w.shape[-2]))
    product_shape("project", ("x", x), ("w", w))
    if b is not None:
        check.bias("project", "b", b, (*w.shape[:-2], w.shape[-1]), "of each head's result")
    return attention.project(x, w, b)


def attention_scores(q: FloatArray, k: FloatArray) -> FloatArray:
    """attention.attention_scores, checked.  [h, n_q, d_k], [G, n_k, d_k] -> [h, n_q, n_k]"""
    check.arrays(q=(q, 3), k=(k, 3))
    check.same_size("attention_scores", ("q's d_k", q.shape[-1]), ("k's d_k", k.shape[-1]))
    check.shared_heads("attention_scores", q.shape[-3], k.shape[-3])
    product_shape(
        "attention_scores", ("q", q), ("k's transpose", np.swapaxes(k, -1, -2)[..., :1, :, :])
    )
    return attention.attention_scores(q, k)


def scale_scores(scores: FloatArray, d_k: int) -> FloatArray:
    """attention.scale_scores, checked: d_k a whole number, 1 or more.  [h, n_q, n_k] ->
    [h, n_q, n_k]"""
    check.arrays(scores=(scores, 1))
    width = check.head_width(d_k)
    check_result("scale_scores", scores.shape, np.result_type(scores, np.float16).itemsize)
    return attention.scale_scores(scores, width)


def softmax(scores: FloatArray) -> FloatArray:
    """attention.softmax, checked: NaN, +∞ and a row of −∞ alone have no softmax and are
    refused (AttnvizError naming the first such row).  [..., n] -> [..., n]"""
    check.arrays(scores=(scores, 1))
    dtype = scores.dtype if np.issubdtype(scores.dtype, np.inexact) else np.dtype(np.float64)
    check_result("softmax", scores.shape, dtype.itemsize)
    # NaN in, +∞ (∞ − ∞) and a row of −∞ alone (−∞ − (−∞)) each make their row NaN.
    with np.errstate(invalid="ignore"):
        weights = attention.softmax(scores)
    if np.isnan(weights).any():
        refuse_scores(scores)
    return weights


def weigh_values(weights: FloatArray, v: FloatArray, out: FloatArray | None = None) -> FloatArray:
    """attention.weigh_values, checked; ``out`` [h, n_q, d_k], when given, receives Z.
    [h, n_q, n_k], [G, n_k, d_k] -> [h, n_q, d_k]"""
    check.arrays(weights=(weights, 3), v=(v, 3))
    check.same_size(
        "weigh_values", ("weights' columns", weights.shape[-1]), ("v's rows", v.shape[-2])
    )
    check.shared_heads("weigh_values", weights.shape[-3], v.shape[-3])
    product_shape("weigh_values", ("weights", weights), ("v", v[..., :1, :, :]))
    if out is None:
        return attention.weigh_values(weights, v)
    shape = (*weights.shape[:-1], v.shape[-1])
    check.room("weigh_values", out, shape, np.result_type(weights, v))
    out[...] = attention.weigh_values(weights, v)
    return out


def concat_heads(z: FloatArray) -> FloatArray:
    """attention.concat_heads, checked.  [..., h, n, d_k] -> [..., n, h·d_k]"""
    check.arrays(z=(z, 3))
    check_result("concat_heads", z.shape, z.dtype.itemsize)  # a broadcast view is copied
    return attention.concat_heads(z)


def project_out(concat: FloatArray, w_o: FloatArray, b_o: FloatArray | None = None) -> FloatArray:
    """attention.project_out, checked.  [n, h·d_k], [h·d_k, d_model], optional [d_model] ->
    [n, d_model]"""
    check.arrays(concat=(concat, 1), w_o=(w_o, 2))
    check.same_size(
        "project_out", ("concat's columns", concat.shape[-1]), ("w_o's rows", w_o.shape[-2])
    )
    product_shape("project_out", ("concat", concat), ("w_o", w_o))
    if b_o is not None:
        check.bias("project_out", "b_o", b_o, (w_o.shape[-1],), "of the output")
    return attention.project_out(concat, w_o, b_o)


def product_shape(
    step: str, a: tuple[str, FloatArray], b: tuple[str, FloatArray]
) -> tuple[int, ...]:
    """The shape of a · b (np.matmul's: leading axes broadcast), refused when they do not
    broadcast or the result would be too large, before numpy allocates it."""
    (a_name, a_array), (b_name, b_array) = a, b
    if a_array.ndim == 1:
        shape = (*b_array.shape[:-2], b_array.shape[-1])
    else:
        leading = check.broadcast(step, (a_name, a_array.shape[:-2]), (b_name, b_array.shape[:-2]))
        shape = (*leading, a_array.shape[-2], b_array.shape[-1])
    check_result(step, shape, np.result_type(a_array, b_array, np.float16).itemsize)
    return shape


def refuse_scores(scores: FloatArray) -> None:
    """AttnvizError naming what in ``scores`` has no softmax, and in which row."""
    if np.isnan(scores).any():
        what, at = "NaN (not a number)", np.argwhere(np.isnan(scores))[0][:-1]
    elif np.isposinf(scores).any():
        what, at = "+∞ (exp(∞) / exp(∞) has no value)", np.argwhere(np.isposinf(scores))[0][:-1]
    else:
        what = "a row of −∞ only (every key masked out)"
        at = np.argwhere(np.isneginf(scores).all(axis=-1))[0]
    raise AttnvizError(
        f"softmax: the scores hold {what}, first in row {at.tolist()}; give finite scores, "
        "each row with at least one above −∞ (−∞ masks a pair out)."
    )
