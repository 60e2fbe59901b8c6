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

Every number and every sentence on the page comes from Python (render/page/page_data.py): the
lesson's own blocks (attnviz.lesson) and the worked examples, formatted at the decimals
attnviz.lesson.examples chooses so that the arithmetic shown holds at the precision shown; the
tables of weights, contributions and rollout as the integers of their printed text, deflated
(render/page/page_numbers.py), so that a page of 512 word pieces and 72 heads stays about 13 MB.
The page's script only puts the point back in those integers, picks what to show and draws
the lines; it holds no sentence.
The page loads nothing: its CSS and script are inline, a Content-Security-Policy forbids every
remote load, and the words are set as text, never parsed as HTML.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from importlib.metadata import version
from typing import Any

from attnviz.render.page.page_compare import ComparedWith
from attnviz.render.page.page_data import page_data
from attnviz.results import Analyses
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

__all__ = ["ComparedWith", "html_document", "page_data", "page_html", "script_json"]


def page_html(
    run: Analyses,
    trace: AttentionTrace,
    selection: Selection,
    decimals: int = 2,
    *,
    start_head: int | None = None,
    compared: ComparedWith | None = None,
    steps: str | None = None,
    block: int | None = None,
) -> str:
    """The lesson page for ``run``'s layers (with what the analyses found of them: contributions,
    rollout, head types), opening on ``trace`` (one of them), as one HTML
    document: every layer, each of the selection's heads, every shown word's worked numbers;
    opening on head ``start_head`` (from 0) if given, showing the comparison with a second
    sentence if ``compared`` is given, and only the lesson's ``steps`` if given ("5,6,blockwise"
    adds FlashAttention's softmax, ``block`` keys at a time) (page_data).
    """
    data = page_data(
        run,
        trace,
        selection,
        decimals,
        start_head=start_head,
        compared=compared,
        steps=steps,
        block=block,
    )
    body = _BODY.format(
        kicker=html.escape(data["title"]),
        sentence=html.escape(data["sentence"]),
    )
    return html_document(f"attnviz · {data['sentence']}", ("page", "whatif", "tryit"), body, data)


def html_document(title: str, assets: str | tuple[str, ...], body: str, data: Any) -> str:
    """One self-contained page: ``title`` (escaped here), the style and script shipped as
    ``assets``.css and ``assets``.js (several: one after the other, as one style and one
    script), inline, ``body`` (markup, already escaped) and ``data``, the JSON its script
    reads. Nothing is loaded: a Content-Security-Policy forbids every remote load and lets only
    this script and this style run."""
    names = (assets,) if isinstance(assets, str) else assets
    script = "\n".join(asset(f"{name}.js") for name in names)
    style = "\n".join(asset(f"{name}.css") for name in names)
    # Hashes rather than 'unsafe-inline': only this script and this style may run, so even
    # markup that slipped in could not execute or restyle anything.
    policy = (
        "default-src 'none'; "
        f"script-src '{content_hash(script)}'; "
        f"style-src '{content_hash(style)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return _DOCUMENT.format(
        policy=html.escape(policy, quote=False),  # no quotes in it: hashes and keywords
        title=html.escape(title),
        style=style,
        body=body,
        data=script_json(data),
        script=script,
        version=html.escape(version("attnviz")),
    )


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


def asset(name: str) -> str:
    """A file shipped beside this module (a page's script or style), as text."""
    return resources.files("attnviz.render.page").joinpath(name).read_text(encoding="utf-8")


def content_hash(text: str) -> str:
    """The Content-Security-Policy source that lets exactly ``text`` run: 'sha256-…'."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


_DOCUMENT = """<!DOCTYPE html>
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
{body}<noscript><p>This page needs JavaScript, which runs in the page and loads \
nothing.</p></noscript>
<script type="application/json" id="attnviz-data">{data}</script>
<script>{script}</script>
</body>
</html>
"""

_BODY = """<header id="top">
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
<span class="group" role="group" aria-label="Modes">
<button type="button" id="tryit-mode" aria-pressed="false" aria-controls="steps"></button>
<button type="button" id="whatif-mode" aria-pressed="false" aria-controls="whatif"></button></span>
</nav>
<main>
<section id="picture" aria-labelledby="picture-title">
<h2 id="picture-title">Where does a word look?</h2>
<p class="hint" id="hint"></p>
<div id="pictures">
<figure id="picture-a">
<figcaption id="caption-a" hidden></figcaption>
<div id="columns" class="columns">
<ol id="queries" class="queries" aria-label="Words that look (queries)"></ol>
<svg id="lines" class="lines" aria-hidden="true" focusable="false"></svg>
<ol id="keys" class="keys" aria-label="Words looked at (keys), with their weights"></ol>
</div>
</figure>
<figure id="picture-b" hidden>
<figcaption id="caption-b"></figcaption>
<div id="columns-b" class="columns">
<ol id="queries-b" class="queries" aria-label="Sentence B's words that look (queries)"></ol>
<svg id="lines-b" class="lines" aria-hidden="true" focusable="false"></svg>
<ol id="keys-b" class="keys" aria-label="Sentence B's words looked at (keys), with their weights">
</ol>
</div>
</figure>
</div>
<p id="legend"></p>
<p class="weights-note" id="weights-note"></p>
<p class="head-type" id="head-type"></p>
<section id="compare" aria-labelledby="compare-title" hidden>
<h2 id="compare-title"></h2>
<p class="about" id="compare-about"></p>
<p id="compare-summary"></p>
<h3 id="compare-row-title"></h3>
<div class="sideways"><table id="compare-row" class="numbers"></table></div>
<p class="worked" id="compare-worked"></p>
<p id="compare-said"></p>
<h3 id="compare-ranked-title"></h3>
<div class="sideways"><table id="compare-ranked" class="numbers"></table></div>
</section>
<section id="row-numbers" aria-labelledby="row-title">
<h3 id="row-title"></h3>
<div class="sideways"><table id="row-table" class="numbers"></table></div>
<p class="note" id="contribution-note"></p>
<p class="about" id="contribution-about"></p>
<p class="about" id="rollout-note"></p>
</section>
<p class="caveat" id="caveat"></p>
</section>
<div id="side">
<section id="whatif" aria-labelledby="whatif-title" hidden>
<h2 id="whatif-title"></h2>
<p class="about" id="whatif-intro"></p>
<p class="about" id="whatif-kept"></p>
<p class="about" id="whatif-precision"></p>
<p id="whatif-status" aria-live="polite"></p>
<button type="button" id="whatif-reset"></button>
<div id="whatif-tables"></div>
</section>
<section id="steps" aria-label="Every step for the chosen word"></section>
</div>
</main>
"""
