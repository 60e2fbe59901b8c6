"""A generation's page: one self-contained HTML file with a slider over its steps (the prefill
pass, then one step a new token), showing at each the text as it stood, the cache as that pass
left it (its shape and bytes, growing, and which tokens it holds, shaded by the weight the new
token's query gave them) and the blocks ``attnviz generate`` prints for that step.

    generation_page_html(written, decimals) -> str

``written`` is attnviz.lesson.generation_steps.WrittenSteps. As on the lesson page
(render/page/page.py), every number and sentence comes from Python; the script only shows the
step chosen, sets words as text (never parsed as HTML) and loads nothing: its CSS and script are
inline, allowed by their hashes in a Content-Security-Policy that forbids every remote load.
"""

from __future__ import annotations

import html
from typing import Any

from attnviz.files import human_size
from attnviz.labels import format_number
from attnviz.lesson.blocks import Bars, Block, Heading, Matrix, Paragraph, Tables, Worked
from attnviz.lesson.generation_steps import WrittenStep, WrittenSteps
from attnviz.render.page.page import html_document
from attnviz.render.page.page_steps import table_data
from attnviz.render.terminal.text import weight_colours


def generation_page_html(written: WrittenSteps, decimals: int = 3) -> str:
    """The page of ``written``: one HTML document, opening on its last step."""
    body = _BODY.format(
        kicker=html.escape(written.title),
        prompt=html.escape(written.prompt),
        last=len(written.steps) - 1,
    )
    data = generation_page_data(written, decimals)
    return html_document(f"attnviz · {written.prompt}", "generation", body, data)


def generation_page_data(written: WrittenSteps, decimals: int = 3) -> dict[str, Any]:
    """What the page's script reads, formatted here: every token once (``tokens``, as the last
    step shows them), the shades of the weights (``shades``: [text colour, background, the
    weight as printed], each once), and each step (_step_data)."""
    largest = max(step.cache_bytes for step in written.steps)
    shades: dict[str, int] = {}
    steps = [
        _step_data(step, f"Step {number} of {len(written.steps)}: ", largest, shades, decimals)
        for number, step in enumerate(written.steps, 1)
    ]
    return {
        "introduction": blocks_data(written.introduction, decimals),
        "legend": written.legend,
        "tokens": list(written.steps[-1].tokens),
        "shades": [[*weight_colours(float(text)), text] for text in shades],
        "steps": steps,
        "ending": blocks_data(written.ending, decimals),
    }


def _step_data(
    step: WrittenStep, counted: str, largest: int, shades: dict[str, int], decimals: int
) -> dict[str, Any]:
    """One step: its label; ``count``, the tokens shown (the first of ``tokens``); ``new`` and
    ``query``, the new token's and its query's positions (None for the prefill pass); ``held``,
    the positions the cache holds as [start, stop) runs; ``shaded``, [position, shade] of each
    key the query read (``shades`` gains each weight's text the first time it is seen); the
    cache line, the bar's length and the blocks. Every token is sent once for the whole page, so
    that a long generation's page grows with its length, not its square."""
    held = sorted(step.read) if step.read else list(range(step.cache_tokens))
    shaded = []
    for position, weight in zip(step.read, step.weights, strict=True):
        text = format_number(weight, decimals)
        shaded.append([position, shades.setdefault(text, len(shades))])
    layers, heads, t, d_k = step.cache_shape
    return {
        "label": counted + step.title,
        "count": len(step.tokens),
        "new": step.new,
        "query": None if step.new is None else step.new - 1,
        "held": _runs(held),
        "shaded": shaded,
        "cache": (
            f"The cache after this pass: K and V of [{layers}, {heads}, {t}, {d_k}] each "
            f"(layers, key/value heads, tokens, d_k): {human_size(step.cache_bytes)}."
        ),
        "fill": step.cache_bytes / largest,
        "blocks": blocks_data(step.blocks, decimals),
    }


def _runs(positions: list[int]) -> list[list[int]]:
    """Sorted positions as [start, stop) runs: [0, 1, 2, 7, 8] -> [[0, 3], [7, 9]]."""
    runs: list[list[int]] = []
    for position in positions:
        if runs and runs[-1][1] == position:
            runs[-1][1] = position + 1
        else:
            runs.append([position, position + 1])
    return runs


def blocks_data(blocks: tuple[Block, ...] | list[Block], decimals: int) -> list[list[Any]]:
    """Lesson blocks as the script draws them: ["h", text] a heading, ["p", [[text, style]…]] a
    paragraph, ["b", bars] a row of bars, ["t", table] a table (page_steps.table_data). Blank
    lines and pauses are the terminal's and are left out."""
    encoded: list[list[Any]] = []
    for block in blocks:
        if isinstance(block, Heading):
            encoded.append(["h", block.text])
        elif isinstance(block, Paragraph):
            encoded.append(["p", [[span.text, span.style] for span in block.spans]])
        elif isinstance(block, Worked):
            encoded.append(["p", [[block.text, "formula"]]])
        elif isinstance(block, Bars):
            encoded.append(["b", _bars_data(block)])
        elif isinstance(block, Matrix):
            encoded.append(["t", table_data(block, decimals)])
        elif isinstance(block, Tables):
            encoded += [["t", table_data(matrix, decimals)] for matrix in block.matrices]
    return encoded


def _bars_data(bars: Bars) -> dict[str, Any]:
    """A row of bars: each key's label, its bar's length in [0, 1] and its weight as printed."""
    return {
        "labels": list(bars.labels),
        "lengths": [min(max(float(weight), 0.0), 1.0) for weight in bars.weights],
        "texts": list(bars.texts),
    }


_BODY = """<header>
<p class="kicker">{kicker}</p>
<h1>{prompt}</h1>
<div id="introduction"></div>
</header>
<nav id="controls" aria-label="Which step">
<button type="button" id="previous" aria-label="Previous step">◀</button>
<input type="range" id="step" min="0" max="{last}" value="{last}" aria-label="Step">
<button type="button" id="next" aria-label="Next step">▶</button>
<span id="step-title" aria-live="polite"></span>
</nav>
<main>
<section id="text" aria-label="The text so far"></section>
<p id="legend" class="note"></p>
<section id="cache" aria-label="The cache">
<p id="cache-line"></p>
<div class="cache-bar"><div id="cache-fill"></div></div>
</section>
<section id="blocks" aria-label="This step worked out"></section>
<section id="ending" aria-label="After the last step"></section>
</main>
"""
