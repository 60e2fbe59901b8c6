"""One weight of tiny_llama.gguf dequantized by hand, for each block type the lesson explains,
equal to the gguf package's dequantization, and the types described in words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")

from attnviz.model.sources.gguf_file import dequantize, read_gguf  # noqa: E402
from attnviz.model.sources.gguf_quant import (  # noqa: E402
    describe_type,
    rebuilt_from,
    worked_dequantization,
)

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


# -- every block type, from bytes packed as llama.cpp's quantize_row_*_ref packs them ----------
# Each test draws the numbers a block stores (codes, sub-block scales and minimums, float16 d and
# dmin), packs them into bytes the way ggml-quants.c's quantizers do (loops written from that
# code, independent of the reader under test), writes them as a GGUF tensor and checks that the
# worked example reads the same numbers back and the gguf package's dequantization agrees.

N_ROWS, N_COLUMNS = 3, 512  # 2 super-blocks of 256, or 16 blocks of 32, per row


@dataclass
class Drawn:
    """The numbers a tensor's blocks store, as drawn, by (row, column) or (row, block, sub)."""

    codes: np.ndarray  # [rows, columns] as stored (0 … 2^bits − 1; int8 for Q8_0)
    d: np.ndarray  # [rows, blocks] float16
    m: np.ndarray | None = None  # [rows, blocks] float16: Q4_1, Q5_1's m, a K-quant's dmin
    scales: np.ndarray | None = None  # [rows, blocks, subs] a K-quant's sc
    minimums: np.ndarray | None = None  # [rows, blocks, subs] a K-quant's mn


def halves(rng: np.random.Generator, shape: tuple[int, ...], low: float = -4) -> np.ndarray:
    """Float16 numbers of either sign and magnitudes from 10^low to 10^-1."""
    sign = rng.choice([-1.0, 1.0], shape)
    return (sign * 10 ** rng.uniform(low, -1, shape)).astype(np.float16)


def half_bytes(values: np.ndarray) -> list[int]:
    return list(np.array([values], np.float16).view(np.uint8))


