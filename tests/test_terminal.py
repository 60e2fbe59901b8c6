"""The terminal renderer: table layout, elision, labels, and colour that changes no character."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz
from attnviz.cli import COMMANDS
from attnviz.render.blocks import Matrix
from attnviz.render.labels import format_number, occurrence_labels
from attnviz.render.terminal import render_explain
from attnviz.render.text import _kept_indices, matrix_block, weight_style
from attnviz.tokens import Focus, find_focus

from support import shown

ANSI = re.compile(r"\x1b\[[0-9;]*m")


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
    render_explain(trace, shown(trace, focus=focus), console)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_colour_adds_styles_but_changes_no_character(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")  # Rich narrows a dumb terminal to 80 columns
    trace = attnviz.trace_attention("The animal didn't cross the street because it was too tired")
    focus = find_focus(trace.tokens, "it")
    plain = render(trace, width=100, colour=False, focus=focus)
    coloured = render(trace, width=100, colour=True, focus=focus)
    assert "\x1b[" not in plain
    assert "\x1b[" in coloured and "48;2;" in coloured  # truecolor backgrounds on the weights
    assert ANSI.sub("", coloured) == plain


@settings(max_examples=40, deadline=None)
@given(
    n_rows=st.integers(1, 60),
    n_columns=st.integers(1, 600),
    width=st.integers(40, 200),
    decimals=st.integers(0, 6),
    scale=st.sampled_from([1.0, 1e4, 1e-3]),
)
def test_matrix_block_never_exceeds_the_width_and_keeps_first_and_last(
    n_rows: int, n_columns: int, width: int, decimals: int, scale: float
) -> None:
    values = np.random.default_rng(n_rows * n_columns).normal(size=(n_rows, n_columns)) * scale
    labels = [f"w{i}" for i in range(n_rows)]
    block = matrix_block(
        Matrix(values, "M", labels, [str(c + 1) for c in range(n_columns)]), decimals, width
    )
    lines = [line.plain for line in block.lines]
    if n_columns > 2 and decimals <= 2 and scale == 1.0:
        assert max(len(line) for line in lines) <= width
    rule = next(number for number, line in enumerate(lines) if line.startswith("─"))
    title, table_lines = " ".join(lines[: rule - 1]), lines[rule - 1 :]
    header = table_lines[0].split()
    assert header[0] == "1" and header[-1] == str(n_columns)
    assert title.startswith(f"M  [{n_rows} × {n_columns}]")
    rows = [line.split()[0] for line in table_lines[2:]]
    assert rows[0] == "w0" and rows[-1] == f"w{n_rows - 1}"
    assert ("elided" in title) == ("…" in " ".join(table_lines))


def test_kept_indices() -> None:
    assert _kept_indices(5, 10) == [0, 1, 2, 3, 4]
    assert _kept_indices(10, 4) == [0, 1, None, 8, 9]
    assert _kept_indices(10, 4, must=5) == [0, None, 5, None, 9]
    assert _kept_indices(10, 4, must=1) == [0, 1, None, 8, 9]


def test_long_sentence_keeps_the_focus_row_visible() -> None:
    sentence = " ".join(["the cat sat on a mat because it was tired and"] * 5 + ["it ended"])
    trace = attnviz.trace_attention(sentence)
    focus = find_focus(trace.tokens, "it:3")
    text = render(trace, width=80, colour=False, focus=focus)
    weights_table = text.split("weights₁ = softmax(scaled₁)")[1].split("Step 6")[0]
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


def test_weight_style_is_dark_for_zero_bright_for_one_and_readable() -> None:
    assert weight_style(0.0) == "white on #440154"
    assert weight_style(1.0) == "black on #fde725"
    assert weight_style(-5.0) == weight_style(0.0) and weight_style(7.0) == weight_style(1.0)


def test_weight_style_stays_ordered_on_256_and_16_colour_terminals() -> None:
    greys = [int(weight_style(w / 20, "256").split("color(")[1].rstrip(")")) for w in range(21)]
    assert greys == sorted(greys) and greys[0] == 232 and greys[-1] == 255
    assert weight_style(0.05, "standard") == "dim"
    assert weight_style(0.2, "standard") == ""
    assert weight_style(0.4, "standard") == "bold"
    assert weight_style(0.9, "standard") == "bold reverse"
    assert weight_style(0.9, None) == ""


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
        return len(asked) < 3  # the third pause answers q

    console = Console(file=io.StringIO(), width=100, color_system=None)
    render_explain(trace, shown(trace), console, pause=pause)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert asked == [
        "Step 2 · Queries, keys and values of head 1",
        "Step 3 · Raw scores Q·Kᵀ",
        "Step 4 · Scale by √d_k = √4 = 2.00",
    ]
    assert "Step 3 · Raw scores" in out and "Step 4 ·" not in out
    assert out.rstrip().endswith("(stopped)")


def test_a_heads_rule_comes_with_its_first_step_after_the_pause() -> None:
    from rich.console import Console

    trace = attnviz.trace_attention("I am good")
    console = Console(file=io.StringIO(), width=100, color_system=None)
    render_explain(trace, shown(trace), console, pause=lambda coming: False)  # q at once
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "Step 1 ·" in out and "Head 1 of 2" not in out and "Step 2" not in out


def test_wrap_keeps_vectors_whole_indents_continuations_and_leaves_no_trailing_spaces() -> None:
    from rich.text import Text

    from attnviz.render.text import wrap

    formula = Text("  z_it = 0.61·v_was + 0.12·v_because + 0.09·v_cross = [0.22, -0.34, -1.17]")
    formula.stylize("green")
    lines = wrap(formula, 40)
    assert [line.plain for line in lines] == [
        "  z_it = 0.61·v_was + 0.12·v_because +",
        "    0.09·v_cross = [0.22, -0.34, -1.17]",
    ]
    assert [line.plain for line in wrap(formula, 36)][-2:] == [
        "    + 0.09·v_cross",
        "    = [0.22, -0.34, -1.17]",
    ]
    assert all(line.spans and line.spans[-1].style == "green" for line in lines)
    prose = wrap(Text("X has shape [n, d_model] = [11, 8] and so on "), 22)
    assert [line.plain for line in prose] == ["X has shape", "[n, d_model] = [11, 8]", "and so on"]


@settings(max_examples=500, deadline=None)
@given(
    indent=st.integers(0, 12),
    text=st.text(alphabet=st.sampled_from(list("ab [](),=·東👍 ")), max_size=120),
    width=st.integers(1, 60),
)
def test_wrap_never_exceeds_the_width_nor_loses_a_character(
    indent: int, text: str, width: int
) -> None:
    from rich.cells import cell_len
    from rich.text import Text

    from attnviz.render.text import wrap

    lines = [line.plain for line in wrap(Text(" " * indent + text), width)]
    if width >= 2:  # narrower, a wide character cannot fit at all
        assert all(cell_len(line) <= width for line in lines)
    assert not any(line.endswith(" ") for line in lines)
    assert all(line.strip() for line in lines) or not text.strip()
    assert "".join("".join(lines).split()) == "".join(text.split())


NARROW_SCRIPT = """
import shlex, sys
from attnviz.cli import COMMANDS, run
for name, (function, _) in COMMANDS.items():
    example = function.__doc__.split("Example: ")[1].split("\\n")[0]
    status = run(shlex.split(example)[1:])
    print(f"STATUS {name} {status}", file=sys.stderr)
