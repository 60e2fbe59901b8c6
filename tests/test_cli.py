"""The command line, through Typer's CliRunner: every command, option group and error case."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz import __version__
from attnviz.cli import COMMANDS, app
from attnviz.errors import ExitStatus
from attnviz.lesson.steps import STEPS, focus_number, label, last_plain_number
from attnviz.provenance import WeightsKind
from attnviz.trace_files import load_trace

from support import CliRunner, step, steps_spec

SAMPLES = Path(__file__).resolve().parent.parent / "sample_embeddings"
IT_SENTENCE = "The animal didn't cross the street because it was too tired"
runner = CliRunner()

#: The numbers of the lessons without rotary positions, from the table of steps.
LAST, FOCUS = last_plain_number(STEPS), focus_number(STEPS) or 0


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def assert_one_line_error(args: list[str], status: ExitStatus, *fragments: str) -> str:
    code, stdout, stderr = run(*args)
    assert code == status, (code, stdout, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in stderr + stdout
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_version() -> None:
    code, stdout, _ = run("--version")
    assert code == 0 and stdout.strip() == f"attnviz {__version__}"


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)])
def test_help_of_every_command_has_an_example(command: list[str]) -> None:
    code, stdout, _ = run(*command, "--help")
    assert code == 0
    assert "Usage" in stdout
    if command:
        assert "Example: attnviz " + command[0] in " ".join(stdout.split())


def test_explain_prints_every_step_in_order() -> None:
    code, stdout, stderr = run("explain", "I am good")
    assert code == 0, stderr
    positions = [
        stdout.index(marker)
        for marker in [
            f"Step {step('tokens')} · Tokens and embeddings X",
            f"Step {step('qkv')} · Queries, keys and values of head 1",
            f"Step {step('scores')} · Raw scores Q·Kᵀ",
            f"Step {step('scaled')} · Scale by √d_k = √4 = 2.00",
            f"Step {step('weights')} · Softmax",
            f"Step {step('z')} · Z₁ = weights₁·V₁",
            "Head 2 of 2",
            f"Step {step('output')} · Concatenate the heads and project with W_O",
            "output = Concat·W_O",
        ]
    ]
    assert positions == sorted(positions)
    assert "weights are random, not learned" in stdout
    assert "\x1b[" not in stdout  # no escape codes when not a terminal


@pytest.mark.slow
def test_explain_every_table_fits_100_columns_and_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for columns in ("100", "80"):
        monkeypatch.setenv("COLUMNS", columns)
        for sentence in ["I am good", IT_SENTENCE]:
            code, stdout, _ = run("explain", sentence)
            assert code == 0
            widest = max(len(line.rstrip()) for line in stdout.splitlines())
            assert widest <= int(columns), (columns, sentence, widest)


@pytest.mark.slow
def test_wide_matrices_are_elided_with_their_full_shape_in_the_title() -> None:
    code, stdout, _ = run("explain", "Thinking Machines", "--preset", "paper")
    assert code == 0
    assert "X  [2 × 512]  middle elided" in stdout
    assert "Q₁ = X·W_Q₁  [2 × 64]" in stdout  # head 1 in full, the others by their rows
    assert "Head 8 of 8 · the row of 'Thinking' (--head 8 shows it in full)" in stdout
    assert "√64 = 8.00" in stdout
    assert max(len(line.rstrip()) for line in stdout.splitlines()) <= 100


@pytest.mark.slow
def test_focus_shows_ranked_bars_and_the_weighted_sum() -> None:
    code, stdout, _ = run("explain", IT_SENTENCE)  # "it" is the default focus
    assert code == 0
    focus = stdout[stdout.index("Focus: where does 'it' look?") :]
    assert focus.count("Head ") == 2
    assert "z_it = " not in focus  # Z's step worked head 1's out; the contribution is new here
    assert "What 'was' adds to 'it' in head 1" in focus
    bars = focus[focus.index("Head 1") : focus.index("What 'was'")].splitlines()
    assert bars[1].split() == ["weight", "‖w·f‖", "share"]  # the columns' names
    head_1 = [line for line in bars[2:] if line.strip() and not line.startswith("…")]
    words = [line.split()[0] for line in head_1]
    # Each line: the word, its weight's bar and weight, ‖w·f‖, the share's bar and share.
    numbers = [[float(t) for t in line.split()[1:] if t[0].isdigit()] for line in head_1]
    assert all(len(row) == 3 for row in numbers), head_1
    weights = [row[0] for row in numbers]
    assert "… 5 more words, together weight 0.03" in bars[-1] or "more words" in focus
    assert len(words) == 6 and set(words) <= {"The:1", "the:2", *IT_SENTENCE.split()[1:]}
    assert weights == sorted(weights, reverse=True)
    assert 0.9 < sum(weights) <= 1.02  # the six largest, each rounded to 2 decimals


@pytest.mark.slow
def test_focus_on_a_repeated_word_takes_the_first_and_says_so() -> None:
    code, stdout, stderr = run("explain", "the cat saw the dog", "--focus", "the")
    assert code == 0
    assert "occurs 2 times; following the first" in stderr and "--focus the:2" in stderr
    code, stdout, stderr = run("explain", "the cat saw the dog", "--focus", "the:2")
    assert code == 0 and stderr == ""
    assert "where does 'the:2' look?" in stdout


@pytest.mark.slow
def test_head_option_shows_one_head_numbered_from_1() -> None:
    code, stdout, _ = run("explain", "I am good", "--head", "2")
    assert code == 0
    assert "Head 2 of 2\n" in stdout + "\n" or "─ Head 2 of 2 ─" in stdout
    assert "Head 1 of 2 · the row of 'I' (--head 1 shows it in full)" in stdout
    assert "Q₂ = X·W_Q₂" in stdout and "Q₁ = X·W_Q₁" not in stdout
    code, stdout, _ = run("explain", "I am good", "--head", "2", "--full")
    assert "Head 2 of 2" in stdout and "Head 1 of 2" not in stdout  # --full: only head 2


@pytest.mark.slow
def test_decimals_and_show_weights() -> None:
    code, stdout, _ = run("explain", "I am good", "--decimals", "4", "--show-weights")
    assert code == 0
    assert "W_Q₁" in stdout and "W_O  [8 × 8]" in stdout
    assert "√4 = 2.0000" in stdout


@pytest.mark.slow
def test_sizes_and_seed_change_the_numbers() -> None:
    _, default, _ = run("explain", "I am good")
    _, seeded, _ = run("explain", "I am good", "--seed", "1")
    _, sized, _ = run("explain", "I am good", "--d-model", "12", "--heads", "3")
    assert default != seeded
    assert "Head 3 of 3" in sized and "√4" in sized


@pytest.mark.parametrize("name", ["toy8d.txt", "toy8d.json", "toy8d_vocab.npz"])
def test_explain_with_sample_embeddings(name: str) -> None:
    code, stdout, stderr = run("explain", "--embeddings", str(SAMPLES / name), "I am good")
    assert code == 0, stderr
    assert f"word vectors from {SAMPLES / name}" in " ".join(stdout.split())


def test_oov_random_says_so() -> None:
    code, stdout, stderr = run(
        "explain", "--embeddings", str(SAMPLES / "toy8d.txt"), "--oov", "random", "I am zorbly"
    )
    assert code == 0
    assert "'zorbly'" in stderr and "seeded random vectors" in stderr


@pytest.mark.slow
def test_export_and_weights_round_trip_through_the_cli(tmp_path: Path) -> None:
    first, second = tmp_path / "first.npz", tmp_path / "second.npz"
    code, _, _ = run(
        "explain",
        IT_SENTENCE,
        "--heads",
        "4",
        "--d-model",
        "16",
        "--seed",
        "3",
        "--export",
        str(first),
    )
    assert code == 0
    code, stdout, _ = run(
        "explain", IT_SENTENCE, "--weights", str(first), "--seed", "3", "--export", str(second)
    )
    assert (
        code == 0 and "Head 4 of 4" in stdout and f"loaded from {first}" in " ".join(stdout.split())
    )
    with np.load(first) as a, np.load(second) as b:
        assert a.files == b.files
        for key in a.files:
            if key != "config":  # where the weights came from: now a file
                np.testing.assert_array_equal(a[key], b[key])
    (again,) = load_trace(second)
    assert again.provenance.weights.kind is WeightsKind.FILE
    assert again.provenance.weights.is_random and again.provenance.weights.seed == 3
    assert "random, not learned" in stdout  # a random trace fed back is still called random


def test_export_json(tmp_path: Path) -> None:
    code, _, stderr = run("explain", "I am good", "--export", str(tmp_path / "t.json"))
    assert code == 0 and f"wrote {tmp_path / 't.json'}" in stderr
    assert (
        (tmp_path / "t.json")
        .read_text(encoding="utf-8")
        .startswith('{"tokens": ["I", "am", "good"]')
    )


@pytest.mark.slow
def test_markup_and_control_characters_in_the_sentence_are_printed_literally() -> None:
    code, stdout, _ = run("explain", "[bold red]x[/] \x1b[2J ok", "--focus", "x")
    assert code == 0
    assert "\x1b" not in stdout
    assert "\\x1b" in stdout
    assert "bold red" in stdout


@pytest.mark.parametrize(
    ("args", "status", "fragments"),
    [
        (["explain", ""], ExitStatus.BAD_INPUT, ["empty"]),
        (["explain", "   "], ExitStatus.BAD_INPUT, ["empty"]),
        (["explain", "a " * 513], ExitStatus.BAD_INPUT, ["513 tokens", "at most 512"]),
        (
            ["explain", "I am good", "--focus", "cat"],
            ExitStatus.BAD_INPUT,
            ["'cat' is not in the sentence"],
        ),
        (
            ["explain", "I am good", "--focus", "am:2"],
            ExitStatus.BAD_INPUT,
            ["occurs once", "drop ':2'"],
        ),
        (
            ["explain", "I am good", "--d-model", "10", "--heads", "3"],
            ExitStatus.BAD_INPUT,
            ["not divisible"],
        ),
        (["explain", "I am good", "--d-model", "0"], ExitStatus.BAD_INPUT, ["positive"]),
        (["explain", "I am good", "--heads", "-1"], ExitStatus.BAD_INPUT, ["positive"]),
        (["explain", "I am good", "--seed", "-1"], ExitStatus.BAD_INPUT, ["--seed"]),
        (["explain", "I am good", "--head", "3"], ExitStatus.BAD_INPUT, ["numbered 1 to 2"]),
        (["explain", "I am good", "--decimals", "9"], ExitStatus.BAD_INPUT, ["0 to 8"]),
        (
            ["explain", "I am good", "--preset", "paper", "--heads", "4"],
            ExitStatus.BAD_INPUT,
            ["preset"],
        ),
        (["explain", "I am good", "-e", "missing.txt"], ExitStatus.BAD_FILE, ["not found"]),
        (["explain", "I am good", "-w", "missing.npz"], ExitStatus.BAD_FILE, ["not found"]),
        (
            ["explain", "I am cold", "-e", str(SAMPLES / "toy8d.txt")],
            ExitStatus.BAD_FILE,
            ["'cold'", "--oov random"],
        ),
        (
            ["explain", "I am good", "-e", str(SAMPLES / "toy8d.txt"), "--d-model", "16"],
            ExitStatus.BAD_INPUT,
            ["8 dimensions"],
        ),
        (
            ["explain", "I am good", "--export", "out.csv"],
            ExitStatus.CANNOT_WRITE,
            ["'.csv'", ".npz, .json"],
        ),
        (
            ["explain", "I am good", "--export", "no/such/dir/t.npz"],
            ExitStatus.CANNOT_WRITE,
            ["does not exist"],
        ),
    ],
)
def test_bad_input_gives_one_line_and_a_named_exit_code(
    args: list[str],
    status: ExitStatus,
    fragments: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(args, status, *fragments)
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.slow
def test_corrupt_and_mismatched_weight_files(tmp_path: Path) -> None:
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04garbage")
    assert_one_line_error(
        ["explain", "I am good", "-w", str(tmp_path / "junk.npz")],
        ExitStatus.BAD_FILE,
        "not a valid .npz",
    )
    np.save(tmp_path / "evil.npy", np.array([object()], dtype=object), allow_pickle=True)
    assert_one_line_error(
        ["explain", "I am good", "-e", str(tmp_path / "evil.npy")],
        ExitStatus.BAD_FILE,
        "refuses pickle",
    )
    run("explain", "I am good", "--d-model", "16", "--export", str(tmp_path / "wide.npz"))
    assert_one_line_error(
        [
            "explain",
            "I am good",
            "-w",
            str(tmp_path / "wide.npz"),
            "-e",
            str(SAMPLES / "toy8d.txt"),
        ],
        ExitStatus.BAD_INPUT,
        "8 dimensions but the weights file's W_Q has d_model 16",
    )
    assert_one_line_error(
        ["explain", "I am good", "-w", str(tmp_path / "wide.npz"), "--heads", "4"],
        ExitStatus.BAD_INPUT,
        "2 heads but 4",
    )


def test_failed_run_keeps_an_existing_export_untouched(tmp_path: Path) -> None:
    target = tmp_path / "keep.npz"
    target.write_bytes(b"precious")
    assert_one_line_error(
        ["explain", "I am good", "--focus", "cat", "--export", str(target)], ExitStatus.BAD_INPUT
    )
    assert target.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.npz"]


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # chmod cannot lock root out (CI runs as root), so the permission check itself is faked.
    import attnviz.files.reading

    path = tmp_path / "locked.txt"
    real_access = os.access
    monkeypatch.setattr(
        attnviz.files.reading.os, "access", lambda p, mode: p != path and real_access(p, mode)
    )
    path.write_text("I 1 2\n", encoding="utf-8")
    assert_one_line_error(["explain", "I", "-e", str(path)], ExitStatus.BAD_FILE, "not readable")


@pytest.mark.slow
def test_overflowing_values_are_refused_not_turned_into_nan(tmp_path: Path) -> None:
    huge = tmp_path / "huge.txt"
    huge.write_text("i 1e160 1\nam 1 1e160\ngood -1e160 2\n", encoding="utf-8")
    for command in (["explain"], ["heatmap", "-o", str(tmp_path / "h.png")]):
        assert_one_line_error(
            [*command, "I am good", "-e", str(huge)], ExitStatus.BAD_INPUT, "overflow float64"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.txt"]


@pytest.mark.slow
def test_a_million_and_all_zero_embeddings_work(tmp_path: Path) -> None:
    for name, values in (("big", 1e6), ("zero", 0.0)):
        path = tmp_path / f"{name}.npy"
        np.save(path, np.random.default_rng(0).normal(size=(3, 8)) * values)
        code, stdout, stderr = run(
            "explain", "I am good", "-e", str(path), "--export", str(tmp_path / f"{name}.npz")
        )
        assert code == 0, stderr
        with np.load(tmp_path / f"{name}.npz") as trace:
            numbers = [key for key in trace.files if key not in ("tokens", "config")]
            assert all(np.isfinite(trace[key]).all() for key in numbers)
            np.testing.assert_allclose(trace["weights"].sum(-1), 1.0, atol=1e-9)
    assert (
        "e+" in run("explain", "I am good", "-e", str(tmp_path / "big.npy"))[1]
    )  # 1e6 as 1.23e+06


def test_complex_numbers_are_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "c.npy", np.ones((3, 8), dtype=complex))
    assert_one_line_error(
        ["explain", "I am good", "-e", str(tmp_path / "c.npy")], ExitStatus.BAD_FILE, "complex"
    )


@pytest.mark.slow
def test_heatmap_takes_the_same_options_as_explain(tmp_path: Path) -> None:
    trace_file = tmp_path / "t.npz"
    code, stdout, stderr = run(
        "heatmap",
        IT_SENTENCE,
        "-o",
        str(tmp_path / "a.png"),
        "--preset",
        "paper",
        "--head",
        "3",
        "--focus",
        "it",
        "--export",
        str(trace_file),
    )
    assert code == 0, stderr
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with np.load(trace_file) as data:
        assert data["weights"].shape == (8, 11, 11)
    code, _, stderr = run(
        "heatmap",
        IT_SENTENCE,
        "-o",
        str(tmp_path / "b.svg"),
        "-w",
        str(trace_file),
        "-e",
        str(trace_file),
    )
    assert code == 0, stderr
    code, _, stderr = run(
        "heatmap", "I am good", "-o", str(tmp_path / "c.pdf"), "-e", str(SAMPLES / "toy8d.txt")
    )
    assert code == 0 and (tmp_path / "c.pdf").read_bytes()[:4] == b"%PDF"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["-o", "out.jpg"], ["'.jpg'", ".png, .svg, .pdf"]),
        (["-o", "missing/out.png"], ["does not exist"]),
        (["-o", "out.png", "--per-head", "missing/heads"], ["does not exist"]),
        (["-o", "out.png", "--export", "t.txt"], ["'.txt'"]),
        (["-o", "out.png", "--head", "5"], ["numbered 1 to 2"]),
        (["-o", "out.png", "--cmap", "nosuch"], ["colormap"]),
    ],
)
def test_heatmap_errors_write_nothing(
    args: list[str], fragments: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run("heatmap", "I am good", *args)
    assert code in (ExitStatus.BAD_INPUT, ExitStatus.CANNOT_WRITE), stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_unwritable_folders_are_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root may write anywhere (CI runs as root), so the permission check itself is faked.
    import attnviz.files.writing

    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    fake = lambda p, mode: Path(p) != locked and real_access(p, mode)  # noqa: E731
    monkeypatch.setattr(attnviz.files.writing.os, "access", fake)  # os.access, wherever called
    assert_one_line_error(
        ["heatmap", "I am good", "-o", str(tmp_path / "ok.png"), "--per-head", str(locked)],
        ExitStatus.CANNOT_WRITE,
        "not writable",
    )
    assert_one_line_error(
        ["explain", "I am good", "--export", str(locked / "t.npz")],
        ExitStatus.CANNOT_WRITE,
        "not writable",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locked"]
    assert list(locked.iterdir()) == []


@pytest.mark.slow
def test_weights_from_a_trace_made_with_another_seed_say_how_to_reuse_its_x(tmp_path: Path) -> None:
    run("explain", "I am good", "--seed", "5", "--export", str(tmp_path / "s5.npz"))
    code, _, stderr = run("explain", "I am good", "-w", str(tmp_path / "s5.npz"))
    assert code == 0 and f"--embeddings {tmp_path / 's5.npz'}" in stderr
    code, _, stderr = run("explain", "I am good", "-w", str(tmp_path / "s5.npz"), "--seed", "5")
    assert code == 0 and stderr == ""


def test_top_level_help_has_an_example() -> None:
    assert 'attnviz explain "I am good"' in run("--help")[1]


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["explain"], ["Missing argument 'SENTENCE'", "explain --help"]),
        (["explain", "I", "am", "good"], ["(am good)", "in quotes: ", ' explain "I am good"']),
        (["explain", "I am good", "--fokus", "I"], ["--fokus", "--focus"]),
        (["heatmap", "I am good"], ["--output"]),
        (["explain", "I am good", "--heads", "x"], ["'x' is not a valid int"]),
        (["explain", "I am good", "--preset", "huge"], ["'huge' is not one of 'paper'"]),
        (["explan", "I am good"], ["Did you mean 'explain'? See '"]),
    ],
)
def test_typer_usage_errors_are_one_line_too(
    argv: list[str], fragments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from attnviz.cli import run as main_entry

    status = main_entry(argv)
    out, err = capsys.readouterr()
    assert status == ExitStatus.USAGE and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    for fragment in fragments:
        assert fragment in err


def test_entry_point_returns_the_commands_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    from attnviz.cli import run as main_entry

    assert main_entry(["--version"]) == 0
    assert main_entry(["explain", "I am good", "--focus", "cat"]) == ExitStatus.BAD_INPUT
    assert "error: The focus word 'cat'" in capsys.readouterr().err


def test_step_never_pauses_without_a_terminal() -> None:
    code, stdout, stderr = run("explain", "I am good", "--step")
    assert code == 0 and f"Step {step('output')}" in stdout
    assert "--step pauses only at a terminal" in stderr


@pytest.mark.slow
def test_svg_and_html_keep_the_colours(tmp_path: Path) -> None:
    svg, html = tmp_path / "lesson.svg", tmp_path / "lesson.html"
    code, _, stderr = run("explain", "I am good", "--svg", str(svg), "--html", str(html))
    assert code == 0, stderr
    assert svg.read_text(encoding="utf-8").lstrip().startswith("<svg")
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "background-color: #" in page
    assert f"Step {step('output')}" in page
    assert_one_line_error(
        ["explain", "I am good", "--svg", str(tmp_path / "x.png")],
        ExitStatus.CANNOT_WRITE,
        "'.png'",
    )


@pytest.mark.slow
def test_demo_is_the_ten_minute_class_in_order() -> None:
    code, stdout, stderr = run("demo", "--no-model")
    assert code == 0, stderr
    titles = [line.strip("─ ") for line in stdout.splitlines() if re.match(r"─+ \d · ", line)]
    assert titles == [
        '1 · "I am good", step by step',
        '2 · "it" with random weights',
        "3 · coref: a model trained to point",
        "4 · coref-word: the right answer, attention elsewhere",
        "5 · Training coref, live",
    ]
    assert "z_I = " in stdout and f"Step {step('output')} · Concatenate the heads" in stdout
    text = " ".join(stdout.split())
    # Random weights link nothing; coref's 1.00 is said with why, in the same screen.
    assert 'Where "it" looks here is where chance puts it' in text
    assert 'Its answer IS its last layer\'s row of "it"' in text
    assert "not attention finding meaning by itself" in text
    assert "right answer, attention elsewhere" in text
    assert re.search(r"Trained \d+ steps in [\d.]+ s of training: held-out accuracy", text)
    assert len(stdout.splitlines()) <= 250  # the class follows it, piped, at 100 columns


@pytest.mark.slow
def test_weights_json_giving_a_matrix_twice_is_refused(tmp_path: Path) -> None:
    code, _, stderr = run("explain", "I am good", "--export", str(tmp_path / "t.json"))
    assert code == 0, stderr
    text = (tmp_path / "t.json").read_text(encoding="utf-8")
    twice = tmp_path / "twice.json"
    twice.write_text(text.replace('"W_K":', '"W_Q": [[[0]]], "W_K":', 1), encoding="utf-8")
    assert_one_line_error(
        ["explain", "I am good", "-w", str(twice)], ExitStatus.BAD_FILE, "W_Q more than once"
    )


def test_duplicate_words_in_the_embeddings_file_are_noted_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "dup.txt"
    path.write_text("i 1 0\nam 0 1\ni 9 9\ngood 1 1\n", encoding="utf-8")
    code, stdout, stderr = run("explain", "I am good", "-e", str(path), "--heads", "1")
    assert code == 0, stderr
    assert "note: dup.txt lists 1 word(s) more than once; the first is used: 'i' on lines 1, 3" in (
        " ".join(stderr.split())
    )


def test_an_existing_folder_as_output_is_named_as_a_folder(tmp_path: Path) -> None:
    assert_one_line_error(
        ["heatmap", "I am good", "-o", str(tmp_path)],
        ExitStatus.CANNOT_WRITE,
        "is a folder; give a file name in it, e.g.",
        str(tmp_path / "out.png"),
    )


def test_one_head_is_singular() -> None:
    assert "h = 1 head, d_k" in run("explain", "I am good", "--heads", "1")[1]


@pytest.mark.slow
def test_repeated_keys_inside_a_nested_object_do_not_count_as_repeated_weights(
    tmp_path: Path,
) -> None:
    code, _, stderr = run("explain", "I am good", "--export", str(tmp_path / "t.json"))
    assert code == 0, stderr
    text = (tmp_path / "t.json").read_text(encoding="utf-8")
    nested = tmp_path / "nested.json"
    nested.write_text(
        text.replace('"W_K":', '"notes": {"W_Q": "v1", "W_Q": "v2"}, "W_K":', 1), encoding="utf-8"
    )
    code, _, stderr = run("explain", "I am good", "-w", str(nested))
    assert code == 0, stderr


@pytest.mark.slow
def test_every_command_reports_the_files_it_wrote_the_same_way(tmp_path: Path) -> None:
    """'wrote PATH' on stderr, one line per file, whatever the command; stdout keeps only what
    the command shows (nothing, for heatmap)."""
    out = tmp_path
    writing = {
        "explain": ["explain", "I am good", "--svg", str(out / "e.svg"),
                    "--html", str(out / "e.html"), "--export", str(out / "e.npz")],
        "heatmap": ["heatmap", "I am good", "-o", str(out / "h.png"),
                    "--per-head", str(out / "heads"), "--export", str(out / "h.json")],
        "cross": ["cross", "I am good", "Je vais bien", "-o", str(out / "c.svg"),
                  "--export", str(out / "c.npz")],
        "scaling": ["scaling", "--queries", "20", "-o", str(out / "s.svg")],
    }  # fmt: skip
    for name, arguments in writing.items():
        result = CliRunner().invoke(app, arguments)
        assert result.exit_code == 0, result.stderr
        paths = [a for a in arguments if a.startswith(str(out)) and a != str(out / "heads")]
        if name == "heatmap":
            paths[1:1] = [str(out / "heads" / "head_1.png"), str(out / "heads" / "head_2.png")]
        assert result.stderr.splitlines() == [f"wrote {path}" for path in paths], name
        assert all(Path(path).stat().st_size > 0 for path in paths)
        if name == "heatmap":
            assert result.stdout == ""


def test_the_command_line_uses_only_typers_public_interface() -> None:
    source = "\n".join(
        path.read_text(encoding="utf-8")
        for path in (Path(__file__).resolve().parent.parent / "attnviz" / "cli").glob("*.py")
    )
    assert "_click" not in source and "registered_commands" not in source


@pytest.mark.slow
def test_nothing_attnviz_writes_loads_anything_remote(tmp_path: Path) -> None:
    """No web font, script or image from a network in any SVG or HTML attnviz writes: a lesson
    saved for slides opens offline exactly as it was drawn."""
    names = ("lesson.svg", "lesson.html", "h.svg", "s.svg", "page.html")
    outputs = [tmp_path / name for name in names]
    slides = tmp_path / "slides"
    for arguments in (
        ["explain", "I am good", "--svg", str(outputs[0]), "--html", str(outputs[1])],
        ["heatmap", "I am good", "-o", str(outputs[2])],
        ["scaling", "--queries", "20", "-o", str(outputs[3])],
        ["page", "I am good", "--causal", "-o", str(outputs[4])],
        [
            "cross",
            "I am good",
            "Je vais bien",
            "--steps",
            steps_spec("tokens", "weights"),
            "--slides",
            str(slides),
        ],
    ):
        assert CliRunner().invoke(app, arguments).exit_code == 0
    remote = re.compile(r"""(url\(|src=|href=|@import)\s*["']?\s*(https?:)?//""", re.IGNORECASE)
    assert len(list(slides.glob("*.svg"))) == 4  # the title, the tokens and each head's softmax
    for path in [*outputs, *slides.glob("*.svg")]:
        text = path.read_text(encoding="utf-8")
        assert not remote.search(text), (path.name, remote.search(text))
    # The lesson page names no address at all (its script fetches nothing either), and its
    # Content-Security-Policy forbids every load but data: images.
    page = outputs[4].read_text(encoding="utf-8").replace('http-equiv="', "")
    # \b: a scheme is a word of its own ("rows:" in the script is no "ws:")
    assert not re.search(r"\b(?:https?|ftp|wss?):|//[\w.-]+\.[a-z]", page, re.IGNORECASE)
    assert re.findall(r"""(?:src|href)=["']([^"']*)""", page) == ["data:,"]
    assert "default-src 'none'" in page and "fetch(" not in page and "XMLHttpRequest" not in page
    # The notebook display too: every source it names is an embedded image.
    fragment = attnviz.explain("I am good", causal=True)._repr_html_()  # what a notebook shows
    assert not remote.search(fragment)
    assert all(
        source.startswith("data:image/png;base64,")
        for source in re.findall(r"""(?:src|href)=["']([^"']*)""", fragment)
    )


ROW_OF_IT, FULL = "the row of 'it'", "shows it in full"


def step_headings(stdout: str) -> list[str]:
    """The lesson's step headings and section rules, in order, as "Step n" or the rule's text."""
    found = []
    for line in stdout.splitlines():
        if line.startswith("Step "):
            found.append(line.split(" ·")[0])
        elif line.startswith("─") and line.strip("─ "):
            found.append(line.strip("─ "))
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("steps", "extra", "expected"),
    [
        (
            f"{step('scaled')}-{step('z')}",
            [],
            [
                "Head 1 of 2",
                f"Step {step('scaled')}",
                f"Step {step('weights')}",
                f"Step {step('z')}",
                f"Head 2 of 2 · {ROW_OF_IT} (--head 2 {FULL})",
            ],
        ),
        (
            f"{step('tokens')},{step('scores')}-{step('scaled')}",
            ["--head", "2"],
            [
                f"Step {step('tokens')}",
                "Head 2 of 2",
                f"Step {step('scores')}",
                f"Step {step('scaled')}",
                f"Head 1 of 2 · {ROW_OF_IT} (--head 1 {FULL})",
            ],
        ),
        (f" {step('output')} ", [], ["All heads", f"Step {step('output')}"]),
        (steps_spec("focus"), ["--focus", "it"], ["Focus: where does 'it' look?"]),
        (
            f"{step('z')}-{step('focus')}",
            ["--heads", "1", "--focus", "it"],
            ["Head 1 of 1", f"Step {step('z')}", "All heads"]
            + [f"Step {step('output')}", "Focus: where does 'it' look?"],
        ),
    ],
)
def test_steps_shows_only_those_steps_after_the_header(
    steps: str, extra: list[str], expected: list[str]
) -> None:
    code, stdout, stderr = run("explain", IT_SENTENCE, "--steps", steps, *extra)
    assert code == 0, stderr
    assert stdout.startswith("attnviz · multi-head self-attention, step by step\n")
    assert "Sentence: The animal didn't cross" in stdout and "Weights: random" in stdout
    assert step_headings(stdout) == expected
    # How to read a worked example is said once, with the first one shown.
    assert stdout.count("(Results rounded as in the tables;") == 1
    _, whole, _ = run("explain", IT_SENTENCE, *extra)
    # No number shown that the whole lesson does not show (a table of some of a head's rows is
    # set to other widths, a worked example said in another step: the lines may differ).
    number = re.compile(r"-?\d+\.\d+")
    assert set(number.findall(stdout)) <= set(number.findall(whole))


