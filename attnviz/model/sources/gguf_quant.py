"""How a GGUF file stores its weights, in words, and one weight dequantized by hand.

Quantized types cut each row into blocks of 32 numbers that share a scale d stored as float16;
Q4_1 and Q5_1 also share a minimum m. A weight is its small integer code q times the scale, plus
the minimum: w = d·q (Q8_0, q from −128 to 127), w = d·(q − 8) (Q4_0, q from 0 to 15),
w = d·(q − 16) (Q5_0, q from 0 to 31), w = d·q + m (Q4_1, Q5_1).

The K-quants (llama.cpp's ggml-quants.c, ``block_q2_K`` … ``block_q6_K``) cut each row into
super-blocks of 256 numbers with one float16 d (and dmin), and each super-block into sub-blocks of
32 (Q4_K, Q5_K) or 16 (Q2_K, Q3_K, Q6_K) numbers with their own small integer scale sc (and
minimum mn): w = d·sc·q − dmin·mn (Q2_K, Q4_K, Q5_K), w = d·(sc − 32)·(q − 4) (Q3_K),
w = d·sc·(q − 32) (Q6_K, sc an int8). A sub-block thus has the scale d·sc and the minimum
−dmin·mn, two float16 numbers shared by 256 weights instead of two per 32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from attnviz.model.sources.gguf_file import GgufFile, dequantize

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
    "Q2_K": "2-bit Q2_K, super-blocks of 256 numbers in 16 sub-blocks of 16, each with a 4-bit "
    "scale and minimum",
    "Q3_K": "3-bit Q3_K, super-blocks of 256 numbers in 16 sub-blocks of 16, each with a 6-bit "
    "scale",
    "Q4_K": "4-bit Q4_K, super-blocks of 256 numbers in 8 sub-blocks of 32, each with a 6-bit "
    "scale and minimum",
    "Q5_K": "5-bit Q5_K, super-blocks of 256 numbers in 8 sub-blocks of 32, each with a 6-bit "
    "scale and minimum",
    "Q6_K": "6-bit Q6_K, super-blocks of 256 numbers in 16 sub-blocks of 16, each with an 8-bit "
    "scale",
}


def describe_type(type_name: str) -> str:
    """A tensor type in words: "4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum"."""
    return DESCRIPTIONS.get(type_name, type_name)


def rebuilt_from(type_name: str) -> str:
    """What a weight of this type is rebuilt from, in words, to follow "Each weight is rebuilt
    from": its code and its block's numbers, or for a K-quant its sub-block's and super-block's."""
    if not type_name.endswith("_K"):
        return "its small integer code q and its block's numbers"
    minimum = type_name in _WITH_MINIMUM
    return (
        "its small integer code q, its sub-block's integer scale"
        + (" and minimum" if minimum else "")
        + " and its super-block's float16 "
        + ("d and dmin" if minimum else "d")
    )


@dataclass(frozen=True)
class SubBlock:
    """Where a K-quant weight sits in its super-block of 256, and the sub-block's integer scale
    sc (and minimum mn) that the super-block's float16 d (and dmin) multiply."""

    index: int  # which sub-block of its super-block, from 0
    size: int  # numbers per sub-block: 16 or 32
    scale: int  # sc as stored: 4 bits (Q2_K), 6 bits (Q3_K, Q4_K, Q5_K) or an int8 (Q6_K)
    scale_bits: int
    scale_offset: int  # subtracted from sc first: 32 for Q3_K, else 0
    minimum: int | None  # mn (Q2_K, Q4_K, Q5_K), None for types without one
    dmin: float  # the super-block's float16 dmin (0 for types without one)


