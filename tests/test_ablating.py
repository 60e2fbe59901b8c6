"""attnviz.ablate, the Python API of heads --ablate: its example, its numbers beside the
command line's, and its refusals in the API's words."""

from __future__ import annotations

import doctest

import pytest

import attnviz
import attnviz.api.ablate
from attnviz.errors import AttnvizError

TIRED = "the animal didn't cross the street because it was too tired"


def test_the_docstring_example_runs() -> None:
    failed, attempted = doctest.testmod(attnviz.api.ablate, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failed == 0


def test_ablate_on_coref() -> None:
    result = attnviz.ablate(TIRED, model="coref")
    assert repr(result).startswith("<Ablation: 'it' in 2 heads of coref; largest change Δh = 0.67")
    first, second = result.effects
    assert (first.layer, first.head, result.words[first.target]) == (1, 1, "tired")
    assert (second.layer, second.head, result.words[second.target]) == (2, 1, "animal")
    # Layer 1's weights on "tired" hardly change the answer: what the last layer needs of layer
    # 1 is at the nouns (attnviz train coref zeroes it there and says so).
    assert first.output_change is not None and first.output_change < 0.05
    assert "coref's answer at 'it'" in result.readout
    assert result.n_layers == 2 and result.n_heads == 1 and result.trained
    # A pointer readout: the answer is layer 2's head 1 scores, so its TV there is built in.
    assert result.answer_head == (2, 1) and second.output_change == 0.0
    assert result.built_in.startswith("Built in, not measured: layer 2's head 1 IS coref's")


def test_a_word_readout_has_no_answer_head() -> None:
    result = attnviz.ablate(TIRED, model="coref-word")
    assert "softmax of h_L·W_U" in result.readout
    assert result.answer_head is None and result.built_in == ""


def test_another_focus_word_and_float64() -> None:
    result = attnviz.ablate(TIRED, model="coref", focus="street", dtype="float64")
    assert result.focus == "street" and result.position == 5
    assert result.readout == "" and "trained to answer at 'it' only" in result.readout_note
    assert result.answer_head is None and result.built_in == ""  # no answer at 'street'
    assert all(effect.output_change is None for effect in result.effects)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"focus": "zebra"}, "zebra"),
        ({"pad_to": 14}, "pad_to: coref has no padding token"),
        ({"dtype": "float16"}, "dtype='float16' is not a choice"),
        ({"words": "yes"}, "words='yes': give True or False."),
        ({"words": True}, "merges a model's word pieces into words; coref's tokens are whole"),
    ],
)
def test_refusals(options: dict[str, object], message: str) -> None:
    with pytest.raises(AttnvizError, match=message.replace("(", r"\(")):
        attnviz.ablate(TIRED, model="coref", **options)  # type: ignore[arg-type]


def test_a_sentence_without_the_default_focus_word() -> None:
    with pytest.raises(AttnvizError) as raised:
        attnviz.ablate("the animal was tired", model="coref")
    assert raised.value.message == (
        "ablate measures the change at one word: name it with focus=WORD (the default, 'it', "
        "is not in the sentence)."
    )
