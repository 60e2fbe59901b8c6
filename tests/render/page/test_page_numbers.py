"""The page's tables of numbers: carried as the integers of their printed text, they read back
as exactly the text the terminal prints (format_number), ties, negative zeros, −∞ and huge
numbers included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.labels import format_number
from attnviz.render.page.page_numbers import packed, printed_integers, unpacked

TRICKY = [0.125, -0.125, 2.5, -2.5, 0.5, 1.5, -0.0, -1e-9, 0.005, 0.015, 1.005, 999999.996]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decimals", range(9))
def test_every_number_reads_back_as_the_terminal_prints_it(dtype: type, decimals: int) -> None:
    rng = np.random.default_rng(decimals)
    values = rng.standard_normal(3000) * 10.0 ** rng.integers(-5, 5, 3000)
    values = np.concatenate([values, TRICKY, [1e7, -np.inf, np.inf, np.nan]]).astype(dtype)
    assert unpacked(packed(values, decimals)) == [format_number(float(v), decimals) for v in values]


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=30))
def test_any_float_reads_back_as_printed(values: list[float]) -> None:
    for decimals in (0, 2, 8):
        shown = unpacked(packed(np.array(values), decimals))
        assert shown == [format_number(v, decimals) for v in values]


def test_the_smallest_type_that_holds_them_and_texts_only_for_the_unprintable() -> None:
    weights = np.array([[0.0, 0.254, 1.0]])
    assert packed(weights, 2)["type"] == "Uint8Array"  # 0 … 100
    assert packed(-weights, 2)["type"] == "Int8Array"
    assert packed(weights * 100, 2)["type"] == "Uint16Array"
    assert packed(weights * 1000, 4)["type"] == "Int32Array"  # up to 10,000,000
    assert packed(weights * 1e5, 8)["type"] == "Float64Array"
    integers, texts = printed_integers(np.array([0.125, -np.inf, 2e6]), 2)
    assert integers.tolist() == [12, 0, 0] and texts == {1: "−∞", 2: "2.00e+06"}
    carried = packed(np.zeros((2, 3, 4)), 2)
    assert carried["shape"] == [2, 3, 4] and carried["decimals"] == 2


@pytest.mark.slow
def test_a_long_rows_zeros_cost_next_to_nothing() -> None:
    """Most weights of a long row print as 0.00 (here 86%): 72 heads × 128² weights cost under
    a third of a byte each, where their JSON strings ("0.00",) cost 7."""
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.full(128, 0.05), size=(72, 128))
    carried = packed(weights, 2)
    assert len(carried["data"]) < weights.size / 3
