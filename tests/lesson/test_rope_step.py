"""The rotary-positions step and grouped-query attention in the lesson: numbered only where the
trace has them, every worked example true by hand at the digits shown, the sharing said with
this sentence's numbers, and K and V read from each head's key/value head everywhere."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from render.analysed import analysed

import attnviz
from attnviz import worked
from attnviz.analysis.ablation import ablated_output
from attnviz.analysis.contribution import contributions, row_contribution
from attnviz.core import trace_with_options
from attnviz.errors import AttnvizError
from attnviz.lesson.blocks import Pause, Worked
from attnviz.lesson.examples import ExampleText, position_labels
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.rope import relative_line, rotation_lines
from attnviz.lesson.steps import (
    STEPS,
    focus_number,
    label,
    last_plain_number,
    numbered,
    step_number,
)
from attnviz.options import TraceOptions
from attnviz.render.page.page_data import page_data
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace

from support import paper_keys, steps_spec
from support import written_lesson as lesson

IT = "The animal didn't cross the street because it was too tired"


def traced(sentence: str, **options: object) -> AttentionTrace:
    trace, _ = trace_with_options(sentence, TraceOptions(**options))  # type: ignore[arg-type]
    return trace


def text_of(trace: AttentionTrace, decimals: int = 2) -> ExampleText:
    return ExampleText(decimals, *position_labels(trace))


def worked_sum_holds(line: str) -> None:
    """``… = a×b + c×d = r``: the products of the printed numbers round to the printed r."""
    products, result = line.rsplit(" = ", 2)[-2:]
    number = r"\(?(-?\d+\.\d+)\)?"
    pairs = re.findall(number + "×" + number, products)
    assert len(pairs) == 2, line
    total = sum(float(a) * float(b) for a, b in pairs)
    decimals = len(result.partition(".")[2])
    assert abs(total - float(result)) < 0.5 * 10.0**-decimals, line


@pytest.mark.parametrize("decimals", [0, 2, 4])
@pytest.mark.parametrize("sentence", ["I am good", IT])
def test_the_turned_pair_holds_by_hand(sentence: str, decimals: int) -> None:
    trace = traced(sentence, positions="rope", heads=2, d_model=8)
    text = text_of(trace, decimals)
    for head in range(trace.n_heads):
        for token in range(1, trace.n_tokens):
            example = worked.rotation(trace, head, token)
            assert example.angle == token * 1.0  # pair 0 turns 1 radian per position
            cos_sin, first, second = rotation_lines(text, example)
            printed_cos, printed_sin = re.findall(r"= (-?\d+\.\d+)", cos_sin)
            places = len(printed_cos.partition(".")[2])
            assert float(printed_cos) == round(math.cos(example.angle), places)
            assert float(printed_sin) == round(math.sin(example.angle), places)
            assert f"×{printed_cos}" in first.replace("(", "").replace(")", "")
            worked_sum_holds(first)
            worked_sum_holds(second)
            assert second.endswith(text.exact(example.result[1]))


def test_the_turned_pair_is_the_traces_own_number() -> None:
    trace = traced("I am good", positions="rope")
    example = worked.rotation(trace, 1, 2)
    assert trace.Q_rotated is not None
    assert example.result == (trace.Q_rotated[1, 2, 0], trace.Q_rotated[1, 2, 2])
    assert example.coordinates == (0, 2) and example.theta == 1.0


def test_the_relative_example_scores_the_same_at_the_same_distance() -> None:
    trace = traced(IT, positions="rope", heads=4, d_model=16, kv_heads=2)
    text = text_of(trace)
    for head in range(trace.n_heads):
        example = worked.relative_position(trace, head, 7, 3)
        assert example.positions == ((2, 5), (7, 10))
        assert example.scores[0] == pytest.approx(example.scores[1], abs=1e-12)
        assert example.own == trace.scores[head, 7, 3]
        line = relative_line(text, example)
        first, second = re.findall(r"= (-?\d+\.\d+)", line)
        assert first == second
        assert "both 3 apart" in line


def test_the_rope_step_comes_after_qkv_only_where_the_trace_has_rope() -> None:
    """Rotary positions add a step after the projections; every later step counts one further
    there, and in no other lesson."""
    plain, turned = traced("I am good"), traced("I am good", positions="rope")
    assert numbered(STEPS, plain) == numbered(STEPS)
    assert "rope" not in [step.key for step in numbered(STEPS).values()]
    rope = step_number("qkv") + 1
    assert step_number("rope", turned) == rope
    for number, step in numbered(STEPS).items():
        later = number >= rope
        assert step_number(step.key, turned) == number + later, step.key
    assert focus_number(STEPS, turned) == (focus_number(STEPS) or 0) + 1
    pauses = [b for b in lesson(turned, select(turned)) if isinstance(b, Pause)]
    first = [(p.step, p.key) for p in pauses if p.head == 0]
    qkv = first.index((rope - 1, "qkv"))
    assert first[qkv : qkv + 3] == [
        (rope - 1, "qkv"), (rope, "rope"), (rope + 1, "scores"),
    ]  # fmt: skip
    assert not any(p.key == "rope" for p in lesson(plain, select(plain)) if isinstance(p, Pause))


def test_steps_selects_the_rope_step_by_its_number_in_that_lesson() -> None:
    shown = attnviz.explain("I am good", positions="rope", kv_heads=1)
    rope, scores = step_number("rope", shown.trace), step_number("scores", shown.trace)
    rope_only = attnviz.lesson(shown, steps=rope, width=80)
    assert f"Step {rope} · Rotary positions" in rope_only and f"Step {scores} ·" not in rope_only
    scores_only = attnviz.lesson(shown, steps=str(scores))
    assert f"Step {scores} · Raw scores" in scores_only
    assert "(Q₁ turned)·(K₁ turned)ᵀ" in scores_only


def test_the_lesson_s_cross_references_count_the_rope_step() -> None:
    """ "As in step N" names the scaling by its number in the lesson it is said in, one further
    with rotary positions, whose rotary step the tokens step points to."""
    for positions in ("none", "rope"):
        trace = traced("I am good", positions=positions)
        said = " ".join(
            attnviz.lesson(
                attnviz.explain("I am good", positions=positions),
                steps=steps_spec("tokens", "blockwise"),
            ).split()
        )
        scaled, weights, z = (step_number(key, trace) for key in ("scaled", "weights", "z"))
        assert f"Step {label('blockwise', trace)} · FlashAttention's softmax" in said
        assert f"FlashAttention computes steps {weights} and {z} together" in said
        assert f"as in step {scaled} (−∞ where masked)" in said
        assert f"and step {z}'s z of" in said and f"are step {weights}'s row of weights" in said
    assert f"after the projections (step {step_number('rope', trace)})" in said


def test_a_step_refused_before_any_trace_is_refused_in_both_numberings() -> None:
    """Read before the trace, --steps cannot know whether the lesson has rotary positions (or a
    sliding window, or both): the message gives every lesson's numbers, never only the one the
    lesson does not have."""
    turned = traced("I am good", positions="rope")
    both = traced("I am good", positions="rope", causal=True, window=2)
    focus, furthest = focus_number(STEPS, turned) or 0, focus_number(STEPS, both) or 0
    assert furthest == focus + 1  # the window's step counts one further again
    refused = str(pytest.raises(AttnvizError, LessonOptions, steps=str(furthest + 1)).value)
    assert (
        f"there is no step {furthest + 1}; the steps are 1 to {last_plain_number(STEPS)}, and "
        f"{focus_number(STEPS)} is the focus view"
    ) in refused
    assert (
        f"(with a sliding window, latent attention or rotary positions 1 to "
        f"{last_plain_number(STEPS, turned)}, and {focus} is the focus view)"
    ) in refused
    assert (
        f"(with two of them 1 to {last_plain_number(STEPS, both)}, and {furthest} is the focus "
        "view)."
    ) in refused
    with pytest.raises(AttnvizError, match=f"step {focus} is the focus view.*steps 1-{focus - 1}"):
        lesson(turned, select(turned), LessonOptions(steps=str(focus)))


def test_every_worked_example_of_the_rope_lesson_is_one_the_step_names() -> None:
    trace = traced(IT, positions="rope", heads=4, d_model=16, kv_heads=2)
    selection = select(trace, ViewOptions(focus="it"))
    steps = numbered(STEPS, trace)
    pause = None
    for block in lesson(trace, selection, LessonOptions()):
        if isinstance(block, Pause):
            pause = block
        elif isinstance(block, Worked):
            assert pause is not None
            assert block.example in steps[pause.step].examples, (pause, block.example)


@pytest.mark.slow
def test_the_lesson_says_what_sharing_saves_with_this_sentences_numbers() -> None:
    shown = attnviz.explain("The cat sat on the mat", heads=4, d_model=16, kv_heads=2)
    printed = " ".join(attnviz.lesson(shown, width=100, full=True).split())
    assert "W_K and W_V [G, d_model, d_k] = [2, 16, 4]" in printed
    assert "heads 1 and 2 both read key/value head 1" in printed
    assert "heads 3 and 4 both read key/value head 2" in printed
    assert "2·n·G·d_k = 2·6·2·4 = 96 numbers per layer" in printed
    assert "2·n·h·d_k = 2·6·4·4 = 192" in printed
    assert "Z₃ = weights₃·V₂" in printed and "scores₄ = Q₄·K₂ᵀ" in printed
    brief = " ".join(attnviz.lesson(shown, width=100).split())
    assert "heads 1 and 2 both read key/value head 1" in brief  # said with the first head
    assert "2·n·G·d_k = 2·6·2·4 = 96 numbers per layer" in brief
    mqa = " ".join(attnviz.lesson(attnviz.explain("I am good", kv_heads=1)).split())
    assert "multi-query attention, one key/value head for 2 query heads" in mqa


def test_the_rope_lesson_says_v_is_not_turned_and_the_pairing() -> None:
    printed = " ".join(attnviz.lesson(attnviz.explain("I am good", positions="rope")).split())
    assert "V is not turned" in printed
    assert "coordinate i with i + d_k/2" in printed and "GGUF files" in printed
    # Not every GGUF file pairs neighbours: Qwen2's keep Hugging Face's halves.
    assert "Llama-family GGUF files (llama.cpp) pair neighbours" in printed
    assert "Qwen2's GGUF files keep these halves" in printed
    assert not re.search(r"(?<!Llama-family )GGUF files \(llama.cpp\) pair", printed)
    assert "added to X once before the first layer" in printed
    assert "q_I at 2 · k_" in printed
    assert "Attention alone ignores word order: it treats" not in printed  # not true with rope


@pytest.mark.slow
def test_every_view_reads_k_and_v_from_the_heads_key_value_head() -> None:
    trace = traced(IT, positions="rope", heads=4, d_model=16, kv_heads=1)
    values = trace.V[[trace.kv_head(h) for h in range(4)]]
    rows = trace.W_O.reshape(4, 4, 16)
    transformed = np.linalg.norm(np.einsum("hnd,hdm->hnm", values, rows), axis=-1)
    np.testing.assert_allclose(contributions(trace).transformed_norms, transformed)
    for head in range(4):
        assert row_contribution(trace, head, 7).keys[3].transformed_norm == pytest.approx(
            transformed[head, 3]
        )
        ablated_output(trace, head)
        assert worked.projection(trace, head, 1, matrix="V").result == trace.V[0, 1, 0]
    data = page_data(analysed([trace]), trace, select(trace, ViewOptions(focus="it")))
    assert data["kvHeads"] == [1, 1, 1, 1]
    keys = [row["key"] for row in data["steps"]]
    assert paper_keys(keys)[:4] == ["tokens", "qkv", "rope", "scores"]
    # The page writes the turned pair as the lesson does, whatever word is picked.
    rope_blocks = data["layers"][0]["steps"][keys.index("rope")]["heads"][0]
    worked_blocks = [block for block in rope_blocks if block[0] == "w"]
    assert [block[1] for block in worked_blocks] == ["rotation"] * 3 + ["relative_position"]
    assert all(len(block) == 3 and block[2] for block in worked_blocks)


@pytest.mark.slow
def test_the_notebook_shows_a_rope_lesson_with_its_focus_view() -> None:
    shown = attnviz.explain("I am good", positions="rope", kv_heads=1, focus="am")
    html = shown._repr_html_()
    assert "Head 2 (K/V 1): softmax weights" in html
