"""The latent step with DeepSeek's decoupled rotary positions: the cache sentence counts the
turned key, for any size; the absorbed score and the scores step's q·k hold by hand over
d_c + d_rope and d_k + d_rope terms; why the turned part is not absorbed, with the example's own
turned and unturned products; the scale √(d_k + d_rope); and the step on every surface."""

from __future__ import annotations

import math
import re

import pytest
from render.analysed import analysed

import attnviz
from attnviz import worked
from attnviz.cli import app
from attnviz.core import trace_with_options
from attnviz.lesson.blocks import Paragraph
from attnviz.lesson.examples import ExampleText, position_labels
from attnviz.lesson.latent import absorption_lines, cache_sentence, not_absorbed
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import step_number
from attnviz.options import TraceOptions
from attnviz.render.page.page_data import page_data
from attnviz.render.slides import plan_slides
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace

from support import CliRunner, lesson_analyses
from support import written_lesson as lesson

IT = "The animal didn't cross the street because it was too tired"
runner = CliRunner()
NUMBER = r"\(?(-?\d+\.\d+)\)?"


def traced(sentence: str = IT, **options: object) -> AttentionTrace:
    options = {"latent": 6, "positions": "rope", **options}
    trace, _ = trace_with_options(sentence, TraceOptions(**options))  # type: ignore[arg-type]
    return trace


def said(trace: AttentionTrace, options: LessonOptions | None = None) -> str:
    blocks = lesson(trace, select(trace, ViewOptions()), options)
    return " ".join(
        "".join(span.text for span in block.spans)
        for block in blocks
        if isinstance(block, Paragraph)
    )


def holds_by_hand(line: str, terms: int) -> None:
    """Every product of ``line`` written out, and their sum is its printed result."""
    sums = line.split("   (")[0]
    printed = float(sums.rsplit(" = ", 1)[1])
    pairs = re.findall(NUMBER + "×" + NUMBER, sums)
    assert len(pairs) == terms, line
    places = len(sums.rsplit(".", 1)[1])
    total = sum(float(a) * float(b) for a, b in pairs)
    assert abs(total - printed) <= 0.5 * 10.0**-places + 1e-12, line


@pytest.mark.parametrize(
    ("n", "heads", "d_k", "d_c", "d_rope"),
    [(11, 2, 4, 6, 2), (3, 2, 4, 8, 2), (5, 4, 2, 11, 2), (2, 1, 128, 512, 64)],
)
def test_the_cache_sentence_counts_the_turned_key(
    n: int, heads: int, d_k: int, d_c: int, d_rope: int
) -> None:
    sentence = cache_sentence(n, heads, d_k, d_c, d_rope)
    cached, full = n * (d_c + d_rope), 2 * n * heads * d_k
    assert "keeps c and the shared rotated key k_R in its cache" in sentence
    assert f"n·(d_c + d_rope) = {n}·({d_c} + {d_rope}) = {cached:,} numbers" in sentence
    assert f"(d_rope = {d_rope}: k_R, one row per token for every head)" in sentence
    assert f"2·{n}·{heads}·{d_k} = {full:,} for every head's K and V: " in sentence
    if cached < full:
        assert f"{full / cached:.3g} times fewer" in sentence
    groups = (d_c + d_rope) / (2 * d_k)
    assert f"G = (d_c + d_rope)/(2·d_k) = {groups:.3g} groups" in sentence


def test_without_rotary_positions_the_cache_sentence_says_d_rope_is_0() -> None:
    sentence = cache_sentence(11, 2, 4, 6)
    assert "11·(6 + 0) = 66 numbers" in sentence and "d_rope = 0: this layer has no" in sentence
    assert "so the latent holds as much as G = d_c/(2·d_k) = 0.75 groups" in sentence


@pytest.mark.parametrize("decimals", [0, 2, 4])
@pytest.mark.parametrize(("latent", "heads", "d_model"), [(3, 2, 8), (6, 2, 8), (10, 4, 16)])
def test_the_absorbed_score_with_its_turned_part_holds_by_hand(
    latent: int, heads: int, d_model: int, decimals: int
) -> None:
    trace = traced(latent=latent, heads=heads, d_model=d_model)
    text = ExampleText(decimals, *position_labels(trace))
    for head in range(heads):
        example = worked.absorption(trace, head, 7, 3)
        assert example is not None and trace.scores_absorbed is not None
        assert example.result == trace.scores_absorbed[head, 7, 3]
        assert example.expanded == trace.scores[head, 7, 3]
        _, second = absorption_lines(text, example, "₁")
        assert second.startswith("q̃_it · c_cross + q_R,it · k_R,cross = ")
        if "…" not in second:
            holds_by_hand(second, latent + trace.d_rope)
        assert second.endswith(
            f"(q_it · k_cross + q_R,it · k_R,cross = {text.exact(example.expanded)})"
        )


def test_the_scores_example_is_one_dot_product_of_the_concatenations() -> None:
    trace = traced()
    text = ExampleText(2, *position_labels(trace))
    example = worked.dot_product(trace, 1, 7, 3)
    assert len(example.q) == len(example.k) == trace.d_k + trace.d_rope
    holds_by_hand(text.dot_product(example), trace.d_k + trace.d_rope)
    assert example.result == trace.scores[1, 7, 3]
    scaling = worked.scaling(trace, 1, 7, 3)
    assert scaling.sqrt_d_k == math.sqrt(6)


