"""What a figure's title and caption say: the sentence, whether the drawn rows sum to 1 (or
which hidden tokens took weight), where the weights came from and what a toy model's answer is;
a title of at most two lines, the rest in the caption (FigureText)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.lesson.caveats import readout_note
from attnviz.provenance import WeightsKind, WeightsOrigin
from attnviz.render.figures.captions import caption_lines
from attnviz.render.figures.fonts import CHAR_WIDTH, text_width, truncate, truncate_words
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

#: A row of float32 weights sums to 1 within about 1e-6; a total further off than this has
#: lost weight to hidden columns.
ROW_SUM_TOLERANCE = 1e-4


def sentence_text(tokens: Sequence[str]) -> str:
    """The tokens joined back into a sentence: a space between words, none before punctuation.

    >>> sentence_text(["I", "am", "good", "."])
    'I am good.'
    """
    pieces: list[str] = []
    for token in tokens:
        glued = len(token) == 1 and token in ".,;:!?)]}%…’”»"
        pieces.append(token if glued or not pieces else " " + token)
    return printable("".join(pieces))


def pack_phrases(phrases: Sequence[str], max_chars: int, separator: str = "; ") -> list[str]:
    """Lines of at most ``max_chars`` characters, breaking only between phrases, so "d_k 4" is
    never split across lines; a phrase longer than a line is broken after a comma, else
    between words (fit_words), so a caveat such as "not a trained model" is never cut.

    >>> pack_phrases(["d_model 8", "2 heads", "d_k 4"], 20)
    ['d_model 8; 2 heads', 'd_k 4']
    >>> pack_phrases(["random weights (seed 0), not a trained model"], 30)
    ['random weights (seed 0),', 'not a trained model']
    """
    lines: list[str] = []
    for phrase in phrases:
        joined = lines[-1] + separator + phrase if lines else phrase
        if lines and len(joined) <= max_chars:
            lines[-1] = joined
        elif len(phrase) <= max_chars:
            lines.append(phrase)
        else:
            lines.extend(fit_words(phrase, max_chars))
    return lines


def fit_words(phrase: str, max_chars: int) -> list[str]:
    """``phrase`` in lines of at most ``max_chars`` characters: broken after its commas where
    the parts fit, else between words; only a single word longer than a line is cut (…).

    >>> fit_words("weights of a model, not a trained model", 12)
    ['weights of a', 'model, not a', 'trained', 'model']
    """
    parts = [part + "," for part in phrase.split(", ")]
    parts[-1] = parts[-1][:-1]
    if all(len(part) <= max_chars for part in parts):
        return pack_phrases(parts, max_chars, separator=" ")
    lines: list[str] = []
    for part in parts:
        for word in part.split(" "):
            joined = f"{lines[-1]} {word}" if lines else word
            if lines and len(joined) <= max_chars:
                lines[-1] = joined
            else:
                lines.append(truncate(word, max_chars))
    return lines


def weights_phrase(origin: WeightsOrigin, *, with_layer: bool = True) -> str:
    """Where the weights came from, for a title: random ones are said to be random."""
    if origin.kind is WeightsKind.RANDOM:
        return f"random weights (seed {origin.seed}), not a trained model"
    described = printable(origin.describe(with_layer=with_layer))
    if origin.is_drawn:
        return f"weights {described} (random, seed {origin.seed}), not a trained model"
    if origin.is_random:
        return f"weights {described}, not a trained model"
    return f"weights {described}"


def shown_row_sums(weights: FloatArray, selection: Selection) -> FloatArray:
    """Each row's total as drawn: [h, n_q, n_k] -> [h, rows]. A word's row is the mean of its
    pieces' rows and its column the sum of its pieces' columns, so merging keeps a total of 1;
    a hidden column ([CLS], [SEP]) takes its weight out of every row's total."""
    return np.stack([selection.pairs(head, total=True).sum(axis=1) for head in weights])


def hidden_taking_weight(
    weights: FloatArray, selection: Selection, tokens: Sequence[str]
) -> list[str]:
    """The hidden tokens that receive weight in the shown heads' rows ([CLS], [SEP]), not the
    masked padding, which receives none.  weights: [..., n_q, n_k]"""
    return [
        tokens[position]
        for position in selection.hidden
        if float(weights[..., position].max(initial=0.0)) > 0
    ]


def masked_shown(masked: np.ndarray, selection: Selection) -> bool:
    """Whether any cell drawn is masked (hidden padding columns are not drawn)."""
    return bool(masked.any() and selection.masked_pairs(masked).any())


