"""Everything the lesson page shows, as JSON-ready data: the words, every layer's and head's
weights, contributions and rollout (packed as the integers of their printed text,
page_numbers.py), the worked examples (page_worked.py, as many as a page holds),
and the lesson's own blocks.

The page's prose is the lesson's (attnviz.lesson): each step's paragraphs and worked examples,
for every layer and head shown, with the example word's name in slots the page fills with the
word a reader picks; the worked examples of that word and key are formatted here, at the
decimals attnviz.lesson.examples chooses so that the arithmetic shown holds at the precision
shown, exactly as the terminal prints them. The page's script only picks which to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnviz import worked
from attnviz.labels import occurrence_labels
from attnviz.lesson import steps as table
from attnviz.lesson.blocks import Heading, Paragraph
from attnviz.lesson.build import header
from attnviz.lesson.examples import ExampleText, position_labels
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import last_plain_number
from attnviz.render.page.page_compare import COMPARE_TEXT, ComparedWith, compare_data
from attnviz.render.page.page_numbers import packed
from attnviz.render.page.page_rows import (
    ROW_TEXT,
    caveat_template,
    contribution_data,
    head_types,
    rollout_data,
)
from attnviz.render.page.page_steps import lesson_steps, page_steps
from attnviz.render.page.page_tryit import tryit_data
from attnviz.render.page.page_whatif import whatif_data
from attnviz.render.page.page_worked import (
    THINNEST,
    WORKED_KEYS,
    example_keys,
    head_data,
    worked_heads,
)
from attnviz.results import Analyses
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
#: The decimals of the lines' weights: a weight of THINNEST (0.005) or more prints as 0.01 or
#: more, and draws a line.
LINE_DECIMALS = 2

#: What the page says around the lesson: its controls, its picture's title and legend. The
#: script fills each {name} with a value it picks (a word, a head's number) and writes the
#: text as text; it has no sentence of its own.
PAGE_TEXT = {
    "hint": "Click a word on the left to see where it looks and work out its numbers, a word on "
    "the right to work out its weight. Keys: Tab, Enter, and ← → for the steps.",
    "allHeads": "All heads",
    "headOption": "Head {head}",
    "headSharing": " (K/V {kv})",
    "headOptionTyped": "Head {head} · {type}",
    "headName": "head {head}",
    "pictureTitle": "Where does “{word}” look? ({where}{head})",
    "everyHead": "every head",
    "legendOne": "Line thickness and opacity, and the bar: the attention weight. The row sums "
    "to 1.",
    "legendHidden": "Line thickness and opacity, and the bar: the attention weight. The row "
    "sums to 1 with {hidden}, left out here.",
    "legendAll": "· thickness and opacity: the weight.",
    "legendThin": " Weights under {thinnest} draw no line.",
    "legendMasked": " Hatched: masked (weight 0).",
    "masked": "masked",
    "maskedTitle": "masked: −∞ before the softmax, so its weight is 0",
    "maskedPair": "masked: the softmax sees −∞ for this pair, and exp(−∞) = 0, so its weight is 0",
    "chooseHead": "This step happens in each head separately: choose a head.",
    "allSteps": "All steps",
    "stepOf": "Step {step} of {steps}",
    "terms": " ({count} terms)",
    "exampleWord": "This step is worked out for {word}, the lesson's example word, whichever "
    "word is picked.",
    "headNotWorked": "The worked numbers of {where}{head} are left out of this page to keep it "
    "small ({worked} of its {total} heads carry them at this length): attnviz page with "
    "{options} opens on it and carries them.",
    "openLayerHead": "--layer {layer} --open-head {head}",
    "openHead": "--open-head {head}",
    "keyNotWorked": "{keySteps} are worked out on this page for the keys {word} draws a line "
    "to (a weight of {thinnest} or more), the {most} heaviest: choose one of those; every "
    "number of {key} is in attnviz explain --export.",
    **ROW_TEXT,
    **COMPARE_TEXT,
}


def page_text(trace: AttentionTrace) -> dict[str, Any]:
    """PAGE_TEXT with the step numbers of the lesson of ``trace`` put in, from the table."""
    steps = table.steps_label("scores", "weights", trace).capitalize()
    return {
        **PAGE_TEXT,
        "keyNotWorked": str(PAGE_TEXT["keyNotWorked"]).replace("{keySteps}", steps),
    }


# -- the data ------------------------------------------------------------------------------------


def page_data(
    run: Analyses,
    trace: AttentionTrace,
    selection: Selection,
    decimals: int = 2,
    *,
    start_head: int | None = None,
    compared: ComparedWith | None = None,
    steps: str | None = None,
    block: int | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data: words, every layer's and head's weights,
    worked examples and lesson, each number already formatted.

    ``start_head`` (from 0, one of the selection's heads) is the head the page opens on, the
    first by default; ``compared`` a second sentence whose comparison the page shows too;
    ``steps`` and ``block`` the lesson's steps as LessonOptions takes them ("5,6,blockwise"),
    every plain step by default.
    """
    layers = run.layers
    if not layers:
        raise ValueError("page_data needs at least one layer")
    start = _index_of(layers, trace)
    if start_head is not None and start_head not in selection.heads:
        raise ValueError(f"head {start_head} is not one of the page's heads")
    opening_head = 0 if start_head is None else selection.heads.index(start_head)
    # One head at a time: a note said once per step is said in every head.
    options = LessonOptions(decimals=decimals, steps=steps, block=block, full=True)
    queries, keys = position_labels(trace)
    text = ExampleText(decimals, queries, keys)
    special = set(trace.provenance.special)
    rows = [group[0] for group in selection.row_groups]  # the pieces the worked examples follow
    first_word = next((r for r, p in enumerate(rows) if p not in special), 0)
    real = trace.n_tokens - trace.provenance.masking.padding  # the sentence's own tokens
    opening = header(trace, selection, options)
    every_layer = _every_layer(run, selection, options, text, rows, (start, opening_head))
    return {
        "title": next((b.text for b in opening if isinstance(b, Heading)), "attnviz"),
        "sentence": printable(trace.provenance.sentence or " ".join(trace.tokens[:real])),
        "queryNames": queries,
        "keyNames": keys,
        **_words(selection, rows),
        "keyColumn": [selection.column_of(j) for j in range(len(trace.key_tokens))],
        **_masks(trace, selection, rows),
        "queryQuoted": [repr(name) for name in queries],  # as the lesson quotes a word: 'it'
        "keyQuoted": [repr(name) for name in keys],
        "text": page_text(trace),
        "steps": page_steps(trace, selection, options),
        "lastStep": last_plain_number(table.STEPS, trace),  # "Step 6b of 7"
        "thinnest": THINNEST,
        "workedKeys": WORKED_KEYS,
        "hidden": _names([trace.tokens[p] for p in selection.hidden]),
        "merged": selection.merged,
        "sizes": _sizes(trace),
        "biases": trace.has_biases,
        "cross": trace.is_cross,
        "heads": list(selection.heads),
        # Grouped-query attention: each shown head's key/value head (from 1), for its name.
        **(
            {"kvHeads": [trace.kv_head(h) + 1 for h in selection.heads]} if trace.is_grouped else {}
        ),
        "headColours": _head_colours(trace.n_heads),
        "start": {
            "layer": start,
            "head": opening_head,
            "row": selection.focus_row if selection.focus_row is not None else first_word,
        },
        **every_layer,
        "caveat": caveat_template(trace),
        "compare": None if compared is None else _compared(layers, selection, compared, decimals),
        "whatif": whatif_data(
            layers, start, selection, decimals, _kept(every_layer["layers"], compared)
        ),
        "tryit": tryit_data(layers, start, selection),
    }


