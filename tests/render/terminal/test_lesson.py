"""The terminal renderer: table layout, elision, labels, and colour that changes no character."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

import attnviz
from attnviz.cli import COMMANDS
from attnviz.labels import format_number, occurrence_labels
from attnviz.lesson.steps import step_number
from attnviz.render.terminal.lesson import render_explain
from attnviz.tokens import Focus, find_focus

from support import lesson_analyses, shown, step, steps_spec

ANSI = re.compile(r"\x1b\[[0-9;]*m")

QKV, SCORES, SCALED = (step_number(key) for key in ("qkv", "scores", "scaled"))


def render(
    trace: attnviz.AttentionTrace, *, width: int, colour: bool, focus: Focus | None = None
) -> str:
    from rich.console import Console

    console = Console(
        file=io.StringIO(),
        width=width,
        force_terminal=colour,
        color_system="truecolor" if colour else None,
        no_color=not colour,  # the suite runs with NO_COLOR=1; this test wants colour
        highlight=False,
    )
    selection = shown(trace, focus=focus)
    render_explain(trace, selection, console, analyses=lesson_analyses(trace, selection))
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_colour_adds_styles_but_changes_no_character(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")  # Rich narrows a dumb terminal to 80 columns
    trace = attnviz.trace_attention("The animal didn't cross the street because it was too tired")
    focus = find_focus(trace.tokens, "it")
    plain = render(trace, width=100, colour=False, focus=focus)
    coloured = render(trace, width=100, colour=True, focus=focus)
    assert "\x1b[" not in plain
    assert "\x1b[" in coloured and "48;2;" in coloured  # truecolor backgrounds on the weights
    assert ANSI.sub("", coloured) == plain


@pytest.mark.slow
def test_long_sentence_keeps_the_focus_row_visible() -> None:
    sentence = " ".join(["the cat sat on a mat because it was tired and"] * 5 + ["it ended"])
    trace = attnviz.trace_attention(sentence)
    focus = find_focus(trace.tokens, "it:3")
    text = render(trace, width=80, colour=False, focus=focus)
    weights_table = text.split("weights₁ = softmax(scaled₁)")[1].split(f"Step {step('z')} ·")[0]
    assert "\nit:3 " in weights_table
    assert "middle elided" in text


def test_occurrence_labels_number_repeated_words_ignoring_case() -> None:
    assert occurrence_labels(["The", "cat", "saw", "the", "dog"]) == [
        "The:1",
        "cat",
        "saw",
        "the:2",
        "dog",
    ]


@pytest.mark.parametrize(
    ("value", "decimals", "text"), [(-0.001, 2, "0.00"), (-0.006, 2, "-0.01"), (1.5, 0, "2")]
)
def test_format_number(value: float, decimals: int, text: str) -> None:
    assert format_number(value, decimals) == text


def test_control_characters_and_markup_in_words_are_shown_not_obeyed() -> None:
    trace = attnviz.trace_attention(["[red]x[/red]", "a\x1b[2Jb", "\x07"])
    text = render(trace, width=100, colour=True)
    assert "[red]x[/red]" in ANSI.sub("", text)
    assert "\\x1b" in text and "\\x07" in text
    assert "\x1b[2J" not in text and "\x07" not in text


def test_step_pacing_waits_between_steps_and_q_stops() -> None:
    from rich.console import Console

    trace = attnviz.trace_attention("I am good")
    asked: list[str] = []

    def pause(coming: str) -> bool:
        asked.append(coming)
        return not coming.startswith(f"Step {SCALED} ")  # the pause before the scaling: q

    console = Console(file=io.StringIO(), width=100, color_system=None)
    render_explain(trace, shown(trace), console, pause=pause)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert len(asked) == SCALED - 1  # a pause before each step after the first
    assert asked[-3:] == [
        f"Step {QKV} · Queries, keys and values of head 1",
        f"Step {SCORES} · Raw scores Q·Kᵀ",
        f"Step {SCALED} · Scale by √d_k = √4 = 2.00",
    ]
    assert f"Step {SCORES} · Raw scores" in out and f"Step {SCALED} ·" not in out
    assert out.rstrip().endswith("(stopped)")


def test_a_heads_rule_comes_with_its_first_step_after_the_pause() -> None:
    from rich.console import Console

    trace = attnviz.trace_attention("I am good")
    console = Console(file=io.StringIO(), width=100, color_system=None)
    render_explain(trace, shown(trace), console, pause=lambda coming: False)  # q at once
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"Step {step_number('tokens')} ·" in out and "Head 1 of 2" not in out
    assert f"Step {QKV}" not in out


NARROW_SCRIPT = """
import shlex, sys
from attnviz.cli import COMMANDS, command_function, run
for name in COMMANDS:
    paragraph = command_function(name).__doc__.split("Example: ")[1].split("\\n\\n")[0]
    example = " ".join(paragraph.split())  # as --help sets it: one paragraph, rewrapped
    status = run(shlex.split(example)[1:])
    print(f"STATUS {name} {status}", file=sys.stderr)
