"""attnviz.model.sources.source: every kind of model is claimed by its own source, which answers
the four questions (find, config, tensors, tokenizer) the run asks, and nothing else decides
how a model is read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnviz.errors import FileProblem
from attnviz.model.sources import source as source_module
from attnviz.model.sources.source import SOURCES, Found, Source, open_source

from support import needs_model

HERE = Path(__file__).resolve().parent
TINY_GPT2 = str(HERE / "tiny_gpt2")
TINY_GGUF = str(HERE / "tiny_llama.gguf")


def test_the_sources_are_tried_with_the_catch_all_folder_last() -> None:
    names = [entry.rpartition(":")[2] for entry in SOURCES]
    assert names == ["OllamaStore", "GgufPath", "ToyFolder", "HfFolder"]


def test_attnvizs_own_toy_model_is_read_by_the_toy_source() -> None:
    source = open_source("coref", np.float32)
    assert type(source).__name__ == "ToyFolder" and source.name == "coref"
    config, kind = source.read_config()
    assert kind.model_type == "attnviz-toy" and config.n_layers >= 1
    with source.tensors(kind) as tensors:
        weights = source.weights(kind, tensors, config, (), keep=True)
    encoding = source.tokenizer()("the animal was tired because it was sick", config)
    assert len(encoding.ids) == 8 and weights is not None


@needs_model
def test_a_hugging_face_folder_is_read_by_name_with_its_settings_checked() -> None:
    source = open_source(TINY_GPT2, np.float64)
    assert type(source).__name__ == "HfFolder" and source.name == "tiny_gpt2"
    assert source.settings_name == "tiny_gpt2's config.json"
    config, kind = source.read_config()
    assert kind.model_type == "gpt2"
    with source.tensors(kind) as tensors:
        source.check(config, tensors)
        assert source.token_rows(kind, tensors) > 0
        weights = source.weights(kind, tensors, config, [0, 1, 2], keep=True)
    assert weights.token_embeddings.shape == (3, config.d_model)
    assert weights.token_embeddings.dtype == np.float64


@needs_model
def test_a_gguf_file_is_read_by_its_own_source_and_its_layers_only_when_kept() -> None:
    source = open_source(TINY_GGUF, np.float32)
    assert type(source).__name__ == "GgufPath"
    assert source.name.startswith("tiny_llama (GGUF, ")
    assert source.settings_name == "tiny_llama.gguf's metadata"
    assert source.keeps_layers(False) is False and source.keeps_layers(True) is True
    config, kind = source.read_config()
    assert kind.model_type == "llama" and source.about()


def test_an_ollama_name_is_claimed_by_the_ollama_store(monkeypatch: pytest.MonkeyPatch) -> None:
    from attnviz.model.sources import checkpoint

    monkeypatch.setattr(checkpoint, "find_model", lambda name: Path(TINY_GGUF))
    source = open_source("ollama:tiny", np.float32)
    assert type(source).__name__ == "OllamaStore" and source.kind == "Ollama store"


def test_a_folder_without_config_json_is_refused_as_before(tmp_path: Path) -> None:
    with pytest.raises(FileProblem, match="has no config.json"):
        open_source(str(tmp_path), np.float32)


def test_a_folders_settings_are_read_once_whichever_source_asks(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}', encoding="utf-8")
    found = Found(str(tmp_path), tmp_path)
    assert found.settings == {"model_type": "gpt2"}
    (tmp_path / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    assert found.settings == {"model_type": "gpt2"}  # one reading, one answer


def test_every_source_answers_every_question() -> None:
    import importlib

    for entry in SOURCES:
        module, _, name = entry.partition(":")
        source = getattr(importlib.import_module(module), name)
        assert issubclass(source, Source) and not source.__abstractmethods__, name
    assert source_module.open_source is open_source