"""


@pytest.mark.slow  # every command, in a fresh process per width
@pytest.mark.parametrize("columns", ["1", "4", "7"])
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
    trace = attnviz.explain(IT, **options)  # type: ignore[arg-type]
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


def test_the_paper_sizes_fit_100_columns_and_elide_at_80_as_before() -> None:
    trace = attnviz.explain(IT, preset="paper", head=1)
    wide = attnviz.lesson(trace, width=100)
    assert "scores₁ = Q₁·K₁ᵀ  [11 × 11]\n" in wide  # whole
    narrow = attnviz.lesson(trace, width=80)
    assert "scores₁ = Q₁·K₁ᵀ  [11 × 11]  middle elided, --export has all" in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 80


def test_a_37_word_sentence_still_elides_with_its_full_shape_in_the_title() -> None:
    sentence = f"{IT} and the cat that sat on the mat near the door looked at it with great "
    sentence += "surprise because nobody had ever seen such a tired animal"
    trace = attnviz.explain(sentence).trace
    assert trace.n_tokens == 37
    for width in (80, 100):
        text = attnviz.lesson(trace, width=width)
        assert "weights₁ = softmax(scaled₁)  [37 × 37]  middle elided, --export has all" in text
        assert max(len(line) for line in text.splitlines()) <= width


def table_of(words: list[str], width: int) -> list[str]:
    values = np.linspace(-0.5, 0.5, len(words) ** 2).reshape(len(words), len(words))
    matrix = Matrix(values, "scores", words, words)
    return [line.plain for line in matrix_block(matrix, 2, width).lines]


def test_column_words_are_cut_only_as_far_as_needed_and_given_in_full_below() -> None:
    words = ["international", "negotiations", "collapsed", "yesterday", "because", "of", "it"]
    whole = table_of(words, 100)
    assert whole[1].split() == ["internati…", "negotiati…", *words[2:]]  # as ever: 10 cells
    assert not whole[-1].startswith("columns:")
    cut = table_of(words, 64)
    assert max(len(line) for line in cut) <= 64
    assert cut[1].split() == ["intern…", "negoti…", "collap…", "yester…", *words[4:]]
    assert " ".join(cut[-2:]) == (
        "columns: intern… = international, negoti… = negotiations, collap… = collapsed, "
        "yester… = yesterday"
    )
    rows = [line.split()[0] for line in cut[3:10]]
    assert rows == ["internati…", "negotiati…", *words[2:]]  # the rows keep their words
    assert table_of(words, 60)[1].split()[4] == "becau…"  # narrower, cut further


def test_words_that_would_be_cut_alike_are_elided_instead() -> None:
    distinct = table_of(["streetcar", "lamppost", "pavements", "a", "b", "c"], 50)
    assert distinct[1].split()[:3] == ["stree…", "lampp…", "pavem…"]  # cut, and all there
    alike = table_of(["streetcar", "streetlamp", "streetwise", "a", "b", "c"], 50)
    assert "middle elided" in alike[0] and not alike[-1].startswith("columns:")


def test_a_title_too_long_for_the_line_keeps_its_elision_note_whole() -> None:
    lines = table_of([f"w{i}" for i in range(30)], 40)
    assert lines[:2] == ["scores  [30 × 30]", "middle elided, --export has all"]
    assert max(len(line) for line in lines) <= 40


@pytest.mark.parametrize("width", [60, 80])
def test_worked_examples_continue_indented_under_their_first_line(width: int) -> None:
    from attnviz.render.blocks import Paragraph
    from attnviz.render.lesson import lesson

    trace = attnviz.explain(IT, focus="it").trace
    examples = [
        "".join(span.text for span in block.spans).strip()
        for block in lesson(trace, shown(trace, focus=find_focus(trace.tokens, "it")))
        if isinstance(block, Paragraph) and block.spans[0].text == "  "
    ]
    assert sum(example.startswith("z_it = ") for example in examples) == 4  # 2 heads, 2 focus
    lines = attnviz.lesson(trace, width=width).splitlines()
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
    from typer.testing import CliRunner

    from attnviz.cli import app

    env = {"COLUMNS": "74", "FORCE_COLOR": "1", "NO_COLOR": "", "TERM": "xterm"}
    result = CliRunner().invoke(app, ["explain", IT, "--steps", "5", "--head", "1"], env=env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "columns: " in line)
    wrapped = lines[first : first + 2]
    assert "= animal" in wrapped[0] and "= tired" in wrapped[1]  # cut words, on two lines
    assert all(line.startswith("\x1b[2m") for line in wrapped), wrapped  # both dim
