"""model.safetensors read through ``Tensors``: each tensor by the name an architecture maps
explicitly, its shape checked, converted to one dtype (bfloat16 and float16 exactly), read-only,
its numbers checked finite. safetensors is imported inside ``open_tensors``."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, FileProblem, option
from attnviz.files import open_regular

#: How to get the optional extra that --model needs.
INSTALL_EXTRA = "pip install 'attnviz[model]'"
#: The tensor types attnviz reads, as safetensors names them: numpy reads the first three,
#: bfloat16 is converted (see Tensors._bfloat16). Integer types are quantized checkpoints.
FLOAT_TYPES = ("F16", "F32", "F64", "BF16")


class Tensors:
    """The tensors of model.safetensors, read by name with their shapes checked, in one dtype
    and read-only (a trace shares them without copying). ``prefix`` is the one the checkpoint
    puts before every name, if any ("bert.", "transformer.")."""

    def __init__(self, handle: Any, path: Path, dtype: type, prefix: str) -> None:
        self.handle = handle
        self.path = path
        self.dtype = dtype
        self.prefix = prefix
        self.names = frozenset(handle.keys())
        self._starts: dict[str, int] | None = None  # read for bfloat16 only

    def __contains__(self, name: str) -> bool:
        return self.prefix + name in self.names

    def get(self, name: str, shape: tuple[int, ...]) -> FloatArray:
        """Tensor ``name`` (without the prefix), which must have ``shape``."""
        full = self._stored(name)
        stored = self.handle.get_slice(full)
        if tuple(stored.get_shape()) != shape:
            raise FileProblem(
                f"{self.path}: {full} has shape {list(stored.get_shape())}, config.json implies "
                f"{list(shape)}."
            )
        if stored.get_dtype() == "BF16":
            return self._frozen(full, self._bfloat16(full, shape))
        return self._frozen(full, self.handle.get_tensor(full))

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
        """Rows ``ids`` of an embedding table [rows_are, width], read without loading the
        whole table (safetensors maps the file)."""
        full = self._stored(name)
        table = self.handle.get_slice(full)
        shape = list(table.get_shape())
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
        if table.get_dtype() == "BF16":
            return self._frozen(full, self._bfloat16(full, tuple(shape), ids), ids)
        rows = np.stack([np.asarray(table[i : i + 1][0]) for i in ids])
        return self._frozen(full, rows, ids)

    def _stored(self, name: str) -> str:
        """The full name of tensor ``name``, which must be there and hold floating-point numbers."""
        full = self.prefix + name
        if full not in self.names:
            raise FileProblem(f"{self.path} lacks {full}; it is not a complete checkpoint.")
        stored_type = self.handle.get_slice(full).get_dtype()
        if stored_type not in FLOAT_TYPES:
            raise FileProblem(
                f"{self.path}: {full} is stored as {stored_type}; attnviz reads checkpoints of "
                "float16, bfloat16, float32 or float64 numbers (not quantized ones)."
            )
        return full

    def _bfloat16(
        self, full: str, shape: tuple[int, ...], rows: Sequence[int] | None = None
    ) -> np.ndarray:
        """Tensor ``full``, stored as bfloat16, as float32 (only ``rows``, if given).

        numpy has no bfloat16, but a bfloat16 is the upper half of a float32: 1 sign bit, the
        same 8 exponent bits, 7 of the 23 fraction bits. Its 16 bits shifted up by 16 are the
        same number as a float32, exactly.
        """
        if math.prod(shape) == 0:
            return np.zeros(shape, np.float32)
        start = self._data_starts()[full]
        bits = np.memmap(self.path, dtype="<u2", mode="r", offset=start, shape=shape)
        chosen = bits if rows is None else bits[list(rows)]
        return (chosen.astype(np.uint32) << 16).view(np.float32)

    def _data_starts(self) -> dict[str, int]:
        """Where each tensor's bytes begin in the file: after an 8-byte length and the JSON
        header of that length, at the first of the header's "data_offsets" for it. The
        safetensors library checked the header when it opened the file."""
        if self._starts is None:
            with self.path.open("rb") as handle:
                length = int.from_bytes(handle.read(8), "little")
                header = json.loads(handle.read(length))
            self._starts = {
                name: 8 + length + int(entry["data_offsets"][0])
                for name, entry in header.items()
                if name != "__metadata__"
            }
        return self._starts

    def _frozen(self, full: str, array: Any, ids: Sequence[int] | None = None) -> FloatArray:
        """``array`` in the dtype asked for, read-only; refused if a number in it is not finite,
        naming the tensor and its layer (one NaN in a checkpoint fills every table with NaN)."""
        with np.errstate(over="ignore"):  # float64 beyond float32's range: found just below
            result: FloatArray = np.array(array, dtype=self.dtype)
        if np.isfinite(result).all():
            result.setflags(write=False)
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


@contextmanager
def open_tensors(folder: Path, dtype: type, prefixes: Sequence[str]) -> Iterator[Tensors]:
    """model.safetensors of ``folder``, memory-mapped; ``prefixes`` are the name prefixes the
    architecture's checkpoints use, the first that any name starts with is taken."""
    try:
        from safetensors import safe_open
    except ImportError:
        raise AttnvizError(f"{option('model')} needs the optional extra: {INSTALL_EXTRA}") from None
    path = folder / "model.safetensors"
    if not path.exists() and not path.is_symlink():
        raise FileProblem(
            f"{folder} has no model.safetensors; attnviz reads only safetensors "
            "(never pickled .bin files)."
        )
    # A regular file we may read, checked by opening it: the safetensors library would wait on
    # a FIFO, and reports a file it may not read as "No such file or directory".
    open_regular(path, "Model").close()
    try:
        handle = safe_open(str(path), framework="numpy")
    except Exception as error:  # safetensors raises its own SafetensorError
        raise FileProblem(f"{path} is not a readable safetensors file ({error}).") from None
    with handle as opened:
        names = list(opened.keys())
        prefix = next((p for p in prefixes if any(n.startswith(p) for n in names)), "")
        yield Tensors(opened, path, dtype, prefix)
