"""attnviz.lesson.caveats: what a toy model's pictures say its answer is, by its readout."""

from __future__ import annotations

import pytest

from attnviz.lesson.caveats import readout_note
from attnviz.provenance import READOUTS


def test_only_a_pointer_readout_calls_a_row_the_answer_by_construction() -> None:
    pointer = readout_note("pointer", ["it"])
    assert pointer is not None
    assert pointer.startswith("The last layer's row of \"it\" is the model's answer")
    assert "trained to point" in pointer and "by construction, not a discovery" in pointer
    for other in ("word", "token"):
        note = readout_note(other, ["it"])
        assert note is not None and "output layer" in note
        assert "by construction" not in note and "need not be it" in note


def test_the_word_readout_names_the_word_it_answers_at() -> None:
    note = readout_note("word", ["it", "they"])
    assert note is not None and 'at "it" or "they"' in note


def test_a_pointer_of_several_heads_names_head_1() -> None:
    note = readout_note("pointer", ["it"], n_heads=2)
    assert note is not None and note.startswith("Head 1's row in the last layer")


@pytest.mark.parametrize("readout", [*READOUTS, None])
def test_every_readout_has_its_sentence_and_other_models_none(readout: str | None) -> None:
    note = readout_note(readout, ["it"])
    assert (note is None) is (readout is None)


def test_a_sentence_without_the_word_gets_no_row_called_an_answer() -> None:
    for readout in ("pointer", "word"):
        note = readout_note(readout, ["it"], present=False)
        assert (
            note
            == 'The model answers at "it"; this sentence has none, so no row here is an answer.'
        )


def test_the_pointer_note_claims_no_particular_weight() -> None:
    """The row is the answer whatever its largest weight (0.58 on a sentence unlike any trained
    on), so the note names no number."""
    note = readout_note("pointer", ["it"])
    assert note is not None and not any(character.isdigit() for character in note)