@dataclass(frozen=True)
class DequantizedWeight:
    """One weight w of a tensor and the numbers it was stored as: w = s·(q − offset) + b, with
    the block's scale s = d and minimum b = m for the 32-number types, and for a K-quant the
    sub-block's s = d·(sc − scale_offset) and b = −dmin·mn (``block_scale``, ``block_minimum``)."""

    tensor: str  # the GGUF tensor's name
    type_name: str  # "Q4_1"
    row: int
    column: int
    block: int  # which block (super-block for a K-quant) of its row the weight is in, from 0
    block_size: int  # numbers per block: 32, or 256 for a K-quant
    d: float  # the block's (super-block's) scale, a float16, here exactly
    m: float  # the block's minimum (Q4_1, Q5_1; 0 for types without one)
    q: int  # the weight's integer code
    offset: int  # subtracted from q first: 8 (Q4_0), 16 (Q5_0), 4 (Q3_K), 32 (Q6_K), else 0
    weight: float  # the weight as the gguf package computes it, in float32
    sub_block: SubBlock | None = None  # a K-quant's sub-block; None for the other types

    @property
    def block_scale(self) -> float:
        """The scale of the weight's (sub-)block: d, or d·(sc − scale_offset) (exact: a float16
        times a small integer needs at most 19 of float64's and float32's significant bits)."""
        sub = self.sub_block
        return self.d if sub is None else self.d * (sub.scale - sub.scale_offset)

    @property
    def block_minimum(self) -> float:
        """The minimum of the weight's (sub-)block: m, or −dmin·mn (exact, as ``block_scale``)."""
        sub = self.sub_block
        if sub is None or sub.minimum is None:
            return self.m
        return -sub.dmin * sub.minimum

    @property
    def by_hand(self) -> float:
        """The formula's value computed exactly from the numbers it shows (float64: every
        product is exact and only the final sum can round, at 1e-16); the float32 ``weight`` is
        this value rounded to float32."""
        product = self.block_scale * (self.q - self.offset)
        # Without a minimum the sum is the product, a zero keeping its sign as float32's does.
        return product + self.block_minimum if self.block_minimum else product

    @property
    def formula(self) -> str:
        """The sum by hand, d (dmin, m) exactly as stored, w to 7 significant digits:
        "w = d·q + m = 0.06915283203125 × 7 − 0.546875 ≈ -0.06280518",
        "w = d·sc·q − dmin·mn = 0.0009765625 × 41 × 11 − 0.00048828125 × 7 ≈ 0.4370117"."""
        code = f"({self.q} − {self.offset})" if self.offset else _factor(self.q)
        result = f"≈ {self.by_hand:.7g}"
        sub = self.sub_block
        if sub is None:
            if self.type_name in ("Q4_1", "Q5_1"):
                sign = "−" if self.m < 0 else "+"
                return f"w = d·q + m = {self.d!r} × {code} {sign} {abs(self.m)!r} {result}"
            return f"w = d·q = {self.d!r} × {code} {result}"
        letter = f"(q − {self.offset})" if self.offset else "q"
        if sub.scale_offset:
            scale, scale_value = f"(sc − {sub.scale_offset})", f"({sub.scale} − {sub.scale_offset})"
        else:
            scale, scale_value = "sc", _factor(sub.scale)
        product = f"w = d·{scale}·{letter}"
        numbers = f"{self.d!r} × {scale_value} × {code}"
        if sub.minimum is not None:
            product += " − dmin·mn"
            numbers += f" − {_factor(sub.dmin)} × {sub.minimum}"
        return f"{product} = {numbers} {result}"

    @property
    def stored_as(self) -> str:
        """The numbers the weight is stored as, in words, for the lesson: "code q = 7 of block 1
        of its row, with the block's scale d = 0.0691… and minimum m = -0.546875"."""
        sub = self.sub_block
        if sub is None:
            return (
                f"code q = {self.q} of block {self.block + 1} of its row, with the block's scale "
                f"d = {self.d!r}"
                + (f" and minimum m = {self.m!r}" if self.type_name in ("Q4_1", "Q5_1") else "")
            )
        where = (
            f"code q = {self.q} of sub-block {sub.index + 1} ({sub.size} numbers) of super-block "
            f"{self.block + 1} of its row"
        )
        if sub.minimum is None:
            return (
                f"{where}, with the sub-block's {sub.scale_bits}-bit scale sc = {sub.scale} and "
                f"the super-block's d = {self.d!r}"
            )
        return (
            f"{where}, with the sub-block's {sub.scale_bits}-bit scale sc = {sub.scale} and "
            f"minimum mn = {sub.minimum}, and the super-block's d = {self.d!r} and "
            f"dmin = {sub.dmin!r}"
        )


def _factor(number: float) -> str:
    """A number after "×" or "−", in parentheses when negative so that the signs read clearly."""
    text = repr(number) if isinstance(number, float) else str(number)
    return f"({text})" if number < 0 else text


