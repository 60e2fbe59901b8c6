"""The toy models attnviz ships, one folder each in attnviz/model/sources/trained, read without the
model code: enough for a lesson with random weights to say that a shipped model was trained
for its sentence, at no cost to the start-up of ``attnviz explain``."""

from __future__ import annotations

import json
import string
from pathlib import Path

#: Where the toy models attnviz ships are, one folder each.
SHIPPED = Path(__file__).resolve().parent / "trained"
#: What a word may begin or end with and still be looked up: the punctuation is dropped.
PUNCTUATION = string.punctuation + "“”‘’«»…—–"


def toy_words(sentence: str) -> list[str]:
    """The sentence as a toy model reads it: split at spaces, punctuation at either end of a
    word dropped (a word of punctuation alone with it), lowercased."""
    return [word.lower() for piece in sentence.split() if (word := piece.strip(PUNCTUATION))]


def trained_for(sentence: str, name: str = "coref") -> bool:
    """Whether the shipped model ``name`` reads ``sentence`` as the task it was trained on:
    every word in its vocabulary, one of the words its task asks about ("it"), and no more
    words than it has positions. False when its folder cannot be read."""
    try:
        config = json.loads((SHIPPED / name / "config.json").read_text(encoding="utf-8"))
        vocabulary = set(config["vocabulary"])
        focus = {probe["words"][probe["focus"]] for probe in config["probes"]}
        longest = int(config["max_positions"])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False
    words = toy_words(sentence)
    return 0 < len(words) <= longest and set(words) <= vocabulary and bool(focus & set(words))
