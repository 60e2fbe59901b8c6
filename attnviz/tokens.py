"""Sentence -> tokens, and finding the focus word among them.

Tokens are words and punctuation marks. A word is a run of letters or digits that may contain
apostrophes, so contractions stay one word: "didn't" is one token, as is "it's". Hyphens and
every other punctuation mark are tokens of their own: "well-known" is "well", "-", "known".
Case is kept for display; matching a focus word ignores case and Unicode's spelling of a
character (word_key). The sentence is first put in Unicode NFC form, and combining marks,
zero-width joiners and emoji modifiers stay attached to the character before them, so "é"
written as e + U+0301, "👍🏽", "👨‍👩‍👧" and the flag "🇫🇷" are one token each.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from attnviz.arguments import digits, sentences
from attnviz.config import MAX_TOKENS
from attnviz.errors import AttnvizError, clipped, listed, option

#: Longest sentence attnviz accepts, in characters: MAX_TOKENS words of some 40 characters. Every
#: view prints the words several times over, so work and output grow with the length; a pasted
#: megabyte is refused at once rather than printed for a minute.
MAX_SENTENCE_CHARS = 20_000

# A word: letters/digits/underscore, optionally joined by a straight or curly apostrophe.
# Anything else that is not whitespace is a one-character punctuation token.
_TOKEN = re.compile(r"\w+(?:['\u2019]\w+)*|[^\w\s]")


def tokenize(sentence: str) -> list[str]:
    """Split ``sentence`` into word and punctuation tokens, keeping case.

    >>> tokenize("The animal didn't cross the street.")
    ['The', 'animal', "didn't", 'cross', 'the', 'street', '.']
    """
    sentences(sentence=sentence)
    check_sentence_length(sentence)
    tokens = _join_marks(_TOKEN.findall(unicodedata.normalize("NFC", sentence)))
    if not tokens:
        raise AttnvizError('The sentence is empty; give some words, e.g. "I am good".')
    return check_token_count(tokens)


def word_key(word: str) -> str:
    """A word as a focus word is matched against the sentence's: in Unicode NFC form (as
    tokenize puts the sentence) and case-folded, so "café" typed with a combining accent
    (e + U+0301, NFD), "CAFÉ" and "café" are one word, and a model's pieces of a decomposed
    sentence match a composed focus word. Compatibility forms (NFKC) stay apart — "x²" is not
    "x2", "①" is not "1" — but for what case folding itself unfolds: "ﬁ" matches "fi", "ß"
    matches "ss". NFC(casefold(NFC(w))): the fold of a composed letter can decompose ("ǰ")."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", word).casefold())


def _attaches_to_previous(token: str, previous: str) -> bool:
    """True for marks that belong to the character before: combining marks, ZWJ sequences,
    variation selectors, emoji skin-tone modifiers (U+1F3FB–U+1F3FF), and the second letter
    of a flag (two regional indicators, 🇫 + 🇷 = 🇫🇷)."""
    if previous.endswith("\u200d"):
        return True
    char = token[0]
    return (
        unicodedata.category(char).startswith("M")
        or char == "\u200d"
        or "\U0001f3fb" <= char <= "\U0001f3ff"
        or (
            _is_regional_indicator(char) and _is_regional_indicator(previous) and len(previous) == 1
        )
    )


def _is_regional_indicator(text: str) -> bool:
    return "\U0001f1e6" <= text[-1] <= "\U0001f1ff"


def _join_marks(pieces: list[str]) -> list[str]:
    tokens: list[str] = []
    for piece in pieces:
        if tokens and _attaches_to_previous(piece, tokens[-1]):
            tokens[-1] += piece
        else:
            tokens.append(piece)
    return tokens


def check_sentence_length(sentence: str) -> None:
    """Refuse a sentence longer than MAX_SENTENCE_CHARS characters, before any work."""
    if len(sentence) > MAX_SENTENCE_CHARS:
        raise AttnvizError(
            f"The sentence has {len(sentence):,} characters; attnviz takes at most "
            f"{MAX_SENTENCE_CHARS:,}. Shorten it."
        )


