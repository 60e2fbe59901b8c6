"""A GGUF file (llama.cpp's format, one file: settings, tokenizer and quantized tensors), and an
Ollama store, whose models are GGUF files under names (``ollama:NAME[:TAG]``, found by
ollama.find_ollama_model). The tensors are dequantized one at a time as the forward pass
reaches them; W_Q and W_K are arranged for Hugging Face's RoPE pairing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any

from attnviz.model.base import ModelConfig, ModelKind
from attnviz.model.sources.checkpoint import checkpoint_name, is_gguf, read_config
from attnviz.model.sources.source import AnyConfig, Found, Source

if TYPE_CHECKING:
    from attnviz.model.sources.gguf_model import GgufModel


class GgufPath(Source):
    kind = "GGUF file"

    @classmethod
    def claims(cls, found: Found) -> bool:
        return is_gguf(found.path)

    @cached_property
    def gguf(self) -> GgufModel:
        """The file, its header and metadata checked; no tensor dequantized yet."""
        from attnviz.model.sources.gguf_model import load_gguf

        return load_gguf(self.path, self.dtype, "half")

    @property
    def name(self) -> str:
        quantization = self.gguf.quantization.split(",")[0]
        return f"{checkpoint_name(self.found.asked, self.path)} (GGUF, {quantization})"

    @property
    def settings_name(self) -> str:
        return f"{self.path.name}'s metadata"

    def read_config(self) -> tuple[ModelConfig, ModelKind]:
        """The file's settings in config.json's words; the padding token is the file's (its
        end-of-text token when it names none)."""
        from attnviz.model.families.llama import LlamaConfig
        from attnviz.model.sources.gguf_keys import setting

        data = self.gguf.settings.config()
        file = self.gguf.tensors.file
        eos = setting(file, "tokenizer.ggml.eos_token_id", None)
        data["pad_token_id"] = setting(file, "tokenizer.ggml.padding_token_id", eos)
        # attnviz's own test files: random weights, said so
        data["attnviz_untrained"] = setting(file, "attnviz.untrained", False)
        config, kind = read_config(self.path, data)
        assert isinstance(config, LlamaConfig)  # the file's settings name llama or qwen2
        return config, kind

    def tokenizer(self) -> Any:
        return self.gguf.tokenizer

    @contextmanager
    def tensors(self, kind: ModelKind) -> Iterator[Any]:
        yield self.gguf  # the file stays open as long as the model is used

    def token_rows(self, kind: ModelKind, tensors: Any) -> int:
        return self.gguf.settings.vocab_size  # token_embd's rows

    def keeps_layers(self, keep_layers: bool) -> bool:
        return keep_layers

    def weights(
        self, kind: ModelKind, tensors: Any, config: AnyConfig, ids: Sequence[int], keep: bool
    ) -> Any:
        from attnviz.model.families.llama import LlamaConfig
        from attnviz.model.sources.gguf_model import gguf_weights

        assert isinstance(config, LlamaConfig)
        return gguf_weights(self.gguf, config, ids, keep=keep)

    def about(self) -> str | None:
        from attnviz.model.sources.gguf_about import quantization_about

        return quantization_about(self.gguf, self.path, self.dtype)


class OllamaStore(GgufPath):
    """``ollama:NAME[:TAG]``: the GGUF blob of that model in Ollama's store on this machine."""

    kind = "Ollama store"

    @classmethod
    def claims(cls, found: Found) -> bool:
        return found.asked.startswith("ollama:")
