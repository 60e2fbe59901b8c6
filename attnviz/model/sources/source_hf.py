"""A Hugging Face folder: config.json, model.safetensors and tokenizer.json (or vocab.txt), as
``save_pretrained`` writes them. The tensors are read by name through ``Tensors`` (only the
bytes a sentence needs, every shape checked); the tokenizer runs in a child process."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from attnviz.model.base import Architecture, ModelConfig, ModelKind
from attnviz.model.sources.checkpoint import checkpoint_name, read_config
from attnviz.model.sources.source import AnyConfig, Found, Source


class HfFolder(Source):
    kind = "Hugging Face folder"

    @classmethod
    def claims(cls, found: Found) -> bool:
        return True  # the last source tried: every other folder is read as one

    @property
    def name(self) -> str:
        return checkpoint_name(self.found.asked, self.path)

    @property
    def settings_name(self) -> str:
        return f"{self.path.name}'s config.json"

    def read_config(self) -> tuple[ModelConfig, ModelKind]:
        return read_config(self.path, self.found.settings)

    def tokenizer(self) -> Any:
        from attnviz.model.sources.tokenizer import isolated_tokenizer

        return isolated_tokenizer(self.path)

    @contextmanager
    def tensors(self, kind: ModelKind) -> Iterator[Any]:
        from attnviz.model.sources.tensors import open_tensors

        assert isinstance(kind, Architecture)  # read_config returns one
        with open_tensors(self.path, self.dtype, kind.prefixes) as tensors:
            yield tensors

    def check(self, config: AnyConfig, tensors: Any) -> None:
        from attnviz.model.sources.agreement import check_agreement

        assert isinstance(config, ModelConfig)
        check_agreement(config, self.found.settings, tensors, self.path / "config.json")

    def token_rows(self, kind: ModelKind, tensors: Any) -> int:
        assert isinstance(kind, Architecture)
        rows: int = tensors.row_count(kind.token_table)
        return rows

    def weights(
        self, kind: ModelKind, tensors: Any, config: AnyConfig, ids: Sequence[int], keep: bool
    ) -> Any:
        assert isinstance(kind, Architecture) and isinstance(config, ModelConfig)
        return kind.load(tensors, config, ids)

    def about(self) -> str | None:
        from attnviz.model.families.bert import pooling_about

        return pooling_about(self.path)
