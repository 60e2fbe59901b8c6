"""Sentences about what attention weights do and do not show, said the same way wherever a
model's row is interpreted: the focus view, heatmap captions, the page, the notebook, ``demo``,
``compare``, ``heads --ablate``. Each is true of any trained model's weights, whatever the numbers.
"""

from __future__ import annotations


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