def row_sums_phrase(row_sums: FloatArray, hidden: Sequence[str]) -> str:
    """What the drawn rows of weights add up to, for a title: "each row sums to 1" when every
    total in ``row_sums`` [...] does (within ROW_SUM_TOLERANCE); otherwise which ``hidden``
    tokens took part of it, e.g. "[CLS]/[SEP] hidden: rows sum to less than 1"."""
    if np.all(np.abs(row_sums - 1.0) <= ROW_SUM_TOLERANCE):
        return "each row sums to 1"
    names = "/".join(dict.fromkeys(printable(token) for token in hidden))
    return f"{names} hidden: rows sum to less than 1" if names else "rows sum to less than 1"


def pieces_text(trace: AttentionTrace) -> str:
    """The sentence a trace's tokens came from, for a title: a model's words as the tokenizer
    grouped its pieces, special tokens left out; attnviz's own tokens joined as a sentence."""
    provenance = trace.provenance
    if provenance.sentence:
        return printable(provenance.sentence)
    if not provenance.word_groups:
        kept = [t for i, t in enumerate(trace.tokens) if i not in provenance.special]
        return sentence_text(kept or trace.tokens)
    special = set(provenance.special)
    words = [
        word
        for word, group in zip(provenance.words, provenance.word_groups, strict=True)
        if not special.issuperset(group)
    ]
    return printable(" ".join(words)) if words else sentence_text(trace.tokens)


def readout_sentences(
    origin: WeightsOrigin, n_heads: int, tokens: Sequence[str] | None = None
) -> tuple[str, ...]:
    """What a toy model's answer is (attnviz.lesson.caveats.readout_note), for a caption:
    one sentence for attnviz's toy models, none for any other weights. ``tokens``: the
    sentence shown, when it may lack the word the model answers at."""
    present = tokens is None or any(word in tokens for word in origin.answers_at)
    note = readout_note(origin.readout, origin.answers_at, n_heads, present=present)
    return () if note is None else (note,)


def fit_chars(make: Callable[[int], str], inches: float, font: float) -> str:
    """``make(max_chars)``, a text cut to a number of characters, for the largest count whose
    text FreeType measures within ``inches`` at ``font`` points (the count starts from an
    average glyph's width and shrinks while the text is too wide)."""
    chars = max(int(inches * 72 / (CHAR_WIDTH * font)), 2)
    text = make(chars)
    while chars > 2 and text_width(text, font) > inches:
        chars -= max(1, chars // 20)
        text = make(chars)
    return text


@dataclass(frozen=True)
class FigureText:
    """What a figure says in words, before it is fitted to its room: the sentence and the
    phrases saying what is drawn make a title of at most two lines; the phrases that do not fit
    the second line, the facts and the notes make its caption.
    """

    sentence: Callable[[int], str]  # the title's first line cut to a number of characters
    about: tuple[str, ...]  # the title's second line, each phrase kept whole or moved on
    facts: tuple[str, ...] = ()  # the caption's first paragraph: short phrases joined by "; "
    notes: tuple[str, ...] = ()  # the caption's sentences: a readout, formulas, a caution

    def title(self, inches: float, font: float) -> list[str]:
        """The sentence cut to ``inches`` at ``font`` points, and on a second line the phrases
        of ``about`` that fit it, in their order."""
        shown = self._about_split(inches, font)[0]
        return [fit_chars(self.sentence, inches, font), *(["; ".join(shown)] if shown else [])]

    def caption(self, title: tuple[float, float], inches: float, font: float) -> list[str]:
        """The caption's lines, ``inches`` wide at ``font`` points, under a title of ``title``
        (its inches and points): the phrases the title left out and the facts as one
        paragraph, then each note as its own."""
        phrases = [*self._about_split(*title)[1], *self.facts]
        facts = [capitalised("; ".join(phrases)) + "."] if phrases else []
        return caption_lines([*facts, *self.notes], inches, font)

    def _about_split(self, inches: float, font: float) -> tuple[list[str], list[str]]:
        """The phrases of ``about`` on the title's second line, and those left for the caption."""
        shown: list[str] = []
        left_out: list[str] = []
        for phrase in self.about:
            if text_width("; ".join([*shown, phrase]), font) <= inches:
                shown.append(phrase)
            else:
                left_out.append(phrase)
        return shown, left_out


def capitalised(text: str) -> str:
    """``text`` with its first letter capitalised when its first word is a plain lowercase
    word ("each row sums to 1"), not a name such as d_model or softmax(Q·Kᵀ).

    >>> capitalised("each row sums to 1"), capitalised("d_model 8, 2 heads")
    ('Each row sums to 1', 'd_model 8, 2 heads')
    """
    first = text.split(" ", 1)[0].rstrip(":,;")
    return text[:1].upper() + text[1:] if first.isalpha() and first.islower() else text


def quoted_sentence(text: str) -> Callable[[int], str]:
    """The title's first line: “text”, cut at a space to a number of characters."""
    return lambda max_chars: truncate_words(f"“{text}”", max_chars)
