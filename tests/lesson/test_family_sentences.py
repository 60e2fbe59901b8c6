"""Model-family sentences come from the architecture in the registry: each model says its own
family's, and a family attnviz does not know borrows none."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from rich.console import Console

from attnviz.core import trace_layers
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import step_number
from attnviz.model.base import Family, family_of, for_layer, layer_input
from attnviz.model.families import bert, gpt2
from attnviz.options import TraceOptions
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)
from attnviz.render.terminal.lesson import render_explain
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace

from support import has_model_extra, lesson_analyses

TINY_GPT2 = Path(__file__).resolve().parent.parent / "model" / "tiny_gpt2"
SENTENCE = "The animal didn't cross the street because it was too tired"


def lesson_text(trace: AttentionTrace, options: LessonOptions | None = None) -> str:
    """All of the text (--full) by default: every family sentence said where it belongs."""
    console = Console(file=io.StringIO(), width=10_000, color_system=None)
    selection = select(trace, ViewOptions(focus="it"))
    found = lesson_analyses(trace, selection)
    render_explain(trace, selection, console, options or LessonOptions(full=True), analyses=found)
    return console.file.getvalue()  # type: ignore[attr-defined]


def sentences(family: Family) -> list[str]:
    """The family's own sentences (the layer inputs' stems before {previous})."""
    texts = [family.tokenizer, family.word_order, family.sublayer, family.after_attention]
    texts += [text.split("{")[0] for text in family.layer_input]
    return [text for text in (*texts, family.special_tokens) if text]


def as_model(trace: AttentionTrace, model_type: str) -> AttentionTrace:
    """``trace`` as if it were layer 1 of a pretrained model of ``model_type``."""
    provenance = Provenance(
        embeddings=EmbeddingsOrigin(EmbeddingsKind.MODEL, architecture=model_type),
        weights=WeightsOrigin(
            WeightsKind.PRETRAINED, model="some-model", architecture=model_type, n_layers=1
        ),
    )
    return dataclasses.replace(trace, provenance=for_layer(provenance, 1))


@pytest.mark.slow
def test_a_family_attnviz_does_not_know_borrows_no_sentence() -> None:
    (trace,) = trace_layers(SENTENCE, TraceOptions())[0]
    text = lesson_text(as_model(trace, "t5"))
    assert family_of("t5") is None
    for family in (bert.FAMILY, gpt2.FAMILY):
        for sentence in sentences(family):
            assert sentence not in text, sentence
    assert "[CLS]" not in text and "GPT-2" not in text and "BERT" not in text
    assert "The model's tokenizer splits the sentence into pieces; shown here" in text
    assert "Row i of X is what this layer receives: the input of the model's layer 1." in text
    assert "In the model the rest of the layer follows; attnviz shows this sublayer." in text


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["bert", "gpt2"])
def test_each_family_says_its_own_sentences_and_not_the_others(model_type: str) -> None:
    (trace,) = trace_layers(SENTENCE, TraceOptions())[0]
    text = lesson_text(as_model(trace, model_type))
    own, other = (bert.FAMILY, gpt2.FAMILY) if model_type == "bert" else (gpt2.FAMILY, bert.FAMILY)
    assert family_of(model_type) is own
    # Layer 1's own sentences; [CLS] and [SEP]'s only where they are in the input.
    said = [own.tokenizer, own.word_order, own.sublayer, own.after_attention, own.layer_input[0]]
    for sentence in said:
        assert sentence in text, sentence
    for sentence in sentences(other):
        assert sentence not in text, sentence
    # The short lesson says the sublayer once, at the output step, where the output goes on.
    brief = lesson_text(as_model(trace, model_type), LessonOptions())
    assert brief.count(own.sublayer) == 1 and own.after_attention not in brief
    assert brief.index(own.sublayer) > brief.index(f"Step {step_number('output')} ·")
    for sentence in sentences(other):
        assert sentence not in brief, sentence


def test_each_layer_s_input_is_described_in_its_family_s_words() -> None:
    assert layer_input(bert.FAMILY, 1).startswith("the model's embeddings (word + position")
    assert layer_input(bert.FAMILY, 4) == "the output of layer 3 (after its residual and LayerNorm)"
    assert layer_input(gpt2.FAMILY, 2).startswith("the residual stream after layer 1 normalised")
    provenance = Provenance(
        EmbeddingsOrigin(EmbeddingsKind.MODEL, architecture="gpt2"),
        WeightsOrigin(WeightsKind.PRETRAINED, architecture="gpt2"),
    )
    assert for_layer(provenance, 3).embeddings.describe() == layer_input(gpt2.FAMILY, 3)
    # The description travels with an export, read back as written.
    again = Provenance.from_dict(for_layer(provenance, 3).to_dict())
    assert again.embeddings.describe() == layer_input(gpt2.FAMILY, 3)


@pytest.mark.slow
@pytest.mark.skipif(not has_model_extra(), reason="needs the optional extra attnviz[model]")
def test_a_real_gpt2_checkpoint_says_gpt2_s_sentences() -> None:
    layers, _ = trace_layers(SENTENCE, TraceOptions(model=str(TINY_GPT2)))
    text = lesson_text(layers[-1])
    assert gpt2.FAMILY.tokenizer in text and gpt2.FAMILY.sublayer in text
    assert all(sentence not in text for sentence in sentences(bert.FAMILY))
