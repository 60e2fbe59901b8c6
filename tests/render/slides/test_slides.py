"""--slides DIR: the lesson as 16:9 slides, one per step and head, SVG and PNG, in the terminal's
colours, with text large enough for the back row, and long steps continued rather than shrunk."""

from __future__ import annotations

import io
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

import attnviz
from attnviz.cli import app
from attnviz.errors import ExitStatus
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import STEPS, numbered, step_number
from attnviz.render.slides import (
    COLUMNS,
    MAX_LINES,
    SLIDE_HEIGHT_PX,
    SLIDE_WIDTH_PX,
    TEXT_PX,
    THEME,
    TITLE_PX,
    Slide,
    draw_slide,
    plan_slides,
)
from attnviz.render.slides.draw import _pieces
from attnviz.render.terminal.lesson import render_explain
from attnviz.render.terminal.text import weight_colours
from attnviz.selection import select

from support import CliRunner, step, steps_spec

IT_SENTENCE = "The animal didn't cross the street because it was too tired"
#: A sentence long enough for its tables to go on over several slides.
LONG_SENTENCE = " ".join(f"word{i}" for i in range(30))


def i_am_good_slides() -> list[str]:
    """The slides of "I am good" at the default sizes, in lesson order, from the table: the
    title, then a slide per step, head 1's steps each, then head 2's rows of 'I' on one slide
    (the lesson shows one head in full), then the output: "01-title", "02-tokens",
    "03-head1-qkv" … "07-head1-z", "08-head2-rows", "09-output"."""
    names = ["title"]
    for row in numbered(STEPS).values():
        if row.per_head:
            names.append(f"head1-{row.key}")
        elif not row.focus:  # the focus view only when a word is followed
            if names[-1].startswith("head1-"):
                names.append("head2-rows")
            names.append(row.key)
    return [f"{number:02d}-{name}" for number, name in enumerate(names, start=1)]


I_AM_GOOD = i_am_good_slides()


def run(*arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(arguments))
    return result.exit_code, result.stdout, result.stderr


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def slides_of(sentence: str, lesson: LessonOptions | None = None, **options: Any) -> list[Slide]:
    shown = attnviz.explain(sentence, **options)
    return plan_slides(shown.trace, shown.selection, lesson, analyses=shown.lesson_analyses())


