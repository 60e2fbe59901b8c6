"""The lesson page: one self-contained HTML file in which a click on a word draws its lines to
every word and works out its numbers, step by step.

    page_html(layers, trace, selection, decimals) -> str

``layers`` are every layer of a model run (or the one random layer), ``trace`` the one of them
shown first, ``selection`` what is shown of each (attnviz.selection.select: heads, focus word,
hidden special tokens, merged word pieces), ``decimals`` the tables' digits (worked examples
use at least 2). The page opens on the focus word, or the first word. From what
attnviz.explain returns:

    explanation = attnviz.explain(sentence)
    page_html(explanation.layers, explanation.trace, explanation.selection, decimals)

Every number on the page is formatted here, from the trace and the worked examples of
attnviz.worked, at the decimals attnviz.render.examples chooses so that the arithmetic shown
holds at the precision shown; the page's script only picks which to show and draws the lines.
The page loads nothing: its CSS and script are inline, a Content-Security-Policy forbids every
remote load, and the words are set as text, never parsed as HTML.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from importlib import resources
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import numpy as np

from attnviz import worked
from attnviz.provenance import EmbeddingsKind
from attnviz.render.blocks import Heading, Paragraph
from attnviz.render.examples import MOST_TERMS, ExampleText, position_labels
from attnviz.render.labels import ELLIPSIS, occurrence_labels
from attnviz.render.lesson import header, mask_sentence
from attnviz.render.options import LessonOptions
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

#: viridis at 0, 1/8, …, 1 (matplotlib's): perceptually uniform, safe for colour-blind readers.
VIRIDIS = (
    "#440154",
    "#472d7b",
    "#3b528b",
    "#2c728e",
    "#21918c",
    "#28ae80",
    "#5ec962",
    "#addc30",
    "#fde725",
)
#: The part of viridis the heads' colours come from: its light end is too faint on white.
HEAD_RANGE = 0.7
#: A softmax with more terms than this is written with "…", as in the terminal's lesson.
SOFTMAX_TERMS = 12
#: The weighted sum z = Σ w·v names this many value vectors, as the terminal's focus section.
WEIGHTED_TERMS = 12


def page_html(
    layers: Sequence[AttentionTrace],
    trace: AttentionTrace,
    selection: Selection,
    decimals: int = 2,
) -> str:
    """The lesson page for ``layers``, opening on ``trace`` (one of them), as one HTML
    document: every layer, each of the selection's heads, every shown word's worked numbers.
    """
    data = page_data(layers, trace, selection, decimals)
    script = _asset("page.js")
    style = _asset("page.css")
    # Hashes rather than 'unsafe-inline': only this script and this style may run, so even
    # markup that slipped in could not execute or restyle anything.
    policy = (
        "default-src 'none'; "
        f"script-src '{_sha256(script)}'; "
        f"style-src '{_sha256(style)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return _TEMPLATE.format(
        policy=html.escape(policy, quote=False),  # no quotes in it: hashes and keywords
        title=html.escape(f"attnviz · {data['sentence']}"),
        kicker=html.escape(data["title"]),
        sentence=html.escape(data["sentence"]),
        style=style,
        data=script_json(data),
        script=script,
        version=html.escape(package_version("attnviz")),
    )


def save_page(
    path: Path,
    layers: Sequence[AttentionTrace],
    trace: AttentionTrace,
    selection: Selection,
    decimals: int = 2,
) -> None:
    """page_html, written atomically to ``path`` (checked beforehand by the caller)."""
    from attnviz.files import atomic_write

    text = page_html(layers, trace, selection, decimals)
    atomic_write(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def script_json(value: Any) -> str:
    """``value`` as JSON that cannot end the <script> element holding it: "<", ">" and "&" are
    written as \\u escapes, which JSON.parse reads back as the same characters, so a word such
    as "</script>" stays a word. U+2028 and U+2029 are escaped for older JavaScript parsers."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for character, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(character, escape)
    return text


# -- the data ------------------------------------------------------------------------------------


