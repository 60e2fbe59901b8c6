"""A GGUF file (llama.cpp's format) read and checked before anything large is allocated.

GGUF v2/v3, little-endian: the magic "GGUF", a version, the number of tensors and of metadata
entries, the metadata (key, type, value; arrays of numbers or strings), then one record per
tensor (name, dimensions, type, offset), and the tensors' bytes from the next multiple of
``general.alignment`` (32 by default). Every count and size is checked against what is left of
the file before it is used, so a truncated file, one that lies about its sizes or one holding
absurd counts gets one FileProblem naming it, never a huge allocation or an endless loop.

The header is parsed here rather than by ``gguf.GGUFReader``, which builds a Python object for
every string of the vocabulary (3 s for SmolLM2's 98,000 tokens and merges, against 0.1 s here);
the gguf package names the types and dequantizes every type but the three commonest block types
(Q8_0, Q4_0, Q4_1: done here by the same arithmetic, faster; see ``dequantize``).
"""

from __future__ import annotations

import errno
import itertools
import math
import mmap
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.errors import AttnvizError, FileProblem
from attnviz.files import human_size, open_regular
from attnviz.model.sources.gguf_keys import Metadata, setting

#: How to get the gguf package, an optional dependency of --model FILE.gguf.
INSTALL_GGUF = "pip install '.[model]' in attnviz's checkout (or pip install gguf)"
MAGIC = b"GGUF"
#: Far above any real file (SmolLM2: 33 entries, 272 tensors; the largest models: a few
#: thousand tensors; Gemma's vocabulary: 262,144 tokens), far below what would exhaust memory.
MAX_ENTRIES = 100_000
MAX_TENSORS = 1_000_000
MAX_ARRAY = 16_000_000
MAX_STRING = 64_000_000
MAX_NAME = 256  # ggml names hold 63 bytes; llama.cpp refuses longer ones
MAX_DIMS = 4  # GGML_MAX_DIMS

#: The metadata value types of GGUF: id -> (name, struct format; "" for strings and arrays).
VALUE_TYPES = {
    0: ("uint8", "<B"),
    1: ("int8", "<b"),
    2: ("uint16", "<H"),
    3: ("int16", "<h"),
    4: ("uint32", "<I"),
    5: ("int32", "<i"),
    6: ("float32", "<f"),
    7: ("bool", "<?"),
    8: ("string", ""),
    9: ("array", ""),
    10: ("uint64", "<Q"),
    11: ("int64", "<q"),
    12: ("float64", "<d"),
}
STRING, ARRAY = 8, 9


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the file: its shape in numpy's order (ggml lists dimensions innermost
    first, so a torch Linear's [out, in] is stored as ne = [in, out] and read back [out, in])."""

    name: str
    shape: tuple[int, ...]
    type_id: int  # a gguf.GGMLQuantizationType value
    start: int  # where its bytes begin, from the start of the file
    n_bytes: int

    @property
    def type_name(self) -> str:
        return ggml_type_name(self.type_id)


@dataclass(frozen=True)
class GgufFile:
    """The header of a GGUF file, checked: its metadata and its tensors' places. The tensors'
    bytes stay in the file, memory-mapped, until ``raw`` or ``dequantize`` asks for one."""

    path: Path
    version: int
    metadata: dict[str, Any]
    tensors: dict[str, TensorInfo]
    data: Any  # the file, memory-mapped read-only (an mmap.mmap)

    def raw(self, name: str) -> np.ndarray:
        """Tensor ``name``'s bytes as stored, a read-only view of the mapped file.
        -> [rows…, bytes per row] (uint8)"""
        info = self.tensors[name]
        flat = np.frombuffer(self.data, np.uint8, info.n_bytes, info.start)
        return flat.reshape(*info.shape[:-1], -1)


def ggml_type_name(type_id: int) -> str:
    """The name llama.cpp gives a tensor type ("Q4_1"), or "type N" for one gguf does not know."""
    from gguf import GGMLQuantizationType

    try:
        return GGMLQuantizationType(type_id).name
    except ValueError:
        return f"type {type_id}"


def read_gguf(path: Path) -> GgufFile:
    """The file at ``path``, its header parsed and checked (see the module's docstring)."""
    try:
        import gguf  # noqa: F401  (the types and the dequantization come from it)
    except ImportError:
        raise AttnvizError(f"Reading {path.name} needs the gguf package: {INSTALL_GGUF}.") from None
    with open_regular(path, "Model") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise FileProblem(
                f"{path} is empty or cannot be mapped (it holds 0 bytes); it is not a GGUF file."
            )
        try:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as error:
            raise FileProblem(_unmappable(path, size, error)) from None
    header = _Header(path, data)
    return header.parse()


