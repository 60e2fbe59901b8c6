"""What the page shows beside a word's row of weights, as JSON-ready data: what each word adds
(the contribution ‖w_ij·f_h(x_j)‖, attnviz.analysis.contribution), how much of each input word
reaches the row through the layers below (rollout, attnviz.analysis.rollout), what kind of head
it is (attnviz.analysis.head_types) and, for a trained model, the caution about reading a row
as an explanation (attnviz.lesson.caveats). Every number is formatted here and every sentence
written here; the page's script fills in the word picked and chooses which to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnviz.labels import format_number
from attnviz.lesson.caveats import attention_caveat
from attnviz.render.page.page_numbers import packed
from attnviz.results import (
    BROAD_THRESHOLD,
    OVERWEIGHT_FACTOR,
    POSITION_THRESHOLD,
    Analyses,
    HeadScores,
    HeadType,
)
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

#: The page's sentences beside a row; the script fills each {name} with the word picked (and,
#: for the contribution note, the numbers the data gives for that row).
ROW_TEXT = {
    "rowTitle": "The row of “{word}” ({where}{head}): weight, contribution, rollout",
    "rowColumns": ["word", "weight w_ij", "‖w_ij·f_h(x_j)‖", "share", "rollout"],
    "rowColumnTitles": [
        "the key word j",
        "the attention weight: the mixing coefficient of word j's value in the output",
        "the length of what word j adds to the output of this head: the weight times the value "
        "after W_O, f_h(x_j) = v_j·W_O^h",
        "that length's part of the row's total Σ_j ‖w_ij·f_h(x_j)‖",
        "how much of input word j reaches this row through the layers' mixing (rollout)",
    ],
    "contributionAbout": "A weight is a mixing coefficient; what word j adds to the output of "
    "“{word}” is w_ij·f_h(x_j) with f_h(x_j) = v_j·W_O^h, so its size, ‖w_ij·f_h(x_j)‖ = "
    "w_ij·‖f_h(x_j)‖, also counts how long the value it mixes is (Kobayashi et al. 2020, "
    "“Attention is not only a weight”). The share divides by the row's total, "
    "Σ_j ‖w_ij·f_h(x_j)‖ = {total}, so shares sum to 1 like weights (b_O belongs to no word and "
    "is left out).",
    "contributionDisagrees": "“{key}” has weight {weight} but a share of only {share}: its value "
    "after W_O is short, ‖f_h(x_{key})‖ = {norm} against {total}, the row's mean ‖f‖ weighted "
    "by w (its total Σ_j w_ij·‖f_h(x_j)‖), so the weight parked on it adds little to the output "
    "of “{word}”.",
    "contributionAgrees": "In this row no word with more than an even weight (1/{n}) has a weight "
    f"{OVERWEIGHT_FACTOR:g} times its share or more: here no weight overstates that much what "
    "its word adds.",
    "rolloutAbout": "Rollout through layer {layer} (Abnar & Zuidema 2020): each layer's heads' "
    "mean weights, half-and-half with the residual connection (½·mean_h A + ½·I), multiplied "
    "from layer 1 up, say how much of each input word could reach the row of “{word}” by mixing "
    "alone; they leave out the values, W_O, the MLPs and the layer norms, so they say where "
    "mixing can carry a word, not what the model uses.",
    "rowChooseHead": "Choose a head to see its row's weights beside what each word adds.",
}

#: How each head type is said, with the score that decided it: "{score}" is that score.
TYPE_SENTENCES = {
    HeadType.previous: "each word gives on average {score} of its weight to the word just before "
    "it (mean_i A[i, i−1])",
    HeadType.next: "each word gives on average {score} of its weight to the word just after it "
    "(mean_i A[i, i+1])",
    HeadType.self: "each word gives on average {score} of its weight to itself (mean_i A[i, i])",
    HeadType.first: "the other words give on average {score} of their weight to the first word "
    "(mean_i A[i, 0])",
    HeadType.cls: "the other words give on average {score} of their weight to [CLS] "
    "(mean_i A[i, 0])",
    HeadType.last: "the other words give on average {score} of their weight to the last word "
    "(mean_i A[i, last])",
    HeadType.sep: "the other words give on average {score} of their weight to [SEP] "
    "(mean_i A[i, [SEP]])",
    HeadType.broad: "its rows spread their weight nearly evenly: their entropy is on average "
    "{score} of a uniform row's",
}


def head_types(
    trace: AttentionTrace, selection: Selection, analyses: Analyses
) -> list[dict[str, str]] | None:
    """Each shown head's type and the sentence saying why, from its whole matrix; None for
    cross-attention (the types are scored on a square matrix)."""
    if trace.is_cross:
        return None
    typed = analyses.head_types_of(trace)
    return [
        {"type": typed[head].type.value, "why": _type_sentence(head, typed[head].type, typed[head])}
        for head in selection.heads
    ]


def _type_sentence(head: int, kind: HeadType, typed: Any) -> str:
    scores: HeadScores = typed.scores
    name = f"Head {head + 1}"
    if kind is HeadType.mixed:
        return (
            f"{name} has no type (mixed): no position or sink takes on average "
            f"{POSITION_THRESHOLD} of its weight or more, and its rows' entropy is "
            f"{format_number(scores.entropy, 2)} of a uniform row's, under the {BROAD_THRESHOLD} "
            "of a broad head."
        )
    score = {
        HeadType.previous: scores.previous,
        HeadType.next: scores.next,
        HeadType.self: scores.self,
        HeadType.first: scores.first,
        HeadType.cls: scores.first,
        HeadType.last: scores.last,
        HeadType.sep: scores.last,
        HeadType.broad: scores.entropy,
    }[kind]
    said = TYPE_SENTENCES[kind].format(score=format_number(score, 2))
    return f"{name} is a {kind.value} head: over the whole sentence, {said}."


def contribution_data(
    trace: AttentionTrace, selection: Selection, decimals: int, analyses: Analyses
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The contributions the page shows beside its weights: for the layer, every shown head's
    ‖w_ij·f_h(x_j)‖ and share of each shown row and column, packed [heads, rows, columns]
    (page_numbers); for each head, each row's total and the note on the key whose weight
    overstates what it adds (weight above 1/n and at least OVERWEIGHT_FACTOR times its share),
    if any.

    Rows and columns as the weights are shown (selection.pairs: a word's pieces' mean over
    rows, their sum over columns); a share is of the row's total over every key, hidden ones
    too, as the shown weights sum to 1 with the hidden ones. The note names a key only when
    its row and column are single positions, where its numbers are the trace's own.
    """
    every = analyses.contributions_of(trace)
    heads = list(selection.heads)
    norms = np.stack([selection.pairs(every.norms[head], total=True) for head in heads])
    row_shares = np.stack([selection.pairs(every.shares[head], total=True) for head in heads])
    packed_numbers = {"norms": packed(norms, decimals), "shares": packed(row_shares, decimals)}
    shown = []
    for head in heads:
        totals = selection.rows(every.norms[head].sum(axis=-1))
        shown.append(
            {
                "totals": [format_number(float(v), decimals) for v in totals],
                "notes": _overweighted_notes(every, selection, head, decimals),
            }
        )
    return packed_numbers, shown


