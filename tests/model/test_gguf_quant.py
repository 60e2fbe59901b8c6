"""One weight of tiny_llama.gguf dequantized by hand, for each block type the lesson explains,
equal to the gguf package's dequantization, and the types described in words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")

from attnviz.model.gguf_file import dequantize, read_gguf  # noqa: E402
from attnviz.model.gguf_quant import describe_type, worked_dequantization  # noqa: E402

TINY = Path(__file__).resolve().parent / "tiny_llama.gguf"


@pytest.mark.parametrize(
    ("tensor", "type_name"),
    [
        ("blk.0.attn_q.weight", "Q4_1"),
        ("blk.0.attn_output.weight", "Q4_0"),
        ("token_embd.weight", "Q8_0"),
    ],
)
@pytest.mark.parametrize("column", [0, 5, 15, 16, 31, 33, 63])
def test_a_weight_is_its_code_times_the_scale_plus_the_minimum(
    tensor: str, type_name: str, column: int
) -> None:
    file = read_gguf(TINY)
    worked = worked_dequantization(file, tensor, 3, column)
    assert worked.type_name == type_name and worked.block == column // 32
    assert worked.weight == dequantize(file, tensor)[3, column]
    by_hand = np.float32(worked.d) * np.float32(worked.q - worked.offset) + np.float32(worked.m)
    assert worked.weight == by_hand
    if type_name == "Q4_1":
        assert 0 <= worked.q <= 15 and worked.offset == 0
        assert worked.formula.startswith(f"w = d·q + m = {worked.d!r} × {worked.q} ")
    elif type_name == "Q4_0":
        assert 0 <= worked.q <= 15 and worked.offset == 8 and worked.m == 0
        assert f"× ({worked.q} − 8)" in worked.formula
    else:
        assert -128 <= worked.q <= 127 and worked.m == 0
    assert worked.formula.endswith(f"≈ {worked.weight:.7g}")


def test_a_float_tensor_has_no_worked_example() -> None:
    with pytest.raises(ValueError, match=r"stored as F32"):
        worked_dequantization(read_gguf(TINY), "output_norm.weight", 0, 0)


def test_types_in_words() -> None:
    assert describe_type("Q4_1") == "4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum"
    assert describe_type("Q8_0") == "8-bit Q8_0, blocks of 32 numbers sharing a scale"
    assert describe_type("Q6_K").startswith("6-bit Q6_K, super-blocks of 256 numbers")
