"""The worked examples the page carries, as JSON-ready data: for each word of a layer's heads,
the qkv, z and output steps as the terminal writes them, and for its keys the pieces of the
scores, scaled and weights steps
at the decimals that make each example hold, as ExampleText.dot_product, .scaling and .softmax
print them. The page's script puts the pieces together (page.js, dotProduct, scalingLine,
softmaxLine).

How many: a pair of words worked out costs the page about 80 bytes and Python about 0.2 ms, and
a model's page has layers × heads × n² pairs (19 million at 512 word pieces). So a row of at
most EVERY_KEY keys carries every key, a longer one the keys its picture draws a line to (a
weight of THINNEST or more), the WORKED_KEYS heaviest, the key the lesson works out always
among them; and the heads carrying them are the page's first, then its layer's others, then
the nearest layers', while the page stays within WORKED_PAIRS pairs. What is left out, the
page says how to get.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnviz import worked
from attnviz.labels import ELLIPSIS
from attnviz.lesson.examples import MOST_TERMS, ExampleText
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

#: A softmax with more terms than this is written with "…", as in the terminal's lesson.
SOFTMAX_TERMS = 12
#: The weighted sum z = Σ w·v names this many value vectors, as the terminal's focus section.
WEIGHTED_TERMS = 12
#: Lighter weights draw no line, as in `attnviz heatmap --style lines`.
THINNEST = 0.005
#: A row of at most this many keys carries every key's scores, scaled and weights steps.
EVERY_KEY = 16
#: A longer row carries the keys with a line, at most this many, the heaviest first.
WORKED_KEYS = 8
#: The most pairs (layer × head × word × key) one page works out, about 0.2 ms each: 8,000 take
#: under 2 s; its first head always.
WORKED_PAIRS = 8_000


def worked_heads(
    layers: Sequence[AttentionTrace], start: int, heads: int, start_head: int, rows: int
) -> set[tuple[int, int]]:
    """The (layer, head) pairs, heads as indices into the page's heads, whose words are worked
    out: the page's first head of its first layer, then that layer's other heads, then the
    nearest layers' (above before below), while the page stays within WORKED_PAIRS pairs."""
    n_keys = len(layers[start].key_tokens)
    per_head = rows * min(n_keys, EVERY_KEY if n_keys <= EVERY_KEY else WORKED_KEYS + 1)
    layer_order = sorted(range(len(layers)), key=lambda index: (abs(index - start), -index))
    head_order = sorted(range(heads), key=lambda head: (head != start_head, head))
    order = [(layer, head) for layer in layer_order for head in head_order]
    chosen = {order[0]}
    for pair in order[1:]:
        if (len(chosen) + 1) * per_head > WORKED_PAIRS:
            break
        chosen.add(pair)
    return chosen


def example_keys(
    trace: AttentionTrace, selection: Selection, head: int, rows: list[int]
) -> list[int]:
    """Each row's example key (worked.example_key: the shown key it gives most weight, the
    earliest of equals), every row at once."""
    shown = np.asarray(selection.shown_columns)
    weights = np.asarray(trace.weights[head])[np.asarray(rows)][:, shown]
    return [int(shown[index]) for index in np.argmax(weights, axis=-1)]


def worked_keys(trace: AttentionTrace, head: int, query: int, example: int) -> list[int]:
    """The keys of ``query``'s row worked out on the page: every key of a short row; of a long
    one, the WORKED_KEYS heaviest with a line, and ``example``, in the trace's order."""
    weights = np.asarray(trace.weights[head, query])
    if len(weights) <= EVERY_KEY:
        return list(range(len(weights)))
    heaviest = np.argsort(-weights, kind="stable")[:WORKED_KEYS]
    kept = {int(key) for key in heaviest if weights[key] >= THINNEST} | {example}
    return sorted(kept)