def test_why_the_turned_part_is_not_absorbed_is_said_with_its_numbers() -> None:
    trace = traced()
    text = ExampleText(2, *position_labels(trace))
    assert trace.Q_R is not None and trace.K_R is not None and trace.W_QR is not None
    example = worked.absorption(trace, 0, 7, 3)
    assert example is not None and example.q_rope is not None
    unturned = (trace.X[7] @ trace.W_QR[0]) @ (trace.X[3] @ trace.W_KR)  # type: ignore[operator]
    assert example.unturned == pytest.approx(float(unturned), abs=1e-12)
    sentence = not_absorbed(text, example)
    turned = float(trace.Q_R[0, 7] @ trace.K_R[3])
    assert f"q_R,it · k_R,cross = {text.exact(turned)} at positions 7 and 3 (4 apart)" in sentence
    assert f"against {text.exact(example.unturned)} had neither been turned" in sentence
    assert text.exact(turned) != text.exact(example.unturned)
    same = worked.absorption(trace, 0, 7, 7)
    assert same is not None
    alike = not_absorbed(text, same)
    assert "only because both stand at position 7, 0 apart" in alike
    assert abs(float(same.q_rope @ same.k_rope) - same.unturned) <= 1e-12  # type: ignore[operator]


def test_the_lesson_says_the_scale_the_scores_and_the_positions_of_this_trace() -> None:
    trace = traced()
    words = said(trace)
    assert "d_k + d_rope = 4 + 2 = 6 products, so it is divided by √(d_k + d_rope) = √6" in words
    assert "one dot product of the concatenations [q | q_R] and [k | k_R]" in words
    assert "In float64 (8 bytes a number): 704 bytes against 1,408." in words
    assert "(q·W_UKᵀ)·cᵀ + q_R·k_Rᵀ and q·kᵀ + q_R·k_Rᵀ are equal within" in words
    assert "turned by their word's position after the projections (step " in words
    assert "[q | q_R] and [k | k_R] have d_k + d_rope = 6 independent components" in words
    assert "d_rope = 0" not in words and "a sum of d_k + d_rope = 6 products" not in words
    full = said(trace, LessonOptions(full=True))
    assert "a sum of d_k + d_rope = 6 products, would have variance d_k + d_rope = 6" in full


# -- every surface ----------------------------------------------------------------------------


def test_the_terminal_lesson_and_its_steps_show_the_turned_parts() -> None:
    trace = traced()
    number, scaled = step_number("latent", trace), step_number("scaled", trace)
    result = runner.invoke(
        app,
        ["explain", IT, "--latent", "6", "--positions", "rope", "--steps", f"{number},{scaled}"],
        env={"COLUMNS": "100"},
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert f"Step {number} · Latent attention: K and V of head 1" in out
    assert "k_R = RoPE(X·W_KR)  [11 × 2]" in out and "Q_R₁ = RoPE(X·W_QR₁)  [11 × 2]" in out
    assert f"Step {scaled} · Scale by √(d_k + d_rope) = √6 = 2.45" in out
    assert "scaled₁ = scores₁ / √(d_k + d_rope)" in out


def test_the_page_slides_and_notebook_have_the_turned_parts() -> None:
    from attnviz.render.notebook.cell import trace_html

    trace = traced()
    selection = select(trace, ViewOptions(focus="it"))
    data = page_data(analysed([trace]), trace, selection)
    keys = [row["key"] for row in data["steps"]]
    assert keys[keys.index("qkv") + 1] == "latent" and "rope" not in keys
    assert data["sizes"]["dScore"] == 6 and data["sizes"]["dK"] == 4
    head = data["layers"][0]["heads"][0]
    text = ExampleText(2, *position_labels(trace))
    assert len(head["dotTerms"][next(iter(head["dotTerms"]))]["k"][0]) == 6
    assert set(head["roots"].values()) <= {text.exact(math.sqrt(6), d) for d in range(13)}
    found = lesson_analyses(trace, selection)
    names = [slide.name for slide in plan_slides(trace, selection, analyses=found)]
    assert any(name.endswith("-head1-latent") for name in names)
    small = traced("I am good")
    html = trace_html(small, select(small), image=False)  # the display but its picture
    assert "a cache keeps n·(d_c + d_rope) = 24 numbers against 2·n·h·d_k = 48" in html
    assert "k_R = RoPE(X·W_KR)" in html


def test_the_export_of_the_command_line_holds_the_turned_parts(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "t.npz"
    result = runner.invoke(
        app, ["explain", "I am good", "--latent", "4", "--positions", "rope", "--export", str(path)]
    )
    assert result.exit_code == 0, result.stderr
    (loaded,) = attnviz.load_trace(path)
    assert loaded.d_rope == 2 and loaded.Q_R is not None


def test_the_header_and_the_heatmap_say_the_turned_key() -> None:
    from attnviz.render.figures.heatmap_text import heatmap_text

    trace = traced("I am good")
    words = said(trace)
    assert "Z = softmax((Q·Kᵀ + Q_R·K_Rᵀ) / √(d_k + d_rope)) · V" in words
    assert "a decoupled RoPE key of d_rope 2" in heatmap_text(trace, select(trace)).facts
    plain = traced("I am good", positions="none")
    assert "Z = softmax(Q·Kᵀ / √d_k) · V" in said(plain)
    assert not any("RoPE" in fact for fact in heatmap_text(plain, select(plain)).facts)