def worked_dequantization(file: GgufFile, tensor: str, row: int, column: int) -> DequantizedWeight:
    """Weight [row, column] of ``tensor`` taken apart by hand from its block's bytes, laid out as
    llama.cpp's ggml-quants.c lays them (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and the K-quants Q2_K …
    Q6_K), checked against the gguf package's dequantization of that row."""
    info = file.tensors[tensor]
    if info.type_name not in _LAYOUTS:
        raise ValueError(
            f"{tensor} is stored as {info.type_name}; the worked example reads "
            f"{', '.join(_LAYOUTS)} blocks"
        )
    block_size, block_bytes, read = _LAYOUTS[info.type_name]
    raw = file.raw(tensor).reshape(-1, info.n_bytes // int(np.prod(info.shape[:-1])))[row]
    block, place = divmod(column, block_size)
    stored = raw[block * block_bytes : (block + 1) * block_bytes]
    weight = float(dequantize(file, tensor, np.array([row])).reshape(-1)[column])
    reading = read(stored, place)
    worked = DequantizedWeight(
        tensor,
        info.type_name,
        row,
        column,
        block,
        block_size,
        d=reading.d,
        m=reading.m,
        q=reading.q,
        offset=reading.offset,
        weight=weight,
        sub_block=reading.sub_block,
    )
    # The gguf package's float32 arithmetic: s·(q − offset) and b are exact, the sum rounds.
    expected = np.float32(
        np.float32(worked.block_scale) * np.float32(worked.q - worked.offset)
    ) + np.float32(worked.block_minimum)
    if weight != float(expected):  # the bytes were read as the gguf package reads them
        raise ValueError(f"{tensor}[{row}, {column}]: the block reads {expected}, not {weight}")
    return worked


# -- each type's block, read as llama.cpp's dequantize_row_* reads it -------------------------
# A reader takes one block's bytes and a weight's place in it (0 … block size − 1) and returns
# the numbers the block stores for it.


class Reading(NamedTuple):
    """What a block stores for one weight: the DequantizedWeight fields of the same names."""

    d: float
    q: int
    offset: int = 0
    m: float = 0.0
    sub_block: SubBlock | None = None


def _half(stored: np.ndarray, at: int) -> float:
    """The float16 at bytes at, at + 1 (little-endian), exactly."""
    return float(stored[at : at + 2].view(np.float16)[0])


def _nibble(codes: np.ndarray, place: int) -> int:
    """Code ``place`` of 32 packed in 16 bytes: byte j holds code j in its low half and code
    j + 16 in its high half."""
    byte = int(codes[place % 16])
    return byte & 0x0F if place < 16 else byte >> 4


def _fifth_bit(high: np.ndarray, place: int) -> int:
    """Bit ``place`` of the 32-bit little-endian qh of Q5_0 and Q5_1: code ``place``'s 16."""
    return (int(high[place // 8]) >> (place % 8)) & 1


def _q8_0(stored: np.ndarray, place: int) -> Reading:  # d, qs[32] int8
    return Reading(_half(stored, 0), int(stored[2:].view(np.int8)[place]))


def _q4_0(stored: np.ndarray, place: int) -> Reading:  # d, qs[16]
    return Reading(_half(stored, 0), _nibble(stored[2:], place), offset=8)


def _q4_1(stored: np.ndarray, place: int) -> Reading:  # d, m, qs[16]
    return Reading(_half(stored, 0), _nibble(stored[4:], place), m=_half(stored, 2))


def _q5_0(stored: np.ndarray, place: int) -> Reading:  # d, qh[4], qs[16]
    q = _nibble(stored[6:], place) | _fifth_bit(stored[2:6], place) << 4
    return Reading(_half(stored, 0), q, offset=16)


def _q5_1(stored: np.ndarray, place: int) -> Reading:  # d, m, qh[4], qs[16]
    q = _nibble(stored[8:], place) | _fifth_bit(stored[4:8], place) << 4
    return Reading(_half(stored, 0), q, m=_half(stored, 2))


def _two_bits(codes: np.ndarray, place: int) -> int:
    """Q2_K's and Q3_K's low 2 bits of code ``place`` from qs[64]: each half of 128 numbers
    has 32 bytes, and number 32·j + l of a half sits in byte l at bits 2j, 2j + 1."""
    half, within = divmod(place, 128)
    shift = 2 * (within // 32)
    return (int(codes[32 * half + within % 32]) >> shift) & 3


def _q2_k(stored: np.ndarray, place: int) -> Reading:  # scales[16], qs[64], d, dmin
    index = place // 16
    scales = int(stored[index])  # the scale in the low 4 bits, the minimum in the high 4
    sub = SubBlock(index, 16, scales & 0x0F, 4, 0, scales >> 4, _half(stored, 82))
    q = _two_bits(stored[16:80], place)
    return Reading(_half(stored, 80), q, sub_block=sub)


def _q3_k(stored: np.ndarray, place: int) -> Reading:  # hmask[32], qs[64], scales[12], d
    index = place // 16
    scales = stored[96:108]
    # 16 scales of 6 bits: the low 4 in the halves of bytes 0-7 (scales 8-15 in the high
    # halves), the top 2 in bytes 8-11, scale s at bits 2·(s // 4) of byte 8 + s % 4.
    low = (int(scales[index % 8]) >> (4 * (index // 8))) & 0x0F
    top = (int(scales[8 + index % 4]) >> (2 * (index // 4))) & 3
    sub = SubBlock(index, 16, low | top << 4, 6, 32, None, 0.0)
    # The third bit of code l + 32·j is bit j of hmask[l]; llama.cpp subtracts 4 where it is 0.
    third = (int(stored[place % 32]) >> (place // 32)) & 1
    q = _two_bits(stored[32:96], place) | third << 2
    return Reading(_half(stored, 108), q, offset=4, sub_block=sub)


def _scale_min_k4(scales: np.ndarray, index: int) -> tuple[int, int]:
    """llama.cpp's get_scale_min_k4: sub-block ``index``'s 6-bit scale and minimum packed in 12
    bytes: for sub-blocks 0-3 the low 6 bits of bytes 0-3 (scales) and 4-7 (minimums); for 4-7
    the halves of bytes 8-11 (scale low, minimum high) topped by the 2 high bits of bytes 0-7."""
    if index < 4:
        return int(scales[index]) & 63, int(scales[index + 4]) & 63
    packed = int(scales[index + 4])
    scale = (packed & 0x0F) | (int(scales[index - 4]) >> 6) << 4
    minimum = (packed >> 4) | (int(scales[index]) >> 6) << 4
    return scale, minimum


def _four_bits_k(codes: np.ndarray, place: int) -> int:
    """Q4_K's and Q5_K's low 4 bits of code ``place`` from qs[128]: sub-blocks 2j and 2j + 1
    share bytes 32j … 32j + 31, the even one in the low halves."""
    index = place // 32
    byte = int(codes[32 * (index // 2) + place % 32])
    return byte & 0x0F if index % 2 == 0 else byte >> 4


def _q4_k(stored: np.ndarray, place: int) -> Reading:  # d, dmin, scales[12], qs[128]
    index = place // 32
    scale, minimum = _scale_min_k4(stored[4:16], index)
    sub = SubBlock(index, 32, scale, 6, 0, minimum, _half(stored, 2))
    q = _four_bits_k(stored[16:144], place)
    return Reading(_half(stored, 0), q, sub_block=sub)


def _q5_k(stored: np.ndarray, place: int) -> Reading:  # d, dmin, scales[12], qh[32], qs[128]
    index = place // 32
    scale, minimum = _scale_min_k4(stored[4:16], index)
    sub = SubBlock(index, 32, scale, 6, 0, minimum, _half(stored, 2))
    fifth = (int(stored[16 + place % 32]) >> index) & 1  # bit j of qh[l]: code 32·j + l's 16
    q = _four_bits_k(stored[48:176], place) | fifth << 4
    return Reading(_half(stored, 0), q, sub_block=sub)


def _q6_k(stored: np.ndarray, place: int) -> Reading:  # ql[128], qh[64], scales[16] int8, d
    # Each half of 128 numbers has 64 bytes of ql and 32 of qh; its number 32·k + l takes the
    # low (k = 0, 1) or high (k = 2, 3) half of ql[l + 32·(k % 2)] and bits 2k, 2k + 1 of qh[l].
    half, within = divmod(place, 128)
    quarter, lane = divmod(within, 32)
    low_byte = int(stored[64 * half + lane + 32 * (quarter % 2)])
    low = (low_byte >> (4 * (quarter // 2))) & 0x0F
    high = (int(stored[128 + 32 * half + lane]) >> (2 * quarter)) & 3
    index = place // 16
    sub = SubBlock(index, 16, int(stored[192:208].view(np.int8)[index]), 8, 0, None, 0.0)
    q = low | high << 4
    return Reading(_half(stored, 208), q, offset=32, sub_block=sub)


#: Type -> (numbers per block, bytes per block, reader), as ggml-quants.h's block_* structs.
_LAYOUTS: dict[str, tuple[int, int, Callable[[np.ndarray, int], Reading]]] = {
    "Q8_0": (32, 34, _q8_0),
    "Q4_0": (32, 18, _q4_0),
    "Q4_1": (32, 20, _q4_1),
    "Q5_0": (32, 22, _q5_0),
    "Q5_1": (32, 24, _q5_1),
    "Q2_K": (256, 84, _q2_k),
    "Q3_K": (256, 110, _q3_k),
    "Q4_K": (256, 144, _q4_k),
    "Q5_K": (256, 176, _q5_k),
    "Q6_K": (256, 210, _q6_k),
}
#: The K-quants whose sub-blocks have a minimum as well as a scale.
_WITH_MINIMUM = ("Q2_K", "Q4_K", "Q5_K")
