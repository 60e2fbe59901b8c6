"""attnviz compare on the command line: the report, piped at 80 columns without colour, and its
refusals as one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.cli import app
from attnviz.errors import ExitStatus

from support import CliRunner, needs_model, one_error_line

TIRED = "The animal didn't cross the street because it was too tired"
WIDE = "The animal didn't cross the street because it was too wide"
runner = CliRunner()


def compare(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["compare", *args], env={"COLUMNS": "80", "NO_COLOR": "1"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_coref_says_it_moves_from_animal_to_street_in_layer_2() -> None:
    code, out, err = compare("--model", "coref", TIRED, WIDE)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines)
    assert "\x1b[" not in out
    assert lines[0] == "attnviz · where does 'it' look, in sentence A and in sentence B"
    assert "Weights: coref (trained by attnviz); 2 layers × 1 head; both sentences traced" in out
    assert "only in A: tired; only in B: wide." in " ".join(lines)
    table = lines[lines.index("head     TV  top in A   w_A  top in B   w_B  moves") + 2 :]
    assert table[:2] == [
        "L2 H1  1.00  animal    1.00  street    1.00    yes",
        "L1 H1  0.65  tired     0.90  cross     0.59    yes",
    ]
    assert "L2 H1: from 'animal' (1.00) to 'street' (1.00), TV 1.00" in lines
    said = " ".join(out.split())
    assert "'it' moves from 'animal' to 'street' in layer 2, head 1 (TV 1.00)" in said
    # In the same breath: that row is coref's answer, trained so.
    assert said.index("(TV 1.00)") < said.index(
        "The last layer's row of \"it\" is the model's answer, because it was trained to point"
    )
    assert "random" not in said
    _, word, _ = compare("--model", "coref-word", TIRED, WIDE)
    assert "no attention row was trained to be the answer" in " ".join(word.split())


def test_the_side_by_side_rows_add_up_to_the_tv_shown() -> None:
    _, out, _ = compare("--model", "coref", TIRED, WIDE)
    lines = out.splitlines()
    start = lines.index("The row of 'it' in L2 H1, side by side") + 3
    rows = [line.split() for line in lines[start : start + 11]]
    assert [row[0] for row in rows] == [
        "the:1", "animal", "didn't", "cross", "the:2", "street", "because", "it", "was", "too",
        "(the",
    ]  # fmt: skip
    differences = [float(row[-1]) for row in rows]
    assert differences[1] == differences[5] == 1.0
    assert "TV = ½ × 2.000 = 1.000: half the sum of the last column" in lines[start + 11]


def test_random_weights_say_any_change_is_by_chance_and_top_limits_the_table() -> None:
    code, out, _ = compare(TIRED, WIDE, "--heads", "4", "--d-model", "16", "--top", "2")
    assert code == 0
    said = " ".join(out.split())
    assert "Weights: random (seed 0); 1 layer × 4 heads" in said
    assert "(top 2 of 4)" in said
    assert "These weights are random, not learned" in said and "use --model" in said


def test_a_layer_of_a_model_keeps_that_layer_and_head_one_head() -> None:
    _, out, _ = compare("-m", "coref", "--layer", "1", TIRED, WIDE)
    assert "L1 H1" in out and "L2 H1" not in out
    said = " ".join(out.split())
    assert "'it' moves from 'tired' to 'cross' in layer 1, head 1 (TV 0.65)" in said


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        ((TIRED, "The dog slept"), ("'it' is not in sentence B", "--focus WORD: The.")),
        ((TIRED, WIDE, "--focus", "dog"), ("'dog' is not in sentence A",)),
        ((TIRED, WIDE, "--top", "0"), ("--top 0: give 1 or more.",)),
        ((TIRED, WIDE, "--head", "3"), ("--head 3 does not exist",)),
    ],
)
def test_refusals_are_one_line(args: tuple[str, ...], fragments: tuple[str, ...]) -> None:
    code, out, err = compare(*args)
    assert code == ExitStatus.BAD_INPUT and out == ""
    one_error_line(err, *fragments)


def test_an_unknown_picture_extension_is_refused_before_any_work(tmp_path: Path) -> None:
    code, out, err = compare(TIRED, WIDE, "-o", str(tmp_path / "compare.gif"))
    assert code == ExitStatus.CANNOT_WRITE and out == ""
    one_error_line(err, "--output", "compare.gif", "use one of .png, .svg, .pdf.")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # draws a picture
def test_output_draws_the_listed_heads(tmp_path: Path) -> None:
    path = tmp_path / "compare.png"
    code, out, err = compare("-m", "coref", TIRED, WIDE, "--top", "1", "-o", str(path))
    assert code == 0 and err.strip() == f"wrote {path}"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@needs_model
def test_an_untrained_checkpoint_is_called_random_without_asking_for_a_model() -> None:
    tiny_gpt2 = str(Path(__file__).parents[1] / "model" / "tiny_gpt2")
    code, out, _ = compare("-m", tiny_gpt2, "the cat sat because it was tired", "it was wide")
    assert code == 0
    said = " ".join(out.split())
    assert "These weights are random, not learned (an untrained checkpoint): any change" in said
    assert "--model" not in said