@pytest.mark.parametrize(
    ("steps", "fragment"),
    [
        ("4-", "'4-' is neither a step number nor a range of them; give e.g. 4-6 or 1,3-5."),
        ("four", "'four' is neither a step number nor a range"),
        ("1,,3", "has an empty item"),
        ("", "--steps is empty"),
        ("6-4", "the range '6-4' runs backwards; write 4-6."),
        (
            "0",
            f"there is no step 0; the steps are 1 to {LAST}, and {FOCUS} is the focus view (with "
            f"a sliding window, latent attention or rotary positions 1 to {LAST + 1}, and "
            f"{FOCUS + 1} is the focus view) (with two of them 1 to {LAST + 2}, and {FOCUS + 2} is",
        ),
        (f"3-{FOCUS + 1}", f"there is no step {FOCUS + 1}"),
        (f"{FOCUS}", f"step {FOCUS} is the focus view, and this lesson follows no word; name one"),
    ],
)
def test_steps_that_are_malformed_or_missing_are_refused_in_one_line(
    steps: str, fragment: str
) -> None:
    message = assert_one_line_error(
        ["explain", "I am good", "--steps", steps], ExitStatus.BAD_INPUT, fragment
    )
    assert message.startswith("error: --steps")
    _, stdout, _ = run("explain", "I am good", "--steps", steps)
    assert stdout == ""  # refused before the lesson is printed