def _unmappable(path: Path, size: int, error: Exception) -> str:
    """Why ``path`` could not be mapped into memory, in one sentence: a file larger than the
    address space the process may use (ulimit -v), or what the system said."""
    if getattr(error, "errno", None) == errno.ENOMEM:
        return (
            f"{path} ({human_size(size)}) cannot be mapped into memory: this process may not use "
            "that much address space (a memory limit such as ulimit -v); raise the limit, or use "
            "a smaller model file."
        )
    return f"{path} cannot be mapped into memory ({error}); it is not a GGUF file attnviz can read."


class _Header:
    """Reads the header left to right, each value checked to fit in what is left of the file."""

    def __init__(self, path: Path, data: Any) -> None:
        self.path = path
        self.data = data
        self.size = len(data)
        self.at = 0

    def problem(self, what: str) -> FileProblem:
        return FileProblem(
            f"{self.path}: {what}; the file is damaged or not a GGUF file: get a fresh copy "
            "(llama.cpp, Ollama and Hugging Face write GGUF v2 or v3)."
        )

    def need(self, n_bytes: int, what: str) -> None:
        if n_bytes > self.size - self.at:
            raise self.problem(
                f"{what} needs {human_size(n_bytes)} at byte {self.at:,}, past the end of the "
                f"file ({human_size(self.size)}: truncated?)"
            )

    def number(self, fmt: str, what: str) -> Any:
        width = struct.calcsize(fmt)
        self.need(width, what)
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += width
        return value

    def count(self, what: str, limit: int, each: int) -> int:
        """A u64 count of things of at least ``each`` bytes: at most ``limit`` and no more than
        the rest of the file can hold."""
        value = int(self.number("<Q", what))
        if value > limit or value * each > self.size - self.at:
            raise self.problem(
                f"it claims {value:,} {what}, more than the rest of the file could hold "
                f"(at most {min(limit, (self.size - self.at) // each):,})"
            )
        return value

    def string(self, what: str, limit: int = MAX_STRING) -> str:
        length = self.count(f"bytes in {what}", limit, 1)
        raw = self.data[self.at : self.at + length]
        self.at += length
        try:
            return str(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise self.problem(f"{what} is not UTF-8 text") from None

    def parse(self) -> GgufFile:
        self.need(4, "the magic number")
        magic = self.data[:4]
        if magic != MAGIC:
            raise FileProblem(
                f"{self.path} does not start with GGUF (it starts with {bytes(magic)!r}); "
                "give a .gguf model file or a checkpoint folder."
            )
        self.at = 4
        version = int(self.number("<I", "the version"))
        if version not in (2, 3):
            swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
            kind = "big-endian GGUF" if swapped in (2, 3) else f"GGUF version {version}"
            raise FileProblem(
                f"{self.path} is {kind}; attnviz reads little-endian GGUF v2 and v3, as "
                "llama.cpp writes them today: convert it again with a current llama.cpp."
            )
        n_tensors = self.count("tensors", MAX_TENSORS, 24)
        n_entries = self.count("metadata entries", MAX_ENTRIES, 13)
        metadata: dict[str, Any] = {}
        for index in range(n_entries):
            key = self.string("a metadata key", MAX_NAME)
            if not key or key in metadata:  # llama.cpp refuses both: which value would count?
                what = "an empty key" if not key else f"the key {key!r}, given twice"
                raise self.problem(f"metadata entry {index + 1} has {what}")
            metadata[key] = self.value(int(self.number("<I", f"the type of {key}")), key)
        infos = [self.tensor_record() for _ in range(n_tensors)]
        tensors = self.place(infos, metadata)
        return GgufFile(self.path, version, metadata, tensors, self.data)

    def value(self, type_id: int, key: str) -> Any:
        if type_id not in VALUE_TYPES:
            raise self.problem(f"{key} has value type {type_id}, which GGUF does not define")
        if type_id == STRING:
            return self.string(key)
        if type_id != ARRAY:
            return self.number(VALUE_TYPES[type_id][1], key)
        item_type = int(self.number("<I", f"the item type of {key}"))
        if item_type not in VALUE_TYPES or item_type == ARRAY:
            raise self.problem(f"{key} is an array of type {item_type}, which attnviz cannot read")
        if item_type == STRING:
            return self.strings(key)
        fmt = VALUE_TYPES[item_type][1]
        n_items = self.count(f"items in {key}", MAX_ARRAY, struct.calcsize(fmt))
        items = np.frombuffer(self.data, np.dtype(fmt), n_items, self.at).copy()
        self.at += items.nbytes
        return items

    def strings(self, key: str) -> list[str]:
        """An array of strings: a vocabulary's 50,000 tokens and merges, read in one tight loop
        (a method call per string would double the time of reading the file)."""
        n_items = self.count(f"strings in {key}", MAX_ARRAY, 8)
        data, at, end = self.data, self.at, self.size
        length_at = struct.Struct("<Q").unpack_from
        pieces = []
        for index in range(n_items):
            if end - at < 8:
                self.at = at
                self.need(8, f"the length of item {index} of {key}")
            (length,) = length_at(data, at)
            at += 8
            if length > end - at:
                self.at = at
                self.need(length, f"item {index} of {key}")
            pieces.append(data[at : at + length])
            at += length
        self.at = at
        try:
            return [piece.decode("utf-8") for piece in pieces]
        except UnicodeDecodeError:
            index = next(i for i, piece in enumerate(pieces) if not _is_utf8(piece))
            raise self.problem(f"item {index} of {key} is not UTF-8 text") from None

    def tensor_record(self) -> tuple[str, tuple[int, ...], int, int]:
        name = self.string("a tensor name", MAX_NAME)
        n_dims = int(self.number("<I", f"the number of dimensions of {name}"))
        if not 1 <= n_dims <= MAX_DIMS:
            raise self.problem(f"tensor {name} has {n_dims} dimensions (ggml allows 1 to 4)")
        dims = [int(self.number("<Q", f"the dimensions of {name}")) for _ in range(n_dims)]
        if min(dims) < 1 or math.prod(dims) > 2**48:
            raise self.problem(f"tensor {name} has dimensions {dims}")
        type_id = int(self.number("<I", f"the type of {name}"))
        offset = int(self.number("<Q", f"the offset of {name}"))
        return name, tuple(reversed(dims)), type_id, offset

    def place(
        self, infos: list[tuple[str, tuple[int, ...], int, int]], metadata: dict[str, Any]
    ) -> dict[str, TensorInfo]:
        """Each tensor's bytes: a whole number of its type's blocks per row, aligned, and inside
        the file."""
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

        alignment = setting(Metadata(self.path, metadata), "general.alignment", 32)
        if alignment & (alignment - 1):
            raise self.problem(f"general.alignment is {alignment!r}, not a power of two")
        data_start = -(-self.at // alignment) * alignment
        tensors: dict[str, TensorInfo] = {}
        for name, shape, type_id, offset in infos:
            if name in tensors:
                raise self.problem(f"tensor {name} is listed twice")
            try:
                block, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(type_id)]
            except (ValueError, KeyError):
                raise FileProblem(
                    f"{self.path}: tensor {name} has type {type_id}, which the gguf package "
                    "does not know; update it (pip install -U gguf) or use another file."
                ) from None
            if shape[-1] % block:
                raise self.problem(
                    f"tensor {name}'s rows of {shape[-1]} numbers are not whole blocks of {block}"
                )
            n_bytes = math.prod(shape[:-1]) * (shape[-1] // block) * block_bytes
            start = data_start + offset
            if offset % alignment or start + n_bytes > self.size:
                raise self.problem(
                    f"tensor {name} ({human_size(n_bytes)} at offset {offset:,}) lies outside "
                    f"the file's {human_size(self.size)} or off its {alignment}-byte alignment"
                )
            tensors[name] = TensorInfo(name, shape, type_id, start, n_bytes)
        self.apart(tensors.values())
        return tensors

    def apart(self, tensors: Iterable[TensorInfo]) -> None:
        """Each byte belongs to one tensor at most, as llama.cpp writes them (and as the
        safetensors reader requires): records that share bytes would each read another's
        numbers as their own, and a file of a few kilobytes could claim 100,000 layers of them."""
        by_start = sorted(tensors, key=lambda info: (info.start, info.name))
        for first, second in itertools.pairwise(by_start):
            if second.start < first.start + first.n_bytes:
                raise self.problem(
                    f"tensors {first.name} and {second.name} share bytes (from byte "
                    f"{second.start:,}); each tensor needs its own"
                )


def _is_utf8(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def dequantize(
    file: GgufFile, name: str, rows: np.ndarray | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Tensor ``name`` as float32 numbers, dequantized by the gguf package, or for Q8_0, Q4_0
    and Q4_1 by the same arithmetic in fewer numpy passes (only ``rows`` of its first axis, in
    that order, if given). ``out``: a C-contiguous float32 array of that shape to write them
    in (a slice of a layer's stacked weights: no copy afterwards), returned.
    -> [rows…, columns]"""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize as gguf_dequantize

    info = file.tensors[name]
    raw = file.raw(name)
    if rows is not None:
        raw = raw[rows]
    qtype = GGMLQuantizationType(info.type_id)
    if qtype.name not in SUPPORTED_TYPES:
        raise FileProblem(
            f"{file.path}: {name} is stored as {qtype.name}, which attnviz does not dequantize; "
            f"it reads {', '.join(SUPPORTED_TYPES)} (use a file quantized to one of them)."
        )
    shape = (*raw.shape[:-1], info.shape[-1])
    fast = _FAST.get(qtype.name)
    try:
        # A damaged scale (a float16 infinity or NaN) gives numbers that are not finite: the
        # caller names the tensor that holds them (GgufTensors), so numpy need not warn.
        with np.errstate(all="ignore"):
            if fast is not None:
                target = np.empty(shape, np.float32) if out is None else out
                if not target.flags.c_contiguous:  # reshape would copy: nothing written
                    raise ValueError("dequantize writes into a C-contiguous array only")
                fast(raw, target.reshape(-1, BLOCK))
                return target
            numbers = gguf_dequantize(np.ascontiguousarray(raw), qtype)
    except NotImplementedError:
        raise FileProblem(
            f"{file.path}: {name} is stored as {qtype.name}, which this gguf package cannot "
            "dequantize; update it (pip install -U gguf) or use another file."
        ) from None
    numbers = np.asarray(numbers, dtype=np.float32).reshape(shape)
    if out is None:
        return numbers
    out[...] = numbers
    return out


#: The tensor types attnviz dequantizes: floats, the legacy block types and the K-quants.
SUPPORTED_TYPES = (
    "F32",
    "F16",
    "BF16",
    "Q4_0",
    "Q4_1",
    "Q5_0",
    "Q5_1",
    "Q8_0",
    "Q2_K",
    "Q3_K",
    "Q4_K",
    "Q5_K",
    "Q6_K",
)


# -- the legacy block types, dequantized in place ----------------------------------------------
# The gguf package's functions split, shift and concatenate in several temporary arrays; these do
# the same float32 arithmetic in the output array itself, about twice as fast (all 30 layers of
# SmolLM2: 0.47 s against 1.05 s, measured side by side), and give the same numbers bit for bit
# (tests/model/test_gguf_file.py, test_gguf_smollm2.py): w = d·q + m is rounded after the
# product and after the sum, as ggml's C code rounds it.

#: The numbers in each block of the legacy types.
BLOCK = 32


def _scales(blocks: np.ndarray, start: int) -> np.ndarray:
    """The float16 at bytes start, start + 1 of each block, as float32. -> [blocks, 1]"""
    return blocks[:, start : start + 2].copy().view(np.float16).astype(np.float32)


def _codes_4bit(packed: np.ndarray, numbers: np.ndarray) -> None:
    """32 codes of 4 bits from each block's 16 bytes into ``numbers`` [blocks, 32] float32:
    byte j holds code j in its low half and code j + 16 in its high half. [blocks, 16]"""
    codes = np.empty((packed.shape[0], BLOCK), np.uint8)
    np.bitwise_and(packed, 0x0F, out=codes[:, :16])
    np.right_shift(packed, 4, out=codes[:, 16:])
    np.copyto(numbers, codes, casting="safe")  # 0 … 15, exact in float32


def _q8_0(raw: np.ndarray, numbers: np.ndarray) -> None:
    """w = d·q, q an int8, d a float16 per block of 32 (34 bytes). -> numbers [blocks, 32]"""
    blocks = raw.reshape(-1, 34)
    np.copyto(numbers, blocks[:, 2:].view(np.int8), casting="safe")
    numbers *= _scales(blocks, 0)


def _q4_0(raw: np.ndarray, numbers: np.ndarray) -> None:
    """w = d·(q − 8), q from 0 to 15, d a float16 per block of 32 (18 bytes)."""
    blocks = raw.reshape(-1, 18)
    _codes_4bit(blocks[:, 2:], numbers)
    numbers -= np.float32(8)
    numbers *= _scales(blocks, 0)


def _q4_1(raw: np.ndarray, numbers: np.ndarray) -> None:
    """w = d·q + m, q from 0 to 15, d and m float16 per block of 32 (20 bytes)."""
    blocks = raw.reshape(-1, 20)
    _codes_4bit(blocks[:, 4:], numbers)
    numbers *= _scales(blocks, 0)
    numbers += _scales(blocks, 2)


_FAST = {"Q8_0": _q8_0, "Q4_0": _q4_0, "Q4_1": _q4_1}
