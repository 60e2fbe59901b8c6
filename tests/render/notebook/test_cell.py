"""The notebook view of a trace (``_repr_html_``): self-contained, escaped, and made of the
trace's own numbers."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

import attnviz
from attnviz.labels import format_number
from attnviz.render.notebook.cell import trace_html
from render.analysed import analysed

from support import needs_model

IT = "The animal didn't cross the street because it was too tired"


class Tables(HTMLParser):
    """The tables of a fragment: caption and cell texts, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.tags: list[str] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "table":
            self.tables.append(("", []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        if tag in ("td", "th", "caption"):
            self.text = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self.tables[-1][1][-1].append(self.text.strip())
        elif tag == "caption":
            caption, rows = self.tables[-1]
            self.tables[-1] = (self.text.strip(), rows)

    def handle_data(self, data: str) -> None:
        self.text += data


def tables_of(fragment: str) -> dict[str, list[list[str]]]:
    parser = Tables()
    parser.feed(fragment)
    return dict(parser.tables)


@pytest.mark.slow
def test_repr_is_one_line_and_the_html_shows_every_head_with_the_traces_numbers() -> None:
    shown = attnviz.explain(IT, focus="it")
    trace = shown.trace
    assert "\n" not in repr(shown) and len(repr(shown)) < 120
    fragment = shown._repr_html_()
    tables = tables_of(fragment)
    for head in range(2):
        rows = tables[f"Head {head + 1}: softmax weights"]
        assert rows[0][1:-1] == [
            "The:1",
            "animal",
            "didn't",
            "cross",
            "the:2",
            "street",
            "because",
            "it",
            "was",
            "too",
            "tired",
        ]
        it = rows[1 + trace.tokens.index("it")]
        assert it[0] == "it"
        assert it[1:-1] == [
            format_number(w, 2) for w in trace.weights[head, trace.tokens.index("it")]
        ]
        assert it[-1] == "1.00"
    assert "Focus: where does 'it' look?" in fragment  # the lesson's own focus view
    assert "z_it = " in fragment and "z_it[1] = " in fragment
    assert re.search(r"<img alt='[^']+' src='data:image/png;base64,[A-Za-z0-9+/=]+'>", fragment)


@pytest.mark.slow
def test_the_fragment_is_self_contained_and_escapes_every_word() -> None:
    shown = attnviz.explain("<script>alert(1)</script> & <b>bold</b>", causal=True, focus="bold")
    fragment = trace_html(shown.trace, shown.selection, analysed(shown.layers, shown.selection))
    assert "<script" not in fragment.lower() and "<b>" not in fragment
    assert "&lt;" in fragment and "&gt;" in fragment and "&amp;" in fragment
    assert "bold" in tables_of(fragment)["Head 1: softmax weights"][0]
    sources = re.findall(r"(?:src|href)=['\"]([^'\"]*)", fragment)
    assert sources and all(source.startswith("data:image/png;base64,") for source in sources)
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", fragment)
    assert not re.search(r"(?:https?:)?//[a-z]", text)
    assert "@import" not in fragment and "url(" not in fragment
    # The causal mask: masked weights are exactly 0, hatched; −∞ is a score, never a weight.
    assert "class='masked'" in fragment
    weights = tables_of(fragment)["Head 1: softmax weights"]
    assert all("−∞" not in cell for row in weights for cell in row)
    assert weights[1][2:-1] == ["0.00"] * (len(weights[1]) - 3)  # the first word sees itself


@pytest.mark.slow
def test_the_view_decides_the_heads_and_the_hidden_tokens() -> None:
    one = tables_of(attnviz.explain("I am good", head=2)._repr_html_())
    assert "Head 2: softmax weights" in one and "Head 1: softmax weights" not in one
    padded = attnviz.explain("I am good", pad_to=5, hide_special=True)
    fragment = trace_html(
        padded.trace, padded.selection, analysed(padded.layers, padded.selection), image=False
    )
    rows = tables_of(fragment)["Head 1: softmax weights"]
    assert rows[0][1:-1] == ["I", "am", "good"] and len(rows) == 4


@pytest.mark.slow
@needs_model
def test_a_model_trace_shows_every_layer_and_head_with_the_chosen_one_outlined() -> None:
    shown = attnviz.explain(IT, model="minilm", layer=6, head=12, focus="it")
    trace = shown.trace
    fragment = trace_html(
        trace, shown.selection, analysed(shown.layers, shown.selection), image=False
    )
    overview = tables_of(fragment)[""]
    assert [row[0] for row in overview[1:]] == [f"L{i}" for i in range(1, 7)]
    assert overview[0][1:] == [f"H{h}" for h in range(1, 13)]
    assert overview[6][12] == "animal"  # layer 6, head 12: 'it' looks most at 'animal'
    assert fragment.count("class='chosen'") == 1
    layer_4 = shown.layers[3]
    it = trace.tokens.index("it")
    assert overview[4][2] == trace.tokens[int(np.argmax(layer_4.weights[1, it]))]


@pytest.mark.slow
@needs_model
def test_the_focus_bars_say_what_they_leave_out_as_the_terminal_does() -> None:
    shown = attnviz.explain(IT, model="minilm", layer=4, head=2, focus="it", hide_special=True)
    trace = shown.trace
    fragment = trace_html(
        trace, shown.selection, analysed(shown.layers, shown.selection), image=False
    )
    it = trace.tokens.index("it")
    hidden = trace.weights[1, it, [0, len(trace.tokens) - 1]].sum()
    assert f"(hidden [CLS] and [SEP], together weight {format_number(hidden, 2)}, " in fragment
    assert "… 1 more word, together" in fragment  # 13 words shown, 12 bars
    assert "among the words shown ([CLS] and [SEP] hidden)" in fragment


def test_the_focus_bars_show_each_words_contribution_beside_its_weight() -> None:
    from attnviz.analysis.contribution import row_contribution

    shown = attnviz.explain("I am good", focus="I")
    fragment = trace_html(
        shown.trace, shown.selection, analysed(shown.layers, shown.selection), image=False
    )
    assert "<th>weight</th><th>‖w·f‖</th><th>share</th>" in fragment
    for head in (0, 1):
        row = row_contribution(shown.trace, head, 0)
        for key in row.keys:
            assert f"<td class='number'>{format_number(key.norm, 2)}</td>" in fragment, key.word
    assert "A weight w_ij only mixes" in fragment and "share of each word's value" not in fragment
    assert "Rollout" not in fragment  # one random layer: nothing below it


@needs_model
@pytest.mark.slow
def test_a_models_focus_view_in_a_notebook_has_the_rollout_and_the_caution() -> None:
    shown = attnviz.explain(IT, model="minilm", head=12, focus="it")
    fragment = trace_html(
        shown.trace, shown.selection, analysed(shown.layers, shown.selection), image=False
    )
    assert "<caption>Rollout to layer 6</caption>" in fragment
    assert "<th>rollout R_6</th>" in fragment
    assert fragment.count("A caution: a high weight") == 1
    assert "From layer 2 on, each row" in fragment  # the rows are mixtures, said once


LONG = " ".join(
    "The old man walked slowly along the river because the morning was cold and the market "
    "in the town would open soon, so his daughter asked him to buy bread and fish.".split()
    * 6
)


@pytest.mark.slow
def test_a_long_trace_is_elided_as_the_terminal_elides_and_stays_small() -> None:
    shown = attnviz.explain(LONG, heads=12, d_model=48, focus="fish:3")
    trace, selection = shown.trace, shown.selection
    fragment = trace_html(trace, selection, analysed(shown.layers, selection))
    assert len(fragment.encode()) < 1_000_000  # every cell of 12 heads × 181² would be 19 MB
    table = tables_of(fragment)["Head 1: softmax weights"]
    # About 32 rows and 24 columns kept, the middle elided on each side of the focus word's.
    gaps = [row for row in table if row[0] == "…"]
    assert len(gaps) == 2 and all(row == ["…"] * len(table[0]) for row in gaps)
    assert len(table) == 1 + 31 + 2 and table[0].count("…") == 2 and len(table[0]) == 1 + 23 + 3
    focus_row = next(row for row in table if row[0] == "fish:3")
    weights = selection.pairs(trace.weights[0], total=True)
    row_index = selection.focus_row
    assert row_index is not None and selection.focus is not None
    focus_column = selection.column_of(selection.focus.index)
    assert focus_column is not None
    shown = focus_row[table[0].index("fish:3")]
    assert shown == format_number(float(weights[row_index, focus_column]), 2)
    # The Σ is the whole row's, elided columns too.
    assert focus_row[-1] == format_number(float(weights[row_index].sum()), 2)
    assert "every number is on the interactive page" in fragment
    assert "data:image/png" not in fragment and "attnviz heatmap draws it" in fragment