def check_token_count(
    tokens: Sequence[str], what: str = "The sentence has", fix: str = "Shorten it."
) -> list[str]:
    """Refuse an empty token list, one longer than MAX_TOKENS, or tokens longer together than
    MAX_SENTENCE_CHARS characters; return the tokens as a list. ``what`` begins the refusal of
    too many and ``fix`` ends it (cross-attention's pair is counted together)."""
    if len(tokens) == 0:
        raise AttnvizError('The sentence is empty; give some words, e.g. "I am good".')
    if len(tokens) > MAX_TOKENS:
        raise AttnvizError(
            f"{what} {len(tokens)} tokens; attnviz takes at most {MAX_TOKENS}. {fix}"
        )
    check_sentence_length("".join(str(token) for token in tokens))
    return list(tokens)


@dataclass(frozen=True)
class Focus:
    """Which token the focus views follow, and how it was chosen."""

    index: int  # position of the focus token in the sentence, from 0
    word: str  # the token as it appears in the sentence
    occurrence: int  # 1 for the first time the word occurs, 2 for the second, ...
    n_occurrences: int  # how many times the word occurs in the sentence

    @property
    def label(self) -> str:
        """The word, with its occurrence when it is ambiguous: ``it`` or ``it:2``."""
        return self.word if self.n_occurrences == 1 else f"{self.word}:{self.occurrence}"


def find_focus(tokens: Sequence[str], spec: str, *, words: Sequence[tuple[int, str]] = ()) -> Focus:
    """Find the token named by ``spec``: ``WORD`` (first occurrence) or ``WORD:N`` (N-th).

    Matching ignores case and compares words in NFC form (word_key). ``words`` are (position,
    word) pairs for a tokenizer that splits words into pieces: a word that is no token is looked
    for there, at its first piece's position. Raises AttnvizError naming the sentence's words
    when it is absent.
    """
    spec = unicodedata.normalize("NFC", spec)  # as the sentence: "café" typed as e + U+0301
    word, occurrence = spec, 0
    head, sep, tail = spec.rpartition(":")
    if sep and head and digits(tail):  # ASCII only: int("²") fails, int("١") is 1
        if len(tail) > len(str(MAX_TOKENS)):  # before int(), which refuses 4,300 digits
            raise AttnvizError(
                f"{option('focus', spec)}: a sentence has at most {MAX_TOKENS} tokens, so no "
                f"word occurs that often; use e.g. {option('focus', head + ':1')}."
            )
        word, occurrence = head, int(tail)
        if occurrence < 1:
            raise AttnvizError(
                f"{option('focus', spec)}: occurrences are numbered from 1, as in {head}:1."
            )
    if not word.strip():
        raise AttnvizError(
            f"{option('focus')} is empty; name a word of the sentence, e.g. "
            f"{option('focus', 'it')}."
        )
    key = word_key(word)
    positions = [i for i, token in enumerate(tokens) if word_key(token) == key]
    if not positions:
        # A word a model's tokenizer split into pieces ("token", "##ization"): match the word,
        # follow its first piece.
        positions = [start for start, whole in words if word_key(whole) == key]
    if not positions:
        raise AttnvizError(
            f"The focus word {clipped(word)!r} is not in the sentence; pick one of its words: "
            f"{listed(tokens, ' ')}"
        )
    if occurrence > len(positions):
        times = "once" if len(positions) == 1 else f"{len(positions)} times"
        fix = f"drop ':{occurrence}'" if len(positions) == 1 else f"use 1 to {len(positions)}"
        raise AttnvizError(
            f"{clipped(word)!r} occurs {times}; {option('focus', f'{word}:{occurrence}')} asks for "
            f"occurrence {occurrence}: {fix}."
        )
    chosen = max(occurrence, 1)
    index = positions[chosen - 1]
    return Focus(index=index, word=tokens[index], occurrence=chosen, n_occurrences=len(positions))


def default_focus(tokens: Sequence[str]) -> Focus | None:
    """The focus when none is given: "it" if the sentence has it (first occurrence), else none."""
    if any(word_key(token) == "it" for token in tokens):
        return find_focus(tokens, "it")
    return None


def printable(text: str) -> str:
    """``text`` with control characters shown as visible escapes, safe to print to a terminal.

    ESC, BEL, backspace, carriage return, NUL and every other control or format character
    (Unicode category C*) would otherwise act on the terminal instead of being seen: they become
    ``\\x1b``-style escapes. Rich markup needs no escaping here because the renderers print
    tokens as ``rich.text.Text``, which never parses markup.
    """
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() or char in _HARMLESS else char.encode("unicode_escape").decode()
        for char in text
    )


# A space, and the zero-width joiner that glues emoji sequences such as 👨‍👩‍👧 together.
_HARMLESS = frozenset(" \u200d")
