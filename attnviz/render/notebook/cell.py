"""A trace as HTML for a notebook cell (Jupyter, VS Code, Colab): what an Explanation (what
``attnviz.explain`` returns) shows as its ``_repr_html_``.

One self-contained fragment: a scoped style element, tables, inline bars and the heatmap as an
embedded PNG. No script, no external style sheet, font or image, so it renders the same in every
front end, offline, without an extension. Every word and file name is escaped.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence

import numpy as np

from attnviz.labels import format_number, occurrence_labels
from attnviz.lesson import steps as table
from attnviz.lesson.blocks import Bars, Block, Heading, Paragraph, Pause, Worked
from attnviz.lesson.build import header, lesson, only_steps
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import focus_number
from attnviz.render.figures.measures import head_title
from attnviz.render.figures.settings import draws
from attnviz.render.terminal.tables import MAX_TABLE_ROWS, kept_indices
from attnviz.render.terminal.text import weight_colours
from attnviz.results import Analyses
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

#: Styles scoped to the fragment's own class, so that they neither leak into the notebook nor
#: depend on its theme (a dark theme keeps the fragment's own light panel).
STYLE = """
.attnviz{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;
 background:#fff;padding:10px 12px;border:1px solid #ddd;border-radius:6px;max-width:100%;
 overflow-x:auto;line-height:1.4}