def test_steps_are_the_same_in_the_terminal_svg_and_html(tmp_path: Path) -> None:
    svg, html = tmp_path / "steps.svg", tmp_path / "steps.html"
    code, stdout, stderr = run(
        "explain",
        "I am good",
        "--steps",
        steps_spec("weights"),
        "--svg",
        str(svg),
        "--html",
        str(html),
    )
    assert code == 0, stderr
    scaled, weights, z = step("scaled"), step("weights"), step("z")
    assert step_headings(stdout) == [
        "Head 1 of 2",
        f"Step {weights}",
        "Head 2 of 2 · the row of 'I' (--head 2 shows it in full)",
    ]
    page = html.read_text(encoding="utf-8")
    assert page.count(f"Step {weights} ·") == 1
    assert f"Step {scaled} ·" not in page and f"Step {z} ·" not in page
    drawn = svg.read_text(encoding="utf-8").replace("&#160;", " ")
    assert f"Step {weights} ·" in drawn and f"Step {scaled} ·" not in drawn


@pytest.mark.slow
def test_steps_is_for_the_lessons_and_the_page(tmp_path: Path) -> None:
    for command in ("explain", "cross"):
        assert f"{FOCUS} the focus view" in " ".join(run(command, "--help")[1].split())
    assert "the focus view is the page's picture" in " ".join(run("page", "--help")[1].split())
    page = tmp_path / "x.html"
    code, _, stderr = run(
        "page", "I am good", "-o", str(page), "--steps", steps_spec("weights", "z", "blockwise")
    )
    assert code == 0, stderr
    assert f"Step {label('blockwise')} · " in page.read_text(encoding="utf-8")
    focus = steps_spec("focus")
    code, _, stderr = run("page", "I am good", "-o", str(tmp_path / "y.html"), "--steps", focus)
    assert code == ExitStatus.BAD_INPUT and "the page always shows as its picture" in stderr
    assert list(tmp_path.iterdir()) == [page]


