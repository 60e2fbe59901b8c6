"""attnviz.analysis.analyses: every analysis a run's surfaces show is computed once, by the API,
and handed to the renderers; a page and a notebook cell of one explanation, or a heatmap and
its per-head files, share one computation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnviz
import attnviz.analysis.analyses as analyses_module
import attnviz.analysis.heads as heads_module
from attnviz.analysis.analyses import NOTEBOOK, PAGE, analyze, for_pictures, pictures
from attnviz.analysis.contribution import contributions
from attnviz.analysis.head_types import trace_head_types
from attnviz.analysis.rollout import trace_rollout
from attnviz.api.heatmap import save_pictures
from attnviz.cli import app
from attnviz.render.options import ImageOptions, Measure
from attnviz.results import Analysis

from support import CliRunner

TIRED = "The animal didn't cross the street because it was too tired"
COUNTED = ("contributions", "trace_rollout", "trace_head_types", "own_rows", "focus_rows")
#: analyses.py imports focus_rows where it is asked for (the lesson never loads its module).
WHERE = {"focus_rows": heads_module}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each analysis runs, counted where attnviz.analysis.analyses calls it (or
    imports it from, WHERE)."""
    counted: Counter[str] = Counter()

    def counting(name: str) -> Callable[..., Any]:
        real = getattr(WHERE.get(name, analyses_module), name)

        def call(*args: Any, **kwargs: Any) -> Any:
            counted[name] += 1
            return real(*args, **kwargs)

        return call

    for name in COUNTED:
        monkeypatch.setattr(WHERE.get(name, analyses_module), name, counting(name))
    return counted


@pytest.mark.slow
def test_the_page_and_the_notebook_compute_each_analysis_once(calls: Counter[str]) -> None:
    shown = attnviz.explain(TIRED, model="coref", focus="it")
    n_layers = len(shown.layers)
    assert n_layers > 1  # a run whose rollout and overview have layers to go through
    cell = shown._repr_html_()
    page = shown.to_html()
    assert shown.to_html() == page  # again: the same page, from the analyses already found
    assert shown._repr_html_() == cell
    assert calls == Counter(
        contributions=n_layers,  # one per layer, whichever surfaces show them
        trace_head_types=n_layers,
        own_rows=n_layers,
        trace_rollout=1,
        focus_rows=1,
    )


@pytest.mark.slow  # the seeds' lesson twice, in full: about a second
def test_the_lesson_takes_what_its_focus_view_shows_from_the_record(calls: Counter[str]) -> None:
    shown = attnviz.explain(TIRED, model="coref", focus="it")
    n_layers = len(shown.layers)
    text = attnviz.lesson(shown, full=True)
    assert "Rollout to layer" in text and "Focus: where does 'it' look?" in text
    assert attnviz.lesson(shown, full=True) == text  # again: from the analyses already found
    # The layer shown alone, and the rollout through every layer once.
    assert calls == Counter(contributions=1, trace_head_types=1, own_rows=1, trace_rollout=1)
    shown.to_html()  # the page's lessons of every layer (their focus views), and its rows
    shown._repr_html_()  # the notebook's focus view
    assert calls == Counter(
        contributions=n_layers,
        trace_head_types=n_layers,
        own_rows=n_layers,
        trace_rollout=1,
        focus_rows=1,
    )


def test_attnviz_explain_computes_its_lessons_analyses_once(calls: Counter[str]) -> None:
    result = CliRunner().invoke(
        app, ["explain", TIRED, "--model", "coref", "--focus", "it", "--full"]
    )
    assert result.exit_code == 0, result.output
    assert "Rollout to layer" in result.output
    assert calls == Counter(contributions=1, trace_head_types=1, own_rows=1, trace_rollout=1)
    assert not CliRunner().invoke(app, ["explain", "I am good"]).exit_code
    assert calls["contributions"] == 1  # no word followed: no analysis at all


@pytest.mark.slow
def test_a_heatmap_and_its_per_head_files_share_the_contributions(
    calls: Counter[str], tmp_path: Path
) -> None:
    shown = attnviz.explain(TIRED, model="coref", focus="it")
    options = ImageOptions(measure=Measure.contribution, per_head=tmp_path / "heads")
    written, _ = save_pictures(shown, tmp_path / "heads.png", options)
    assert len(written) == 1 + len(shown.selection.heads)
    assert calls == Counter(contributions=1)  # the layer shown, once for every file
    grid = ImageOptions(measure=Measure.contribution, all_layers=True)
    save_pictures(shown, tmp_path / "grid.png", grid)
    assert calls == Counter(contributions=1 + len(shown.layers), trace_head_types=len(shown.layers))


def test_the_record_holds_what_each_analysis_gives() -> None:
    shown = attnviz.explain(TIRED, model="coref", focus="it")
    layers, selection = shown.layers, shown.selection
    found = analyze(layers, tuple(Analysis), selection)
    assert found.layers == tuple(layers)
    for index, layer in enumerate(layers):
        assert found.index(layer) == index
        np.testing.assert_array_equal(
            found.contributions_of(layer).shares, contributions(layer).shares
        )
        assert found.head_types_of(layer) == tuple(trace_head_types(layer, index + 1))
        np.testing.assert_array_equal(found.rollout_through(layer), trace_rollout(layers)[index])
    assert found.every_focus_row().shape == (len(layers), layers[0].n_heads, selection.n_columns)


def test_what_is_known_is_kept_and_what_cannot_be_had_stays_none(calls: Counter[str]) -> None:
    shown = attnviz.explain(TIRED, model="coref", focus="it")
    first = analyze(shown.layers, NOTEBOOK, shown.selection)
    both = analyze(shown.layers, PAGE | NOTEBOOK, shown.selection, first)
    assert both.focus_rows is first.focus_rows  # kept, not computed again
    assert calls["focus_rows"] == 1
    other = attnviz.explain("I am good", focus="I")
    fresh = analyze(other.layers, NOTEBOOK, other.selection, both)  # another run's: dropped
    assert fresh.layers == tuple(other.layers) and fresh.contributions is None
    crossed = attnviz.cross("the cat sat", "le chat", focus="chat")
    found = analyze(crossed.layers, PAGE, crossed.selection)
    assert found.rollout is None and found.head_types is None  # self-attention only
    assert found.contributions is not None
    with pytest.raises(ValueError, match="rollout"):
        found.rollout_through(crossed.trace)
    no_focus = attnviz.explain("I am good")
    assert analyze(no_focus.layers, NOTEBOOK, no_focus.selection).focus_rows is None


def test_a_picture_asks_for_what_it_draws() -> None:
    shown = attnviz.explain(TIRED, model="coref", focus="it")
    one = for_pictures(shown.layers, shown.trace, "contribution", grid=False)
    assert one.layers == (shown.trace,) and one.contributions is not None  # the layer shown
    rolled = for_pictures(shown.layers, shown.trace, "rollout", grid=False)
    assert rolled.layers == tuple(shown.layers) and rolled.rollout is not None
    assert pictures("weights", grid=False) == frozenset()
    assert pictures("weights", grid=True) == {Analysis.head_types}
    assert pictures("contribution", grid=True) == {Analysis.head_types, Analysis.contributions}
    assert pictures("rollout", grid=False) == {Analysis.rollout}