"""


@pytest.mark.slow  # every command, in a fresh process per width
# Each width is narrower than any indent; 1 and 7 wrap as 4 does: the full run.
@pytest.mark.parametrize(
    "columns",
    [pytest.param("1", marks=pytest.mark.full), "4", pytest.param("7", marks=pytest.mark.full)],
)
def test_every_commands_example_finishes_on_a_very_narrow_terminal(
    columns: str, tmp_path: Path
) -> None:
    """Each registered command's own --help example, in a terminal narrower than any indent."""
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", NARROW_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,  # a wrapping loop that never ends fails here instead of hanging
        env={**os.environ, "COLUMNS": columns},
        cwd=tmp_path,  # heatmap's example writes it.png
    )
    assert result.returncode == 0, result.stderr
    statuses = dict(
        line.split()[1:] for line in result.stderr.splitlines() if line.startswith("STATUS")
    )
    assert set(statuses) == set(COMMANDS)
    without_extra = os.environ.get("ATTNVIZ_WITHOUT_EXTRA") == "1"
    for name, status in statuses.items():  # the model's examples need the extra
        assert status == "0" or (without_extra and status == "3"), (name, result.stderr)


IT = "The animal didn't cross the street because it was too tired"
IT_LABELS = ["The:1", "animal", "didn't", "cross", "the:2", "street", "because", "it", "was"]


def word_tables(text: str) -> dict[str, list[str]]:
    """Each table whose columns are the sentence's words, by title: its header, then its rows."""
    lines = text.splitlines()
    tables = {}
    for number, line in enumerate(lines):
        if line.startswith(("scores", "scaled", "weights")) and "[11 × 11]" in line:
            header = next(i for i in range(number + 1, len(lines)) if "The:1" in lines[i])
            tables[line] = lines[header : header + 13]
    return tables


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize(
    "options",
    [{}, {"focus": "it"}, {"decimals": 1}],
    ids=["default", "focus", "decimals 1"],
)
def test_every_table_of_the_11_word_sentence_fits_80_and_100_columns_whole(
    width: int, options: dict[str, object]
) -> None:
    decimals = options.pop("decimals", 2)
    trace = attnviz.explain(IT, head="all", **options)  # type: ignore[arg-type]
    text = attnviz.lesson(trace, width=width, decimals=decimals)  # type: ignore[arg-type]
    assert "elided" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    tables = word_tables(text)
    assert len(tables) == 6  # scores, scaled and weights of both heads
    for title, (header, rule, *rows) in tables.items():
        # Every word heads its own column, in order, repeated words numbered.
        assert header.split()[: len(IT_LABELS)] == IT_LABELS, title
        assert header.split()[-1] == ("Σ" if title.startswith("weights") else "tired")
        assert set(rule) == {"─"} and "…" not in " ".join([header, *rows])
        assert [row.split()[0] for row in rows] == [*IT_LABELS, "too", "tired"]
        assert all(len(row.split()) == len(header.split()) + 1 for row in rows), title


