"""attnviz.compare (attnviz/comparing.py): both sentences traced alike, the focus word found in
each, every head's rows compared; its numbers recomputed from the traces one word at a time."""

from __future__ import annotations

import doctest
import time

import pytest

import attnviz
import attnviz.api.compare
from attnviz.errors import AttnvizError

from support import needs_model

TIRED = "The animal didn't cross the street because it was too tired"
WIDE = "The animal didn't cross the street because it was too wide"


def recomputed_tv(pair: attnviz.api.compare.Compared, layer: int, head: int) -> float:
    """TV from each sentence's own trace, word by word: ½·(Σ over the words both have, paired in
    order, |w_A − w_B| + |the rest of A's row − the rest of B's|)."""
    rows = []
    for explanation in (pair.a, pair.b):
        trace = explanation.layers[layer - 1]
        assert explanation.selection.focus is not None
        it = explanation.selection.focus.index
        rows.append((trace.tokens, trace.weights[head - 1, it]))
    (tokens_a, row_a), (tokens_b, row_b) = rows
    comparison = pair.comparison
    assert comparison.words_a == tokens_a and comparison.words_b == tokens_b
    shared = sum(abs(float(row_a[i]) - float(row_b[j])) for i, j in comparison.alignment.pairs)
    rest_a = sum(float(row_a[i]) for i in comparison.alignment.only_a)
    rest_b = sum(float(row_b[j]) for j in comparison.alignment.only_b)
    return 0.5 * (shared + abs(rest_a - rest_b))


def test_coref_moves_it_from_animal_to_street_in_layer_2() -> None:
    pair = attnviz.compare(TIRED, WIDE, model="coref")
    comparison = pair.comparison
    top = comparison.heads[0]
    assert (top.layer, top.head) == (2, 1)
    assert comparison.words_a[top.top_a] == "animal"
    assert comparison.words_b[top.top_b] == "street"
    assert top.moves and top.tv >= 0.9
    assert [change.layer for change in comparison.moved] == [2, 1]  # layer 1: tired, cross
    for change in comparison.heads:
        assert change.tv == pytest.approx(recomputed_tv(pair, change.layer, change.head), abs=1e-6)


def test_random_weights_with_a_chosen_head_and_focus() -> None:
    pair = attnviz.compare(
        "the cat sat on the mat because it was tired",
        "the black cat sat because it was tired",
        heads=4,
        d_model=16,
        head=3,
        focus="cat",
    )
    comparison = pair.comparison
    assert [(change.layer, change.head) for change in comparison.heads] == [(1, 3)]
    assert comparison.focus == "cat"
    assert [comparison.words_b[j] for j in comparison.alignment.only_b] == ["black"]
    assert comparison.heads[0].tv == pytest.approx(recomputed_tv(pair, 1, 3), abs=1e-6)


@pytest.mark.parametrize(
    ("a", "b", "named"),
    [
        (TIRED, "The dog slept", "sentence B ('The dog slept')"),
        ("The dog slept", TIRED, "sentence A ('The dog slept')"),
    ],
)
def test_a_focus_word_missing_from_one_sentence_is_one_sentence_naming_it(
    a: str, b: str, named: str
) -> None:
    with pytest.raises(AttnvizError) as raised:
        attnviz.compare(a, b)
    message = str(raised.value)
    assert message == (
        f"The focus word 'it' is not in {named}; follow a word both have with focus=WORD: The."
    )


def test_an_occurrence_counts_in_a_and_one_b_does_not_share_is_refused() -> None:
    with pytest.raises(AttnvizError, match=r"^'the:2' in sentence A has no partner in sentence B"):
        attnviz.compare("the cat and the dog", "the cat", focus="the:2")


def test_a_repeated_focus_word_follows_the_occurrence_both_share() -> None:
    """'it said it was fine' / 'she said it was fine': the second 'it' of A is the one aligned
    with B's 'it'; the first has no partner, so the default follows the second."""
    pair = attnviz.compare("it said it was fine", "she said it was fine")
    assert pair.comparison.focus == "it:2"
    assert pair.a.selection.focus is not None and pair.a.selection.focus.index == 2
    assert pair.b.selection.focus is not None and pair.b.selection.focus.index == 2
    same = attnviz.compare("it said it was fine", "she said it was fine", focus="it:2")
    assert [h.tv for h in same.comparison.heads] == [h.tv for h in pair.comparison.heads]
    with pytest.raises(AttnvizError, match='follow the one both share with focus="it:2"'):
        attnviz.compare("it said it was fine", "she said it was fine", focus="it:1")


def test_swapped_nouns_keep_the_top_word_that_the_adjective_fits() -> None:
    """coref: the animal and the street swap places and roles; the adjective still fits the
    animal, so in layer 2 'it' points at "animal" wherever it stands: the words are aligned by
    word, not by place, and nothing moves."""
    pair = attnviz.compare(
        "the animal didn't cross the street because it was too tired",
        "the street didn't cross the animal because it was too tired",
        model="coref",
    )
    alignment = pair.comparison.alignment
    assert alignment.only_a == () and alignment.only_b == ()
    assert (1, 5) in alignment.pairs and (5, 1) in alignment.pairs  # "animal", "street"
    words_a, words_b = pair.comparison.words_a, pair.comparison.words_b
    (last,) = [change for change in pair.comparison.heads if change.layer == 2]
    assert (words_a[last.top_a], words_b[last.top_b]) == ("animal", "animal")
    assert not last.moves and last.tv < 0.01
    assert pair.comparison.moved == ()


def test_the_api_refuses_as_explain_does() -> None:
    with pytest.raises(AttnvizError, match="head=3 does not exist"):
        attnviz.compare("I am it", "you are it", head=3)
    with pytest.raises(AttnvizError, match="layer"):
        attnviz.compare("I am it", "you are it", layer=2)


def test_the_docstring_examples_run() -> None:
    failed, attempted = doctest.testmod(attnviz.api.compare, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failed == 0


@pytest.mark.slow
@needs_model
def test_minilm_moves_little_and_its_numbers_are_the_traces() -> None:
    start = time.perf_counter()
    pair = attnviz.compare(TIRED, WIDE, model="minilm")
    assert time.perf_counter() - start < 60
    comparison = pair.comparison
    assert len(comparison.heads) == 72
    assert comparison.heads[0].tv < 0.6  # no head turns "it" around as coref's layer 2 does
    for change in comparison.heads[:5]:
        assert change.tv == pytest.approx(recomputed_tv(pair, change.layer, change.head), abs=1e-6)
    assert comparison.alignment.only_a != () and comparison.alignment.only_b != ()


def test_the_report_says_how_little_moves_and_cautions_for_a_trained_model() -> None:
    """coref: the row of 'it' moves entirely (no 'little'), with the caution; random weights:
    little moves, and the closing says the weights are random instead of the caution."""
    from rich.console import Console

    from attnviz.render.terminal.compare_report import render_comparison

    for model, little, cautioned in (("coref", False, True), (None, True, False)):
        pair = attnviz.compare(TIRED, WIDE, model=model)
        console = Console(width=100, record=True, color_system=None)
        weights = pair.a.trace.provenance.weights
        render_comparison(pair.comparison, (TIRED, WIDE), weights, console, top=5)
        text = " ".join(console.export_text().split())
        largest = max(change.tv for change in pair.comparison.heads)
        assert ("Little of the row moves" in text) is little
        if little:
            assert f"no head does more than {largest:.2f} of the weight of 'it'" in text
        assert ("A caution: a high weight shows where the vector of 'it'" in text) is cautioned
