"""The coref task's sentences: "it" is one of two nouns, and only the adjective says which.

    the animal didn't cross the street because it was too tired    -> "it" is the animal
    the animal didn't cross the street because it was too wide     -> "it" is the street

Position must not be able to answer, so the sentences vary everything but the adjective's kind:

- both noun orders in the same templates (the animal first, or the place first), and so the
  nouns' grammatical roles swapped too ("the road didn't cross the dog because it was tired");
- "it" after both nouns ("… because it was tired") or before them ("because it was tired the
  dog didn't cross the road", "it was tired, so the dog …");
- optional words that move the nouns: a modifier before a noun (old, little, big), an
  intensifier before the adjective (really, very, far too, …), a short clause at either end
  (that night, in the end, again, …), verbs of one to four words (avoided, was never reached by);
- every length from MIN_WORDS to MAX_WORDS words, each length equally often, so that every
  learned position is trained.

A template is a verb and an arrangement of the two clauses ("A because B", "since B, A", …).
Held out, never trained on: whole templates (every HELD_TEMPLATE_EVERY-th (verb, arrangement)
pair, on a diagonal so that every verb and every arrangement is still trained in others, and
sentences of every length are among them), and
every (referent, adjective) pair with (i + j) mod 4 = 0, i the referent's index among its kind
and j the adjective's: the seeds' two sentences (animal + tired, street + wide) among them.

The data come from their own seeded generator (DATA_SEED), not the training seed: every run
is measured on the same held-out sentences.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np

# Twelve of each: with fewer, a model can learn each (noun, adjective) pair it is shown instead
# of which kind of noun an adjective fits, and then misses pairs it never saw.
ANIMALS = (
    "animal", "dog", "cat", "horse", "cow", "fox", "goat", "sheep", "mouse", "deer", "bear",
    "rabbit",
)  # fmt: skip
PLACES = (
    "street", "road", "river", "bridge", "field", "square", "lane", "path", "park", "yard",
    "track", "hill",
)  # fmt: skip
ANIMAL_ADJECTIVES = (
    "tired", "hungry", "scared", "sleepy", "weak", "lazy", "sick", "nervous", "thirsty",
    "injured", "frightened", "exhausted",
)  # fmt: skip
PLACE_ADJECTIVES = (
    "wide", "busy", "crowded", "muddy", "narrow", "icy", "steep", "flooded", "slippery",
    "blocked", "deep", "dusty",
)  # fmt: skip

TIRED = "the animal didn't cross the street because it was too tired"
WIDE = "the animal didn't cross the street because it was too wide"

MIN_WORDS, MAX_WORDS = 8, 16
DATA_SEED = 2017  # the year of "Attention Is All You Need"
HELD_TEMPLATE_EVERY = 6

# Each part is a list of options, each option its words. "" is the option of no words.
PREFIXES = ("", "yesterday", "sadly", "that night", "one morning", "last winter", "in the end")
SUFFIXES = ("", "again", "today", "that day", "at night", "last week")
MODIFIERS = ("", "old", "little", "big")
# {1} and {2}: the first and the second noun phrase.
VERBS = (
    "didn't cross",
    "didn't enter",
    "couldn't reach",
    "avoided",
    "never crossed",
    "left",
    "wouldn't enter",
    "feared",
    "wasn't crossed by",
    "was avoided by",
    "was never reached by",
    "was left by",
)
LINKS = ("was", "seemed", "looked", "had been")
INTENSIFIERS = ("", "too", "so", "very", "really", "rather", "really too", "far too", "so very")
# A: "the {1} VERB the {2}"; B: "it LINK INTENSIFIER ADJECTIVE". ";" joins two clauses with no
# word between them (the toy tokenizer drops punctuation), as a semicolon or a comma would.
ARRANGEMENTS = (
    "A because B",
    "A since B",
    "A as B",
    "A when B",
    "A ; B",
    "because B A",
    "since B A",
    "as B A",
    "when B A",
    "B so A",
    "B ; A",
)


@dataclass(frozen=True, eq=False)
class Sentences:
    """Sentences of the task as word ids, with what each must answer and how it was made."""

    ids: np.ndarray  # [N, MAX_WORDS] ids into vocabulary(); PAD after a sentence's last word
    lengths: np.ndarray  # [N] words in each sentence
    answer: np.ndarray  # [N] the position of the referent
    focus: np.ndarray  # [N] the position of "it"
    template: np.ndarray  # [N] index into templates(): (verb, arrangement)
    held_template: np.ndarray  # [N] bool: its template is held out
    held_pair: np.ndarray  # [N] bool: its (referent, adjective) pair is held out
    animal_first: np.ndarray  # [N] bool: the animal is the first noun of the sentence

    def words(self, row: int) -> tuple[str, ...]:
        """Sentence ``row`` as words."""
        known = vocabulary()
        return tuple(known[i] for i in self.ids[row, : self.lengths[row]])

    def take(self, rows: np.ndarray) -> Sentences:
        """Only these rows ([k] indices or [N] bool)."""
        return Sentences(*(getattr(self, name)[rows] for name in self.__dataclass_fields__))


def templates() -> tuple[tuple[str, str], ...]:
    """Every (verb, arrangement), in a fixed order."""
    return tuple(product(VERBS, ARRANGEMENTS))


def held_templates() -> frozenset[int]:
    """The templates never trained on: a diagonal of the verb × arrangement grid, so that each
    verb and each arrangement is held out in one or two templates and trained in the rest."""
    return frozenset(
        index
        for index, (verb, arrangement) in enumerate(templates())
        if (VERBS.index(verb) + ARRANGEMENTS.index(arrangement)) % HELD_TEMPLATE_EVERY == 3
    )


def held_pair(referent_index: int, adjective_index: int) -> bool:
    """Whether a (referent, adjective) pair is held out: (i + j) mod 4 = 0."""
    return (referent_index + adjective_index) % 4 == 0


def vocabulary() -> tuple[str, ...]:
    """Every word a sentence may hold: the others sorted, then the nouns and adjectives."""
    parts = (PREFIXES, SUFFIXES, MODIFIERS, VERBS, LINKS, INTENSIFIERS)
    others = {word for part in parts for option in part for word in option.split()}
    others |= {"the", "it", "because", "since", "as", "when", "so"}
    return (*sorted(others), *ANIMALS, *PLACES, *ANIMAL_ADJECTIVES, *PLACE_ADJECTIVES)


def _lengths(options: tuple[str, ...]) -> np.ndarray:
    return np.array([len(option.split()) for option in options])


def _arrangement_lengths() -> np.ndarray:
    """The words an arrangement adds of its own: its joining word, if any."""
    return np.array([len(a.split()) - 2 - (";" in a.split()) for a in ARRANGEMENTS])


#: The parts whose length varies, in the order they are drawn; the fixed words are "the" twice,
#: the two nouns, "it" and the adjective.
FIXED_WORDS = 6


def _parts() -> list[np.ndarray]:
    return [
        _lengths(PREFIXES),
        _lengths(MODIFIERS),
        _lengths(VERBS),
        _lengths(MODIFIERS),
        _arrangement_lengths(),
        _lengths(LINKS),
        _lengths(INTENSIFIERS),
        _lengths(SUFFIXES),
    ]


def _ways(parts: list[np.ndarray], most: int) -> np.ndarray:
    """ways[i, r]: how many choices of parts i, i+1, … have r words in all (r ≤ most)."""
    ways = np.zeros((len(parts) + 1, most + 1))
    ways[len(parts), 0] = 1
    for i in range(len(parts) - 1, -1, -1):
        for length in parts[i]:
            ways[i, length:] += ways[i + 1, : most + 1 - length]
    return ways


def _draw_parts(rng: np.random.Generator, lengths: np.ndarray) -> np.ndarray:
    """For each sentence a choice of every part such that it has ``lengths`` words, every such
    choice equally likely.  lengths: [N] -> [N, parts] option indices"""
    parts = _parts()
    remaining = lengths - FIXED_WORDS
    ways = _ways(parts, int(remaining.max()))
    chosen = np.empty((len(lengths), len(parts)), dtype=np.int64)
    for i, part in enumerate(parts):
        left = remaining[:, None] - part[None, :]  # [N, options]
        counts = np.where(left >= 0, ways[i + 1][np.clip(left, 0, None)], 0.0)
        cumulative = np.cumsum(counts, axis=1)
        pick = rng.random(len(lengths)) * cumulative[:, -1]
        chosen[:, i] = (cumulative <= pick[:, None]).sum(axis=1)
        remaining = remaining - part[chosen[:, i]]
    return chosen


#: The id after a sentence's last word, in a batch of sentences of several lengths (a key
#: mask keeps every word from reading it; any id would do).
PAD = 0


def _option_ids(options: tuple[str, ...], index: dict[str, int]) -> np.ndarray:
    """[options, most words] the options' word ids, −1 after each option's last word."""
    width = max(len(option.split()) for option in options)
    table = np.full((len(options), max(width, 1)), -1)
    for row, option in enumerate(options):
        for column, word in enumerate(option.split()):
            table[row, column] = index[word]
    return table


def sentences(count: int, seed: int = DATA_SEED) -> Sentences:
    """``count`` sentences, their lengths spread evenly over MIN_WORDS…MAX_WORDS, from ``seed``.

    Built for all sentences at once: each part's word ids side by side in the arrangement's
    order, with −1 where an option has fewer words than its part's longest, then the −1s moved
    to the end (a stable sort), so that building 20,000 sentences takes milliseconds."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(MIN_WORDS, MAX_WORDS + 1, size=count)
    chosen = _draw_parts(rng, lengths)
    prefix, mod_1, verb, mod_2, arrangement, link, intensifier, suffix = chosen.T
    animal = rng.integers(0, len(ANIMALS), size=count)
    place = rng.integers(0, len(PLACES), size=count)
    animal_first = rng.random(count) < 0.5
    place_referent = rng.random(count) < 0.5
    adjective = rng.integers(0, len(ANIMAL_ADJECTIVES), size=count)

    known = vocabulary()
    index = {word: i for i, word in enumerate(known)}
    animal_ids = np.array([index[w] for w in ANIMALS])[animal]
    place_ids = np.array([index[w] for w in PLACES])[place]
    first = np.where(animal_first, animal_ids, place_ids)[:, None]
    second = np.where(animal_first, place_ids, animal_ids)[:, None]
    adjective_ids = np.where(
        place_referent,
        np.array([index[w] for w in PLACE_ADJECTIVES])[adjective],
        np.array([index[w] for w in ANIMAL_ADJECTIVES])[adjective],
    )[:, None]
    referent_ids = np.where(place_referent, place_ids, animal_ids)

    def word(text: str) -> np.ndarray:
        return np.full((count, 1), index[text])

    def part(options: tuple[str, ...], picked: np.ndarray) -> np.ndarray:
        ids: np.ndarray = _option_ids(options, index)[picked]
        return ids

    clause_a = [word("the"), part(MODIFIERS, mod_1), first, part(VERBS, verb), word("the")]
    clause_a += [part(MODIFIERS, mod_2), second]
    clause_b = [word("it"), part(LINKS, link), part(INTENSIFIERS, intensifier), adjective_ids]
    ids = np.full((count, MAX_WORDS), PAD)
    for number, layout in enumerate(ARRANGEMENTS):
        rows = np.nonzero(arrangement == number)[0]
        pieces = [part(PREFIXES, prefix)]
        for name in layout.split():
            if name in ("A", "B"):
                pieces += clause_a if name == "A" else clause_b
            elif name != ";":
                pieces.append(word(name))
        pieces.append(part(SUFFIXES, suffix))
        laid = np.concatenate([piece[rows] for piece in pieces], axis=1)
        packed = np.take_along_axis(laid, np.argsort(laid < 0, axis=1, kind="stable"), axis=1)
        ids[rows] = np.where(packed[:, :MAX_WORDS] >= 0, packed[:, :MAX_WORDS], PAD)
    positions = np.arange(MAX_WORDS)
    inside = positions[None, :] < lengths[:, None]
    pairs = np.where(place_referent, place, animal)
    held = np.isin(verb * len(ARRANGEMENTS) + arrangement, sorted(held_templates()))
    return Sentences(
        ids=ids,
        lengths=lengths,
        answer=((ids == referent_ids[:, None]) & inside).argmax(axis=1),
        focus=((ids == index["it"]) & inside).argmax(axis=1),
        template=verb * len(ARRANGEMENTS) + arrangement,
        held_template=held,
        held_pair=(pairs + adjective) % 4 == 0,
        animal_first=animal_first,
    )
