"""The elementwise functions of a transformer layer that numpy lacks: erf, GELU (exact and tanh)
and LayerNorm. Pure functions over arrays, in the input's precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from attnviz.arrays import FloatArray

# float64: rational approximations of erf and erfc from the Cephes library (S. L. Moshier,
# public domain), accurate to about 1e-16: erf(x) = x·T(x²)/U(x²) for |x| < 1, and
# erfc(x) = exp(-x²)·P(x)/Q(x) for 1 <= x < 8. Coefficients from the highest power down; Q and U
# have a leading 1.
_ERF_T = (
    9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
    7.00332514112805075473e3, 5.55923013010394962768e4,
)  # fmt: skip
_ERF_U = (
    1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
    2.26290000613890934246e4, 4.92673942608635921086e4,
)  # fmt: skip
_ERFC_P = (
    2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
    4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
    9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2,
)  # fmt: skip
_ERFC_Q = (
    1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
    9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
    1.65666309194161350182e3, 5.57535340817727675546e2,
)  # fmt: skip

# float32: erf(x) = x·P(x²)/Q(x²) on |x| <= 4 (beyond, erf rounds to ±1 in float32), fitted by
# scripts/fit_erf32.py to a relative error of 6.5e-8 (half a float32 ulp); evaluated in float32
# it is within a few ulps of the true erf. Coefficients from the highest power down.
_ERF32_P = (
    1.9110160176664416e-08, -1.942223065234886e-06, 0.00014727662665636355,
    0.003990267830256912, 0.05152398280145478, 0.20711892909086624, 1.1283790943157435,
)  # fmt: skip
_ERF32_Q = (
    0.001021030412440577, 0.014957483286572159, 0.11796807284727054, 0.5168856229186669, 1.0,
)  # fmt: skip
_ERF32_LIMIT = 4.0


def _polynomial(x: FloatArray, coefficients: Sequence[float]) -> FloatArray:
    """Horner's rule, coefficients from the highest power down, in place after the first step;
    the coefficients are cast to x's precision, so float32 stays float32."""
    dtype = x.dtype.type
    result = x * dtype(coefficients[0])
    result += dtype(coefficients[1])
    for coefficient in coefficients[2:]:
        result *= x
        result += dtype(coefficient)
    return result


def erf(x: FloatArray) -> FloatArray:
    """The error function, elementwise, in x's precision (numpy has none of its own).

    float32: one rational function, x·P(x²)/Q(x²) with |x| clipped to 4, accurate to a few
    float32 ulps. float64 (and anything else, computed in float64): Cephes' two ranges,
    x·T(x²)/U(x²) for |x| < 1 and 1 - exp(-x²)·P(|x|)/Q(|x|) up to |x| = 6, accurate to 4e-16;
    beyond 6, erfc(x) < 2e-17 is below float64's resolution at 1, so erf is ±1 exactly.
    """
    x = np.asarray(x)
    if x.dtype == np.float32:
        clipped = np.clip(x, -_ERF32_LIMIT, _ERF32_LIMIT)
        squared = clipped * clipped
        result = _polynomial(squared, _ERF32_P)
        result *= clipped
        result /= _polynomial(squared, _ERF32_Q)
        # Near |x| = 4 the rational function's last rounding can pass 1 by an ulp.
        np.clip(result, -1.0, 1.0, out=result)
        return result
    if x.dtype != np.float64:
        x = x.astype(np.float64)
    squared = x * x
    inner = x * _polynomial(squared, _ERF_T) / _polynomial(squared, _ERF_U)
    clipped = np.clip(np.abs(x), 1.0, 6.0)
    complement = np.exp(-clipped * clipped) * _polynomial(clipped, _ERFC_P)
    complement /= _polynomial(clipped, _ERFC_Q)
    outer = np.copysign(1.0 - complement, x)
    return np.where(np.abs(x) < 1.0, inner, outer)


#: Elementwise functions work through large arrays in blocks of this many elements: a block's
#: temporaries (128 KB in float32) stay in the processor's cache and in the allocator's free
#: lists, where whole-array temporaries (768 KB for 128 tokens × 1536) would be mapped fresh
#: from the system and faulted in page by page, every time: 2x faster GELU for a BERT layer.
#: Smaller blocks lose again, to numpy's cost per call (a microsecond, 19 calls a block).
BLOCK = 32_768