# -- numbers in ASCII digits, and long values quoted briefly ------------------------------------


def whole_number_options() -> list[tuple[str, str]]:
    """Every (command, option) that takes a whole number, as click sees the built command."""
    import typer.main

    from attnviz.cli import build_app

    found = []
    for name in COMMANDS:
        command = typer.main.get_command(build_app(name)).commands[name]  # type: ignore[attr-defined]
        for parameter in command.params:
            assert parameter.type.name != "integer", f"{name} {parameter.opts}: click's INT"
            if parameter.type.name == "int":
                found.append((name, parameter.opts[0]))
    return found


def plain_run_takes_each_commands_first(options: list[tuple[str, str]]) -> list[object]:
    """The options as cases: the plain run takes each command's first whole-number option and
    every fourth of the rest (they share one parser, cli/values.py); CI takes them all (slow)."""
    seen: set[str] = set()
    cases = []
    for index, (command, flag) in enumerate(options):
        plain = command not in seen or index % 4 == 0
        seen.add(command)
        cases.append(pytest.param(command, flag, marks=() if plain else pytest.mark.slow))
    return cases


WHOLE_NUMBER_OPTIONS = whole_number_options()
ARGUMENTS = {"cross": ["I am", "Je suis"], "compare": ["it is", "it was"], "scaling": []}


