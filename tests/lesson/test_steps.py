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

from support import lesson_analyses, paper_keys, step, steps_spec
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
    assert "each head's " in steps_help()
    assert "Q K V, Q·Kᵀ, ÷√d_k, softmax, Z and What each word adds" in steps_help()
    assert f"margin ({margin}), A margin note; blockwise" in steps_help()
    assert f"{output} Concat and W_O (the focus view" in steps_help(page=True)
    # past the focus view of a lesson with every conditional step (rotary positions, a window)
    conditional = sum(s.when is not None and not s.optional for s in STEPS)
    refused = str(pytest.raises(AttnvizError, parse_steps, f"{focus + conditional + 1}").value)
    assert f"1 to {output}, and {focus} is the focus view (with " in refused
    assert "rotary positions 1 to" in refused

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
    from attnviz.cli import app

    from support import CliRunner

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
    assert paper_keys([step.key for step in numbers.values()]) == [
        "tokens",
        "qkv",
        "scores",
        "scaled",
        "weights",
        "z",
        "output",
        "focus",
    ]
    last, focus = last_plain_number(STEPS), focus_number(STEPS)
    assert last == step_number("output") and focus == step_number("focus") == last + 1
    assert list(numbers) == list(range(1, focus + 1))  # from 1, one after another
    per_head = [n for n, row in numbers.items() if row.per_head]  # one run, after the tokens
    assert per_head == list(range(step_number("tokens") + 1, step_number("z") + 1))
    assert len({step.title for step in STEPS}) == len(STEPS)


def test_every_row_names_a_module_that_writes_it_and_arrays_the_trace_has() -> None:
    fields = {field.name for field in dataclasses.fields(AttentionTrace)}
    for row in STEPS:
        module = importlib.import_module(row.writer)
        assert callable(module.write), row.key
        assert set(row.arrays) <= fields, row.key


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
            row = numbers[pause.step]
            assert block.text.startswith(f"Step {pause.step} · ")
            stem = row.title.split(" = ")[0].split("·")[0].split(" ")[0]
            assert stem in block.text, (row.title, block.text)
        elif isinstance(block, Worked):
            assert pause is not None
            assert block.example in numbers[pause.step].examples, (pause, block.example)
    assert paper_keys([row.key for row in numbers.values() if row.per_head]) == list(HEAD_KEYS)
    head = [(n, row.key) for n, row in numbers.items() if row.per_head]
    assert seen == [
        (step("tokens"), "tokens", None),
        *[(n, key, 0) for n, key in head],
        *[(n, key, 1) for n, key in head],
        (step("output"), "output", None),
        (step("focus"), "focus", None),
    ]


def test_a_head_shown_by_its_rows_pauses_once_at_its_first_step() -> None:
    """By default head 2 gives the focus word's rows: one pause, numbered as its first step,
    keyed "rows"; with --steps, at the first step shown, and none when no step of a head is."""
    (trace,) = traced()
    selection = select(trace, ViewOptions(focus="it"))
    pauses = [(b.step, b.key, b.head) for b in lesson(trace, selection) if isinstance(b, Pause)]
    head = [(n, row.key) for n, row in numbered(STEPS).items() if row.per_head]
    assert pauses == [
        (step("tokens"), "tokens", None),
        *[(n, key, 0) for n, key in head],
        (head[0][0], "rows", 1),
        (step("output"), "output", None),
        (step("focus"), "focus", None),
    ]
    scaled, weights = step("scaled"), step("weights")
    only = lesson(trace, selection, LessonOptions(steps=f"{scaled}-{weights}"))
    assert [(b.step, b.key, b.head) for b in only if isinstance(b, Pause)] == [
        (scaled, "scaled", 0),
        (weights, "weights", 0),
        (scaled, "rows", 1),
    ]
    assert not [
        b
        for b in lesson(trace, selection, LessonOptions(steps=steps_spec("output")))
        if isinstance(b, Pause) and b.head is not None
    ]


def test_steps_are_refused_in_the_tables_words() -> None:
    (trace,) = traced("I am good")  # no word followed
    last, focus = last_plain_number(STEPS), step("focus")
    # The options pass a number some lesson has (with rotary positions, a latent or a sliding
    # window there is a step past the focus view, with two of them two: rotary positions and a
    # latent are refused together); the lesson of this trace refuses it in its own numbers.
    conditional = min(2, sum(s.when is not None and not s.optional for s in STEPS))
    words = f"the steps are 1 to {last}, and {focus} is"
    LessonOptions(steps=str(focus + conditional))
    with pytest.raises(AttnvizError, match=f"there is no step {focus + 1}; {words}"):
        lesson(trace, select(trace), LessonOptions(steps=str(focus + 1)))
    beyond = focus + conditional + 1
    with pytest.raises(AttnvizError, match=f"there is no step {beyond}; {words}"):
        LessonOptions(steps=str(beyond))
    with pytest.raises(AttnvizError, match=f"step {focus} is the focus view.*show steps 1-{last}"):
        lesson(trace, select(trace), LessonOptions(steps=str(focus)))


@pytest.mark.parametrize(("decimals", "said"), [(1, "1 decimal"), (0, "0 decimals")])
def test_below_two_decimals_the_note_says_results_keep_two(decimals: int, said: str) -> None:
    """With --decimals 1 the tables show -1.1 and the example's result -1.12: the note says
    why, instead of "rounded as in the tables"."""
    import attnviz

    text = attnviz.lesson(attnviz.explain("I am good"), decimals=decimals, steps=steps_spec("qkv"))
    flat = " ".join(text.split())
    assert f"Results printed with 2 decimals, where the tables show {said};" in flat
    assert "rounded as in the tables" not in flat
    results = re.findall(r"= (-?\d+\.\d+)$", text, flags=re.M)
    assert results and all(len(r.split(".")[1]) == 2 for r in results)


def test_the_extra_step_switch_renumbers_every_step_after_the_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ATTNVIZ_TEST_EXTRA_STEP=1 runs the suite with two rows more (tests/extra_steps.py): this
    run's table has them exactly when the switch is on, and they move every step after the
    tokens one further and label the optional one after FlashAttention's."""
    import extra_steps

    assert (extra_steps.PLAIN in table.STEPS) == extra_steps.switched_on()
    assert (extra_steps.OPTIONAL in table.STEPS) == extra_steps.switched_on()
    real = tuple(row for row in table.STEPS if row.key not in extra_steps.ADDED)
    monkeypatch.setattr(table, "STEPS", real)
    before = {key: step_number(key) for key in ("tokens", "qkv", "z", "output", "focus")}
    blockwise = label("blockwise")
    extra_steps.install()
    extra_steps.install()  # a second call adds nothing
    assert len(table.STEPS) == len(real) + 2
    assert step_number("tokens") == before["tokens"] and step_number("recap") == before["qkv"]
    assert {key: step_number(key) for key in before if key != "tokens"} == {
        key: number + 1 for key, number in before.items() if key != "tokens"
    }
    assert label("blockwise") == f"{before['z'] + 1}b" != blockwise
    assert label("aside") == f"{before['z'] + 1}c"
    assert parse_steps("aside") == parse_steps("Aside")
