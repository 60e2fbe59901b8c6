"""Every command bounded, with the bound said before the work (attnviz.limits): each case builds
its own oversized request and checks the one-line refusal, its exit code, that nothing was
printed or written, and that it came at once. The same refusals in a fresh process under a
memory cap are in tests/e2e/test_limits_process.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz import limits, trace_attention
from attnviz.api.writing import check_sizes
from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.files import MAX_JSON_BYTES
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import STEPS, optional_numbers, per_head_numbers
from attnviz.trace_files import export_trace

from support import CliRunner, needs_model, one_error_line, step

runner = CliRunner()

WORDS_500 = " ".join(f"w{index}" for index in range(500))


def refused_at_once(
    arguments: list[str], status: ExitStatus, *fragments: str, within: float = 5
) -> str:
    """The command's one error line, after checking it came within a second or two (``within``
    seconds, generous for a busy machine), with its exit status and nothing on stdout."""
    started = time.perf_counter()
    result = runner.invoke(app, arguments)
    assert time.perf_counter() - started < within
    assert result.exit_code == status, result.stderr
    assert result.stdout == ""
    return one_error_line(result.stderr, *fragments)


# -- the trace's memory -------------------------------------------------------------------------


def test_the_trace_estimate_counts_heads_times_tokens_squared() -> None:
    assert limits.trace_numbers(500, 500, 2048, 2048) == (
        3 * 2048 * 500 * 500 + 10 * 500 * 2048 + 4 * 2048 * 2048
    )
    limits.check_trace(512, 512, 512, 8)  # the paper's sizes at the longest sentence
    with pytest.raises(AttnvizError, match=r"12\.5 GB of memory.*heads=128 or fewer"):
        limits.check_trace(500, 500, 2048, 2048)
    # No number of heads dividing d_model fits: only a shorter sentence is offered.
    with pytest.raises(AttnvizError, match="at most 1.0 GB: use a shorter sentence") as error:
        limits.check_trace(512, 512, 2048, 2, layers=1000)
    assert "heads=" not in str(error.value)
    # A model's heads (or a weights file's) are its own: only a shorter sentence is offered.
    with pytest.raises(AttnvizError, match="use a shorter sentence") as error:
        limits.check_trace(512, 512, 1024, 1024, heads_fixed=True)
    assert "heads=" not in str(error.value)


@pytest.mark.slow
def test_2048_heads_on_500_words_are_refused_before_the_trace() -> None:
    # On main this peaked at 13.5 GB and ran out of memory.
    refused_at_once(
        ["explain", WORDS_500, "--d-model", "2048", "--heads", "2048"],
        ExitStatus.BAD_INPUT,
        "2048 heads on 500 tokens",
        "12.5 GB of memory",
        "use --heads 128 or fewer, or a shorter sentence",
    )
    with pytest.raises(AttnvizError, match="use heads=128 or fewer"):
        attnviz.explain(WORDS_500, d_model=2048, heads=2048)
    source = " ".join(f"w{index}" for index in range(250))
    target = " ".join(f"v{index}" for index in range(256))
    with pytest.raises(AttnvizError, match=r"2048 heads on 256 × 250 tokens"):
        attnviz.cross(source, target, d_model=2048, heads=2048)


# -- the lesson and the heatmaps ------------------------------------------------------------------


@pytest.mark.slow
def test_a_lesson_of_2048_heads_is_refused_at_once() -> None:
    # On main it ran for minutes before printing a line.
    refused_at_once(
        ["explain", "I am good", "--d-model", "2048", "--heads", "2048"],
        ExitStatus.BAD_INPUT,
        "tells at most 256",
        "--head 1 --full",
    )
    shown = attnviz.explain("I am good", d_model=2048, heads=2048)  # the trace alone is fine
    match = r"tells at most 256: show one head \(head=1 full=True\)"
    with pytest.raises(AttnvizError, match=match):
        attnviz.lesson(shown)
    one = attnviz.explain("I am good", d_model=2048, heads=2048, head=5)
    with pytest.raises(AttnvizError, match=match):  # head 5 in full, 2,047 heads by their rows
        attnviz.lesson(one)
    assert f"Step {step('output')} ·" in attnviz.lesson(one, full=True)  # --full: head 5 alone


def test_a_lesson_of_many_heads_on_a_long_sentence_is_refused() -> None:
    with pytest.raises(AttnvizError, match=r"128 heads on 500² tokens would lay out 32,000,000"):
        limits.check_lesson(128, 500, 500)
    limits.check_lesson(64, 500, 500)
    limits.check_lesson(12, 512, 512)  # every head of a BERT-base layer at its longest


def test_heatmaps_too_large_to_draw_are_refused() -> None:
    limits.check_pictures(64, 400, 400, per_head=False)  # 10 million cells: about 18 s
    with pytest.raises(AttnvizError, match=r"twice with --per-head|twice with per_head"):
        limits.check_pictures(64, 400, 400, per_head=True)
    with pytest.raises(AttnvizError, match="draws at most 12,000,000"):
        limits.check_pictures(64, 512, 512, per_head=False)


# -- attnviz scaling ----------------------------------------------------------------------------


def test_4096_sizes_of_d_k_are_refused_at_once() -> None:
    # On main: only the largest d_k was checked, and the run went past 60 s.
    line = refused_at_once(
        ["scaling", "--dk", ",".join(str(d_k) for d_k in range(1, 4097))],
        ExitStatus.BAD_INPUT,
        "lists 4,096 sizes; give at most 64",
    )
    assert len(line) < 200  # the list is not echoed
    with pytest.raises(AttnvizError, match="d_ks lists 100 sizes"):
        attnviz.scaling(list(range(1, 101)))


def test_the_total_of_every_d_k_is_bounded() -> None:
    # 60 sizes, each small enough alone, drawing 1,000 × 17 × 1830 = 31 million together at
    # 1,000 queries, 10 times as many at 10,000.
    sizes = ",".join(str(d_k) for d_k in range(1, 61))
    refused_at_once(
        ["scaling", "--dk", sizes, "--queries", "10000"],
        ExitStatus.BAD_INPUT,
        "would draw",
        "random numbers; keep it under 150,000,000",
    )
    with pytest.raises(AttnvizError, match="keep it under"):
        attnviz.scaling(list(range(1, 61)), queries=10_000)


def test_the_divisor_experiment_is_counted_too() -> None:
    # --dk 1 --queries 100000 --keys 2 drew 1.6 billion numbers for the divisor experiment:
    # 63 s and 14 GB on main.
    refused_at_once(
        ["scaling", "--dk", "1", "--queries", "100000", "--keys", "2"],
        ExitStatus.BAD_INPUT,
        "and the divisor experiment would draw 1,645,100,000 random numbers",
    )
    with pytest.raises(AttnvizError, match="fewer queries"):
        attnviz.divisor_rows(queries=100_000)


@pytest.mark.slow
def test_a_d_k_of_100000_digits_is_capped_and_never_echoed_whole() -> None:
    result = runner.invoke(app, ["scaling", "--dk", "4," + "9" * 100_000, "--queries", "10"])
    assert result.exit_code == 0
    assert "capped at 4096" in result.stderr and len(result.stderr) < 200
    bad = runner.invoke(app, ["scaling", "--dk", "9" * 100_000 + "x"])
    assert len(one_error_line(bad.stderr, "is not a whole number")) < 300
    many = runner.invoke(app, ["scaling", "--dk", ",".join(["5000"] * 50), "--queries", "10"])
    assert many.stderr.strip() == "note: 50 sizes above 4096 capped at 4096."


# -- slides -------------------------------------------------------------------------------------


def test_slides_of_32_heads_are_refused_before_anything_is_printed(tmp_path: Path) -> None:
    # On main: 328 files, 39 MB, 40 s.
    folder = tmp_path / "slides"
    slides = 32 * len(per_head_numbers())  # every head in full, a slide for each per-head step
    refused_at_once(
        ["explain", "I am good", "--heads", "32", "--d-model", "64", "--slides", str(folder)]
        + ["--full"],
        ExitStatus.CANNOT_WRITE,
        f"--slides would write at least {slides} slides ({2 * slides} files",
        "at most 150",
        "fewer --steps, fewer heads or a shorter sentence",
    )
    assert not folder.exists()


@pytest.mark.slow
def test_slides_are_counted_whole_before_the_lesson_is_printed(tmp_path: Path) -> None:
    # 24 heads pass the first count (5 slides a head), but 30 words continue each step on
    # more slides: counted from the plan, before the lesson or any slide is drawn.
    words = " ".join(f"w{index}" for index in range(30))
    folder = tmp_path / "slides"
    line = refused_at_once(
        ["explain", words, "--heads", "24", "--d-model", "48", "--slides", str(folder), "--full"],
        ExitStatus.CANNOT_WRITE,
        "--slides would write",
        # Planning 271 slides lays every one out (2.5 s idle, 8 s on a loaded machine): what
        # proves it came first is the empty stdout and the missing folder, not the clock.
        within=30,
    )
    assert "at least" not in line
    assert not folder.exists()


def test_the_fewest_slides_follow_the_steps_shown() -> None:
    assert limits.fewest_slides(32, 5) == 160
    assert limits.fewest_slides(32, 1) == 32
    assert limits.fewest_slides(32, 0) == 0
    # One head in full, 31 by their rows: a slide each for the rows.
    assert limits.fewest_slides(1, 5, 31) == 5 + 31
    assert limits.fewest_slides(1, 0, 31) == 0


def test_the_per_head_steps_are_the_tables_and_one_more_with_rotary_positions() -> None:
    plain, turned = trace_attention("I am good"), trace_attention("I am good", positions="rope")
    paper = ("qkv", "scores", "scaled", "weights", "z")  # each head's run, as the paper has it
    assert {step(key) for key in paper} <= per_head_numbers(plain)
    assert {step(key, rope=True) for key in (*paper, "rope")} <= per_head_numbers(turned)
    assert len(per_head_numbers(turned)) == len(per_head_numbers(plain)) + 1
    tokens, scaled, output = step("tokens"), step("scaled"), step("output")
    assert per_head_numbers(plain, frozenset({tokens, scaled, output})) == {scaled}
    blockwise = optional_numbers(STEPS, plain)["blockwise"]
    assert per_head_numbers(plain, frozenset({blockwise})) == frozenset()  # one head's, once


def test_slides_with_rotary_positions_count_every_per_head_step(tmp_path: Path) -> None:
    """With rotary positions Z is a step further on, and a slide per head still: a plan over
    the limit by it alone is refused before any slide is drawn."""
    shown = attnviz.explain("I am good", positions="rope", heads=8, d_model=16)
    lesson = LessonOptions(steps=str(step("z", rope=True)), every_head=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(limits, "MAX_SLIDES", 7)  # 8 heads × Z: 8 slides
        with pytest.raises(AttnvizError, match="at least 8 slides"):
            check_sizes(shown, export=None, lesson=lesson, slides=tmp_path / "slides")
    assert not (tmp_path / "slides").exists()


# -- exports ------------------------------------------------------------------------------------


def test_the_json_estimate_is_never_below_the_file_written(tmp_path: Path) -> None:
    for sentence, options in (
        ("I am good", {}),
        ("The animal didn't cross the street because it was too tired", {"causal": True}),
        ("a b c d e f", {"heads": 4, "d_model": 16, "positions": "sinusoidal"}),
    ):
        trace = attnviz.explain(sentence, **options).trace
        path = tmp_path / "trace.json"
        export_trace(trace, path)
        arrays = list(trace.arrays().values())
        numbers = sum(array.size for array in arrays)
        rows = sum(array.size // array.shape[-1] for array in arrays)
        written = path.stat().st_size
        assert written <= limits.json_export_bytes(numbers, rows) + 20_000
        assert limits.json_export_bytes(numbers, rows) < 2 * written  # close, not absurd


def test_a_json_export_attnviz_could_not_read_back_is_refused(tmp_path: Path) -> None:
    class Shape:
        """An array's size without its memory."""

        def __init__(self, *shape: int) -> None:
            self.shape, self.ndim, self.size = shape, len(shape), int(np.prod(shape))

    # A 481-word MiniLM export: 6 layers of 12 heads, about 500 pieces.
    weights = Shape(6, 12, 500, 500)
    path = tmp_path / "out.json"
    with pytest.raises(AttnvizError, match=r"export as \.npz instead") as error:
        limits.check_json_size([weights, weights, weights], ["w"] * 500, path, layers=6)
    assert error.value.exit_status == ExitStatus.CANNOT_WRITE
    assert f"{MAX_JSON_BYTES / 1e6:.1f} MB attnviz reads back" in str(error.value)
    limits.check_json_size([weights] * 3, ["w"] * 500, tmp_path / "out.npz", layers=6)
    assert not path.exists()


