"""The sliding-window step: only in the lessons of traces with a window, numbered there; every
sentence true for this trace's numbers (the keys each row reads, their counts, the −∞ and the
exact zeros, the cache's bytes); and on every surface: the terminal, --steps, the slides, the
page, the notebook display and the heatmap."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from render.analysed import analysed

import attnviz
from attnviz.core import trace_with_options
from attnviz.lesson.blocks import Matrix, Paragraph
from attnviz.lesson.examples import position_labels
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import STEPS, numbered, step_number
from attnviz.lesson.window import cache_sentence
from attnviz.lesson.writer import listed
from attnviz.options import TraceOptions
from attnviz.render.page.page_data import page_data
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace

from support import written_lesson as lesson

IT = "The animal didn't cross the street because it was too tired"


def traced(sentence: str = IT, **options: object) -> AttentionTrace:
    trace, _ = trace_with_options(sentence, TraceOptions(**options))  # type: ignore[arg-type]
    return trace


def window_text(trace: AttentionTrace, **options: object) -> str:
    spec = str(step_number("window", trace))
    shown = attnviz.explain(IT if trace.n_tokens == 11 else "I am good", causal=True, **options)  # type: ignore[arg-type]
    return " ".join(attnviz.lesson(shown, steps=spec).split())


def test_the_window_step_is_only_in_lessons_with_a_window_right_after_the_tokens() -> None:
    plain, windowed = traced(causal=True), traced(causal=True, window=4)
    assert "window" not in [s.key for s in numbered(STEPS, plain).values()]
    keys = [s.key for s in numbered(STEPS, windowed).values()]
    assert keys[:3] == ["tokens", "window", "qkv"]
    assert step_number("scaled", windowed) == step_number("scaled", plain) + 1
    both = traced(causal=True, window=4, positions="rope")
    assert [s.key for s in numbered(STEPS, both).values()][:4] == [
        "tokens",
        "window",
        "qkv",
        "rope",
    ]


def test_every_row_reads_the_keys_the_mask_keeps_and_says_how_many() -> None:
    text = window_text(traced(causal=True, window=4), window=4)
    assert "'tired' reads: it, was, too, tired" in text
    assert "'the:2' reads: animal, didn't, cross, the:2" in text
    assert "'The:1' reads: The:1 " in text
    assert "min(i, W) = min(i, 4) keys: 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4." in text
    # 1 + 2 + 3 + 4·8 = 38 of the causal mask's 11·12/2 = 66 pairs
    assert "keeps 38 of the 66 pairs the causal mask keeps" in text
    assert "hides nothing" not in text


def test_the_hidden_scores_are_minus_infinity_and_their_weights_exactly_zero() -> None:
    trace = traced(causal=True, window=4)
    selection = select(trace, ViewOptions(focus="it"))
    blocks = lesson(trace, selection, LessonOptions(steps=str(step_number("window", trace))))
    (mask,) = [b for b in blocks if isinstance(b, Matrix)]
    assert mask.masked is not None
    np.testing.assert_array_equal(mask.masked, ~trace.mask)
    assert (mask.values[trace.mask] == 0).all()
    said = " ".join(
        "".join(span.text for span in b.spans) for b in blocks if isinstance(b, Paragraph)
    )
    it = trace.tokens.index("it")
    assert (trace.weights[0, it, : it - 3] == 0.0).all()
    assert (
        "row 'it': the scores of The:1, animal, didn't and cross (earlier, but outside the "
        "window) become −∞, exp(−∞) = 0, and their weights are exactly 0"
    ) in " ".join(said.split())


@pytest.mark.parametrize("focus", ["The", "animal", "it", "tired"])
def test_every_window_and_example_word_writes_a_true_row(focus: str) -> None:
    """Whatever word the lesson follows, the row it works out has keys outside the window:
    the example's own row from W on, else the last row; none when the window hides nothing."""
    for window in (1, 2, 4, 7, 11, 12):  # each side of every example row, and past n
        trace = traced(causal=True, window=window)
        selection = select(trace, ViewOptions(focus=focus))
        spec = str(step_number("window", trace))
        blocks = lesson(trace, selection, LessonOptions(steps=spec))
        said = " ".join(
            "".join(span.text for span in b.spans) for b in blocks if isinstance(b, Paragraph)
        )
        row = trace.tokens.index(focus)
        named = re.search(r"row '([^']+)': the scores? of (.+?) \(earlier", said)
        if window >= trace.n_tokens:
            assert named is None and "hides nothing here" in said
            continue
        assert named is not None, said
        expected = row if row >= window else trace.n_tokens - 1
        labels, _ = position_labels(trace)
        assert named.group(1) == labels[expected]
        # keys 0 … i − W, each hidden: "a, b and c" names them all, in order
        assert named.group(2) == listed(list(labels[: expected - window + 1]))
        assert (trace.weights[:, expected, : expected - window + 1] == 0.0).all()