def _overweighted_notes(
    every: Any, selection: Selection, head: int, decimals: int
) -> list[dict[str, str] | int | None]:
    """Each shown row's note (_overweighted), the candidates of every row found at once."""
    weights, shares = every.weights[head], every.shares[head]
    uniform = 1.0 / weights.shape[-1]
    with np.errstate(invalid="ignore"):
        candidate = (
            (weights > uniform) & ~np.isnan(shares) & (weights >= OVERWEIGHT_FACTOR * shares)
        )
    # The largest weight among the candidates, the earliest of equals (argsort's stable order).
    first = np.argmax(np.where(candidate, weights, -np.inf), axis=-1)
    notes: list[dict[str, str] | int | None] = []
    for group in selection.row_groups:
        query = group[0]
        if len(group) != 1:
            notes.append(None)  # a word of several pieces: its shown row is their mean
        elif not candidate[query].any():
            notes.append(0)
        else:
            notes.append(_overweighted(every, selection, head, query, int(first[query]), decimals))
    return notes


def _overweighted(
    every: Any, selection: Selection, head: int, query: int, key: int, decimals: int
) -> dict[str, str] | None:
    """The numbers the sentence on ``key`` needs, the largest-weight key of ``query``'s row
    whose weight is at least OVERWEIGHT_FACTOR times its share and above the uniform 1/n; None
    when that key is hidden or merged (its numbers are not those shown).

    weight ≥ 2·share  ⟺  w_k ≥ 2·w_k·‖f_k‖ / Σ_j w_j‖f_j‖  ⟺  ‖f_k‖ ≤ ½·Σ_j w_j‖f_j‖: the
    test is the same as the key's ‖f‖ against the row's weighted mean, which the sentence gives.
    """
    if not _single_column(selection, key):
        return None
    weights, shares = every.weights[head, query], every.shares[head, query]
    return {
        "column": str(selection.column_of(key)),
        "weight": format_number(float(weights[key]), decimals),
        "share": format_number(float(shares[key]), decimals),
        "norm": format_number(float(every.transformed_norms[head, key]), decimals),
        "total": format_number(float(every.norms[head, query].sum()), decimals),
    }


def _single_column(selection: Selection, key: int) -> bool:
    column = selection.column_of(key)
    return column is not None and len(selection.column_groups[column]) == 1


def rollout_data(
    layers: Sequence[AttentionTrace], selection: Selection, decimals: int, analyses: Analyses
) -> list[dict[str, Any]] | None:
    """For each layer, rollout through it for every shown row and column, packed [rows,
    columns] (page_numbers); None when the page has one layer or cross-attention (nothing
    below to roll out)."""
    if len(layers) < 2 or any(layer.is_cross for layer in layers):
        return None
    rolled = [analyses.rollout_through(layer) for layer in layers]
    return [packed(selection.pairs(r, total=True), decimals) for r in rolled]


def caveat_template(trace: AttentionTrace) -> str | None:
    """The caution about reading a trained model's row as an explanation, with {word} for the
    word picked; None for random weights (the weights note already says they are not learned)."""
    if trace.provenance.weights.is_random:
        return None
    return attention_caveat("“{word}”")
