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
from attnviz.lesson.options import LessonOptions, parse_steps
from attnviz.lesson.steps import (
    STEPS,
    Step,
    focus_number,
    label,
    last_plain_number,
    numbered,
    step_number,
    steps_help,
)
from attnviz.options import TraceOptions
from attnviz.render.notebook.cell import trace_html
from attnviz.render.page.page_data import page_data
from attnviz.render.slides import plan_slides
from attnviz.render.terminal.lesson import render_explain
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace

from support import lesson_analyses
from support import written_lesson as lesson

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
    selection = select(trace, ViewOptions(focus="it"))
    found = lesson_analyses(trace, selection)
    render_explain(trace, selection, console, options, analyses=found)
    return console.file.getvalue()  # type: ignore[attr-defined]


#: An optional step written by a file of its own: shown only when --steps names it.
OPTIONAL_STEP_FILE = """
def write(lesson, head):
    lesson.say(f"A step shown only when named, in head {head.index + 1}.")
"""


def with_dummy_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table with two rows more, each written by a file of its own and nothing else
    edited: a plain per-head step after Z, and an optional one in the heads' run after the
    scaling."""
    (tmp_path / "extra_lesson_step.py").write_text(EXTRA_STEP_FILE, encoding="utf-8")
    (tmp_path / "extra_optional_step.py").write_text(OPTIONAL_STEP_FILE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    plain = Step("contribution", "What each word adds", per_head=True, module="extra_lesson_step")
    optional = Step(
        "margin", "A margin note", per_head=True, module="extra_optional_step", optional=True
    )
    keys = [step.key for step in STEPS]
    scaled, z = keys.index("scaled"), keys.index("z")
    rows = (*STEPS[: scaled + 1], optional, *STEPS[scaled + 1 : z + 1], plain, *STEPS[z + 1 :])
    monkeypatch.setattr(table, "STEPS", rows)


@pytest.mark.slow
def test_a_step_is_one_row_and_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain per-head step added after Z, and an optional one after the scaling: one row and
    one module each. The terminal lesson, --steps' help and its refusals, the slides' plan, the
    page's data and the notebook display all number them from the table, and the steps after
    them count one further."""
    (trace,) = traced()
    before = {step.key: number for number, step in numbered(STEPS, trace).items()}
    with_dummy_steps(tmp_path, monkeypatch)
    selection = select(trace, ViewOptions(focus="it"))
    new = before["z"] + 1  # the new step's number: Z's, one further
    output, focus = before["output"] + 1, before["focus"] + 1
    assert step_number("contribution", trace) == new
    assert step_number("output", trace) == output and step_number("focus", trace) == focus
    assert {key: step_number(key, trace) for key in before if key not in ("output", "focus")} == {
        key: number for key, number in before.items() if key not in ("output", "focus")
    }  # the steps before it keep their numbers
    margin = f"{before['scaled']}b"  # labelled after the step it follows
    assert label("margin", trace) == margin

    text = terminal_text(trace, LessonOptions(every_head=True))
    for head in (1, 2):
        assert f"Step {new} · What each word adds in head {head}" in text
        assert f"what the value vectors of head {head} add to the output of 'it'." in text
    assert "  a made-up line of arithmetic" in text
    assert f"Step {output} · Concatenate the heads and project with W_O" in text
    assert text.index(f"Step {before['z']} · Z₁") < text.index(f"Step {new} · What each word")
    assert text.index(f"Step {new} · What each word adds in head 1") < text.index("Head 2 of 2")
    assert "margin" not in text.lower()  # an optional step only where --steps names it
    named = terminal_text(trace, LessonOptions(steps=f"{before['scaled']},margin", full=True))
    for head in (1, 2):
        assert f"A step shown only when named, in head {head}." in named
    assert f"Step {margin} · A margin note" in named and f"Step {before['weights']} ·" not in named

    assert f"{output} Concat and W_O; {focus} the focus view" in steps_help()
    assert "each head's Q K V, Q·Kᵀ, ÷√d_k, softmax, Z and What each word adds" in steps_help()
    assert f"margin ({margin}), A margin note; blockwise" in steps_help()
    assert f"{output} Concat and W_O (the focus view" in steps_help(page=True)
    refused = str(pytest.raises(AttnvizError, parse_steps, f"{focus + 2}").value)
    assert f"1 to {output}, and {focus} is the focus view (with rotary positions" in refused

    data = page_data(analysed((trace,)), trace, selection)
    keys = [step["key"] for step in data["steps"]]
    assert "margin" not in keys and keys[new - 1 : new + 1] == ["contribution", "output"]
    assert data["steps"][new - 1] == {
        "number": new,
        "key": "contribution",
        "perHead": True,
        "heading": f"Step {new} · What each word adds",
    }
    assert data["lastStep"] == output
    written = data["layers"][0]["steps"][new - 1]["heads"][1]
    assert written[0] == ["h", f"Step {new} · What each word adds in head 2"]
    assert ["w", "contribution"] in written
    runs = next(runs for kind, runs in written if kind == "p")
    assert ["'it'", "", "query!r"] in runs  # the page puts the word picked there
    asked = page_data(analysed((trace,)), trace, selection, steps="margin")["steps"]
    assert [(s["key"], s.get("label")) for s in asked] == [("margin", margin)]

    found = lesson_analyses(trace, selection)
    every_head = LessonOptions(every_head=True)
    names = [slide.name for slide in plan_slides(trace, selection, every_head, analyses=found)]
    assert any(name.endswith("-head1-contribution") for name in names)
    assert any(name.endswith("-head2-contribution") for name in names)
    assert any(name.endswith("-output") for name in names)
    assert not any(name.endswith("-margin") for name in names)
    plan = plan_slides(
        trace, selection, LessonOptions(steps="margin", every_head=True), analyses=found
    )
    assert [slide.name.split("-", 1)[1] for slide in plan][-2:] == ["head1-margin", "head2-margin"]

    notebook = trace_html(trace, selection, found, image=False)
    # The display is the header and the focus view, found by the table's number for it.
    assert "<h4>Focus: where does 'it' look?" in notebook
    assert "made-up line" not in notebook and "A margin note" not in notebook

    only = terminal_text(trace, LessonOptions(steps=str(new)))
    assert f"Step {new} · What each word adds in head 1" in only
    assert f"Step {before['z']} ·" not in only


def test_the_help_texts_are_the_table_s() -> None:
    """--steps' help on every command is the one written from the table, numbers and all."""
    from typer.testing import CliRunner

    from attnviz.cli import app

    def words(text: str) -> str:
        return " ".join(text.replace("─", " ").replace("│", " ").split())

    def said(command: str) -> str:
        return words(CliRunner().invoke(app, [command, "--help"]).stdout)

    for command in ("explain", "cross"):
        assert words(steps_help()) in said(command)
    assert words(steps_help(page=True)) in said("page")
    assert f"{step_number('focus')} the focus view" in steps_help()


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
