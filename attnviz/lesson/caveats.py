"""Sentences about what attention weights do and do not show, said the same way wherever a
model's row is interpreted: the focus view, heatmap captions, the page, the notebook, ``demo``,
``compare``, ``heads --ablate``. Each is true of any trained model's weights, whatever the numbers;
for attnviz's toy models, the pictures also say whether a row is the model's answer
(readout_note).
"""

from __future__ import annotations

from collections.abc import Sequence

from attnviz.errors import listed


def attention_caveat(word: str) -> str:
    """The caution beside a trained model's row for ``word`` (printed as given, already
    made printable by the caller): a weight says where the vector reads from, not why, and
    weight and effect need not coincide (Jain & Wallace 2019; Wiegreffe & Pinter 2019). True of
    attnviz's pointer-readout toy model too, whose last layer's row is its answer by design."""
    return (
        f"A caution: a high weight shows where the vector of {word} reads information from in "
        f"one head, not why. Unless the model was built to answer with that very row (as a "
        f"pointer readout is), it does not show that the model has resolved what {word} refers "
        "to: the other heads and layers mix that information further, and a head with large "
        "weights can change the output little when it is removed (Jain & Wallace 2019, "
        '"Attention is not Explanation"; Wiegreffe & Pinter 2019, "Attention is not not '
        'Explanation").'
    )


def mixtures(*, causal: bool, brief: bool = False) -> str:
    """From layer 2 on, a row mixes vectors that earlier layers already mixed (Abnar & Zuidema
    2020): the whole sentence, or under a causal mask the words up to each one."""
    mixed = (
        "already mix the words up to their own (under the causal mask, row i of a layer reads "
        "words 1 to i only)"
        if causal
        else "already mix the whole sentence"
    )
    if brief:
        return (
            f"From layer 2 on, each row's words are the outputs of the layers below: vectors that "
            f"{mixed}, not the words themselves."
        )
    return (
        f"From layer 2 on, each row's words are the outputs of the layers below: vectors that "
        f"{mixed} and, through the residual connection, keep part of their own word; not the "
        "words themselves."
    )


def brief_attention_caveat(word: str) -> str:
    """attention_caveat in two sentences, for the lesson's short form."""
    return (
        f"A caution: a high weight shows where the vector of {word} reads from in one head, not "
        "why. Unless the model answers with that very row (as a pointer readout does), it does "
        f"not show that the model has resolved {word} (Jain & Wallace 2019; Wiegreffe & Pinter "
        "2019)."
    )


def short_attention_caveat() -> str:
    """attention_caveat in one sentence, for a picture's caption, where no single word is
    interpreted: attention shows where vectors read from, not why, nor what matters."""
    return (
        "A caution: attention shows where each word's vector reads information from, not why, "
        "and a head with large weights can change the output little when it is removed "
        "(Jain & Wallace 2019; Wiegreffe & Pinter 2019)."
    )


def readout_note(
    readout: str | None, words: Sequence[str], n_heads: int = 1, *, present: bool = True
) -> str | None:
    """What a toy model's answer is, for a picture's caption, from how it was trained to give
    it (``readout``, attnviz.provenance.READOUTS) at ``words`` ("it"); None for any other model.
    ``present``: whether the sentence shown has one of those words.

    A pointer readout's last layer was trained so that its row of the word IS the answer: the
    word that row weighs most is the answer by construction, not something the picture
    discovers. A word or token readout names its answer with an output layer, and no row was
    trained to look at it.

    >>> print(readout_note("pointer", ["it"]))  # doctest: +NORMALIZE_WHITESPACE
    The last layer's row of "it" is the model's answer, because it was trained to point: the
    word it weighs most there is the answer by construction, not a discovery.
    """
    asked = listed(words, " or ", form='"{}"'.format) or "the word asked about"
    if readout in ("pointer", "word") and not present:
        return f"The model answers at {asked}; this sentence has none, so no row here is an answer."
    if readout == "pointer":
        row = "The last layer's row" if n_heads == 1 else "Head 1's row in the last layer"
        return (
            f"{row} of {asked} is the model's answer, because it was trained to point: the word "
            "it weighs most there is the answer by construction, not a discovery."
        )
    if readout == "word":
        return (
            f"The model's answer is named by an output layer reading the last layer's vector at "
            f"{asked}; no attention row was trained to be the answer, so where {asked} looks "
            "need not be it."
        )
    if readout == "token":
        return (
            "The model's answers are named by an output layer at every position; no attention "
            "row was trained to be an answer, so where a word looks need not be it."
        )
    return None