def page_data(
    layers: Sequence[AttentionTrace],
    trace: AttentionTrace,
    selection: Selection,
    decimals: int = 2,
) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data: words, every layer's and head's weights
    and worked examples, each number already formatted."""
    if not layers:
        raise ValueError("page_data needs at least one layer")
    start = _index_of(layers, trace)
    options = LessonOptions(decimals=decimals)
    queries, keys = position_labels(trace)
    text = ExampleText(decimals, queries, keys)
    special = set(trace.provenance.special)
    rows = [group[0] for group in selection.row_groups]  # the pieces the worked examples follow
    first_word = next((r for r, p in enumerate(rows) if p not in special), 0)
    real = trace.n_tokens - trace.provenance.masking.padding  # the sentence's own tokens
    masked = trace.masked if trace.mask is not None and not trace.mask.all() else None
    opening = header(trace, selection, options)
    return {
        "title": next((b.text for b in opening if isinstance(b, Heading)), "attnviz"),
        "sentence": printable(trace.provenance.sentence or " ".join(trace.tokens[:real])),
        "queryNames": queries,
        "keyNames": keys,
        "rows": [
            {"word": word, "position": position}
            for word, position in zip(
                occurrence_labels([printable(w) for w in selection.row_words]), rows, strict=True
            )
        ],
        "columns": [
            {"word": word, "positions": list(group)}
            for word, group in zip(
                occurrence_labels([printable(w) for w in selection.column_words]),
                selection.column_groups,
                strict=True,
            )
        ],
        "keyColumn": [selection.column_of(j) for j in range(len(trace.key_tokens))],
        "maskedCells": None if masked is None else selection.masked_pairs(masked).tolist(),
        "maskedKeys": None if masked is None else masked[rows].tolist(),
        "maskSentence": "" if masked is None else mask_sentence(trace),
        "softmaxShown": _shown_terms(len(trace.key_tokens), SOFTMAX_TERMS),
        "hidden": _names([trace.tokens[p] for p in selection.hidden]),
        "merged": selection.merged,
        "sizes": {
            "n": trace.n_tokens,
            "nKeys": len(trace.key_tokens),
            "dModel": trace.d_model,
            "nHeads": trace.n_heads,
            "dK": trace.d_k,
            "concat": trace.n_heads * trace.d_k,
        },
        "biases": trace.has_biases,
        "cross": trace.is_cross,
        "heads": list(selection.heads),
        "headColours": _head_colours(trace.n_heads),
        "start": {
            "layer": start,
            "head": 0,  # the first of the selection's heads
            "row": selection.focus_row if selection.focus_row is not None else first_word,
        },
        "layers": [_layer_data(layer, selection, options, text, rows) for layer in layers],
    }


def _layer_data(
    trace: AttentionTrace,
    selection: Selection,
    options: LessonOptions,
    text: ExampleText,
    rows: list[int],
) -> dict[str, Any]:
    origin = trace.provenance.weights
    name = (
        f"Layer {origin.layer} of {origin.n_layers}"
        if origin.layer is not None and origin.n_layers is not None
        else "The layer"
    )
    weights_note = (
        "Random weights, not learned: the lines show how attention is computed, not what a "
        "trained model attends to."
        if origin.is_random
        else f"Weights: {printable(origin.describe())}."
    )
    embeddings = trace.provenance.embeddings
    rows_of_x = (
        f"Each word piece is one row of X, what this layer receives: {embeddings.describe()}."
        if embeddings.kind in (EmbeddingsKind.MODEL, EmbeddingsKind.LAYER)
        else f"Each token is one row of X, its embedding: {embeddings.describe()}."
    )
    padding = trace.provenance.masking.padding
    if padding and embeddings.kind not in (EmbeddingsKind.MODEL, EmbeddingsKind.LAYER):
        pad = trace.tokens[-1]
        rows_of_x += (
            f" The {pad} rows of E are zero vectors, so their rows of X are their positions alone."
            if trace.PE is not None
            else f" The {pad} rows are zero vectors."
        )
    return {
        "name": name,
        "input": printable(rows_of_x),  # what the rows of X are, in a sentence
        "header": [
            [(span.text, span.style) for span in block.spans]
            for block in header(trace, selection, options)
            if isinstance(block, Paragraph)
        ],
        "weightsNote": weights_note,
        "root": text.number(float(np.sqrt(trace.d_k))),
        "heads": [_head_data(trace, selection, text, head, rows) for head in selection.heads],
        "output": [text.output_sum(worked.output_element(trace, row)) for row in rows],
    }


def _head_data(
    trace: AttentionTrace, selection: Selection, text: ExampleText, head: int, rows: list[int]
) -> dict[str, Any]:
    """One head: its shown weights (for the lines) and each shown word's worked examples."""
    weights = selection.pairs(trace.weights[head], total=True)  # [rows, columns]
    queries = [_query_data(trace, selection, text, head, row) for row in rows]
    # The q and k terms of step 3 at every number of decimals some pair of this head needs.
    levels = sorted({d for query in queries for d in query["dot"]})
    dot_terms = {
        str(d): {
            "q": [_terms(text, trace.Q[head, row], d) for row in rows],
            "k": [_terms(text, k, d) for k in trace.K[head]],
        }
        for d in levels
    }
    roots = {str(d): text.exact(float(np.sqrt(trace.d_k)), d) for q in queries for d in q["scale"]}
    return {
        "lines": np.round(weights, 3).tolist(),  # for drawing only
        "weights": [[text.number(w) for w in row] for row in weights],
        "dotTerms": dot_terms,
        "roots": roots,
        "queries": queries,
    }