.attnviz h3{font-size:1.05em;margin:0.2em 0 0.4em}
.attnviz h4{font-size:0.95em;margin:0.9em 0 0.3em}
.attnviz p{margin:0.2em 0}
.attnviz .note{color:#8a4b00}
.attnviz .dim{color:#666}
.attnviz .formula{font-family:ui-monospace,Menlo,Consolas,monospace}
.attnviz table{border-collapse:collapse;font-family:ui-monospace,Menlo,Consolas,monospace;
 font-size:0.85em;margin:0.2em 0.8em 0.6em 0;display:inline-table;vertical-align:top}
.attnviz caption{font-family:system-ui,sans-serif;font-weight:600;text-align:left;
 padding-bottom:2px}
.attnviz th{font-weight:600;padding:2px 6px;text-align:right;white-space:nowrap}
.attnviz td{padding:2px 6px;text-align:right;min-width:3.2em}
.attnviz td.masked{background:repeating-linear-gradient(45deg,#ccc 0 4px,#e6e6e6 4px 8px);
 color:#555}
.attnviz td.chosen{outline:2px solid #d62728;outline-offset:-2px}
.attnviz .bars td{text-align:left}
.attnviz .bars td.number{text-align:right}
.attnviz .bar{display:inline-block;height:0.8em;background:#21908d;vertical-align:middle}
.attnviz img{max-width:100%;height:auto;display:block;margin-top:0.4em}
.attnviz .example{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:0.85em;
 white-space:pre-wrap;margin:0.1em 0 0.1em 1.2em}
"""

#: A weights table keeps this many columns (and the terminal's MAX_TABLE_ROWS rows), the middle
#: elided, the focus word's kept: a notebook cell is about as wide as a terminal.
NOTEBOOK_COLUMNS = 24

#: Said under elided tables: where every number is.
ELIDED = (
    "The middle of each table is elided (…), as the terminal elides it; every number is on the "
    "interactive page (attnviz page, or .to_html()) and in attnviz explain --export."
)

#: The most words the embedded heatmap is drawn for: the fragment stays under about a megabyte.
IMAGE_WORDS = 64
IMAGE_LEFT_OUT = (
    "The heatmap is left out here: at this many words and heads its cells are too small to "
    "read in a notebook cell; attnviz heatmap draws it (--head N, --per-head FOLDER)."
)


def trace_html(
    trace: AttentionTrace,
    selection: Selection,
    run: Analyses | None = None,
    *,
    decimals: int = 2,
    image: bool = True,
) -> str:
    """The notebook view of ``trace`` as ``selection`` shows it: the sentence, sizes and
    provenance; each shown head's weights as a shaded table; the focus word's weights as bars
    and its z as the weighted sum of value vectors, its first number worked out; for a model
    run (``run``: every layer of it, with the focus word's rows in each and what the focus view
    shows, computed once by attnviz.analysis.analyses), where the focus word looks in every
    layer and head;
    and the heatmap as an embedded PNG (``image=False`` leaves it out). A long sentence's
    tables keep their first and last rows and columns and the focus word's, the middle elided
    as the terminal elides it, and its heatmap gives way to a line saying how to draw it, so
    that the fragment stays under about a megabyte (every number: the page, or --export)."""
    layers = () if run is None else run.layers
    parts = [f"<style>{STYLE}</style>", '<div class="attnviz">']
    parts += _header(trace, selection, decimals)
    rows = occurrence_labels([printable(word) for word in selection.row_words])
    columns = occurrence_labels([printable(word) for word in selection.column_words])
    masked = selection.masked_pairs(trace.masked) if trace.mask is not None else None
    kept_rows = kept_indices(len(rows), MAX_TABLE_ROWS, selection.focus_row)
    kept_columns = kept_indices(len(columns), NOTEBOOK_COLUMNS, _focus_column(selection))
    parts.append("<div>")
    for head in selection.heads:
        weights = selection.pairs(trace.weights[head], total=True)
        parts.append(
            _weights_table(
                f"{head_title(trace, head)}: softmax weights",
                weights,
                rows,
                columns,
                decimals,
                masked,
                (kept_rows, kept_columns),
            )
        )
    parts.append("</div>")
    if None in kept_rows or None in kept_columns:
        parts.append(f"<p class='dim'>{_escape(ELIDED)}</p>")
    if selection.focus is not None:
        parts += _focus(trace, selection, decimals, run)
    if run is not None and len(layers) > 1:
        parts += _overview(trace, selection, run, decimals)
    if image:
        parts.append(_figure_png(trace, selection))
    parts.append("</div>")
    return "\n".join(parts)


def _focus_column(selection: Selection) -> int | None:
    """The focus word's column, kept visible where the middle columns are elided."""
    focus = selection.focus
    return None if focus is None else selection.column_of(focus.index)


def _header(trace: AttentionTrace, selection: Selection, decimals: int) -> list[str]:
    """The lesson's own opening (title, formula, sentence, sizes, provenance and its notes), as
    HTML: the same sentences the terminal prints."""
    return _blocks_html(header(trace, selection, LessonOptions(decimals=decimals)))


def _focus(
    trace: AttentionTrace,
    selection: Selection,
    decimals: int,
    run: Analyses | None,
) -> list[str]:
    """The lesson's focus view, as the terminal says it: where the focus word looks in each
    shown head beside what each word adds, what the bars leave out, its z and one contribution
    worked out, and (``run``: the model's run, with what the analyses found of it) the rollout
    through the layers below."""
    focus = focus_number(table.STEPS, trace)
    if focus is None:
        return []
    # All of the text: a notebook's display scrolls, and shows every head's z and contribution.
    options = LessonOptions(decimals=decimals, full=True)
    layers = () if run is None else run.layers
    whole = lesson(trace, selection, options, layers=layers, analyses=run)
    blocks = only_steps(whole, {focus})
    return _blocks_html(blocks[next(i for i, b in enumerate(blocks) if isinstance(b, Pause)) :])


def _blocks_html(blocks: Sequence[Block]) -> list[str]:
    """Lesson blocks as HTML: headings, paragraphs, worked examples and focus bars (the tables
    of the step-by-step lesson are drawn by trace_html itself)."""
    parts: list[str] = []
    caption = ""  # a head's name, set above its bars
    for block in blocks:
        if isinstance(block, Heading) and block.level == "title":
            # This view is not the step-by-step lesson itself.
            parts.append(f"<h3>{_escape(block.text.removesuffix(', step by step'))}</h3>")
        elif isinstance(block, Heading) and block.level == "head":
            caption = block.text
        elif isinstance(block, Heading):
            parts.append(f"<h4>{_escape(block.text)}</h4>")
        elif isinstance(block, Paragraph):
            parts.append(_paragraph(block))
        elif isinstance(block, Worked):
            parts.append(f"<p class='example'>{_escape(block.text)}</p>")
        elif isinstance(block, Bars):
            parts.append(_bars(block, caption))
    return parts


def _paragraph(block: Paragraph) -> str:
    styles = {"bold": "strong", "italic": "em"}  # not <b>: a word "<b>" must show as text
    text = "".join(
        f"<{styles[span.style]}>{_escape(span.text)}</{styles[span.style]}>"
        if span.style in styles
        else _escape(span.text)
        for span in block.spans
    )
    kind = next((s.style for s in block.spans if s.style in ("note", "dim")), "")
    return f"<p class='{kind}'>{text}</p>" if kind else f"<p>{text}</p>"


def _bars(bars: Bars, caption: str) -> str:
    """Bars as a table: a word, its bar and number; with a second bar (a contribution's share,
    a rollout), the numbers between and the second bar, under a row naming the columns."""

    def cell(weight: float, text: str) -> str:
        return (
            f"<td><span class='bar' style='width:{max(1.0, 160 * weight):.0f}px'></span> "
            f"{_escape(text)}</td>"
        )

    paired = bool(bars.second)
    head = ""
    if paired:
        names = (*bars.headings, "", "", "")[:3]
        between = f"<th>{_escape(names[1])}</th>" if bars.between else ""
        head = (
            f"<tr><th></th><th>{_escape(names[0])}</th>{between}<th>{_escape(names[2])}</th></tr>"
        )
    rows = []
    for index, label in enumerate(bars.labels):
        row = f"<tr><th>{_escape(label)}</th>{cell(bars.weights[index], bars.texts[index])}"
        if paired:
            if bars.between:
                row += f"<td class='number'>{_escape(bars.between[index])}</td>"
            row += cell(bars.second[index], bars.second_texts[index])
        rows.append(row + "</tr>")
    return f"<table class='bars'><caption>{_escape(caption)}</caption>{head}{''.join(rows)}</table>"


def _weights_table(
    title: str,
    weights: np.ndarray,
    rows: Sequence[str],
    columns: Sequence[str],
    decimals: int,
    masked: np.ndarray | None,
    kept: tuple[Sequence[int | None], Sequence[int | None]] | None = None,
) -> str:
    """A table of weights [rows, columns] shaded by value, with each row's Σ (over every
    column, elided ones too); ``kept`` the rows and columns shown, None where the middle is
    elided (all by default)."""
    kept_rows, kept_columns = kept or (range(len(rows)), range(len(columns)))
    head = "".join(
        "<th>…</th>" if c is None else f"<th>{_escape(columns[c])}</th>" for c in kept_columns
    )
    head += "<th>Σ</th>"
    body = []
    for i in kept_rows:
        if i is None:
            body.append(f"<tr><th>…</th>{'<td>…</td>' * (len(kept_columns) + 1)}</tr>")
            continue
        cells = []
        for j in kept_columns:
            if j is None:
                cells.append("<td>…</td>")
                continue
            weight = weights[i, j]
            if masked is not None and masked[i, j]:
                # A weight, not a score: exactly 0 (its score was −∞ before the softmax).
                cells.append(
                    "<td class='masked' title='masked: its score was −∞ before the softmax'>"
                    f"{format_number(0.0, decimals)}</td>"
                )
                continue
            text, background = weight_colours(float(weight))
            cells.append(
                f"<td style='background:{background};color:{text}'>"
                f"{format_number(float(weight), decimals)}</td>"
            )
        total = format_number(float(weights[i].sum()), decimals)
        body.append(f"<tr><th>{_escape(rows[i])}</th>{''.join(cells)}<td>{total}</td></tr>")
    return (
        f"<table><caption>{_escape(title)}</caption><tr><th></th>{head}</tr>"
        + "".join(body)
        + "</table>"
    )


def _overview(
    trace: AttentionTrace, selection: Selection, run: Analyses, decimals: int
) -> list[str]:
    """Every layer and head of the model run: the word the focus word (else, on average, every
    shown word) gives the most weight, shaded by that weight; the shown layer's heads
    outlined. Every layer is seen through the same selection (the layers share their words)."""
    layers = run.layers
    shown_layer = next(
        (i for i, layer in enumerate(layers) if layer.weights is trace.weights), None
    )
    if shown_layer is None:
        shown_layer = (trace.provenance.weights.layer or len(layers)) - 1
    words = occurrence_labels([printable(word) for word in selection.column_words])
    focus = selection.focus
    what = (
        f"the word that {_escape(repr(printable(focus.label)))} gives the most weight to"
        if focus is not None
        else "the word that the shown words give the most weight to on average"
    )
    if selection.hidden:
        names = sorted({printable(trace.tokens[p]) for p in selection.hidden})
        what += f", among the words shown ({_escape(' and '.join(names))} hidden)"
    header = "".join(f"<th>H{h + 1}</th>" for h in range(trace.n_heads))
    if focus is not None:
        every = run.every_focus_row()  # [L, h, columns]
    else:
        every = np.stack(
            [
                [selection.pairs(w, total=True).mean(axis=0) for w in layer.weights]
                for layer in layers
            ]
        )
    body = []
    for index, (layer, rows) in enumerate(zip(layers, every, strict=True)):
        cells = []
        for head in range(layer.n_heads):
            best = int(np.argmax(rows[head]))
            weight = float(rows[head][best])
            text, background = weight_colours(weight)
            chosen = " class='chosen'" if index == shown_layer and head in selection.heads else ""
            cells.append(
                f"<td{chosen} style='background:{background};color:{text}' "
                f"title='{format_number(weight, decimals)}'>{_escape(words[best])}</td>"
            )
        body.append(f"<tr><th>L{index + 1}</th>{''.join(cells)}</tr>")
    return [
        f"<h4>Every layer and head: {what} (colour: that weight; outlined: shown above)</h4>",
        f"<table><tr><th></th>{header}</tr>{''.join(body)}</table>",
    ]


@draws
def _figure_png(trace: AttentionTrace, selection: Selection) -> str:
    """The heatmap of the shown heads as an embedded PNG; past IMAGE_WORDS columns (cells too
    small to read in a notebook cell, and about a megabyte of picture), a line saying how to
    draw it instead."""
    if len(selection.column_words) > IMAGE_WORDS:
        return f"<p class='dim'>{_escape(IMAGE_LEFT_OUT)}</p>"
    from attnviz.render.figures.heatmap import build_figure

    figure = build_figure(trace, selection)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, metadata={"Software": None})
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    alt = "Heatmap of the attention weights of the heads shown"
    return f"<img alt='{alt}' src='data:image/png;base64,{encoded}'>"


def _escape(text: str) -> str:
    """Text from a person or a file, as element content (never put in an attribute here)."""
    return html.escape(text, quote=False)
