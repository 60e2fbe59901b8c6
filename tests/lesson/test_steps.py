"""The one table of steps: every surface numbers and names the steps from it, and a new step is
a row in it and a file."""

from __future__ import annotations

import dataclasses
import importlib
import io
import re
from pathlib import Path

import pytest
from render.analysed import analysed
from rich.console import Console

from attnviz.core import trace_layers
from attnviz.errors import AttnvizError
from attnviz.lesson import steps as table
from attnviz.lesson.blocks import Heading, Pause, Worked
from attnviz.lesson.build import lesson
from attnviz.lesson.options import LessonOptions, parse_steps
from attnviz.lesson.steps import STEPS, Step, focus_number, last_plain_number, numbered
from attnviz.render.page.page_data import page_data
from attnviz.render.slides import plan_slides
from attnviz.render.terminal.lesson import render_explain
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace
from attnviz.trace_options import TraceOptions

IT = "The animal didn't cross the street because it was too tired"
HEAD_KEYS = ("qkv", "scores", "scaled", "weights", "z")

#: A step written by a file of its own, as the next lessons add theirs.
EXTRA_STEP_FILE = """
from attnviz.lesson.blocks import Span


def title(lesson, head):
    return f"What each word adds in head {head.index + 1}"


def write(lesson, head):
    lesson.say(
        "Word by word, what the value vectors of head "
        f"{head.index + 1} add to the output of ",
        Span(repr(lesson.all_queries[lesson.example]), slot="query!r"),
        ".",
    )
    lesson.worked_line("contribution", "a made-up line of arithmetic")
"""


def traced(sentence: str = IT) -> tuple[AttentionTrace, ...]:
    layers, _ = trace_layers(sentence, TraceOptions())
    return layers


