"""What a figure's title says, in phrases packed into lines: the sentence, whether the drawn
rows sum to 1 (or which hidden tokens took weight), and where the weights came from."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.provenance import WeightsKind, WeightsOrigin
from attnviz.render.figures.fonts import truncate
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