@pytest.mark.slow
def test_a_focus_occurrence_in_other_digits_is_a_word_not_a_traceback() -> None:
    for spec in ("am:²", "am:١", "am:" + "9" * 5000):
        code, out, err = run("explain", "I am good", "-f", spec)
        assert code == ExitStatus.BAD_INPUT and out == "", err
        assert len(err.splitlines()) == 1 and len(err) < 300 and "Traceback" not in err


@pytest.mark.parametrize(
    ("command", "flag"), plain_run_takes_each_commands_first(WHOLE_NUMBER_OPTIONS)
)
def test_whole_numbers_are_ascii_digits_and_long_ones_are_quoted_briefly(
    command: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from attnviz.cli import run as main_entry

    sentence = ARGUMENTS.get(command, ["it is good"])
    for value, says in (
        ("١٢", "'١٢' is not a valid integer (digits 0-9)"),
        ("²", "is not a valid integer"),
        ("1_0", "is not a valid integer"),
        ("9" * 100_000, "has 100,000 digits; no option takes a number of more than 40"),
    ):
        status = main_entry([command, *sentence, flag, value])
        out, err = capsys.readouterr()
        assert status == ExitStatus.USAGE and out == "", err
        assert len(err.splitlines()) == 1 and says in err and len(err) < 250, err[:300]


LONG = "x" * 100_000


@pytest.mark.parametrize(
    "argv",
    [
        ["explain", "I am good", "--" + LONG],
        ["explain", "I am good", "and", LONG],
        [LONG],
        ["explain", "I am good", "--positions", LONG],
        ["explain", "I am good", "--dtype", LONG],
        ["explain", "I am good", "--oov", LONG],
        ["explain", "I am good", "--preset", LONG],
        ["explain", "I am good", "--steps", LONG],
        ["explain", "I am good", "--steps", "9" * 100_000],
        ["explain", "I am good", "--focus", LONG],
        ["explain", "I am good", "--model", LONG],
        ["explain", "I am good", "--model", "ollama:" + LONG],
        ["explain", "I am good", "--embeddings", LONG + ".npy"],
        ["explain", "I am good", "--weights", LONG],
        ["explain", "I am good", "--export", LONG + ".npz"],
        ["heatmap", "I am good", "-o", "x.png", "--cmap", LONG],
        ["heatmap", "I am good", "-o", "x.png", "--style", LONG],
        ["heads", "it is", "--rank-by", LONG],
        ["compare", "it is", "it was", "--focus", LONG],
        ["scaling", "--dk", LONG],
        ["scaling", "--dk", "-" + "9" * 100_000],
    ],
    ids=lambda argv: " ".join(a[:12] for a in argv),
)
def test_every_refusal_quotes_a_long_value_briefly(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from attnviz.cli import run as main_entry

    monkeypatch.chdir(tmp_path)  # an export or a picture, were one written, lands here
    status = main_entry(argv)
    out, err = capsys.readouterr()
    assert status in (ExitStatus.USAGE, ExitStatus.BAD_INPUT, ExitStatus.BAD_FILE, 5), err[:300]
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("error: "), err[:300]
    assert len(err) < 400 and "x" * 41 not in err and "9" * 41 not in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_model_help_says_what_gpt2_needs() -> None:
    """'gpt2' is listed beside the shipped models, but is found only in a local Hugging Face
    cache: the help says so where it lists it."""
    code, stdout, stderr = run("explain", "--help")
    assert code == 0, stderr
    text = " ".join(stdout.split())
    assert (
        "'gpt2' (attnviz[model] and a copy in the local Hugging Face cache: attnviz never" in text
    )