@pytest.fixture(scope="module")
def deck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``attnviz explain "I am good" --slides DIR``, once for the tests that read its files."""
    folder = tmp_path_factory.mktemp("deck") / "slides"
    code, stdout, stderr = run("explain", "I am good", "--slides", str(folder))
    assert code == 0, stderr
    assert f"Step {step('output')} ·" in stdout  # the lesson is printed as well
    return folder


@pytest.mark.slow  # writes a whole deck of slides
def test_one_svg_and_one_png_per_slide_named_in_lesson_order(deck: Path) -> None:
    names = sorted(path.name for path in deck.iterdir())
    assert names == sorted(f"{name}{ext}" for name in I_AM_GOOD for ext in (".svg", ".png"))
    assert [path.stem for path in sorted(deck.glob("*.png"))] == I_AM_GOOD


@pytest.mark.slow  # writes a whole deck of slides
def test_every_file_written_is_reported_once(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    code, _, stderr = run(
        "explain", "I am good", "--steps", steps_spec("weights"), "--slides", str(folder)
    )
    assert code == 0
    expected = ["01-title", "02-head1-weights", "03-head2-rows"]
    assert stderr.splitlines() == [
        f"wrote {folder / name}{ext}" for name in expected for ext in (".svg", ".png")
    ]


@pytest.mark.slow  # writes a whole deck of slides
def test_slides_are_16_9_1920_by_1080_pixels(deck: Path) -> None:
    for path in deck.glob("*.png"):
        assert png_size(path) == (1920, 1080), path.name
    for path in deck.glob("*.svg"):
        head = path.read_text(encoding="utf-8")[:2000]
        width, height = (
            float(re.search(rf'{side}="([\d.]+)pt"', head).group(1))  # type: ignore[union-attr]
            for side in ("width", "height")
        )
        assert width / height == pytest.approx(16 / 9), path.name
        view_box = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', head)
        assert view_box is not None and float(view_box[1]) / float(view_box[2]) == pytest.approx(
            16 / 9
        )


@pytest.mark.slow  # writes a whole deck of slides
def test_svg_text_is_paths_so_no_font_is_needed(deck: Path) -> None:
    for path in deck.glob("*.svg"):
        text = path.read_text(encoding="utf-8")
        assert "<text" not in text and "@font-face" not in text and "font-family" not in text
        assert "<path" in text and "<use" in text  # each glyph an outline, used where it goes


@pytest.mark.slow  # writes a whole deck of slides
def test_the_same_command_writes_the_same_bytes(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        arguments = [
            "cross",
            "I am good",
            "Je vais bien",
            "--steps",
            steps_spec("weights", "focus"),
        ]
        arguments += ["--focus", "vais"]
        code, _, _ = run(*arguments, "--slides", str(tmp_path / folder))
        assert code == 0
    first, second = sorted((tmp_path / "a").iterdir()), sorted((tmp_path / "b").iterdir())
    assert [p.name for p in first] == [p.name for p in second]
    assert [p.stem for p in first if p.suffix == ".png"] == [
        "01-title",
        "02-head1-weights",
        "03-head2-rows",
        "04-focus-head1",
        "05-focus-head2",
    ]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


@pytest.mark.slow
def test_every_piece_of_text_is_at_least_28_pixels_tall_and_on_the_slide() -> None:
    slides = slides_of(IT_SENTENCE)
    for slide in (slides[0], slides[-1], *(s for s in slides if "weights" in s.name)):
        figure = draw_slide(slide)
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        texts = figure.axes[0].texts
        assert texts
        for text in texts:
            assert text.get_fontsize() * figure.dpi / 72 >= 28, (slide.name, text.get_text())
            box = text.get_window_extent(renderer)
            assert box.height >= 28, (slide.name, text.get_text())
            assert 0 <= box.x0 and box.x1 <= SLIDE_WIDTH_PX, (slide.name, text.get_text())
            assert 0 <= box.y0 and box.y1 <= SLIDE_HEIGHT_PX, (slide.name, text.get_text())


@pytest.mark.slow
def test_a_long_step_goes_on_over_continued_slides_and_loses_no_line() -> None:
    slides = slides_of(LONG_SENTENCE, heads=1)
    continued = [s for s in slides if s.title.plain.endswith("(continued)")]
    assert continued and all(re.fullmatch(r"\d+-[a-z0-9-]+-\d", s.name) for s in continued)
    assert all(len(s.lines) <= MAX_LINES for s in slides)
    assert all(line.cell_len <= COLUMNS for s in slides for line in s.lines)
    # Every line the terminal prints at the slides' width is on a slide, in the same order;
    # only the headings move into the slides' titles.
    trace = attnviz.explain(LONG_SENTENCE, heads=1).trace
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=COLUMNS, height=MAX_LINES, color_system=None, highlight=False
    )
    render_explain(trace, select(trace), console, LessonOptions())
    printed = [line.rstrip() for line in buffer.getvalue().splitlines() if line.strip()]
    shown = [line.plain.rstrip() for s in slides for line in s.lines if line.plain.strip()]
    titles = " ".join(s.title.plain for s in slides)
    left = iter(shown)
    for line in printed:
        if line.startswith("─") and line.endswith("─") and line.strip("─ ") in titles:
            continue  # a section's rule: its words are in the slides' titles
        if line.startswith(("Step ", "attnviz · ")) and line in titles:
            continue
        assert any(line == other for other in left), line
    # A table cut across slides shows its title, column words and rule again.
    first, *more = [s for s in slides if "head1-scores" in s.name]
    assert more
    top = next(i for i, line in enumerate(first.lines) if line.plain.startswith("scores₁ ="))
    head = [line.plain for line in first.lines[top : top + 3]]  # title, column words, rule
    assert "word0" in head[1] and set(head[2].strip()) == {"─"}
    for slide in more:
        assert [line.plain for line in slide.lines[:3]] == head


@pytest.mark.slow
@pytest.mark.parametrize("letters", [50, 150])
def test_a_long_title_shrinks_no_smaller_than_the_text_then_is_cut(letters: int) -> None:
    word = "w" * letters
    # The focus view's first slide, which carries its title.
    focus = next(s for s in slides_of(f"it is {word}", focus=word, head=1) if "focus" in s.name)
    figure = draw_slide(focus)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    title = [t for t in figure.axes[0].texts if t.get_position()[1] < 100]
    assert title
    for text in title:
        size = text.get_fontsize() * figure.dpi / 72
        assert TEXT_PX <= size < TITLE_PX
        assert text.get_window_extent(renderer).x1 <= SLIDE_WIDTH_PX
    shown = "".join(text.get_text() for text in title)
    assert (word in shown) == (letters == 50) and shown.endswith("?" if letters == 50 else "…")


def test_weights_are_shaded_as_in_the_terminal_on_a_dark_background() -> None:
    trace = attnviz.explain("I am good").trace
    (slide,) = [s for s in plan_slides(trace, select(trace)) if s.name.endswith("head1-weights")]
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor")
    fills = {fill.colour for line in slide.lines for fill in _pieces(line, console)[0]}
    assert fills == {weight_colours(float(w))[1] for w in trace.weights[0].ravel()}
    title = _pieces(slide.title, console)[1]
    assert title[-1].colour == THEME.ansi_colors[6].hex and title[-1].bold  # the step: bold cyan
    figure = draw_slide(slide)
    assert figure.get_facecolor()[:3] == pytest.approx(
        tuple(channel / 255 for channel in THEME.background_color)
    )
    assert sum(THEME.background_color) < 3 * 64  # dark


@pytest.mark.slow
def test_the_steps_asked_for_are_the_slides(tmp_path: Path) -> None:
    names = [s.name for s in slides_of(IT_SENTENCE, heads=1)]
    assert names[0] == "01-title" and names[-1].startswith(f"{len(names):02d}-focus")
    shown = attnviz.explain(IT_SENTENCE)
    asked = f"{step_number('scores')},{step_number('focus')}"  # named by their keys
    found = shown.lesson_analyses()
    only = plan_slides(shown.trace, shown.selection, LessonOptions(steps=asked), analyses=found)
    assert [s.name for s in only] == [
        "01-title",
        "02-head1-scores",
        "03-head2-rows",  # head 2 by its rows of 'it', for the steps shown
        "04-focus-head1",
        "05-focus-head2",
    ]
    every = plan_slides(
        shown.trace, shown.selection, LessonOptions(steps=asked, full=True), analyses=found
    )
    assert [s.name for s in every] == [
        "01-title",
        "02-head1-scores",
        "03-head2-scores",
        "04-focus-head1",
        "05-focus-head1-2",  # a head's weights, contributions and worked examples fill two
        "06-focus-head2",
        "07-focus-head2-2",
    ]


def test_a_file_or_a_missing_parent_is_refused_before_any_work(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine", encoding="utf-8")
    for folder, message in (
        (a_file, f"--slides {a_file} is a file, not a folder; give a folder name."),
        (tmp_path / "no" / "deck", f"folder {tmp_path / 'no'} does not exist"),
    ):
        code, stdout, stderr = run("explain", "I am good", "--slides", str(folder))
        assert code == ExitStatus.CANNOT_WRITE and stdout == ""
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert a_file.read_text(encoding="utf-8") == "mine"


@pytest.mark.slow
def test_other_files_in_the_folder_are_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "deck"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    (folder / "99-old-slide.png").write_bytes(b"old")
    code, _, stderr = run(
        "explain", "I am good", "--steps", steps_spec("tokens"), "--slides", str(folder)
    )
    assert code == 0
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (folder / "99-old-slide.png").read_bytes() == b"old"
    assert f"note: {folder} also holds 1 slide files" in stderr and "99-old-slide.png" in stderr
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary left


def test_rows_of_numbers_are_a_few_runs_and_keep_their_cells() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor")
    (slide,) = [s for s in slides_of("I am good") if s.name.endswith("head1-weights")]
    row = next(line for line in slide.lines if line.plain.startswith("am"))
    fills, runs = _pieces(row, console)
    assert len(fills) == 3 and len(runs) <= 5
    for run in runs:  # each run sits on the cells where the terminal prints it
        assert row.plain[run.cell : run.cell + len(run.text)] == run.text
    assert np.isclose(sum(float(x) for x in row.plain.split()[1:4]), 1.0, atol=0.02)


@pytest.mark.slow
def test_tables_too_wide_together_are_paired_not_stacked() -> None:
    """The projections' Q, K and V do not fit side by side: Q goes alone under the prose, K beside V
    on the next slide, rather than a slide two-thirds empty and one with two tables stacked
    (the tables are the terminal's, every row kept)."""
    slides = slides_of(IT_SENTENCE, LessonOptions(every_head=True))
    for head in ("₁", "₂"):
        number = "1" if head == "₁" else "2"
        step = [s for s in slides if s.name.split("-", 1)[1].startswith(f"head{number}-qkv")]
        assert len(step) == 2, [s.name for s in step]
        first, second = ([line.plain for line in s.lines] for s in step)
        assert any(line.startswith(f"Q{head} = X·W_Q{head}") for line in first)
        assert not any(line.startswith(f"K{head} = ") for line in first)
        (titles,) = [line for line in second if line.startswith(f"K{head} = X·W_K{head}")]
        assert f"V{head} = X·W_V{head}" in titles  # side by side, on one line
        assert sum(line.startswith("tired") for line in first + second) == 2  # Q's, and K|V's
    assert all(len(slide.lines) <= MAX_LINES for slide in slides)
    assert all(max((line.cell_len for line in s.lines), default=0) <= COLUMNS for s in slides)