def blockwise(
    function: Callable[[FloatArray, FloatArray], object],
    x: FloatArray,
    out: FloatArray | None = None,
    bias: FloatArray | None = None,
) -> FloatArray:
    """``function(x + bias)`` computed a block of rows at a time, into ``out`` (may be ``x``).

    [n, d], optional [d] or [n, 1] (a bias for each row) -> [n, d]; ``function(block, into)``
    must be elementwise and write its result into ``into`` (which may be ``block`` itself).
    """
    x = np.ascontiguousarray(x)
    if out is not None and not out.flags.c_contiguous:  # reshape() would write to a copy
        out[...] = blockwise(function, x, None, bias)
        return out
    if out is None:
        out = np.empty_like(x)
    rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    target = out.reshape(rows.shape)
    step = max(1, BLOCK // rows.shape[1])
    for start in range(0, rows.shape[0], step):
        block, into = rows[start : start + step], target[start : start + step]
        if bias is not None:  # x + bias written where the result goes, then worked on in place
            block = np.add(block, bias[start : start + step] if bias.ndim == 2 else bias, out=into)
        function(block, into)
    return out


def gelu(
    x: FloatArray, out: FloatArray | None = None, bias: FloatArray | None = None
) -> FloatArray:
    """GELU(x + bias) = x·Φ(x) = ½·x·(1 + erf(x/√2)), the exact form BERT uses (not the tanh
    one). ``out`` may be ``x``, to compute in place; ``bias`` [d] is added to each row first
    ([n, 1]: to each column).
    """
    return blockwise(_gelu32 if x.dtype == np.float32 else _gelu, x, out, bias)


def _gelu(x: FloatArray, into: FloatArray) -> None:
    dtype = x.dtype.type
    result = erf(x * dtype(1 / np.sqrt(2.0)))
    result += dtype(1.0)
    result *= x
    np.multiply(result, dtype(0.5), out=into)


# float32: GELU(x) = x·Φ(x) with Φ the logistic function of its log-odds s(x), Φ = 1/(1 + e^(-s)),
# and -s(x) = x·R(x²), R of degree 6 fitted by scripts/fit_gelu32.py to an absolute error of Φ of
# 2.9e-8 (half a float32 ulp at ½) on |x| <= 6. Past 6, R stays below R(36) = -3.9, so
# |x·R(x²)| > 23 and Φ rounds to 1 (x > 6) or x·Φ to within 4e-10 of 0 (x < -6), as they should
# in float32. Coefficients from the highest power down.
_GELU32_R = (
    -3.512352722180353e-09, 2.6452697655652255e-07, -7.929491238542386e-06,
    0.00011061239298870145, 6.51899576010259e-05, -0.07266616917557465, -1.595769882906807,
)  # fmt: skip
#: R·log₂e: e^(x·R) = 2^(x·R·log₂e), and numpy's exp2 takes three quarters of exp's time.
_GELU32_R_LOG2 = tuple(coefficient * math.log2(math.e) for coefficient in _GELU32_R)


def _gelu32(x: FloatArray, into: FloatArray) -> None:
    """float32 GELU: x / (1 + 2^(x·R(x²)·log₂e)), 17 numpy passes over x (18 with a bias), where
    ½·x·(1 + erf(x/√2)) through a rational erf takes 29, and as accurate (a few float32 ulps)."""
    # Overflow to ±inf is part of the formula: R(x²) overflows to -inf (never NaN) and x·R to ±inf
    # only where Φ is exactly 0 or 1, and x / (1 + inf) is the -0 that GELU is there.
    with np.errstate(over="ignore"):
        exponent = _polynomial(x * x, _GELU32_R_LOG2)
        exponent *= x  # -s(x)·log₂e
        np.exp2(exponent, out=exponent)  # e^(-s(x)) = (1 - Φ) / Φ
        exponent += np.float32(1.0)
        np.divide(x, exponent, out=into)


def gelu_tanh(
    x: FloatArray, out: FloatArray | None = None, bias: FloatArray | None = None
) -> FloatArray:
    """GPT-2's GELU ("gelu_new") of x + bias: ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).

    ``out`` may be ``x``, to compute in place; ``bias`` [d] is added to each row first.
    """
    return blockwise(_gelu_tanh, x, out, bias)


def _gelu_tanh(x: FloatArray, into: FloatArray) -> None:
    dtype = x.dtype.type
    inner = x * x
    inner *= dtype(0.044715)
    inner += dtype(1.0)
    inner *= x
    inner *= dtype(np.sqrt(2.0 / np.pi))
    np.tanh(inner, out=inner)
    inner += dtype(1.0)
    inner *= x
    np.multiply(inner, dtype(0.5), out=into)


def layer_norm(x: FloatArray, gamma: FloatArray, beta: FloatArray, eps: float) -> FloatArray:
    """(x - mean) / √(var + ε) · γ + β over the last axis.  [n, d_model] -> [n, d_model]"""
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    variance += x.dtype.type(eps)
    np.sqrt(variance, out=variance)
    centred /= variance
    centred *= gamma
    centred += beta
    return centred


def layer_norm_columns(
    x_t: FloatArray,
    gamma: FloatArray,
    beta: FloatArray,
    eps: float,
    out: FloatArray | None = None,
) -> FloatArray:
    """layer_norm of each column of Xᵀ, the vectors stored as columns as BERT's forward pass
    keeps them (so that W·Xᵀ, from the weights as stored, needs no transposed copy); into
    ``out`` when given.  [d_model, n] -> [d_model, n]"""
    # The column sums as one matrix-vector product, 1ᵀ·Xᵀ, three times as fast as numpy's
    # reduction down the columns at a model's sizes.
    ones = np.ones(len(x_t), dtype=x_t.dtype)
    dtype = x_t.dtype.type
    centred = x_t - (ones @ x_t) / dtype(len(x_t))
    variance = (ones @ (centred * centred)) / dtype(len(x_t))
    variance += dtype(eps)
    np.sqrt(variance, out=variance)
    centred /= variance
    centred *= gamma[:, np.newaxis]
    return np.add(centred, beta[:, np.newaxis], out=out)
