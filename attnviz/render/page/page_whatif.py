"""The page's "What if" mode, as data: X, W_Q, W_K, W_V and W_O of the layer the page opens on,
in full precision, for the page's script (whatif.js) to recompute every step from when a
student changes one of them, and every sentence the mode says.

    whatif_data(layers, start, selection, decimals, kept) -> dict

The numbers travel as JSON numbers written as their repr, the shortest text that reads back as
the same double: exact, every bit of each number, so the page's arithmetic starts from the
trace's own inputs, not from their shown decimals. The mode is
offered only where the page can redo the trace's arithmetic with the textbook path
(attnviz.attention.steps): random weights and attnviz's toy models, without rotary positions,
a latent or cross-attention, with every word piece shown as itself, and with at most
MAX_NUMBERS inputs (the page's size stays bounded); otherwise ``reason`` says why not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnviz.labels import format_number
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

#: The most numbers of X and the weights a page carries for the mode: at about 20 characters
#: each (a double's repr), 32,768 of them add about 650 kB to the page.
MAX_NUMBERS = 32_768
#: The largest number a student may type: far beyond any weight, small enough that no score
#: overflows float64.
LARGEST = 1e4
#: What attnviz's own toy models are called in their config.json (attnviz.model.families.toy).
TOY = "attnviz-toy"
#: The arrays the student may change, in the order the page shows them.
EDITABLE = ("X", "W_Q", "W_K", "W_V", "W_O")

#: What the mode says. The script fills each {name} and sets the text as text.
WHATIF_TEXT = {
    "whatIf": "What if",
    "whatIfTitle": "What if a number were different?",
    "intro": "Change any number of X or of a weight matrix: click it and type a number (Enter "
    "keeps it, Escape drops it), or drag it left or right. Everything computed from it follows "
    "at once: Q, K, V, the scores, the scaled scores, the weights, Z, Concat, the output, and "
    "the picture's lines, bars and weights.",
    "highlight": "Outlined: the numbers you changed; shaded: every number that changed with "
    "them (by more than 10⁻¹²).",
    "changedCount": "Numbers you changed: {edited}. Numbers that changed with them: {changed}.",
    "reset": "Reset every number",
    "chooseHead": "The steps from Q to Z happen in each head separately: choose a head to see "
    "and change them.",
    "notANumber": "Type a number, such as 0.5 or -1.2.",
    "tooLarge": "Keep numbers between −{largest} and {largest}.",
    "otherLayer": "What if changes {layer}, the layer the page opened on: choose it in the "
    "Layer menu.",
    "editLabel": "{matrix}, row {row}, column {column}: {value}",
    "X": "X: the input, a row per word",
    "W_Q": "W_Q of {head}",
    "W_K": "W_K of {head}",
    "W_V": "W_V of {head}",
    "Q": "Q = X·W_Q of {head}",
    "K": "K = X·W_K of {head}",
    "V": "V = X·W_V of {head}",
    "scores": "Scores = Q·Kᵀ of {head}",
    "scaled": "Scaled scores = scores / √d_k = scores / √{dK} of {head}",
    "weights": "Weights = softmax(scaled scores), each row, of {head}",
    "Z": "Z = weights·V of {head}",
    "concat": "Concat = [Z of head 1 | … | Z of head {heads}]",
    "W_O": "W_O",
    "output": "Output = Concat·W_O",
}


def whatif_data(
    layers: Sequence[AttentionTrace],
    start: int,
    selection: Selection,
    decimals: int,
    kept: Sequence[str],
) -> dict[str, Any]:
    """The mode's data for the page of ``layers`` opening on layer ``start``: its sentences, and,
    when the page can redo the trace's arithmetic, X, the weights (and biases), the mask and
    the sizes; else ``reason``, the sentence saying why not. ``kept``: what the page shows that
    the mode does not recompute (the lesson's steps, the contributions, …), named in words."""
    trace = layers[start]
    reason = unavailable(trace, selection)
    text = {**WHATIF_TEXT, "notRecomputed": not_recomputed(layers, trace, kept)}
    if trace.X.dtype == np.float32:
        text["precision"] = (
            "The model ran in float32; this mode computes in float64 from the same inputs, so "
            "a number here can differ from the lesson's in the digits beyond those shown."
        )
    if reason is not None:
        return {"available": False, "reason": reason, "text": text}
    return {
        "available": True,
        "text": text,
        "layer": start,
        "decimals": decimals,
        "largest": LARGEST,
        "largestText": format_number(LARGEST, 0),
        "sizes": {
            "n": trace.n_tokens,
            "dModel": trace.d_model,
            "nHeads": trace.n_heads,
            "nKvHeads": trace.W_K.shape[0],
            "dK": trace.d_k,
        },
        "inputs": {key: exact(getattr(trace, key)) for key in EDITABLE},
        "biases": {
            key: exact(getattr(trace, key))
            for key in ("b_Q", "b_K", "b_V", "b_O")
            if getattr(trace, key) is not None
        },
        # True where query i may read key j; None: every pair (attnviz.attention.mask_scores).
        "mask": None if trace.mask is None else np.asarray(trace.mask, dtype=bool).tolist(),
    }


def unavailable(trace: AttentionTrace, selection: Selection) -> str | None:
    """Why the page cannot redo ``trace``'s arithmetic as the textbook path does, in one
    sentence; None when it can."""
    origin = trace.provenance.weights
    if origin.model is not None and origin.architecture != TOY:
        return (
            "What if works with random weights and attnviz's toy models; a pretrained model's "
            "layer, such as this one, runs in ways this page does not redo."
        )
    if trace.rope is not None:
        return "What if does not redo rotary positions: drop --positions rope to use it."
    if trace.W_DKV is not None:
        return "What if does not redo a latent's keys and values: drop --latent to use it."
    if trace.is_cross:
        return "What if does not redo cross-attention; a sentence's own attention it does."
    if not selection.is_whole:
        return (
            "What if needs every word piece shown as itself: drop --words and --hide-special "
            "to use it."
        )
    count = inputs_count(trace)
    if count > MAX_NUMBERS:
        return (
            f"What if carries every number of X and the weights in full precision, and this "
            f"layer has {count:,} of them, more than the {MAX_NUMBERS:,} a page carries: use a "
            "smaller --d-model or fewer words to use it."
        )
    return None


def inputs_count(trace: AttentionTrace) -> int:
    """How many numbers of X and the weights the mode carries."""
    return sum(int(np.size(getattr(trace, key))) for key in EDITABLE)


def not_recomputed(
    layers: Sequence[AttentionTrace], trace: AttentionTrace, kept: Sequence[str]
) -> str:
    """The sentence naming what the page shows that the mode leaves as it was: ``kept``, and
    the other layers when there are several."""
    parts = list(kept)
    if len(layers) > 1:
        name = trace.provenance.weights
        parts.append(
            f"the other layers (the mode changes layer {name.layer}, the one the page opened on)"
        )
    if len(parts) == 1:
        listed = parts[0]
    else:
        listed = "; ".join(parts[:-1]) + "; and " + parts[-1]
    return f"Not recomputed, and still showing the numbers as given: {listed}."


def exact(values: np.ndarray | None) -> dict[str, Any] | None:
    """``values`` flat, as float64 numbers whose JSON text is their repr, the shortest that reads
    back as the same double (JSON.parse too): every bit of each number, with their shape."""
    if values is None:
        return None
    return {
        "shape": list(np.shape(values)),
        "values": np.asarray(values, dtype=np.float64).reshape(-1).tolist(),
    }
