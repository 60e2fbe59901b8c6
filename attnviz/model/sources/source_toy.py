"""A folder of attnviz's own toy model: config.json (model_type "attnviz-toy": its task,
vocabulary, sizes) and weights.npz, as ``attnviz train --save`` writes them and as attnviz ships
``coref`` and ``coref-word`` (trained/). Read without pickle and without the optional extra."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from attnviz.errors import FileProblem
from attnviz.model.base import ModelKind
from attnviz.model.sources.checkpoint import checkpoint_name
from attnviz.model.sources.source import AnyConfig, Found, Source


class ToyFolder(Source):
    kind = "attnviz toy model folder"

    @classmethod
    def claims(cls, found: Found) -> bool:
        from attnviz.model.families import toy

        return found.settings.get("model_type") == toy.MODEL_TYPE

    @property
    def name(self) -> str:
        return checkpoint_name(self.found.asked, self.path)

    @property
    def settings_name(self) -> str:
        return str(self.path / "config.json")

    def read_config(self) -> tuple[AnyConfig, ModelKind]:
        """The toy config (families.toy.ToyConfig) and the toy family."""
        from attnviz.model.families import toy

        path = self.path / "config.json"
        try:
            config = toy.read_config(self.found.settings)
        except KeyError as error:
            raise FileProblem(f"{path} lacks {error}; it is not a complete config.json.") from None
        except (TypeError, ValueError, OverflowError) as error:
            raise FileProblem(f"{path}: {error}.") from None
        return config, toy.ARCHITECTURE

    def tokenizer(self) -> Any:
        """``tokenizer(sentence, config)``: the sentence's words in the model's vocabulary."""
        from attnviz.model.families import toy

        return partial(toy.encode, name=self.name, config_path=self.path / "config.json")

    @contextmanager
    def tensors(self, kind: ModelKind) -> Iterator[Any]:
        yield self.path  # weights.npz is read whole, checked against the config

    def token_rows(self, kind: ModelKind, tensors: Any) -> int:
        from attnviz.model.families.toy import ToyConfig

        config, _ = self.read_config()
        assert isinstance(config, ToyConfig)
        return len(config.vocabulary)  # a word's index is its id

    def weights(
        self, kind: ModelKind, tensors: Any, config: AnyConfig, ids: Sequence[int], keep: bool
    ) -> Any:
        from attnviz.model.families import toy

        assert isinstance(config, toy.ToyConfig)
        return toy.load_weights(self.path, config, self.dtype)

    def about(self) -> str | None:
        return None  # the toy run's paragraph needs its answer (families.toy_about)