def pack_legacy(type_name: str, drawn: Drawn) -> np.ndarray:
    """block_q8_0, q4_0, q4_1, q5_0, q5_1 (ggml-common.h): d, [m], [qh: 4 bytes], qs."""
    rows = []
    for r in range(N_ROWS):
        row: list[int] = []
        for b in range(N_COLUMNS // 32):
            codes = [int(c) for c in drawn.codes[r, 32 * b : 32 * b + 32]]
            row += half_bytes(drawn.d[r, b])
            if drawn.m is not None:
                row += half_bytes(drawn.m[r, b])
            if type_name == "Q8_0":
                row += [c & 0xFF for c in codes]
                continue
            if type_name in ("Q5_0", "Q5_1"):
                qh = sum(((c >> 4) & 1) << j for j, c in enumerate(codes))
                row += list(int(qh).to_bytes(4, "little"))
            row += [(codes[j] & 0x0F) | ((codes[j + 16] & 0x0F) << 4) for j in range(16)]
        rows.append(row)
    return np.array(rows, np.uint8)


def pack_k4_scales(scales: np.ndarray, minimums: np.ndarray) -> list[int]:
    """quantize_row_q4_K_ref's packing of 8 6-bit scales and minimums in 12 bytes."""
    packed = [0] * 12
    for j in range(8):
        ls, lm = int(scales[j]), int(minimums[j])
        if j < 4:
            packed[j] = ls
            packed[j + 4] = lm
        else:
            packed[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4)
            packed[j - 4] |= (ls >> 4) << 6
            packed[j] |= (lm >> 4) << 6
    return packed


def pack_k_block(type_name: str, drawn: Drawn, r: int, b: int) -> list[int]:
    """One super-block as quantize_row_q{2,3,4,5,6}_K_ref writes it."""
    codes = [int(c) for c in drawn.codes[r, 256 * b : 256 * b + 256]]
    d = half_bytes(drawn.d[r, b])
    assert drawn.scales is not None
    scales = drawn.scales[r, b]
    if type_name in ("Q2_K", "Q3_K"):
        qs = [0] * 64
        for n in range(0, 256, 128):
            for lane in range(32):
                qs[n // 4 + lane] = sum((codes[n + lane + 32 * k] & 3) << (2 * k) for k in range(4))
        if type_name == "Q2_K":
            assert drawn.m is not None and drawn.minimums is not None
            mins = drawn.minimums[r, b]
            packed = [int(scales[j]) | (int(mins[j]) << 4) for j in range(16)]
            return packed + qs + d + half_bytes(drawn.m[r, b])
        hmask = [0] * 32
        for j in range(256):
            if codes[j] > 3:
                hmask[j % 32] |= 1 << (j // 32)
        packed = [0] * 12
        for j in range(16):
            level = int(scales[j])
            if j < 8:
                packed[j] = level & 0xF
            else:
                packed[j - 8] |= (level & 0xF) << 4
            packed[j % 4 + 8] |= (level >> 4) << (2 * (j // 4))
        return hmask + qs + packed + d
    if type_name == "Q6_K":
        ql, qh = [0] * 128, [0] * 64
        for n in range(0, 256, 128):
            for lane in range(32):
                c = [codes[n + lane + 32 * k] for k in range(4)]
                ql[n // 2 + lane] = (c[0] & 0xF) | ((c[2] & 0xF) << 4)
                ql[n // 2 + lane + 32] = (c[1] & 0xF) | ((c[3] & 0xF) << 4)
                qh[n // 4 + lane] = sum((c[k] >> 4) << (2 * k) for k in range(4))
        return ql + qh + [int(s) & 0xFF for s in scales] + d
    assert drawn.m is not None and drawn.minimums is not None
    head = d + half_bytes(drawn.m[r, b]) + pack_k4_scales(scales, drawn.minimums[r, b])
    ql, qh = [0] * 128, [0] * 32
    for n in range(0, 256, 64):
        for lane in range(32):
            low, high = codes[n + lane], codes[n + lane + 32]
            qh[lane] |= ((low >> 4) << (n // 32)) | ((high >> 4) << (n // 32 + 1))
            ql[n // 2 + lane] = (low & 0xF) | ((high & 0xF) << 4)
    return head + (qh if type_name == "Q5_K" else []) + ql


#: Type -> (bits of a code, numbers per sub-block, bits of a sub-block's scale; 0: no sub-blocks).
K_TYPES = {"Q2_K": (2, 16, 4), "Q3_K": (3, 16, 6), "Q4_K": (4, 32, 6), "Q5_K": (5, 32, 6)}
K_TYPES["Q6_K"] = (6, 16, 8)
LEGACY_BITS = {"Q8_0": 8, "Q4_0": 4, "Q4_1": 4, "Q5_0": 5, "Q5_1": 5}
ALL_TYPES = [*LEGACY_BITS, *K_TYPES]


def draw(type_name: str, seed: int) -> Drawn:
    rng = np.random.default_rng(seed)
    if type_name in LEGACY_BITS:
        bits, blocks = LEGACY_BITS[type_name], N_COLUMNS // 32
        low = -128 if type_name == "Q8_0" else 0
        codes = rng.integers(low, low + 2**bits, (N_ROWS, N_COLUMNS))
        m = halves(rng, (N_ROWS, blocks)) if type_name in ("Q4_1", "Q5_1") else None
        return Drawn(codes, halves(rng, (N_ROWS, blocks)), m)
    bits, size, scale_bits = K_TYPES[type_name]
    blocks, subs = N_COLUMNS // 256, 256 // size
    codes = rng.integers(0, 2**bits, (N_ROWS, N_COLUMNS))
    if type_name == "Q6_K":
        scales = rng.integers(-128, 128, (N_ROWS, blocks, subs))
    else:
        scales = rng.integers(0, 2**scale_bits, (N_ROWS, blocks, subs))
    drawn = Drawn(codes, halves(rng, (N_ROWS, blocks), -6), scales=scales)
    if type_name in ("Q2_K", "Q4_K", "Q5_K"):  # dmin: positive in llama.cpp's files, any here
        drawn.m = halves(rng, (N_ROWS, blocks), -6)
        drawn.minimums = rng.integers(0, 2**scale_bits, (N_ROWS, blocks, subs))
    return drawn


def pack(type_name: str, drawn: Drawn) -> np.ndarray:
    if type_name in LEGACY_BITS:
        return pack_legacy(type_name, drawn)
    return np.array(
        [
            [byte for b in range(N_COLUMNS // 256) for byte in pack_k_block(type_name, drawn, r, b)]
            for r in range(N_ROWS)
        ],
        np.uint8,
    )


def written(tmp_path: Path, type_name: str, raw: np.ndarray) -> Path:
    """A GGUF file holding ``raw`` as tensor "weights" of ``type_name``, as llama.cpp writes."""
    from gguf import GGMLQuantizationType, GGUFWriter

    path = tmp_path / f"{type_name}.gguf"
    writer = GGUFWriter(path, "llama")
    writer.add_tensor("weights", raw, raw_dtype=GGMLQuantizationType[type_name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def by_hand(formula: str) -> tuple[Fraction, Decimal]:
    """The value of a formula's numbers computed exactly, and the value it shows after "≈"."""
    numbers, shown = formula.split(" = ")[-1].split(" ≈ ")
    assert re.fullmatch(r"[-−+×() 0-9.e]+", numbers), numbers
    expression = re.sub(
        r"\d+(?:\.\d+)?(?:e-?\d+)?",
        lambda number: f"Fraction('{number[0]}')",
        numbers.replace("×", "*").replace("−", "-"),
    )
    value = eval(expression, {"__builtins__": {}, "Fraction": Fraction})  # noqa: S307
    return value, Decimal(shown)


def holds_at_its_digits(formula: str, weight: float) -> None:
    """The formula's numbers give the value it shows to its last digit, and that value is the
    float32 weight to within one unit of that digit."""
    value, shown = by_hand(formula)
    unit = Decimal(1).scaleb(shown.as_tuple().exponent)  # type: ignore[arg-type]
    assert abs(Decimal(value.numerator) / Decimal(value.denominator) - shown) <= unit / 2, formula
    assert abs(Decimal(weight) - shown) <= unit, (formula, weight)
    assert np.float32(float(value)) == np.float32(weight), formula


#: (row, column): first and last numbers of blocks and sub-blocks, the last sub-block of each
#: super-block, and a few inside.
PLACES = [(0, 0), (0, 15), (0, 16), (0, 31), (1, 32), (1, 100), (1, 255), (2, 256), (2, 300)]
PLACES += [(2, 480), (2, 496), (2, 511), (0, 383), (1, 447)]


@pytest.mark.parametrize("type_name", ALL_TYPES)
def test_every_type_reads_the_numbers_it_was_packed_from(tmp_path: Path, type_name: str) -> None:
    import gguf

    drawn = draw(type_name, seed=ALL_TYPES.index(type_name))
    raw = pack(type_name, drawn)
    qtype = gguf.GGMLQuantizationType[type_name]
    assert (
        raw.shape[1] * gguf.GGML_QUANT_SIZES[qtype][0]
        == N_COLUMNS * gguf.GGML_QUANT_SIZES[qtype][1]
    )
    reference = gguf.quants.dequantize(raw, qtype)  # the gguf package, not attnviz
    file = read_gguf(written(tmp_path, type_name, raw))
    for row, column in PLACES:
        worked = worked_dequantization(file, "weights", row, column)
        block_size = 32 if type_name in LEGACY_BITS else 256
        block = column // block_size
        assert (worked.type_name, worked.block, worked.block_size) == (type_name, block, block_size)
        assert worked.q == drawn.codes[row, column]
        assert worked.d == float(drawn.d[row, block])
        assert worked.weight == reference[row, column]
        sub = worked.sub_block
        if type_name in LEGACY_BITS:
            assert sub is None
            assert worked.m == (0.0 if drawn.m is None else float(drawn.m[row, block]))
        else:
            assert sub is not None and drawn.scales is not None
            index = (column % 256) // K_TYPES[type_name][1]
            assert (sub.index, sub.size) == (index, K_TYPES[type_name][1])
            assert sub.scale == drawn.scales[row, block, index]
            if drawn.minimums is None:
                assert sub.minimum is None and sub.dmin == 0
            else:
                assert drawn.m is not None
                assert sub.minimum == drawn.minimums[row, block, index]
                assert sub.dmin == float(drawn.m[row, block])
        holds_at_its_digits(worked.formula, worked.weight)


@pytest.mark.slow
@pytest.mark.parametrize("type_name", ALL_TYPES)
def test_every_weight_of_a_row_equals_the_gguf_package(tmp_path: Path, type_name: str) -> None:
    import gguf

    raw = pack(type_name, draw(type_name, seed=22))
    reference = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[type_name])
    file = read_gguf(written(tmp_path, type_name, raw))
    for column in range(N_COLUMNS):
        assert worked_dequantization(file, "weights", 1, column).weight == reference[1, column]


@pytest.mark.parametrize(
    ("type_name", "symbols", "numbers"),
    [
        ("Q5_0", "w = d·q = ", r"{d} × \({q} − 16\)"),
        ("Q5_1", "w = d·q + m = ", r"{d} × {q} [+−] [0-9.e-]+"),
        ("Q2_K", "w = d·sc·q − dmin·mn = ", r"{d} × {sc} × {q} − \(?{dmin}\)? × {mn}"),
        ("Q3_K", "w = d·(sc − 32)·(q − 4) = ", r"{d} × \({sc} − 32\) × \({q} − 4\)"),
        ("Q4_K", "w = d·sc·q − dmin·mn = ", r"{d} × {sc} × {q} − \(?{dmin}\)? × {mn}"),
        ("Q5_K", "w = d·sc·q − dmin·mn = ", r"{d} × {sc} × {q} − \(?{dmin}\)? × {mn}"),
        ("Q6_K", "w = d·sc·(q − 32) = ", r"{d} × \(?{sc}\)? × \({q} − 32\)"),
    ],
)
def test_the_formula_names_the_stored_numbers(
    tmp_path: Path, type_name: str, symbols: str, numbers: str
) -> None:
    raw = pack(type_name, draw(type_name, seed=5))
    file = read_gguf(written(tmp_path, type_name, raw))
    worked = worked_dequantization(file, "weights", 2, 509)
    sub = worked.sub_block
    values = {"d": re.escape(repr(worked.d)), "q": worked.q}
    if sub is not None:
        values |= {"sc": sub.scale, "mn": sub.minimum, "dmin": re.escape(repr(sub.dmin))}
    assert worked.formula.startswith(symbols), worked.formula
    assert re.fullmatch(
        re.escape(symbols) + numbers.format(**values) + r" ≈ -?[0-9.e-]+", worked.formula
    ), worked.formula
    if sub is not None:
        assert (sub.index, worked.block) == (509 % 256 // sub.size, 1)
        assert worked.stored_as.startswith(
            f"code q = {worked.q} of sub-block {sub.index + 1} ({sub.size} numbers) of "
            f"super-block 2 of its row, with the sub-block's {sub.scale_bits}-bit scale "
            f"sc = {sub.scale}"
        )
        assert f"the super-block's d = {worked.d!r}" in worked.stored_as
        if sub.minimum is not None:
            assert f"minimum mn = {sub.minimum}" in worked.stored_as
            assert worked.stored_as.endswith(f"dmin = {sub.dmin!r}")


def test_the_descriptions_agree_with_the_layouts() -> None:
    for type_name, (bits, size, scale_bits) in K_TYPES.items():
        words = describe_type(type_name)
        assert words.startswith(f"{bits}-bit {type_name}, super-blocks of 256 numbers in ")
        assert f"{256 // size} sub-blocks of {size}, each with a" in words
        assert f"{scale_bits}-bit scale" in words
        assert words.endswith("and minimum") == (type_name in ("Q2_K", "Q4_K", "Q5_K"))
    for type_name, bits in LEGACY_BITS.items():
        assert describe_type(type_name).startswith(f"{bits}-bit {type_name}, blocks of 32 ")
    assert rebuilt_from("Q4_1") == "its small integer code q and its block's numbers"
    assert rebuilt_from("Q6_K") == (
        "its small integer code q, its sub-block's integer scale and its super-block's float16 d"
    )
    assert rebuilt_from("Q4_K").endswith(
        "scale and minimum and its super-block's float16 d and dmin"
    )