def test_the_cache_sentence_is_its_own_arithmetic() -> None:
    for window, kv_heads in ((4, 2), (2, 1), (20, 2)):
        trace = traced(causal=True, window=window, heads=4, d_model=16, kv_heads=kv_heads)
        said = cache_sentence(trace, trace.n_tokens)
        kept = min(window, trace.n_tokens)
        full = 2 * 1 * kv_heads * 11 * 4 * 8
        with_window = 2 * 1 * kv_heads * kept * 4 * 8
        assert f"2 × 1 × {kv_heads} × 11 × 4 × 8 = {full:,} bytes without the window" in said
        assert f"2 × 1 × {kv_heads} × {kept} × 4 × 8 = {with_window:,} with it" in said
        if kept == 11:
            assert "the same, as the window hides nothing here" in said
        else:
            assert f"{with_window / full:.0%} of it" in said


def test_a_window_past_the_sentence_says_it_hides_nothing() -> None:
    text = window_text(traced("I am good", causal=True, window=5), window=5)
    assert "This sentence has 3 tokens and W = 5, so the window hides nothing here" in text
    assert "row '" not in text  # no row has a key outside the window to show
    assert "stops growing" not in text


def test_a_window_of_one_reads_itself_alone() -> None:
    text = window_text(traced("I am good", causal=True, window=1), window=1)
    assert "i − W < j ≤ i, itself alone" in text
    assert "'good' reads: good" in text
    assert "Mask: causal, within a sliding window of W = 1: each token reads itself alone" in (
        " ".join(attnviz.lesson(attnviz.explain("I am good", causal=True, window=1)).split())
    )


def test_the_model_facts_and_the_stacked_reach() -> None:
    text = window_text(traced(causal=True, window=4), window=4)
    assert "Mistral 7B slides a window of W = 4096 over every one of its 32 layers" in text
    assert "Gemma 3 has five local layers (a window of 1024) to each global one" in text
    assert "L stacked layers reach L·(W − 1) tokens back" in text


# -- the surfaces --------------------------------------------------------------------------------


def test_the_page_has_the_window_step() -> None:
    trace = traced(causal=True, window=4)
    data = page_data(analysed([trace]), trace, select(trace, ViewOptions(focus="it")))
    keys = [row["key"] for row in data["steps"]]
    assert keys.index("window") == keys.index("tokens") + 1
    written = str(data["layers"][0]["steps"][keys.index("window")])
    assert "'tired' reads: it, was, too, tired" in written


@pytest.mark.slow
def test_the_slides_and_the_notebook_show_the_window() -> None:
    from attnviz.render.slides import plan_slides

    shown = attnviz.explain(IT, causal=True, window=4)
    slides = plan_slides(
        shown.trace, shown.selection, LessonOptions(), analyses=shown.lesson_analyses()
    )
    assert [s.name for s in slides if "window" in s.name][:1] == ["03-window"]
    html = shown._repr_html_()
    assert "Mask: causal, within a sliding window of W = 4" in html
    # each shown head's table draws every hidden pair as masked, as the causal ones are
    hidden = int((~shown.trace.mask).sum())
    assert html.count("masked") >= hidden * shown.trace.n_heads


@pytest.mark.slow
def test_the_page_command_takes_the_window(tmp_path: Path) -> None:
    from attnviz.cli import app

    from support import CliRunner

    runner = CliRunner()
    page = runner.invoke(
        app, ["page", IT, "--causal", "--window", "4", "-o", str(tmp_path / "p.html")]
    )
    assert page.exit_code == 0, page.stderr
    assert "reads: it, was, too, tired" in (tmp_path / "p.html").read_text()