def _kept(layers: list[dict[str, Any]], compared: ComparedWith | None) -> list[str]:
    """What the page shows that its "What if" mode leaves as given, in words."""
    kept = ["the lesson's steps below and their worked examples", "what each word adds"]
    if compared is not None:
        kept.append("the comparison with sentence B and its picture")
    if any(layer["headTypes"] for layer in layers):
        kept.append("the head types")
    if any(layer["rollout"] for layer in layers):
        kept.append("rollout")
    return kept


def _compared(
    layers: Sequence[AttentionTrace], selection: Selection, compared: ComparedWith, decimals: int
) -> dict[str, Any]:
    """The comparison (page_compare), and sentence B's picture to draw beside A's: its words,
    its masked cells, and each layer's weights in the same heads, packed as A's are."""
    b = compared.selection
    if len(compared.layers) != len(layers) or b.heads != selection.heads:
        raise ValueError("sentence B needs as many layers as A, and the same heads")
    rows = [group[0] for group in b.row_groups]
    return {
        **compare_data(compared, selection, decimals),
        "picture": {
            **_words(b, rows),
            "maskedCells": _masks(compared.layers[0], b, rows)["maskedCells"],
            "layers": [_weights(layer, b, decimals) for layer in compared.layers],
        },
    }


def _sizes(trace: AttentionTrace) -> dict[str, int]:
    return {
        "n": trace.n_tokens,
        "nKeys": len(trace.key_tokens),
        "dModel": trace.d_model,
        "nHeads": trace.n_heads,
        "dK": trace.d_k,
        "dScore": trace.score_width,  # a score's products: d_k (+ d_rope, a latent's RoPE)
        "concat": trace.n_heads * trace.d_k,
    }