@pytest.mark.slow
def test_the_paper_sizes_fit_100_columns_and_elide_at_80_as_before() -> None:
    trace = attnviz.explain(IT, preset="paper", head=1)
    wide = attnviz.lesson(trace, width=100)
    assert "scores₁ = Q₁·K₁ᵀ  [11 × 11]\n" in wide  # whole
    narrow = attnviz.lesson(trace, width=80)
    assert "scores₁ = Q₁·K₁ᵀ  [11 × 11]  middle elided, --export has all" in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 80


@pytest.mark.slow
def test_a_37_word_sentence_still_elides_with_its_full_shape_in_the_title() -> None:
    sentence = f"{IT} and the cat that sat on the mat near the door looked at it with great "
    sentence += "surprise because nobody had ever seen such a tired animal"
    trace = attnviz.explain(sentence).trace
    assert trace.n_tokens == 37
    for width in (80, 100):
        text = attnviz.lesson(trace, width=width)
        assert "weights₁ = softmax(scaled₁)  [37 × 37]  middle elided, --export has all" in text
        assert max(len(line) for line in text.splitlines()) <= width


@pytest.mark.parametrize("width", [60, 80])
def test_worked_examples_continue_indented_under_their_first_line(width: int) -> None:
    from attnviz.lesson.blocks import Worked
    from attnviz.lesson.options import LessonOptions

    from support import written_lesson as lesson

    trace = attnviz.explain(IT, focus="it").trace
    selection = shown(trace, focus=find_focus(trace.tokens, "it"))
    examples = [
        block.text
        for block in lesson(trace, selection, LessonOptions(full=True))
        if isinstance(block, Worked)
    ]
    assert sum(example.startswith("z_it = ") for example in examples) == 4  # 2 heads, 2 focus
    lines = attnviz.lesson(trace, width=width, full=True).splitlines()
    position, continued = 0, 0
    for example in examples:
        # The example's first line, two cells in; then lines four cells in until it is whole.
        while not (lines[position].startswith("  ") and example.startswith(lines[position][2:])):
            position += 1
        printed = [lines[position][2:]]
        while " ".join(printed) != example:
            position += 1
            assert lines[position].startswith("    ") and lines[position][4] != " ", (
                example,
                lines[position],
            )
            printed.append(lines[position][4:])
            continued += 1
        assert all(len(line) <= width for line in printed)
    assert continued >= (25 if width == 60 else 12)  # the test sees many wrapped lines


def test_a_table_that_must_elide_keeps_the_narrow_layout_and_shows_more_columns() -> None:
    trace = attnviz.explain(IT, head=1)
    text = attnviz.lesson(trace, width=72)
    lines = text.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("scores₁ = Q₁·K₁ᵀ"))
    assert "middle elided" in lines[title]
    header = lines[title + 1].split()
    # One column of 11 elided, not three: cut words and one-space gaps, as when it fits.
    assert header.count("…") == 1 and len(header) == 11
    assert header[0] == "The:1" and header[-1] == "tired"
    assert max(len(line) for line in lines) <= 72


def test_the_columns_legend_is_dim_on_every_line_it_wraps_to() -> None:
    from attnviz.cli import app

    from support import CliRunner

    env = {"COLUMNS": "74", "FORCE_COLOR": "1", "NO_COLOR": "", "TERM": "xterm"}
    result = CliRunner().invoke(
        app, ["explain", IT, "--steps", steps_spec("weights"), "--head", "1"], env=env
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "columns: " in line)
    wrapped = lines[first : first + 2]
    assert "= animal" in wrapped[0] and "= tired" in wrapped[1]  # cut words, on two lines
    assert all(line.startswith("\x1b[2m") for line in wrapped), wrapped  # both dim