def _query_data(
    trace: AttentionTrace, selection: Selection, text: ExampleText, head: int, query: int
) -> dict[str, Any]:
    """The worked examples of one query word in one head: steps 2 and 6 as the terminal writes
    them, and for every key the pieces of steps 3, 4 and 5 at the decimals that make each
    example hold, as ExampleText.dot_product, .scaling and .softmax would print them."""
    n_keys = len(trace.key_tokens)
    softmax = worked.softmax_example(trace, head, query, 0)
    summed = worked.weighted_sum(trace, head, query)
    dot, scale, soft = [], [], []
    for key in range(n_keys):
        product = worked.dot_product(trace, head, query, key)
        dot.append(text.products_decimals(product.q, product.k, product.result))
        scale.append(text.scaling_decimals(worked.scaling(trace, head, query, key)))
        pair = softmax._replace(key=key, result=float(trace.weights[head, query, key]))
        soft.append(text.softmax_decimals(pair, SOFTMAX_TERMS))
    softmax_levels = {
        str(d): {
            "shifted": [text.exact(s, d) for s in softmax.shifted],
            "exps": [text.exact(e, d) for e in softmax.exponentials],
            "total": text.exact(softmax.total, d),
        }
        for d in sorted(set(soft))
    }
    return {
        "key": worked.example_key(trace, selection, head, query),  # the key shown first
        "projection": text.projection(worked.projection(trace, head, query)),  # step 2
        # Per key: step 3's decimals (its terms are the head's dotTerms) and result, the score.
        "dot": dot,
        "score": [text.exact(s) for s in trace.scores[head, query]],
        # Per key: step 4's decimals, the score at them, and the result.
        "scale": scale,
        "scoreAt": [
            text.exact(s, d) for s, d in zip(trace.scores[head, query], scale, strict=True)
        ],
        "scaled": [text.exact(s) for s in trace.scaled[head, query]],
        # Per key: step 5's decimals, the row's pieces at each, and the result, the weight.
        "softmax": soft,
        "softmaxAt": softmax_levels,
        "weight": [text.exact(w) for w in trace.weights[head, query]],
        "sum": text.weighted_sum(summed, limit=WEIGHTED_TERMS),  # step 6
        "element": text.weighted_sum_element(summed),
    }


