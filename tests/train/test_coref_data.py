"""The coref task's sentences: position cannot answer, every length is there, and nothing held
out is trained on. Each sentence is parsed back with a regular expression written from the
grammar, independently of the vectorised way attnviz.train.coref lays the words out."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from attnviz.train import coref, tasks
from attnviz.train.tasks import Readout


def _alternatives(options: tuple[str, ...]) -> str:
    return "|".join(
        re.escape(option) for option in sorted(options, key=len, reverse=True) if option
    )


NOUN = f"(?:{_alternatives(coref.ANIMALS + coref.PLACES)})"
ADJECTIVE = f"(?:{_alternatives(coref.ANIMAL_ADJECTIVES + coref.PLACE_ADJECTIVES)})"
MODIFIER = f"(?:(?:{_alternatives(coref.MODIFIERS)}) )?"
CLAUSE_A = (
    f"the {MODIFIER}(?P<first>{NOUN}) (?P<verb>{_alternatives(coref.VERBS)}) "
    f"the {MODIFIER}(?P<second>{NOUN})"
)
CLAUSE_B = (
    f"it (?:{_alternatives(coref.LINKS)}) (?:(?:{_alternatives(coref.INTENSIFIERS)}) )?"
    f"(?P<adjective>{ADJECTIVE})"
)


def parse(sentence: str) -> tuple[str, str, str, str, str]:
    """(verb, arrangement, first noun, second noun, adjective) of a sentence of the grammar."""
    for arrangement in coref.ARRANGEMENTS:
        body = " ".join(
            {"A": CLAUSE_A, "B": CLAUSE_B}.get(part, part)
            for part in arrangement.split()
            if part != ";"
        )
        pattern = (
            f"(?:(?:{_alternatives(coref.PREFIXES)}) )?{body}"
            f"(?: (?:{_alternatives(coref.SUFFIXES)}))?"
        )
        match = re.fullmatch(pattern, sentence)
        if match:
            return (
                match["verb"],
                arrangement,
                match["first"],
                match["second"],
                match["adjective"],
            )
    raise AssertionError(f"not a sentence of the grammar: {sentence}")


@pytest.fixture(scope="module")
def made() -> coref.Sentences:
    return coref.sentences(3000)


@pytest.mark.slow
def test_every_sentence_is_of_the_grammar_and_its_answer_is_the_adjectives_noun(
    made: coref.Sentences,
) -> None:
    vocabulary = coref.vocabulary()
    templates = coref.templates()
    for row in range(len(made.ids)):
        words = made.words(row)
        verb, arrangement, first, second, adjective = parse(" ".join(words))
        assert templates[made.template[row]] == (verb, arrangement)
        assert {first, second} & set(coref.ANIMALS) and {first, second} & set(coref.PLACES)
        referent = (
            first if (first in coref.ANIMALS) == (adjective in coref.ANIMAL_ADJECTIVES) else second
        )
        assert words[made.answer[row]] == referent
        assert words[made.focus[row]] == "it" and words.count("it") == 1
        assert made.animal_first[row] == (first in coref.ANIMALS)
        assert (made.ids[row, made.lengths[row] :] == coref.PAD).all()
        assert all(word in vocabulary for word in words)


def test_lengths_8_to_16_come_equally_often(made: coref.Sentences) -> None:
    counts = Counter(made.lengths.tolist())
    assert sorted(counts) == list(range(coref.MIN_WORDS, coref.MAX_WORDS + 1))
    expected = len(made.ids) / len(counts)
    assert all(abs(count - expected) < 0.2 * expected for count in counts.values()), counts


def test_position_cannot_answer(made: coref.Sentences) -> None:
    """Both noun orders, "it" before and after the nouns, the answer at many positions, and at
    each position as often the first noun as the second."""
    assert 0.45 < made.animal_first.mean() < 0.55
    it_first = made.focus < made.answer
    assert 0.4 < it_first.mean() < 0.6
    positions = Counter(made.answer.tolist())
    assert len(positions) >= 10
    # The answer is the first noun about as often as the second, for every length.
    vocabulary = coref.vocabulary()
    nouns = np.isin(made.ids, [vocabulary.index(w) for w in coref.ANIMALS + coref.PLACES])
    first_noun = nouns.argmax(axis=1)
    for length in range(coref.MIN_WORDS, coref.MAX_WORDS + 1):
        rows = made.lengths == length
        share = (made.answer[rows] == first_noun[rows]).mean()
        assert 0.35 < share < 0.65, (length, share)


def test_the_nouns_roles_are_swapped_in_the_same_templates(made: coref.Sentences) -> None:
    """Every template is drawn with the animal first and with the place first."""
    both = {
        template
        for template in set(made.template.tolist())
        if made.animal_first[made.template == template].any()
        and (~made.animal_first[made.template == template]).any()
    }
    assert len(both) >= 0.9 * len(set(made.template.tolist()))


@pytest.mark.slow
def test_held_out_templates_and_pairs_are_never_trained_on() -> None:
    task = tasks.coref()
    vocabulary = task.vocabulary

    def sentences(examples: tasks.Examples) -> set[str]:
        assert examples.lengths is not None
        return {
            " ".join(vocabulary[i] for i in row[:length])
            for row, length in zip(examples.ids, examples.lengths, strict=True)
        }

    trained, held = sentences(task.train), sentences(task.held_out)
    assert not trained & held
    held_templates = {coref.templates()[i] for i in coref.held_templates()}
    for sentence in trained:
        verb, arrangement, first, second, adjective = parse(sentence)
        assert (verb, arrangement) not in held_templates
        kind = 0 if adjective in coref.ANIMAL_ADJECTIVES else 1
        referent = first if (first in coref.ANIMALS) == (kind == 0) else second
        nouns = (coref.ANIMALS, coref.PLACES)[kind]
        adjectives = (coref.ANIMAL_ADJECTIVES, coref.PLACE_ADJECTIVES)[kind]
        assert not coref.held_pair(nouns.index(referent), adjectives.index(adjective))
    # Every verb and every arrangement is trained in some template and held out in another.
    assert {verb for verb, _ in held_templates} == set(coref.VERBS)
    assert {arrangement for _, arrangement in held_templates} == set(coref.ARRANGEMENTS)
    # Held-out templates hold sentences of every length.
    parts = dict(task.groups)
    lengths = task.held_out.lengths
    assert lengths is not None
    never = parts["templates never trained on"]
    assert set(lengths[never].tolist()) == set(range(coref.MIN_WORDS, coref.MAX_WORDS + 1))


def test_the_seeds_two_sentences_are_held_out_pairs() -> None:
    assert coref.held_pair(coref.ANIMALS.index("animal"), coref.ANIMAL_ADJECTIVES.index("tired"))
    assert coref.held_pair(coref.PLACES.index("street"), coref.PLACE_ADJECTIVES.index("wide"))
    task = tasks.coref()
    (tired, wide) = task.probes
    assert " ".join(tired.words) == coref.TIRED and tired.words[tired.answer] == "animal"
    assert " ".join(wide.words) == coref.WIDE and wide.words[wide.answer] == "street"


def test_the_same_seed_gives_the_same_sentences() -> None:
    first, second = coref.sentences(500), coref.sentences(500)
    np.testing.assert_array_equal(first.ids, second.ids)  # integers: the same draws
    assert not np.array_equal(coref.sentences(500, seed=1).ids, first.ids)


def test_the_word_readout_names_the_referent_among_the_nouns() -> None:
    task = tasks.coref(Readout.WORD)
    held = task.held_out
    rows = np.arange(len(held.ids))
    pointer = tasks.coref(Readout.POINTER).held_out
    referents = held.ids[rows, pointer.targets]
    assert [task.classes[c] for c in held.targets] == [task.vocabulary[i] for i in referents]


def test_the_check_sample_is_part_of_the_held_out_examples() -> None:
    task = tasks.coref()
    assert task.checked is not None and len(set(task.checked.tolist())) == len(task.checked)
    check = task.check
    np.testing.assert_array_equal(check.ids, task.held_out.ids[task.checked])
    assert task.lengths == (coref.MIN_WORDS, coref.MAX_WORDS)
