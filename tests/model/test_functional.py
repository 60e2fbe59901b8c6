"""erf, GELU and LayerNorm in numpy (attnviz/model/functional.py), in float32 and float64."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from attnviz.model import functional
from attnviz.model.functional import erf, gelu, gelu_tanh, layer_norm

ROOT = Path(__file__).resolve().parents[2]


def exact_erf(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(value)) for value in x.ravel()]).reshape(x.shape)


def test_float64_erf_matches_the_standard_library_to_float64_precision() -> None:
    x = np.linspace(-40, 40, 20001)
    np.testing.assert_allclose(erf(x), exact_erf(x), rtol=0, atol=4e-16)
    assert erf(x).dtype == np.float64 and erf(np.arange(3)).dtype == np.float64


def test_float32_erf_is_within_a_few_float32_ulps_and_stays_float32() -> None:
    x = np.linspace(-7, 7, 140001, dtype=np.float32)
    got = erf(x)
    assert got.dtype == np.float32
    exact = exact_erf(x)
    ulps = np.abs(got.astype(np.float64) - exact) / np.spacing(np.abs(exact).astype(np.float32))
    assert ulps.max() <= 8, (ulps.max(), x[ulps.argmax()])
    assert np.abs(got - exact).max() <= 4e-7
    tiny = np.array([1e-30, -1e-20, 1e-8], dtype=np.float32)  # erf(x) ≈ 2x/√π near 0
    np.testing.assert_allclose(erf(tiny), 2 / math.sqrt(math.pi) * tiny, rtol=2e-7)
    assert (erf(np.array([5.0, -60.0, 1e30], np.float32)) == [1, -1, 1]).all()


@pytest.mark.slow  # the fit takes seconds
def test_float32_erf_coefficients_are_the_ones_the_fitting_script_derives() -> None:
    spec = importlib.util.spec_from_file_location("fit_erf32", ROOT / "scripts" / "fit_erf32.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    p, q, error = script.fit()
    # Close, not equal: another LAPACK may take another path to the same minimum.
    np.testing.assert_allclose(functional._ERF32_P, p, rtol=1e-6)
    np.testing.assert_allclose(functional._ERF32_Q, q, rtol=1e-6)
    assert error < 1e-7  # below a float32 ulp (1.2e-7 relative at most)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_is_x_times_the_normal_cdf(dtype: type) -> None:
    x = np.linspace(-10, 10, 4001).astype(dtype)
    exact = x.astype(np.float64) * 0.5 * (1 + exact_erf(x.astype(np.float64) / math.sqrt(2)))
    tolerance = 1e-6 if dtype is np.float32 else 1e-15
    got = gelu(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(
        got, exact, rtol=0, atol=tolerance * max(1.0, float(np.abs(x).max()))
    )
    np.testing.assert_allclose(
        gelu(np.array([-3.0, 0.0, 1.0])), [-0.0040496, 0.0, 0.8413447], atol=1e-7
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_tanh_is_gpt2s_formula_and_close_to_the_exact_gelu(dtype: type) -> None:
    x = np.linspace(-8, 8, 1601).astype(dtype)
    wide = x.astype(np.float64)
    formula = 0.5 * wide * (1 + np.tanh(math.sqrt(2 / math.pi) * (wide + 0.044715 * wide**3)))
    got = gelu_tanh(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, formula, rtol=0, atol=1e-6 if dtype is np.float32 else 1e-14)
    assert np.abs(formula - gelu(wide)).max() < 1e-3  # an approximation of the same curve


def test_layer_norm_centres_scales_then_applies_gamma_and_beta() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(5, 16))
    gamma, beta = rng.normal(size=16), rng.normal(size=16)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(
        layer_norm(x, gamma, beta, 1e-5), expected * gamma + beta, atol=1e-12
    )
    ones = layer_norm(x, np.ones(16), np.zeros(16), 1e-5)
    np.testing.assert_allclose(ones.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(ones.std(-1), 1, atol=1e-5)


def exact_gelu(x: np.ndarray) -> np.ndarray:
    """x·Φ(x) in float64 from the standard library's erfc (exact far into the tails)."""
    return np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])


@pytest.mark.slow
def test_float32_gelu_is_within_a_few_ulps_of_x_times_the_normal_cdf() -> None:
    x = np.concatenate(
        [np.linspace(-12, 12, 240_001), np.geomspace(1e-30, 1e-2, 201), [0.0]]
    ).astype(np.float32)
    x = np.concatenate([x, -x])
    got = gelu(x)
    assert got.dtype == np.float32
    exact = exact_gelu(x)
    # Φ itself (GELU / x) is off by less than 1.5e-7 here (1.54e-7 at worst on every float32
    # from 2⁻²⁰ to 8), 2.5 float32 ulps at ½ ...
    nonzero = x != 0
    phi_error = (got[nonzero] - exact[nonzero]) / x[nonzero].astype(np.float64)
    assert np.abs(phi_error).max() < 1.5e-7
    # ... and where GELU(x) is about x (x > 0) the result is within 3 ulps of its own size.
    positive = x > 0
    ulps = np.spacing(np.abs(exact[positive]).astype(np.float32)).astype(np.float64)
    assert (np.abs(got[positive] - exact[positive]) / ulps).max() <= 3
    assert (got[x == 0] == 0).all()


def test_float32_gelu_past_six_is_x_or_zero_up_to_the_largest_float_without_warnings() -> None:
    # filterwarnings = error: an overflow or invalid-value warning would fail the test.
    beyond = np.concatenate(
        [np.linspace(6, 100, 100_001), np.geomspace(100, 3.4e38, 100_001)]
    ).astype(np.float32)
    np.testing.assert_array_equal(gelu(beyond), beyond)
    negative = gelu(-beyond)
    assert (negative <= 0).all() and np.abs(negative).max() < 4e-10
    assert np.isnan(gelu(np.array([np.nan], np.float32))).all()


@pytest.mark.slow  # the fit takes a second
def test_float32_gelu_coefficients_are_the_ones_the_fitting_script_derives() -> None:
    spec = importlib.util.spec_from_file_location("fit_gelu32", ROOT / "scripts" / "fit_gelu32.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    r, error = script.fit()
    np.testing.assert_allclose(functional._GELU32_R, r, rtol=1e-6)
    assert error < 3e-8  # half a float32 ulp at Φ = ½


def test_float32_gelu_of_large_negative_numbers_is_zero_not_positive() -> None:
    x = np.array([-5.66, -6.0, -10.0, -100.0, -1e30], dtype=np.float32)
    got = gelu(x)
    assert (got <= 0).all() and np.abs(got).max() < 1e-6


def test_gelu_into_a_buffer_that_is_not_contiguous_fills_it() -> None:
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    out = np.empty((4, 3, 2), np.float32).transpose(2, 1, 0)
    assert gelu(x, out=out) is out
    np.testing.assert_array_equal(out, gelu(np.ascontiguousarray(x)))
    bias = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(gelu(x, bias=bias), gelu(x + bias), rtol=1e-6)