def _every_layer(
    run: Analyses,
    selection: Selection,
    options: LessonOptions,
    text: ExampleText,
    rows: list[int],
    opening: tuple[int, int],
) -> dict[str, Any]:
    """Every layer's data (_layer_data, with its rollout), the heads worked out as many as a
    page holds from ``opening`` (its layer and head, page_worked.worked_heads), and how many."""
    layers = run.layers
    rolled: Sequence[Any] | None = rollout_data(layers, selection, max(options.decimals, 2), run)
    worked = worked_heads(layers, opening[0], len(selection.heads), opening[1], len(rows))
    return {
        "layers": [
            {
                **_layer_data(
                    layer,
                    selection,
                    options,
                    text,
                    rows,
                    {h for i, h in worked if i == index},
                    run,
                ),
                "rollout": rollout,
            }
            for index, (layer, rollout) in enumerate(
                zip(layers, rolled or [None] * len(layers), strict=True)
            )
        ],
        "workedHeads": len(worked),
    }


def _words(selection: Selection, rows: list[int]) -> dict[str, Any]:
    """The shown rows (each with the position its worked examples follow) and columns."""
    return {
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
    }


def _masks(trace: AttentionTrace, selection: Selection, rows: list[int]) -> dict[str, Any]:
    """The masked cells as shown, and each shown row's masked keys; None without a mask."""
    masked = trace.masked if trace.mask is not None and not trace.mask.all() else None
    return {
        "maskedCells": None if masked is None else selection.masked_pairs(masked).tolist(),
        "maskedKeys": None if masked is None else masked[rows].tolist(),
    }


def _layer_names(layers: Sequence[AttentionTrace]) -> list[str]:
    """Each layer as the page's menu names it: "Layer 3 of 6", or "The layer"."""
    names = []
    for layer in layers:
        origin = layer.provenance.weights
        names.append(
            f"Layer {origin.layer} of {origin.n_layers}"
            if origin.layer is not None and origin.n_layers is not None
            else "The layer"
        )
    return names


def _layer_data(
    trace: AttentionTrace,
    selection: Selection,
    options: LessonOptions,
    text: ExampleText,
    rows: list[int],
    worked_out: set[int],
    run: Analyses,
) -> dict[str, Any]:
    """One layer: its lesson, its heads' weights, contributions and types for every shown
    word, and for the heads ``worked_out`` (indices into the selection's heads) every shown
    word's worked examples (page_worked), the output step's when there is one."""
    origin = trace.provenance.weights
    name = _layer_names([trace])[0]
    contributed, each_head = contribution_data(trace, selection, text.least, run)
    example = [example_keys(trace, selection, head, rows) for head in selection.heads]
    weights_note = (
        "Random weights, not learned: the lines show how attention is computed, not what a "
        "trained model attends to."
        if origin.is_random
        else f"Weights: {printable(origin.describe())}."
    )
    return {
        "name": name,
        "header": [
            [(span.text, span.style) for span in block.spans]
            for block in header(trace, selection, options)
            if isinstance(block, Paragraph)
        ],
        "weightsNote": weights_note,
        "steps": lesson_steps(trace, selection, options, run),
        "numbers": {**_weights(trace, selection, text.decimals), **contributed},
        "heads": [
            {
                "keys": keys,
                **(
                    head_data(trace, selection, text, head, rows, keys)
                    if index in worked_out
                    else {}
                ),
                "contribution": contribution,
            }
            for index, (head, keys, contribution) in enumerate(
                zip(selection.heads, example, each_head, strict=True)
            )
        ],
        "headTypes": head_types(trace, selection, run),
        "output": (
            [text.output_sum(worked.output_element(trace, row)) for row in rows]
            if worked_out
            else None
        ),
    }


def _weights(trace: AttentionTrace, selection: Selection, decimals: int) -> dict[str, Any]:
    """Every shown head's weights as shown (selection.pairs), [heads, rows, columns], packed
    (page_numbers): at the tables' decimals, and at 2 for the lines (a line for 0.01 or more,
    a weight of 0.005 or more, as thick as that)."""
    weights = np.stack(
        [selection.pairs(trace.weights[head], total=True) for head in selection.heads]
    )
    shown = packed(weights, decimals)
    # None: the lines' table is the weights' (the page's script reads it so).
    lines = None if decimals == LINE_DECIMALS else packed(weights, LINE_DECIMALS)
    return {"weights": shown, "lines": lines}


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
