"""Derive the float32 erf of attnviz/model/functional.py: ``python scripts/fit_erf32.py``.

erf(x) = x·P(x²)/Q(x²) on 0 <= x <= 4 (erf is odd, and beyond 4 it rounds to 1 in float32), with
P of degree 6 and Q of degree 4 in x², Q(0) = 1. The coefficients minimise the largest relative
error: a linear least-squares fit of P(t) - f·Q(t) = 0 (t = x², f = erf(x)/x), weighted by
1/(f·Q) so that it measures relative error, re-weighted towards the points of largest error
(Lawson's iteration) until the error is nearly equal everywhere. It prints the coefficients,
highest power first, as functional.py lists them, and the largest relative error.
"""

from __future__ import annotations

import math

import numpy as np

N_POINTS = 4000
LIMIT = 4.0
DEGREES = (6, 4)  # P, Q in powers of x²
ITERATIONS = 60


def fit() -> tuple[list[float], list[float], float]:
    """(P, Q) coefficients, highest power first, and the largest relative error."""
    nodes = LIMIT * (0.5 - 0.5 * np.cos(np.pi * (np.arange(N_POINTS) + 0.5) / N_POINTS))
    x = nodes[nodes > 1e-6]
    t = x * x
    f = np.array([math.erf(value) for value in x]) / x
    n_p, n_q = DEGREES
    weights = np.ones_like(t)
    denominator = np.ones_like(t)
    p = q = np.zeros(0)
    relative = np.zeros_like(t)
    for _ in range(ITERATIONS):
        columns = np.hstack(
            [t[:, None] ** np.arange(n_p + 1), -(f[:, None] * t[:, None] ** np.arange(1, n_q + 1))]
        )
        scale = weights / (f * denominator)
        solution, *_ = np.linalg.lstsq(columns * scale[:, None], f * scale, rcond=None)
        p, q = solution[: n_p + 1], np.concatenate([[1.0], solution[n_p + 1 :]])
        numerator = np.polyval(p[::-1], t)
        denominator = np.polyval(q[::-1], t)
        relative = (numerator / denominator - f) / f
        weights = weights * np.sqrt(np.abs(relative) / np.abs(relative).max() + 1e-3)
        weights /= weights.mean()
    return p[::-1].tolist(), q[::-1].tolist(), float(np.abs(relative).max())


def main() -> None:
    p, q, error = fit()
    print("_ERF32_P =", tuple(p))
    print("_ERF32_Q =", tuple(q))
    print(f"largest relative error: {error:.2e}")


if __name__ == "__main__":
    main()