@pytest.mark.slow
def test_a_random_layer_too_large_for_json_is_refused_before_the_lesson(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    refused_at_once(
        ["explain", WORDS_500, "--heads", "32", "--d-model", "64", "--export", str(path)],
        ExitStatus.CANNOT_WRITE,
        "--export big.json",
        "more than the 536.9 MB attnviz reads back; export as .npz instead",
    )
    assert list(tmp_path.iterdir()) == []
    trace = attnviz.explain(WORDS_500, heads=32, d_model=64).trace
    with pytest.raises(AttnvizError, match="export as .npz instead"):
        export_trace(trace, path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@needs_model
def test_a_long_minilm_export_as_json_is_refused(tmp_path: Path) -> None:
    # On main: 1.31 GB written, which attnviz then refused to read back.
    sentence = " ".join(["the cat sat on the mat because it was tired"] * 44)  # 484 words
    path = tmp_path / "out.json"
    result = runner.invoke(app, ["explain", sentence, "-m", "minilm", "--export", str(path)])
    assert result.exit_code == ExitStatus.CANNOT_WRITE and result.stdout == ""
    one_error_line(result.stderr, "export as .npz instead")
    assert list(tmp_path.iterdir()) == []


# -- words of zero-width marks ------------------------------------------------------------------


@pytest.mark.slow
def test_a_word_of_19990_combining_marks_is_shown_elided() -> None:
    # On main it was printed whole 32 times: 1.29 MB.
    word = "a" + "\u0301" * 19_990
    result = runner.invoke(app, ["explain", f"I am {word}"])
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout) < 40_000
    assert max(len(line) for line in result.stdout.splitlines()) < 200
    # The sentence's word (composed to á by the tokenizer's NFC) keeps 30 marks, then "…".
    assert "\u0301" * 30 + "…" in result.stdout and "\u0301" * 31 not in result.stdout
    lesson = attnviz.lesson(attnviz.explain(f"I am {word}"))
    assert len(lesson) < 40_000


def test_the_echoed_value_is_its_start_and_its_length() -> None:
    assert limits.shortened("4,16") == "4,16"
    assert limits.shortened("9" * 100_000) == "9" * 30 + "… (100,000 characters)"


def test_json_reads_back_what_the_estimate_allows(tmp_path: Path) -> None:
    # The limit is what attnviz reads: an export just under it is read back.
    trace = attnviz.explain("I am good").trace
    path = tmp_path / "t.json"
    export_trace(trace, path)
    assert json.loads(path.read_text())["tokens"] == ["I", "am", "good"]
    assert attnviz.load_trace(path)[0].tokens == ("I", "am", "good")
