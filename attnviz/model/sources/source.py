"""One interface for every place a model's weights come from.

A source answers four questions, in this order, and the run (attnviz.model.run) asks nothing
else of it:

    find       does the model asked for belong to me?           Source.claims(found)
    config     what are its sizes, and which family runs it?    source.read_config()
    tensors    its weights, by name, shape-checked, read lazily source.tensors(…), .weights(…)
    tokenizer  how a sentence becomes its token ids             source.tokenizer()

The sources, tried in order (SOURCES): an Ollama store (``ollama:NAME``), a GGUF file, a folder
of attnviz's own toy model (config.json + weights.npz), a Hugging Face folder (config.json,
model.safetensors, tokenizer.json). Each lives in its own module, imported only when it is
tried, so a model of one kind never loads another kind's readers.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

if TYPE_CHECKING:
    from attnviz.model.base import ModelConfig, ModelKind
    from attnviz.model.families.toy import ToyConfig

#: A pretrained family's sizes, or the toy model's.
AnyConfig: TypeAlias = "ModelConfig | ToyConfig"

#: "module:Class" of every source, in the order they are asked whether a model is theirs.
SOURCES = (
    "attnviz.model.sources.source_gguf:OllamaStore",
    "attnviz.model.sources.source_gguf:GgufPath",
    "attnviz.model.sources.source_toy:ToyFolder",
    "attnviz.model.sources.source_hf:HfFolder",
)


@dataclass(frozen=True)
class Found:
    """A model as --model named it and the path that name found (a folder or a file)."""

    asked: str  # as the user gave it: "minilm", "ollama:smollm2", "./my-model"
    path: Path

    @cached_property
    def settings(self) -> dict[str, Any]:
        """A folder's config.json, read once whichever source asks first."""
        from attnviz.model.sources.checkpoint import config_data

        return config_data(self.path)


class Source(ABC):
    """Where one model's weights come from; made by ``open_source``, for one dtype."""

    kind: ClassVar[str]  # what it is, for a reader: "Hugging Face folder"

    def __init__(self, found: Found, dtype: type) -> None:
        self.found = found
        self.path = found.path
        self.dtype = dtype

    @classmethod
    @abstractmethod
    def claims(cls, found: Found) -> bool:
        """Whether ``found`` is a model of this source."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The model's name in headers and titles ("all-MiniLM-L6-v2", "x (GGUF, Q4_1)")."""

    @abstractmethod
    def read_config(self) -> tuple[AnyConfig, ModelKind]:
        """The model's sizes and the family that runs it."""

    @abstractmethod
    def tokenizer(self) -> Any:
        """What attnviz.model.sources.tokenizer.encode splits a sentence with."""

    @abstractmethod
    def tensors(self, kind: ModelKind) -> AbstractContextManager[Any]:
        """The open tensors, by name, read only when asked for; closed on leaving."""

    def check(self, config: AnyConfig, tensors: Any) -> None:
        """Refuse settings that disagree with the tensors' shapes, before any is read. By
        default nothing to do: a source whose settings and tensors are one file (GGUF) checked
        them against each other when it read the file."""
        return None

    @abstractmethod
    def token_rows(self, kind: ModelKind, tensors: Any) -> int:
        """The rows of the model's token table: the ids it has."""

    @property
    @abstractmethod
    def settings_name(self) -> str:
        """What names the model's settings, for messages: "x's config.json"."""

    def keeps_layers(self, keep_layers: bool) -> bool:
        """Whether every layer's feed-forward weights are held at once (a source that reads a
        layer as the pass reaches it holds them only when ``keep_layers``)."""
        return True

    @abstractmethod
    def weights(
        self, kind: ModelKind, tensors: Any, config: AnyConfig, ids: Sequence[int], keep: bool
    ) -> Any:
        """The weights a sentence of ``ids`` needs, as the family runs them."""

    @abstractmethod
    def about(self) -> str | None:
        """A paragraph on the model for the lesson's header, or None."""


def open_source(model: str, dtype: type) -> Source:
    """The source that claims ``model`` (a path or a known model's name), ready to read."""
    from attnviz.model.sources.checkpoint import find_model

    found = Found(model, find_model(model))
    for entry in SOURCES:
        module, _, name = entry.partition(":")
        source: type[Source] = getattr(importlib.import_module(module), name)
        if source.claims(found):
            return source(found, dtype)
    raise AssertionError(f"no source claims {found.path}")  # HfFolder claims every folder