def _terms(text: ExampleText, vector: np.ndarray, decimals: int) -> list[str]:
    """A vector's numbers as factors of a written-out sum (negative ones in parentheses); past
    MOST_TERMS the first three, "…" and the last, as ExampleText.products writes them."""
    if len(vector) <= MOST_TERMS:
        return [text.term(float(v), decimals) for v in vector]
    first = [text.term(float(v), decimals) for v in vector[:3]]
    return [*first, ELLIPSIS, text.term(float(vector[-1]), decimals)]


def _shown_terms(n_terms: int, limit: int) -> list[int | None]:
    """Which terms of a sum are written: all, or past ``limit`` the first three, None for "…",
    and the last, as ExampleText.softmax writes them."""
    if n_terms <= limit:
        return list(range(n_terms))
    return [0, 1, 2, None, n_terms - 1]


def _names(tokens: Sequence[str]) -> str:
    """Tokens' names, each once: "[CLS] and [SEP]"."""
    names = list(dict.fromkeys(printable(token) for token in tokens))
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _head_colours(n_heads: int) -> list[str]:
    """One colour per head, evenly spaced along viridis from its dark end."""
    if n_heads == 1:
        return [_viridis(0.3)]
    return [_viridis(HEAD_RANGE * head / (n_heads - 1)) for head in range(n_heads)]


def _viridis(t: float) -> str:
    """viridis at ``t`` in [0, 1], between the two nearest of its nine stops."""
    position = t * (len(VIRIDIS) - 1)
    low = min(int(position), len(VIRIDIS) - 2)
    fraction = position - low
    a, b = (bytes.fromhex(VIRIDIS[i][1:]) for i in (low, low + 1))
    return "#" + bytes(round(x + (y - x) * fraction) for x, y in zip(a, b, strict=True)).hex()


def _index_of(layers: Sequence[AttentionTrace], trace: AttentionTrace) -> int:
    """Where ``trace`` is among ``layers``: itself, or a copy of it (the same provenance)."""
    for index, layer in enumerate(layers):
        if layer is trace:
            return index
    for index, layer in enumerate(layers):
        if layer.provenance == trace.provenance and layer.tokens == trace.tokens:
            return index
    raise ValueError("trace must be one of layers")


def _asset(name: str) -> str:
    return resources.files("attnviz.render").joinpath(name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="attnviz {version}">
<title>{title}</title>
<link rel="icon" href="data:,">
<style>{style}</style>
</head>
<body>
<header id="top">
<p class="kicker">{kicker}</p>
<h1 id="title">{sentence}</h1>
<details id="about"><summary>About these numbers</summary><div id="about-text"></div></details>
</header>
<nav id="controls" aria-label="What to show">
<label id="layer-choice">Layer <select id="layer"></select></label>
<label>Head <select id="head"></select></label>
<span class="group" role="group" aria-label="Text size">Text
<button type="button" id="smaller" aria-label="Smaller text">A−</button>
<button type="button" id="larger" aria-label="Larger text">A+</button></span>
<span class="group" role="group" aria-label="Steps">
<button type="button" id="previous">◀ Previous</button>
<span id="step-label" aria-live="polite">All steps</span>
<button type="button" id="next">Next ▶</button>
<button type="button" id="all-steps">Show all</button></span>
</nav>
<main>
<section id="picture" aria-labelledby="picture-title">
<h2 id="picture-title">Where does a word look?</h2>
<p class="hint" id="hint"></p>
<div id="columns">
<ol id="queries" aria-label="Words that look (queries)"></ol>
<svg id="lines" aria-hidden="true" focusable="false"></svg>
<ol id="keys" aria-label="Words looked at (keys), with their weights"></ol>
</div>
<p id="legend"></p>
<p class="weights-note" id="weights-note"></p>
</section>
<section id="steps" aria-label="Every step for the chosen word"></section>
</main>
<noscript><p>This page needs JavaScript, which runs in the page and loads nothing.</p></noscript>
<script type="application/json" id="attnviz-data">{data}</script>
<script>{script}</script>
</body>
</html>
"""