def terminal_text(trace: AttentionTrace, options: LessonOptions | None = None) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    render_explain(trace, select(trace, ViewOptions(focus="it")), console, options)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_step_is_one_row_and_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-head step added after Z: one row in the table, one module; the terminal, the
    page's data, the slides' plan and --steps all find it, numbered 7, and renumber the rest."""
    (tmp_path / "extra_lesson_step.py").write_text(EXTRA_STEP_FILE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    row = Step("contribution", "What each word adds", per_head=True, module="extra_lesson_step")
    z = [step.key for step in STEPS].index("z")
    monkeypatch.setattr(table, "STEPS", (*STEPS[: z + 1], row, *STEPS[z + 1 :]))
    (trace,) = traced()
    selection = select(trace, ViewOptions(focus="it"))

    text = terminal_text(trace, LessonOptions(every_head=True))
    for head in (1, 2):
        assert f"Step 7 · What each word adds in head {head}" in text
        assert f"what the value vectors of head {head} add to the output of 'it'." in text
    assert "  a made-up line of arithmetic" in text
    assert "Step 8 · Concatenate the heads and project with W_O" in text
    assert text.index("Step 6 · Z₁") < text.index("Step 7 · What each word adds in head 1")
    assert text.index("Step 7 · What each word adds in head 1") < text.index("Head 2 of 2")

    data = page_data(analysed((trace,)), trace, selection)
    assert [step["key"] for step in data["steps"]][6:8] == ["contribution", "output"]
    assert data["steps"][6] == {
        "number": 7,
        "key": "contribution",
        "perHead": True,
        "heading": "Step 7 · What each word adds",
    }
    written = data["layers"][0]["steps"][6]["heads"][1]
    assert written[0] == ["h", "Step 7 · What each word adds in head 2"]
    assert ["w", "contribution"] in written
    runs = next(runs for kind, runs in written if kind == "p")
    assert ["'it'", "", "query!r"] in runs  # the page puts the word picked there

    names = [slide.name for slide in plan_slides(trace, selection, LessonOptions(every_head=True))]
    assert any(name.endswith("-head1-contribution") for name in names)
    assert any(name.endswith("-head2-contribution") for name in names)
    assert any(name.endswith("-output") for name in names)

    only = terminal_text(trace, LessonOptions(steps="7"))
    assert "Step 7 · What each word adds in head 1" in only and "Step 6 ·" not in only
    assert "9 is the focus view" in str(pytest.raises(AttnvizError, parse_steps, "11").value)


def test_the_table_numbers_the_steps_and_puts_the_focus_view_last() -> None:
    numbers = numbered(STEPS)
    assert [step.key for step in numbers.values()] == [
        "tokens",
        "qkv",
        "scores",
        "scaled",
        "weights",
        "z",
        "output",
        "focus",
    ]
    assert last_plain_number(STEPS) == 7 and focus_number(STEPS) == 8
    assert [n for n, step in numbers.items() if step.per_head] == [2, 3, 4, 5, 6]
    assert len({step.title for step in STEPS}) == len(STEPS)


def test_every_row_names_a_module_that_writes_it_and_arrays_the_trace_has() -> None:
    fields = {field.name for field in dataclasses.fields(AttentionTrace)}
    for step in STEPS:
        module = importlib.import_module(step.writer)
        assert callable(module.write), step.key
        assert set(step.arrays) <= fields, step.key


def test_the_lesson_s_pauses_headings_and_worked_examples_are_the_tables() -> None:
    """Each step's Pause carries its number, key and head; its heading starts with the table's
    title; its worked examples are the ones its row lists."""
    (trace,) = traced()
    blocks = lesson(trace, select(trace, ViewOptions(focus="it")), LessonOptions(every_head=True))
    numbers = numbered(STEPS)
    pause: Pause | None = None
    seen: list[tuple[int, str, int | None]] = []
    for block in blocks:
        if isinstance(block, Pause):
            pause = block
            seen.append((block.step, block.key, block.head))
        elif isinstance(block, Heading) and block.level == "step":
            assert pause is not None
            step = numbers[pause.step]
            assert block.text.startswith(f"Step {pause.step} · ")
            stem = step.title.split(" = ")[0].split("·")[0].split(" ")[0]
            assert stem in block.text, (step.title, block.text)
        elif isinstance(block, Worked):
            assert pause is not None
            assert block.example in numbers[pause.step].examples, (pause, block.example)
    assert seen == [
        (1, "tokens", None),
        *[(n, key, 0) for n, key in zip(range(2, 7), HEAD_KEYS, strict=True)],
        *[(n, key, 1) for n, key in zip(range(2, 7), HEAD_KEYS, strict=True)],
        (7, "output", None),
        (8, "focus", None),
    ]


def test_a_head_shown_by_its_rows_pauses_once_at_its_first_step() -> None:
    """By default head 2 gives the focus word's rows: one pause, numbered as its first step,
    keyed "rows"; with --steps, at the first step shown, and none when no step of a head is."""
    (trace,) = traced()
    selection = select(trace, ViewOptions(focus="it"))
    pauses = [(b.step, b.key, b.head) for b in lesson(trace, selection) if isinstance(b, Pause)]
    assert pauses == [
        (1, "tokens", None),
        *[(n, key, 0) for n, key in zip(range(2, 7), HEAD_KEYS, strict=True)],
        (2, "rows", 1),
        (7, "output", None),
        (8, "focus", None),
    ]
    only = lesson(trace, selection, LessonOptions(steps="4-5"))
    assert [(b.step, b.key, b.head) for b in only if isinstance(b, Pause)] == [
        (4, "scaled", 0),
        (5, "weights", 0),
        (4, "rows", 1),
    ]
    assert not [
        b
        for b in lesson(trace, selection, LessonOptions(steps="7"))
        if isinstance(b, Pause) and b.head is not None
    ]


def test_steps_are_refused_in_the_tables_words() -> None:
    (trace,) = traced("I am good")  # no word followed
    # The options pass a number some lesson has (with rotary positions there is a 9th step);
    # the lesson of this trace refuses it in its own numbers.
    with pytest.raises(AttnvizError, match="there is no step 9; the steps are 1 to 7, and 8 is"):
        lesson(trace, select(trace), LessonOptions(steps="9"))
    with pytest.raises(AttnvizError, match="there is no step 10; the steps are 1 to 7, and 8 is"):
        LessonOptions(steps="10")
    with pytest.raises(AttnvizError, match="step 8 is the focus view.*show steps 1-7"):
        lesson(trace, select(trace), LessonOptions(steps="8"))


@pytest.mark.parametrize(("decimals", "said"), [(1, "1 decimal"), (0, "0 decimals")])
def test_below_two_decimals_the_note_says_results_keep_two(decimals: int, said: str) -> None:
    """With --decimals 1 the tables show -1.1 and the example's result -1.12: the note says
    why, instead of "rounded as in the tables"."""
    import attnviz

    text = attnviz.lesson(attnviz.explain("I am good"), decimals=decimals, steps="2")
    flat = " ".join(text.split())
    assert f"Results printed with 2 decimals, where the tables show {said};" in flat
    assert "rounded as in the tables" not in flat
    results = re.findall(r"= (-?\d+\.\d+)$", text, flags=re.M)
    assert results and all(len(r.split(".")[1]) == 2 for r in results)
