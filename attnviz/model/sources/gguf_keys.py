"""Every GGUF metadata key attnviz reads, with the kind of value it must hold, and the one
accessor that reads them (``setting``): a value of another kind (an architecture given as a list,
a vocabulary given as one number, a head size given as an array) is refused in one line naming
the key and what it holds, before anything uses it.

A key of the model's architecture is written "{arch}.name" ("llama.block_count"); the kinds:
text, a whole number (with the smallest it may be), a real number, a flag, a list of texts, an
array of whole numbers, or a whole number or such an array (per-layer head counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from attnviz.errors import FileProblem, shown_value

#: The largest whole number a key may hold: 2³¹, as llama.cpp allows (attnviz.model.base.MAX_SIZE).
LARGEST = 2**31


class Kind(NamedTuple):
    """What a key must hold: ``kind`` one of "text", "whole", "real", "flag", "texts",
    "wholes", "whole or wholes"; ``least`` and ``most``: the whole numbers allowed."""

    kind: str
    least: int = 0
    most: int = LARGEST


TEXT, REAL, FLAG, TEXTS = Kind("text"), Kind("real"), Kind("flag"), Kind("texts")
SIZE, COUNT, WHOLES = Kind("whole", 1), Kind("whole", 0), Kind("wholes")
#: A token id: checked against the vocabulary where it is used, which names both.
ID = Kind("whole", 0, 2**64)
HEADS = Kind("whole or wholes", 1)  # per-layer counts are refused by name, as a feature


class Metadata(NamedTuple):
    """A GGUF file's metadata and its path, as ``setting`` reads them (a GgufFile has both)."""

    path: Path
    metadata: Mapping[str, Any]


#: Every key attnviz reads, "{arch}." standing for the architecture's name.
KEYS: dict[str, Kind] = {
    "general.architecture": TEXT,
    "general.alignment": SIZE,
    "{arch}.block_count": SIZE,
    "{arch}.context_length": SIZE,
    "{arch}.embedding_length": SIZE,
    "{arch}.feed_forward_length": SIZE,
    "{arch}.vocab_size": SIZE,
    "{arch}.attention.head_count": HEADS,
    "{arch}.attention.head_count_kv": HEADS,
    "{arch}.attention.key_length": SIZE,
    "{arch}.attention.value_length": SIZE,
    "{arch}.attention.layer_norm_rms_epsilon": REAL,
    "{arch}.attention.sliding_window": COUNT,
    "{arch}.expert_count": COUNT,
    "{arch}.rope.freq_base": REAL,
    "{arch}.rope.dimension_count": SIZE,
    "{arch}.rope.scaling.type": TEXT,
    "{arch}.rope.scaling.factor": REAL,
    "tokenizer.ggml.model": TEXT,
    "tokenizer.ggml.pre": TEXT,
    "tokenizer.ggml.tokens": TEXTS,
    "tokenizer.ggml.merges": TEXTS,
    "tokenizer.ggml.token_type": WHOLES,
    "tokenizer.ggml.add_bos_token": FLAG,
    "tokenizer.ggml.bos_token_id": ID,
    "tokenizer.ggml.eos_token_id": ID,
    "tokenizer.ggml.padding_token_id": ID,
    "attnviz.untrained": FLAG,
}

_MISSING: Any = object()


class HasMetadata(Protocol):
    """A GgufFile, or a Metadata, as far as ``setting`` is concerned."""

    @property
    def path(self) -> Path: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...


def kind_of(key: str, arch: str | None) -> Kind:
    """The kind ``key`` must hold (KeyError for a key attnviz does not read)."""
    if key in KEYS:
        return KEYS[key]
    if arch is not None and key.startswith(f"{arch}."):
        return KEYS["{arch}." + key.removeprefix(f"{arch}.")]
    raise KeyError(key)


def setting(file: HasMetadata, key: str, default: Any = _MISSING) -> Any:
    """The value of ``key`` in a GgufFile's metadata, checked to be of its kind (KEYS);
    ``default`` when the file lacks it (given), else FileProblem saying so."""
    metadata = file.metadata
    if key not in metadata:
        if default is _MISSING:
            raise FileProblem(f"{file.path} lacks {key}; it is not a complete model file.")
        return default
    arch = metadata.get("general.architecture")
    value = metadata[key]
    kind = kind_of(key, arch if isinstance(arch, str) else None)
    if _is_whole(value) and kind.kind.startswith("whole") and not _is(value, kind):
        raise FileProblem(  # the right type, out of range: a count no model has
            f"{file.path}: {key} is {shown_value(int(value))}; the file's metadata is damaged "
            f"(it holds {_expected(kind)} there): get a fresh copy of it."
        )
    if not _is(value, kind):
        raise FileProblem(
            f"{file.path}: {key} holds {_described(value)}, where GGUF files hold "
            f"{_expected(kind)}; the file's metadata is damaged: get a fresh copy of it."
        )
    return value


def check_settings(file: HasMetadata) -> None:
    """Every key of KEYS the file holds, checked to be of its kind (the architecture first)."""
    setting(file, "general.architecture", None)
    arch = file.metadata.get("general.architecture")
    for pattern in KEYS:
        key = pattern.replace("{arch}", str(arch))
        if key in file.metadata:
            setting(file, key)


def _is_whole(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _whole(value: Any, kind: Kind) -> bool:
    return _is_whole(value) and bool(kind.least <= value <= kind.most)


def _is(value: Any, kind: Kind) -> bool:
    if kind.kind == "text":
        return isinstance(value, str)
    if kind.kind == "flag":
        return isinstance(value, bool)
    if kind.kind == "real":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind.kind == "texts":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    wholes = (
        isinstance(value, np.ndarray)
        and value.ndim == 1
        and value.dtype.kind in "iu"
        and (not value.size or bool(kind.least <= value.min() and value.max() <= kind.most))
    )
    if kind.kind == "wholes":
        return wholes
    if kind.kind == "whole or wholes":
        return wholes or _whole(value, kind)
    return _whole(value, kind)


def _expected(kind: Kind) -> str:
    whole = f"a whole number from {kind.least} to {kind.most:,}"
    return {
        "text": "text",
        "flag": "true or false",
        "real": "a number",
        "texts": "a list of texts",
        "wholes": f"a list of whole numbers from {kind.least} to {kind.most:,}",
        "whole or wholes": f"{whole} (or one for each layer)",
    }.get(kind.kind, whole)


def _described(value: Any) -> str:
    """What a metadata value is, as a message says it: "the text 'llama'", "a list of 3 texts",
    "the whole number -1", "an array of 2 whole numbers"."""
    if isinstance(value, str):
        return f"the text {shown_value(value)}"
    if isinstance(value, bool):
        return f"the flag {str(value).lower()}"
    if isinstance(value, (int, np.integer)):
        return f"the whole number {shown_value(int(value))}"
    if isinstance(value, float):
        return f"the number {shown_value(value)}"
    if isinstance(value, list):
        return f"a list of {len(value):,} texts"
    if isinstance(value, np.ndarray):
        what = {"i": "whole numbers", "u": "whole numbers", "f": "numbers", "b": "flags"}
        items = what.get(value.dtype.kind, "values")
        out_of_range = value.dtype.kind in "iu" and value.size
        extra = (
            f" (from {shown_value(int(value.min()))} to {shown_value(int(value.max()))})"
            if out_of_range
            else ""
        )
        return f"an array of {value.size:,} {items}{extra}"
    return f"a {type(value).__name__}"
