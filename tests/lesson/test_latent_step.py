"""The latent step: numbered only where the trace has a latent, right after the projections;
its worked absorption true by hand at the digits shown and the trace's own numbers; the cache
sentence's figures computed from the sizes, for any size; and the step on every surface."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from render.analysed import analysed

import attnviz
from attnviz import worked
from attnviz.cli import app
from attnviz.core import trace_with_options
from attnviz.lesson.blocks import Paragraph, Pause, Worked
from attnviz.lesson.examples import ExampleText, position_labels
from attnviz.lesson.latent import MODELS, absorption_lines, at_most, cache_sentence
from attnviz.lesson.steps import STEPS, numbered, step_number
from attnviz.options import TraceOptions
from attnviz.render.page.page_data import page_data
from attnviz.render.slides import plan_slides
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace
from attnviz.trace_files import export_trace, load_trace

from support import CliRunner, lesson_analyses
from support import written_lesson as lesson

IT = "The animal didn't cross the street because it was too tired"
runner = CliRunner()


def traced(sentence: str = IT, **options: object) -> AttentionTrace:
    trace, _ = trace_with_options(sentence, TraceOptions(**options))  # type: ignore[arg-type]
    return trace


def said(trace: AttentionTrace, **view: object) -> str:
    blocks = lesson(trace, select(trace, ViewOptions(**view)))  # type: ignore[arg-type]
    return " ".join(
        "".join(span.text for span in block.spans)
        for block in blocks
        if isinstance(block, Paragraph)
    )


def test_the_latent_step_comes_after_qkv_only_where_the_trace_has_a_latent() -> None:
    plain, latent = traced("I am good"), traced("I am good", latent=5)
    assert "latent" not in [step.key for step in numbered(STEPS, plain).values()]
    after = step_number("qkv") + 1
    assert step_number("latent", latent) == after
    for number, step in numbered(STEPS).items():
        assert step_number(step.key, latent) == number + (number >= after), step.key
    pauses = [b for b in lesson(latent, select(latent)) if isinstance(b, Pause) and b.head == 0]
    keys = [pause.key for pause in pauses]
    assert keys[keys.index("qkv") + 1] == "latent"


@pytest.mark.parametrize("decimals", [0, 2, 4])
@pytest.mark.parametrize(("latent", "heads", "d_model"), [(3, 2, 8), (6, 2, 8), (30, 4, 16)])
def test_the_absorbed_score_holds_by_hand_and_is_the_traces(
    latent: int, heads: int, d_model: int, decimals: int
) -> None:
    trace = traced(latent=latent, heads=heads, d_model=d_model)
    text = ExampleText(decimals, *position_labels(trace))
    for head in range(heads):
        example = worked.absorption(trace, head, 7, 3)
        assert example is not None and trace.scores_absorbed is not None
        assert example.result == trace.scores_absorbed[head, 7, 3]
        assert example.expanded == trace.scores[head, 7, 3]
        first, second = absorption_lines(text, example, "₁")
        assert first.startswith("q̃_it = q_it·W_UK₁ᵀ = [")
        sums, expanded = second.split("   (")
        printed = float(sums.rsplit(" = ", 1)[1])
        number = r"\(?(-?\d+\.\d+)\)?"
        pairs = re.findall(number + "×" + number, sums)
        if "…" not in sums:  # every term written: their products give the printed result
            assert len(pairs) == latent
            places = len(sums.rsplit(".", 1)[1])
            total = sum(float(a) * float(b) for a, b in pairs)
            assert abs(total - printed) <= 0.5 * 10.0**-places + 1e-12, second
            shown = re.findall(r"-?\d+\.\d+", first.split("= [")[1])
            assert shown == [a for a, _ in pairs]  # q̃ printed as its terms are
        assert expanded == f"q_it · k_cross = {text.exact(example.expanded)})"


def test_the_differences_are_said_as_measured_and_rounded_up() -> None:
    trace = traced(latent=6)
    example = worked.absorption(trace, 0, 0, 0)
    assert example is not None
    words = said(trace)
    assert f"are equal within {at_most(example.score_difference)}:" in words
    assert float(at_most(example.score_difference)) >= example.score_difference
    assert f"'s are equal within {at_most(example.output_difference)}." in words
    assert at_most(4.44e-16) == "4.5e-16" and at_most(3e-16) == "3e-16"
    assert at_most(9.96e-16) == "1e-15"


@pytest.mark.parametrize(
    ("n", "heads", "d_k", "d_c"), [(11, 2, 4, 6), (3, 2, 4, 8), (5, 4, 2, 11), (2, 1, 3, 5)]
)
def test_the_cache_sentence_is_computed_for_every_size(
    n: int, heads: int, d_k: int, d_c: int
) -> None:
    sentence = cache_sentence(n, heads, d_k, d_c)
    latent, full, single = n * d_c, 2 * n * heads * d_k, 2 * n * d_k
    assert f"{n}·({d_c} + 0) = {latent:,} numbers" in sentence
    assert f"2·{n}·{heads}·{d_k} = {full:,} for every head's K and V: " in sentence
    assert f"{full / latent:.3g} times fewer" in sentence
    assert f"G = d_c/(2·d_k) = {d_c / (2 * d_k):.3g} groups" in sentence
    comparison = (
        "less than even" if latent < single else "as much as" if latent == single else "more than"
    )
    assert f"{comparison} multi-query attention's 2·n·d_k = {single:,}" in sentence
    assert "caches 576 numbers per token and layer against 32,768: 56.9 times fewer" in sentence


def test_a_latent_as_wide_as_every_key_and_value_claims_no_saving() -> None:
    sentence = cache_sentence(3, 2, 4, 16)
    assert "no saving" in sentence.split("DeepSeek-V2 (")[0]
    assert "times fewer. Grouped" not in sentence


def test_the_lesson_says_who_uses_it_and_the_bytes_at_the_traces_dtype() -> None:
    trace = traced(latent=6)
    words = said(trace)
    assert MODELS in words and "DeepSeek-V2, DeepSeek-V3 and DeepSeek-R1" in words
    assert "In float64 (8 bytes a number): 528 bytes against 1,408." in words
    assert f"The W_K_i and W_V_i of step {step_number('qkv', trace)} are the products" in words


def test_every_worked_example_of_the_latent_step_is_one_it_names() -> None:
    trace = traced(latent=6)
    steps = numbered(STEPS, trace)
    pause = None
    seen = []
    for block in lesson(trace, select(trace, ViewOptions(focus="it"))):
        if isinstance(block, Pause):
            pause = block
        elif isinstance(block, Worked) and pause is not None:
            assert block.example in steps[pause.step].examples, (pause, block.example)
            seen.append(block.example)
    assert "absorption" in seen


# -- every surface ----------------------------------------------------------------------------


def test_the_terminal_lesson_and_its_steps_show_the_latent() -> None:
    number = step_number("latent", traced(latent=6))
    result = runner.invoke(
        app, ["explain", IT, "--latent", "6", "--steps", str(number)], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert f"Step {number} · Latent attention: K and V of head 1" in out
    assert "c = X·W_DKV  [11 × 6]" in out and "K₁ = c·W_UK₁" in out and "V₁ = c·W_UV₁" in out
    assert "Step 2 ·" not in out


def test_the_page_and_the_slides_have_the_latent_step() -> None:
    trace = traced(latent=6)
    selection = select(trace, ViewOptions(focus="it"))
    data = page_data(analysed([trace]), trace, selection)
    keys = [row["key"] for row in data["steps"]]
    assert keys[keys.index("qkv") + 1] == "latent"
    blocks = data["layers"][0]["steps"][keys.index("latent")]["heads"][0]
    worked_blocks = [block for block in blocks if block[0] == "w"]
    assert [block[1] for block in worked_blocks] == ["absorption", "absorption"]
    assert all(len(block) == 3 and block[2].startswith("q̃_it") for block in worked_blocks)
    found = lesson_analyses(trace, selection)
    names = [slide.name for slide in plan_slides(trace, selection, analyses=found)]
    assert any(name.endswith("-head1-latent") for name in names)


def test_the_heatmap_says_its_keys_and_values_came_from_a_latent() -> None:
    from attnviz.render.figures.heatmap_text import heatmap_text

    def facts(trace: AttentionTrace) -> tuple[str, ...]:
        return heatmap_text(trace, select(trace)).facts

    assert "K and V from a latent of d_c 6" in facts(traced(latent=6))
    assert not any("latent" in fact for fact in facts(traced()))


@pytest.mark.slow
def test_the_notebook_display_of_explain_has_the_latent() -> None:
    html = attnviz.explain("I am good", latent=5)._repr_html_()
    assert "from one latent c = X·W_DKV of d_c = 5 numbers a token" in html


def test_the_notebook_shows_the_latent_step() -> None:
    from attnviz.render.notebook.cell import trace_html

    trace = traced("I am good", latent=5)
    html = trace_html(trace, select(trace), image=False)  # the display but its picture
    assert "from one latent c = X·W_DKV of d_c = 5 numbers a token" in html
    assert "a cache keeps n·d_c = 15 numbers against 2·n·h·d_k = 48" in html


def test_an_exported_latent_trace_reloads_into_the_same_lesson(tmp_path: Path) -> None:
    trace = traced(latent=6, causal=True)
    path = tmp_path / "latent.npz"
    export_trace(trace, path)
    (loaded,) = load_trace(path)
    assert said(loaded) == said(trace)
    assert step_number("latent", loaded) == step_number("latent", trace)
    # explain --weights reads the export's W_K, the product W_DKV·W_UK: a plain layer.
    result = runner.invoke(app, ["explain", "I am good", "--weights", str(path), "--steps", "2"])
    assert result.exit_code == 0, result.stderr
    assert "Latent attention" not in result.stdout
