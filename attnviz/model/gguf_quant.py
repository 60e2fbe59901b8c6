"""How a GGUF file stores its weights, in words, and one weight dequantized by hand.

Quantized types cut each row into blocks of 32 (or 256 for the K-quants) numbers that share a
scale d stored as float16; Q4_1 and Q5_1 also share a minimum m. A weight is its small integer
code q times the scale, plus the minimum: w = d·q (Q8_0, q from −128 to 127), w = d·(q − 8)
(Q4_0, q from 0 to 15), w = d·q + m (Q4_1, q from 0 to 15).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.model.gguf_file import GgufFile, dequantize

#: Each type in words, for the lesson's sentence about the weights.
DESCRIPTIONS = {
    "F32": "32-bit floats, not quantized",
    "F16": "16-bit floats (float16), not quantized",
    "BF16": "16-bit bfloat16 floats, not quantized",
    "Q8_0": "8-bit Q8_0, blocks of 32 numbers sharing a scale",
    "Q4_0": "4-bit Q4_0, blocks of 32 numbers sharing a scale",
    "Q4_1": "4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum",
    "Q5_0": "5-bit Q5_0, blocks of 32 numbers sharing a scale",
    "Q5_1": "5-bit Q5_1, blocks of 32 numbers sharing a scale and a minimum",
    "Q2_K": "2-bit Q2_K, super-blocks of 256 numbers in 16 blocks with their own scales",
    "Q3_K": "3-bit Q3_K, super-blocks of 256 numbers in 16 blocks with their own scales",
    "Q4_K": "4-bit Q4_K, super-blocks of 256 numbers in 8 blocks with scales and minimums",
    "Q5_K": "5-bit Q5_K, super-blocks of 256 numbers in 8 blocks with scales and minimums",
    "Q6_K": "6-bit Q6_K, super-blocks of 256 numbers in 16 blocks with their own scales",
}


def describe_type(type_name: str) -> str:
    """A tensor type in words: "4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum"."""
    return DESCRIPTIONS.get(type_name, type_name)


@dataclass(frozen=True)
class DequantizedWeight:
    """One weight w of a tensor and the numbers it was stored as: w = d·(q − offset) + m."""

    tensor: str  # the GGUF tensor's name
    type_name: str  # "Q4_1"
    row: int
    column: int
    block: int  # which block of its row the weight is in
    block_size: int  # numbers per block
    d: float  # the block's scale (a float16, here exactly)
    m: float  # the block's minimum (0 for types without one)
    q: int  # the weight's integer code
    offset: int  # subtracted from q first: 8 for Q4_0, 16 for Q5_0, else 0
    weight: float  # d·(q − offset) + m as the gguf package computes it, in float32

    @property
    def formula(self) -> str:
        """The sum by hand, d and m exactly as stored, w to float32's 7 significant digits:
        "w = d·q + m = 0.06915283203125 × 7 − 0.546875 ≈ -0.06280518"."""
        code = f"({self.q} − {self.offset})" if self.offset else f"{self.q}"
        if self.type_name in ("Q4_1", "Q5_1"):
            sign = "−" if self.m < 0 else "+"
            return f"w = d·q + m = {self.d!r} × {code} {sign} {abs(self.m)!r} ≈ {self.weight:.7g}"
        return f"w = d·q = {self.d!r} × {code} ≈ {self.weight:.7g}"


#: Types whose weights ``worked_dequantization`` takes apart: bytes of the block's scale, of its
#: minimum, and how the 32 codes are packed.
_BLOCKS = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20}


def worked_dequantization(file: GgufFile, tensor: str, row: int, column: int) -> DequantizedWeight:
    """Weight [row, column] of ``tensor`` taken apart by hand from its block's bytes (Q8_0,
    Q4_0, Q4_1), checked against the gguf package's dequantization of that row."""
    info = file.tensors[tensor]
    if info.type_name not in _BLOCKS:
        raise ValueError(
            f"{tensor} is stored as {info.type_name}; the worked example reads Q8_0, Q4_0 or "
            "Q4_1 blocks"
        )
    block_bytes, block_size = _BLOCKS[info.type_name], 32
    raw = file.raw(tensor).reshape(-1, info.n_bytes // int(np.prod(info.shape[:-1])))[row]
    block, place = divmod(column, block_size)
    stored = raw[block * block_bytes : (block + 1) * block_bytes]
    d = float(stored[:2].view(np.float16)[0])
    m, offset = 0.0, 0
    if info.type_name == "Q8_0":
        q = int(stored[2:].view(np.int8)[place])
    else:
        codes = stored[4:] if info.type_name == "Q4_1" else stored[2:]
        # 16 bytes hold 32 codes: byte j holds code j in its low half and code j + 16 in its high.
        byte = int(codes[place % 16])
        q = byte & 0x0F if place < 16 else byte >> 4
        if info.type_name == "Q4_1":
            m = float(stored[2:4].view(np.float16)[0])
        else:
            offset = 8
    weight = float(dequantize(file, tensor, np.array([row])).reshape(-1)[column])
    expected = np.float32(np.float32(d) * np.float32(q - offset)) + np.float32(m)
    if weight != float(expected):  # the bytes were read as the gguf package reads them
        raise ValueError(f"{tensor}[{row}, {column}]: the block reads {expected}, not {weight}")
    return DequantizedWeight(
        tensor, info.type_name, row, column, block, block_size, d, m, q, offset, weight
    )
