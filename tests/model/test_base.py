"""attnviz.model.base: the registry that picks an architecture by config.json's model_type, the
validated ModelConfig, and the checks every architecture shares."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from attnviz.errors import AttnvizError, FileProblem, command_line
from attnviz.model.base import (
    MODULES,
    ModelConfig,
    architecture_for,
    finite,
    for_layer,
    integer,
    number,
)
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)

SIZES = {
    "model_type": "bert",
    "d_model": 8,
    "n_heads": 2,
    "n_layers": 2,
    "d_ff": 16,
    "max_positions": 16,
    "layer_norm_eps": 1e-12,
}


def test_every_registered_family_is_its_modules_architecture() -> None:
    for model_type, module in MODULES.items():
        architecture = architecture_for(model_type, Path("m"))
        assert architecture is importlib.import_module(module).ARCHITECTURE
        assert architecture.model_type == model_type and architecture.description


def test_an_unknown_family_is_refused_naming_the_ones_attnviz_runs() -> None:
    with pytest.raises(FileProblem) as refused:
        architecture_for("t5", Path("models/t5"))
    message = refused.value.message
    assert message.startswith("models/t5 is a 't5' model; attnviz runs model_type ")
    assert all(f"'{model_type}'" in message for model_type in MODULES)


def test_the_config_is_validated_on_construction() -> None:
    assert ModelConfig(**SIZES).d_k == 4
    refusals = {
        "the number of heads must be positive, got 0": {"n_heads": 0},
        "the hidden size 8 is not divisible by 3 heads": {"n_heads": 3},
        "the LayerNorm epsilon must be a small positive number": {"layer_norm_eps": 0.0},
    }
    for message, change in refusals.items():
        with pytest.raises(AttnvizError, match=message):
            ModelConfig(**(SIZES | change))
    for eps in (float("nan"), float("inf"), -1e-12):
        with pytest.raises(AttnvizError, match="epsilon"):
            ModelConfig(**(SIZES | {"layer_norm_eps": eps}))


def test_config_numbers_are_whole_numbers_or_numbers_never_booleans() -> None:
    data = {"n_embd": 32, "hidden_size": 64, "flag": True, "text": "8", "eps": 1}
    assert integer(data, "n_embd", "hidden_size") == 32  # the first name set wins
    assert integer(data, "n_inner", default=128) == 128
    with pytest.raises(KeyError):
        integer(data, "n_inner")
    for name in ("flag", "text"):
        with pytest.raises(TypeError, match="not a whole number"):
            integer(data, name)
    assert number(data, "eps", 1e-5) == 1.0 and number(data, "missing", 1e-5) == 1e-5
    with pytest.raises(TypeError, match="not a number"):
        number(data, "flag", 1e-5)


def test_numbers_beyond_the_dtype_are_named_with_where_and_the_fix() -> None:
    fine = np.ones((2, 4), np.float32)
    assert finite(fine, "layer 1") is fine
    with pytest.raises(FileProblem, match="overflow float32 in layer 3 .* use --dtype float64"):
        with command_line():
            finite(np.array([[np.inf]], np.float32), "layer 3")
    with pytest.raises(FileProblem, match='overflow float32 in layer 3 .* use dtype="float64"'):
        finite(np.array([[np.inf]], np.float32), "layer 3")
    with pytest.raises(FileProblem, match=r"overflow float64 in the embeddings .*checkpoint\.$"):
        finite(np.array([[np.nan]]), "the embeddings")


def test_each_layer_reads_the_models_embeddings_first_then_the_layer_before() -> None:
    first = Provenance(
        embeddings=EmbeddingsOrigin(EmbeddingsKind.MODEL, architecture="bert", layer=1),
        weights=WeightsOrigin(WeightsKind.PRETRAINED, model="m", architecture="bert", layer=1),
    )
    assert for_layer(first, 1).embeddings.kind is EmbeddingsKind.MODEL
    third = for_layer(first, 3)
    assert third.embeddings.kind is EmbeddingsKind.LAYER
    assert third.embeddings.layer == third.weights.layer == 3
