"""Words a person types, matched as the sentence is read: in Unicode NFC form, case-folded.

A focus word typed with a combining accent (NFD: e + U+0301) is the sentence's "café" whatever
form the sentence was typed in, on the command line and in Python, with attnviz's tokenizer and
a model's; compatibility forms (NFKC) stay apart but for what case folding unfolds ("ﬁ" is "fi")."""

from __future__ import annotations

import unicodedata

import pytest

import attnviz
from attnviz.analysis.compare import align_words
from attnviz.cli import app
from attnviz.errors import ExitStatus
from attnviz.labels import occurrence_labels
from attnviz.tokens import find_focus, word_key

from support import CliRunner, needs_model, steps_spec


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


SENTENCE = "the café is open"
#: Every spelling of the focus word that must find the sentence's "café".
SPELLINGS = [nfc("café"), nfd("café"), nfc("CAFÉ"), nfd("CAFÉ"), nfd("Café")]


def test_the_spellings_differ_as_text() -> None:
    assert len({*SPELLINGS}) == len(SPELLINGS)  # the test below compares different strings
    assert nfd("café") != nfc("café")


@pytest.mark.parametrize("sentence", [nfc(SENTENCE), nfd(SENTENCE)], ids=["NFC", "NFD"])
@pytest.mark.parametrize("focus", SPELLINGS, ids=["nfc", "nfd", "NFC-upper", "NFD-upper", "NFD-T"])
def test_a_focus_word_in_any_normal_form_is_the_sentences(sentence: str, focus: str) -> None:
    shown = attnviz.explain(sentence, focus=focus)
    assert shown.selection.focus is not None
    assert shown.selection.focus.index == 1
    assert shown.selection.focus.word == nfc("café")


@pytest.mark.parametrize("focus", [nfd("café:1"), nfd("CAFÉ") + ":1"])
def test_an_occurrence_after_a_decomposed_word_is_read(focus: str) -> None:
    found = find_focus(["café", "and", "café"], focus)
    assert (found.index, found.occurrence, found.n_occurrences) == (0, 1, 2)
    assert find_focus(["café", "and", "café"], nfd("café:2")).index == 2


def test_compatibility_forms_stay_apart_but_for_case_folding() -> None:
    # casefold() unfolds the ligature ﬁ to "fi" (and ß to "ss"): those match.
    assert attnviz.explain("the ﬁle is here", focus="file").selection.focus.index == 1
    assert find_focus(["Straße"], "strasse").index == 0
    # NFKC would make ² a 2 and ① a 1: attnviz keeps them apart.
    for sentence, focus in (("x² is big", "x2"), ("① is one", "1")):
        with pytest.raises(attnviz.AttnvizError, match="is not in the sentence"):
            attnviz.explain(sentence, focus=focus)


def test_word_key_is_canonical_and_caseless() -> None:
    assert word_key(nfd("Ǆémon")) == word_key(nfc("ǆémon"))
    assert word_key("ǰ") == word_key(nfd("ǰ"))  # its fold decomposes: NFC again after folding
    assert word_key("x²") != word_key("x2")


def test_repeated_words_are_counted_in_any_form() -> None:
    labels = occurrence_labels([nfc("café"), "and", nfd("CAFÉ")])
    assert labels == [f"{nfc('café')}:1", "and", f"{nfd('CAFÉ')}:2"]


def test_compare_aligns_words_typed_in_either_form() -> None:
    alignment = align_words([nfc("café"), "is"], [nfd("café"), "is"])
    assert alignment.pairs == ((0, 0), (1, 1))
    pair = attnviz.compare(nfc("it is the café"), nfd("it was the café"), focus=nfd("CAFÉ"))
    assert pair.comparison.focus == nfc("café")


@pytest.mark.parametrize("focus", SPELLINGS[:2], ids=["nfc", "nfd"])
@pytest.mark.parametrize("sentence", [nfc(SENTENCE), nfd(SENTENCE)], ids=["NFC", "NFD"])
def test_the_command_line_finds_the_focus_word_in_any_form(sentence: str, focus: str) -> None:
    result = CliRunner().invoke(
        app, ["explain", sentence, "--focus", focus, "--steps", steps_spec("focus")]
    )
    assert result.exit_code == ExitStatus.SUCCESS, result.output
    assert "Focus: where does 'café' look?" in nfc(result.output)


def test_the_command_line_still_refuses_a_word_not_in_the_sentence() -> None:
    result = CliRunner().invoke(app, ["explain", SENTENCE, "--focus", nfd("cafés")])
    assert result.exit_code == ExitStatus.BAD_INPUT
    assert "is not in the sentence" in result.output


@needs_model
@pytest.mark.slow
@pytest.mark.parametrize(
    ("focus", "sentence", "model"),
    [
        pytest.param(
            focus,
            sentence,
            model,
            id=f"{spelling}-{form}-{model}",
            # SmolLM2's pieces are matched by the same code as MiniLM's, 5 times as slowly: CI
            # reads it with one spelling in each form of the sentence, the full run with all.
            marks=pytest.mark.full if model == "smollm2" and spelling != "nfd" else (),
        )
        for focus, spelling in zip(SPELLINGS[:3], ["nfc", "nfd", "upper"], strict=True)
        for sentence, form in [(nfc(SENTENCE), "NFC"), (nfd(SENTENCE), "NFD")]
        for model in ["minilm", "smollm2"]
    ],
)
def test_a_models_words_match_a_focus_word_in_any_form(
    model: str, sentence: str, focus: str
) -> None:
    """BERT's normalizer strips the accent ("cafe"), a byte-level BPE cuts a decomposed
    accent off as a word of its own: the word is still the sentence's "café"."""
    shown = attnviz.explain(sentence, model=model, focus=focus)
    assert nfc(shown.trace.provenance.words[shown.selection.focus.index]) == "café"
    words = [nfc(word) for word in shown.trace.provenance.words]
    assert [word for word in words if word.isalpha()] == [
        "the",
        "café",
        "is",
        "open",
    ]
