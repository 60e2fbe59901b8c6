"""Derive the float32 GELU of attnviz/model/functional.py: ``python scripts/fit_gelu32.py``.

GELU(x) = x·Φ(x), and Φ is a logistic function of its own log-odds s(x) = ln(Φ/(1 - Φ)):
Φ(x) = 1 / (1 + exp(-s(x))). s is odd and smooth (4x/√(2π) near 0, about x²/2 far out), so
-s(x) = x·R(x²) with R a polynomial of degree 6 in x², fitted on 0 <= x <= 6; beyond 6, Φ rounds
to 1 (or its product with x to 0) in float32 as long as |x·R(x²)| stays large, and R stays below
its value at 36, -3.9, there (tests/model/test_functional.py checks it up to the largest
float). Then

    GELU(x) = x / (1 + exp(x·R(x²)))

is 17 numpy passes over x (the exponential as exp2, log₂e folded into R's coefficients by
functional.py) against 29 for ½·x·(1 + erf(x/√2)) with a rational erf, and as
accurate: the coefficients minimise the largest absolute error of Φ, which is what GELU's error
is made of (|δGELU| = |x|·|δΦ|, and near Φ = ½ a float32 ulp is 6e-8). An error δ in -s moves Φ by
Φ(1 - Φ)·δ, so the least-squares fit of R is weighted by x·Φ(1 - Φ), then re-weighted towards the
points of largest error (Lawson's iteration) until the error is nearly equal everywhere. It prints
the coefficients, highest power first, as functional.py lists them, and the largest error of Φ.
"""

from __future__ import annotations

import math

import numpy as np

N_POINTS = 8000
LIMIT = 6.0  # |x| beyond which float32 GELU is x or 0 whatever R gives
DEGREE = 6  # of R, in powers of x²
ITERATIONS = 100


def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def log_odds(x: float) -> float:
    """ln(Φ(x) / (1 - Φ(x))), with 1 - Φ(x) = Φ(-x) taken from erfc, exact far out."""
    return math.log(normal_cdf(x)) - math.log(normal_cdf(-x))


def fit() -> tuple[list[float], float]:
    """R's coefficients, highest power first, and the largest absolute error of Φ."""
    nodes = LIMIT * (0.5 - 0.5 * np.cos(np.pi * (np.arange(N_POINTS) + 0.5) / N_POINTS))
    x = nodes[nodes > 1e-4]
    # In u = x²/36, from 0 to 1, the least-squares columns stay well scaled.
    u = (x / LIMIT) ** 2
    minus_s_over_x = np.array([-log_odds(value) / value for value in x])
    phi = np.array([normal_cdf(value) for value in x])
    sensitivity = x * phi * (1 - phi)  # dΦ per unit error of R
    columns = u[:, None] ** np.arange(DEGREE + 1)
    weights = np.ones_like(x)
    coefficients = np.zeros(DEGREE + 1)
    error = np.zeros_like(x)
    for _ in range(ITERATIONS):
        scale = sensitivity * weights
        coefficients, *_ = np.linalg.lstsq(
            columns * scale[:, None], minus_s_over_x * scale, rcond=None
        )
        error = (columns @ coefficients - minus_s_over_x) * sensitivity
        weights = weights * np.sqrt(np.abs(error) / np.abs(error).max() + 1e-3)
        weights /= weights.mean()
    in_x_squared = coefficients / LIMIT ** (2 * np.arange(DEGREE + 1))
    return in_x_squared[::-1].tolist(), float(np.abs(error).max())


def main() -> None:
    r, error = fit()
    print("_GELU32_R =", tuple(r))
    print(f"largest error of Φ: {error:.2e}")


if __name__ == "__main__":
    main()
