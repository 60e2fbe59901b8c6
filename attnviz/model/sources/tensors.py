"""model.safetensors read through ``Tensors``: each tensor by the name an architecture maps
explicitly, its shape checked, converted to one dtype (bfloat16 and float16 exactly), read-only,
its numbers checked finite.

The file is read here, not by the safetensors library, which maps the whole file into memory:
an 8-byte length, a JSON header of that length naming each tensor's type, shape and byte range,
then the bytes. Every entry of the header is checked against the file's size before anything
is read, and only the bytes asked for are read: the rows of the sentence's tokens and of its
positions, never a whole embedding table (a table that claims 2²⁷ positions costs 4 rows)."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import FileProblem, option
from attnviz.files import human_size, open_regular, present

#: How to get the optional extra that --model needs.
#: attnviz is installed from its checkout, where `pip install 'attnviz[model]'` finds nothing.
INSTALL_EXTRA = "pip install '.[model]' in attnviz's checkout (safetensors, tokenizers, gguf)"
#: The tensor types attnviz reads, as safetensors names them, and how numpy reads their bytes:
#: a bfloat16 is read as its 16 bits and converted (see ``_bfloat16``). Integer types are
#: quantized checkpoints, refused by name.
FLOAT_TYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "BF16": "<u2"}
#: The types of FLOAT_TYPES, in words, for the messages that refuse the others.
READ_TYPES = "F16, BF16, F32 or F64 numbers (float16, bfloat16, float32, float64)"
#: What the other types safetensors defines are, for the message that refuses them.
TYPE_NAMES = {
    "F8_E4M3": " (8-bit floats)",
    "F8_E5M2": " (8-bit floats)",
    "F8_E8M0": " (8-bit scales)",
    "BOOL": " (true or false)",
    "C64": " (complex numbers)",
    **{f"{kind}{bits}": " (whole numbers)" for kind in "IU" for bits in (8, 16, 32, 64)},
}
#: Bytes per number of every type safetensors defines, to check each tensor's byte range.
TYPE_SIZES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8, "C64": 8,
}  # fmt: skip
#: A real header is a few hundred kB (some 300 bytes a tensor; the largest single files hold a
#: few thousand tensors). Parsed, a header costs about ten times its size: 16 MB is ample, and
#: the safetensors library's own limit, 100 MB, would cost a gigabyte.
HEADER_MAX_BYTES = 16_000_000


class Stored(NamedTuple):
    """One tensor as the header describes it: its type, shape and where its bytes are."""

    dtype: str  # "F32", "BF16", …
    shape: tuple[int, ...]
    start: int  # from the start of the file
    n_bytes: int


class Tensors:
    """The tensors of model.safetensors, read by name with their shapes checked, in one dtype
    and read-only (a trace shares them without copying). ``prefix`` is the one the checkpoint
    puts before every name, if any ("bert.", "transformer.")."""

    def __init__(
        self, handle: BinaryIO, header: Mapping[str, Stored], path: Path, dtype: type, prefix: str
    ) -> None:
        self.handle = handle
        self.header = header
        self.path = path
        self.dtype = dtype
        self.prefix = prefix
        self.names = frozenset(header)
        # What reading may take: each tensor is refused before it is allocated when it would
        # not fit (a sparse file can claim gigabytes it does not hold on disk).
        self.budget = memory_available()
        self.taken = 0

    def __contains__(self, name: str) -> bool:
        return self.prefix + name in self.names

    def get(self, name: str, shape: tuple[int, ...]) -> FloatArray:
        """Tensor ``name`` (without the prefix), which must have ``shape``."""
        full = self._stored(name)
        self._require_shape(full, shape, "config.json implies")
        return self._frozen(full, self._read(full))

    def linear(self, name: str, n_in: int, n_out: int) -> tuple[FloatArray, FloatArray]:
        """A torch Linear layer ``name``: W [in, out] (stored [out, in], transposed so that the
        product reads x·W) and b [out]."""
        weight = self.get(f"{name}.weight", (n_out, n_in)).T
        return weight, self.get(f"{name}.bias", (n_out,))

    def conv1d(self, name: str, n_in: int, n_out: int) -> tuple[FloatArray, FloatArray]:
        """A GPT-2 Conv1D layer ``name``: W [in, out], as it is stored, and b [out]."""
        return self.get(f"{name}.weight", (n_in, n_out)), self.get(f"{name}.bias", (n_out,))

    def norm(self, name: str, width: int) -> tuple[FloatArray, FloatArray]:
        """A LayerNorm ``name``: γ and β [width]."""
        return self.get(f"{name}.weight", (width,)), self.get(f"{name}.bias", (width,))

    def rows(
        self, name: str, ids: Sequence[int], width: int, *, rows_are: str = "vocabulary"
    ) -> FloatArray:
        """Rows ``ids`` of an embedding table [rows_are, width], read without reading the
        whole table."""
        full = self._stored(name)
        shape = list(self.header[full].shape)
        if len(shape) != 2 or shape[1] != width or shape[0] == 0:
            raise FileProblem(
                f"{self.path}: {full} has shape {shape}, expected [{rows_are}, {width}] with at "
                "least one row."
            )
        outside = [i for i in ids if not 0 <= i < shape[0]]
        if outside:
            raise FileProblem(
                f"{self.path}: the tokenizer gave id {outside[0]}, outside {full}'s {shape[0]} "
                "rows; the tokenizer and the weights are not of the same model."
            )
        return self._frozen(full, self._read(full, ids), ids)

    def leading_rows(self, name: str, count: int, shape: tuple[int, int]) -> FloatArray:
        """Rows 0 … count − 1 of table ``name``, which must have ``shape``: the positions a
        sentence of ``count`` tokens uses of a position table [max_positions, d_model]."""
        full = self._stored(name)
        self._require_shape(full, shape, "config.json implies")
        if not 0 < count <= shape[0]:
            raise FileProblem(
                f"{self.path}: {full} has {shape[0]} rows; the sentence needs {count}."
            )
        return self._frozen(full, self._read(full, range(count)))

    def row_count(self, name: str) -> int:
        """How many rows table ``name`` has, read from the header alone."""
        shape = self.header[self._stored(name)].shape
        return shape[0] if shape else 0

    def _require_shape(self, full: str, shape: tuple[int, ...], implied: str) -> None:
        stored = self.header[full].shape
        if stored != tuple(shape):
            raise FileProblem(
                f"{self.path}: {full} has shape {list(stored)}, {implied} {list(shape)}."
            )

    def _stored(self, name: str) -> str:
        """The full name of tensor ``name``, which must be there and hold floating-point numbers."""
        full = self.prefix + name
        if full not in self.names:
            raise FileProblem(f"{self.path} lacks {full}; it is not a complete checkpoint.")
        stored_type = self.header[full].dtype
        if stored_type not in FLOAT_TYPES:
            raise FileProblem(
                f"{self.path}: {full} is stored as {stored_type}{TYPE_NAMES[stored_type]}, which "
                f"attnviz does not read; it reads checkpoints of {READ_TYPES} (not quantized "
                "ones): use a copy saved in one of them."
            )
        return full

    def _read(self, full: str, rows: Sequence[int] | None = None) -> np.ndarray:
        """Tensor ``full``'s numbers as stored (float32 for bfloat16, see ``_bfloat16``), or only
        ``rows`` of its first axis, read from the file and nothing more."""
        stored = self.header[full]
        numbers = np.dtype(FLOAT_TYPES[stored.dtype])
        count = math.prod(stored.shape) if rows is None else len(rows) * math.prod(stored.shape[1:])
        self._reserve(full, count, numbers)
        if rows is None:
            values = self._bytes(stored.start, stored.n_bytes, numbers).reshape(stored.shape)
        else:
            width = math.prod(stored.shape[1:])
            row_bytes = width * numbers.itemsize
            values = np.empty((len(rows), width), numbers)
            for index, row in enumerate(rows):
                values[index] = self._bytes(stored.start + row * row_bytes, row_bytes, numbers)
            values = values.reshape(len(rows), *stored.shape[1:])
        return _bfloat16(values) if stored.dtype == "BF16" else values

    def _reserve(self, full: str, count: int, numbers: np.dtype[Any]) -> None:
        """FileProblem, before anything is allocated, when ``count`` numbers of tensor ``full``
        (read as ``numbers``, kept in the dtype asked for) would not fit in the memory left."""
        kept = count * np.dtype(self.dtype).itemsize
        needed = kept + (0 if numbers == np.dtype(self.dtype) else count * numbers.itemsize)
        if self.budget is not None and self.taken + needed > self.budget:
            smaller = f", or use {option('dtype', 'float32')}" if self.dtype is np.float64 else ""
            raise FileProblem(
                f"{self.path}: {full} needs {human_size(needed)} of memory after the "
                f"{human_size(self.taken)} of weights read before it, and only "
                f"{human_size(self.budget)} is free (available memory and swap, or the "
                f"process's memory limit); free some memory, use a smaller model{smaller}."
            )
        self.taken += kept

    def _bytes(self, start: int, n_bytes: int, numbers: np.dtype[Any]) -> np.ndarray:
        """``n_bytes`` of the file from ``start``, as ``numbers``: read into a fresh array."""
        values = np.empty(n_bytes // numbers.itemsize, numbers)
        self.handle.seek(start)
        try:
            got = self.handle.readinto(values.view(np.uint8))  # type: ignore[attr-defined]
        except OSError as error:
            raise FileProblem(f"Cannot read {self.path}: {error.strerror or error}.") from None
        if got != n_bytes:
            raise FileProblem(
                f"{self.path} ends before the bytes its header promises (it changed while it was "
                "read?); get a fresh copy of it."
            )
        return values

    def _frozen(self, full: str, array: Any, ids: Sequence[int] | None = None) -> FloatArray:
        """``array`` in the dtype asked for, read-only; refused if a number in it is not finite,
        naming the tensor and its layer (one NaN in a checkpoint fills every table with NaN)."""
        with np.errstate(over="ignore"):  # float64 beyond float32's range: found just below
            # ``array`` is fresh from the file: converted in place of a copy when it can be.
            result: FloatArray = np.asarray(array).astype(self.dtype, copy=False)
        if np.isfinite(result).all():
            # Read-only all the way down: what it views is fresh from the file and held by
            # nobody else, so AttentionWeights and a trace keep it as it is, without a copy of
            # their own (attnviz.trace.frozen_array copies what could still change).
            base: object = result
            while isinstance(base, np.ndarray):
                base.setflags(write=False)
                base = base.base
            return result
        first = tuple(int(i) for i in np.argwhere(~np.isfinite(result))[0])
        stored = np.asarray(array)[first]
        # Shown as the table's row: ``array`` holds only the rows ``ids`` of it.
        index = [int(ids[first[0]]), *first[1:]] if ids is not None else list(first)
        layer = re.search(r"\.([0-9]+)\.", f".{full[len(self.prefix) :]}")
        where = f" (layer {int(layer.group(1)) + 1} of the model)" if layer else ""
        if np.isfinite(stored):
            raise FileProblem(
                f"{self.path}: {full}{where} holds {float(stored):.3g} at index {index}, beyond "
                f"{np.dtype(self.dtype).name}'s range; use {option('dtype', 'float64')}."
            )
        raise FileProblem(
            f"{self.path}: {full}{where} holds {'NaN' if np.isnan(stored) else 'infinity'} "
            f"(first at index {index}); the checkpoint is damaged: get a fresh copy of it."
        )


def memory_available() -> int | None:
    """Bytes this process can still take: the system's available memory and free swap
    (/proc/meminfo), and under an address-space limit (RLIMIT_AS, ulimit -v) what the process
    has not mapped yet; the smaller of the two. None where neither can be read."""
    found: list[int] = []
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo if ":" in line)
        found.append(sum(int(fields[k].split()[0]) * 1024 for k in ("MemAvailable", "SwapFree")))
    except (OSError, KeyError, ValueError, IndexError):
        pass
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY:
            with open("/proc/self/status", encoding="ascii") as status:
                mapped = next(
                    int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:")
                )
            found.append(max(limit - mapped, 0))
    except (ImportError, OSError, StopIteration, ValueError, IndexError):
        pass
    return min(found) if found else None


def _bfloat16(bits: np.ndarray) -> np.ndarray:
    """bfloat16 numbers, given as their 16 bits, as float32.

    numpy has no bfloat16, but a bfloat16 is the upper half of a float32: 1 sign bit, the same 8
    exponent bits, 7 of the 23 fraction bits. Its 16 bits shifted up by 16 are the same number
    as a float32, exactly.
    """
    return (bits.astype(np.uint32) << 16).view(np.float32)


def read_header(handle: BinaryIO, path: Path) -> dict[str, Stored]:
    """The header of the safetensors file open as ``handle``: every tensor's type, shape and
    byte range, each checked to lie inside the file and to match its shape."""
    size = os.fstat(handle.fileno()).st_size

    def unreadable(reason: str) -> FileProblem:
        return FileProblem(f"{path} is not a readable safetensors file ({reason}).")

    length = int.from_bytes(handle.read(8), "little") if size >= 8 else -1
    if not 2 <= length <= min(size - 8, HEADER_MAX_BYTES):
        raise unreadable(
            f"its header claims {human_size(max(length, 0))} of the file's {human_size(size)}"
        )
    try:
        header = json.loads(handle.read(length).decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, a number of 5,000 digits
        raise unreadable("its header is not JSON text") from None
    if not isinstance(header, dict):
        raise unreadable("its header is not a JSON object")
    data_size = size - 8 - length
    stored = {
        name: _entry(name, entry, 8 + length, data_size, unreadable)
        for name, entry in header.items()
        if name != "__metadata__"
    }
    # Each byte belongs to one tensor at most (as the safetensors format requires): two that
    # share bytes would each read the other's numbers as its own.
    by_start = sorted(
        (tensor.start, tensor.start + tensor.n_bytes, name) for name, tensor in stored.items()
    )
    for (_, end, first), (start, _, second) in itertools.pairwise(by_start):
        if start < end:
            raise unreadable(
                f"the bytes of {first[:60]!r} and {second[:60]!r} overlap; each tensor needs "
                "its own"
            )
    return stored


def _entry(
    name: str,
    entry: Any,
    data_start: int,
    data_size: int,
    unreadable: Callable[[str], FileProblem],
) -> Stored:
    """One tensor's entry of a header, checked: a known type, a shape of whole numbers and a
    byte range inside the file's data that holds exactly that many numbers."""
    shown = repr(name[:60])
    if not isinstance(entry, dict):
        raise unreadable(f"the entry of {shown} is not an object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or dtype not in TYPE_SIZES:
        raise unreadable(
            f"{shown} has the unknown type {str(dtype)[:20]!r}; attnviz reads tensors of "
            f"{READ_TYPES}"
        )
    shape, offsets = _whole_numbers(entry.get("shape")), _whole_numbers(entry.get("data_offsets"))
    if shape is None or offsets is None or len(offsets) != 2:
        raise unreadable(f"{shown} has no valid shape and data_offsets")
    begin, end = offsets
    if dtype not in FLOAT_TYPES:
        # Never read as numbers (refused by its type if a tensor of it is asked for: an 8-bit
        # float, an integer buffer such as BERT's position_ids): its bytes need only lie inside
        # the file, and a type that does not match its size is named as the type it is.
        if not begin <= end <= data_size:
            raise unreadable(
                f"{shown}'s bytes {begin:,}…{end:,} are not inside the file's "
                f"{human_size(data_size)} of data"
            )
        return Stored(dtype, tuple(shape), data_start + begin, end - begin)
    n_bytes = math.prod(shape) * TYPE_SIZES[dtype]
    if not begin <= end <= data_size or end - begin != n_bytes:
        raise unreadable(
            f"{shown} of shape {list(shape)[:8]} needs {human_size(n_bytes)}, but its bytes "
            f"{begin:,}…{end:,} are not that many inside the file's {human_size(data_size)} of data"
        )
    return Stored(dtype, tuple(shape), data_start + begin, n_bytes)


def _whole_numbers(value: Any) -> list[int] | None:
    """``value`` if it is a list of at most 8 whole numbers from 0 (a bool is not one)."""
    if isinstance(value, list) and len(value) <= 8:
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
            return value
    return None


@contextmanager
def open_tensors(folder: Path, dtype: type, prefixes: Sequence[str]) -> Iterator[Tensors]:
    """model.safetensors of ``folder``, its header read and checked; ``prefixes`` are the name
    prefixes the architecture's checkpoints use, the first that any name starts with is taken."""
    path = folder / "model.safetensors"
    if not present(path):
        raise FileProblem(
            f"{folder} has no model.safetensors; attnviz reads only safetensors "
            "(never pickled .bin files)."
        )
    # A regular file, never a FIFO (which would block) or a device.
    with open_regular(path, "Model") as handle:
        header = read_header(handle, path)
        prefix = next((p for p in prefixes if any(n.startswith(p) for n in header)), "")
        yield Tensors(handle, header, path, dtype, prefix)