def head_data(
    trace: AttentionTrace,
    selection: Selection,
    text: ExampleText,
    head: int,
    rows: list[int],
    keys: list[int],
) -> dict[str, Any]:
    """One head's worked examples: each shown word's (query_data, ``keys`` the rows' example
    keys), the q and k terms of the scores step at every number of decimals some pair needs,
    and √d_k at every number of decimals the scaled step needs."""
    queries = [
        query_data(trace, text, head, row, worked_keys(trace, head, row, key))
        for row, key in zip(rows, keys, strict=True)
    ]
    levels = sorted({pair[0] for query in queries for pair in query["keys"].values()})
    # The q and k the scores were taken from: rotated, with rotary positions; with a latent's
    # decoupled rotary positions [q | q_R] and [k | k_R].
    queries_used, keys_used = trace.scored_vectors(head)
    dot_terms = {
        str(d): {
            "q": [_terms(text, queries_used[row], d) for row in rows],
            "k": [_terms(text, k, d) for k in keys_used],
        }
        for d in levels
    }
    scales = {pair[2] for query in queries for pair in query["keys"].values()}
    roots = {str(d): text.exact(float(np.sqrt(trace.score_width)), d) for d in scales}
    return {"dotTerms": dot_terms, "roots": roots, "queries": queries}


def query_data(
    trace: AttentionTrace, text: ExampleText, head: int, query: int, keys: list[int]
) -> dict[str, Any]:
    """The worked examples of one query word in one head: the qkv and z steps as the terminal
    writes them, and for each of ``keys`` (by its position, as text) the pieces of the scores,
    scaled and weights steps: [the scores step's decimals, the score, the scaled step's
    decimals, the score at them, the scaled score, the weights step's decimals, the shifted
    score and its exponential at them, the weight]; and for each of the weights step's
    decimals, the softmax's shown terms (None for "…", shown_terms) and its sum."""
    softmax = worked.softmax_example(trace, head, query, 0)
    summed = worked.weighted_sum(trace, head, query)
    pairs: dict[str, list[Any]] = {}
    for key in keys:
        product = worked.dot_product(trace, head, query, key)
        dot = text.products_decimals(product.q, product.k, product.result)
        scale = text.scaling_decimals(worked.scaling(trace, head, query, key))
        pair = softmax._replace(key=key, result=float(trace.weights[head, query, key]))
        soft = text.softmax_decimals(pair, SOFTMAX_TERMS)
        score = float(trace.scores[head, query, key])
        pairs[str(key)] = [
            dot,
            text.exact(score),
            scale,
            text.exact(score, scale),
            text.exact(trace.scaled[head, query, key]),
            soft,
            text.exact(softmax.shifted[key], soft),
            text.exact(softmax.exponentials[key], soft),
            text.exact(trace.weights[head, query, key]),
        ]
    shown = shown_terms(len(softmax.shifted), SOFTMAX_TERMS)
    softmax_levels = {
        str(d): {
            "shifted": [None if j is None else text.exact(softmax.shifted[j], d) for j in shown],
            "total": text.exact(softmax.total, d),
        }
        for d in sorted({pair[5] for pair in pairs.values()})
    }
    return {
        "projection": text.projection(worked.projection(trace, head, query)),  # the qkv step
        "keys": pairs,
        "softmaxAt": softmax_levels,
        "sum": text.weighted_sum(summed, limit=WEIGHTED_TERMS),  # the z step
        "element": text.weighted_sum_element(summed),
    }


def _terms(text: ExampleText, vector: np.ndarray, decimals: int) -> list[str]:
    """A vector's numbers as factors of a written-out sum (negative ones in parentheses); past
    MOST_TERMS the first three, "…" and the last, as ExampleText.products writes them."""
    if len(vector) <= MOST_TERMS:
        return [text.term(float(v), decimals) for v in vector]
    first = [text.term(float(v), decimals) for v in vector[:3]]
    return [*first, ELLIPSIS, text.term(float(vector[-1]), decimals)]


def shown_terms(n_terms: int, limit: int) -> list[int | None]:
    """Which terms of a sum are written: all, or past ``limit`` the first three, None for "…",
    and the last, as ExampleText.softmax writes them."""
    if n_terms <= limit:
        return list(range(n_terms))
    return [0, 1, 2, None, n_terms - 1]
