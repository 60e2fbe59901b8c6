"""``attnviz exercise`` through the CLI runner: printed questions when not at a terminal, a
graded answers file with its exit code, the same set for the same seed, one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnviz
from attnviz.cli import app
from attnviz.exercise.questions import format_number

from support import CliRunner, one_error_line

runner = CliRunner()


def run(*arguments: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["exercise", *arguments], env={"COLUMNS": "100"})
    return result.exit_code, result.stdout, result.stderr


def test_not_at_a_terminal_the_questions_are_printed_and_how_to_check_them() -> None:
    status, out, err = run("--count", "3", "--kind", "scaled", "--kind", "z,cache")
    assert status == 0 and err == ""
    assert "Question 1 of 3 (scaled)" in out and "Question 3 of 3 (cache)" in out
    assert " ".join(out.split()).endswith("run the same command with --answers FILE.")
    assert max(len(line) for line in out.splitlines()) <= 100  # wrapped at the width


def test_the_same_seed_prints_the_same_set_and_another_seed_another() -> None:
    first = run("--seed", "3", "--count", "4")[1]
    assert first == run("--seed", "3", "--count", "4")[1]
    assert first != run("--seed", "4", "--count", "4")[1]


def answers_for(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "answers.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_answers_file_is_graded_with_the_diagnosis_and_exit_1_unless_all_right(
    tmp_path: Path,
) -> None:
    asked = [attnviz.exercise("The cat sat on the mat", kind="scaled", seed=2)]
    (score,) = asked[0].givens[0].values
    right = format_number(asked[0].answer, 2)
    status, out, _ = run(
        "--kind",
        "scaled",
        "--count",
        "1",
        "--seed",
        "2",
        "--answers",
        str(answers_for(tmp_path, [right])),
    )
    assert status == 0 and f"1. (scaled) right: {right}." in out and "Score: 1 of 1 right." in out
    status, out, _ = run(
        "--kind",
        "scaled",
        "--count",
        "3",
        "--seed",
        "2",
        "--answers",
        str(answers_for(tmp_path, [str(score), "-"])),
    )
    assert status == 1
    assert "you forgot to divide by √d_k." in out
    assert "2. (scaled) skipped" in out and "3. (scaled) skipped" in out
    assert "Score: 0 of 3 right (1 answered)." in out


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["--kind", "rope"], ["--kind rope needs rotary positions: add --positions rope."]),
        (["--kind", "weight"], ["--kind weight needs a trained model: add --model coref."]),
        (["--kind", "sum"], ["--kind sum is no kind of question"]),
        (["--count", "0"], ["--count 0: give between 1 and 100 questions."]),
        (["--answers", "/no/such/file"], ["No answers file /no/such/file"]),
    ],
)
def test_refusals_are_one_line(arguments: list[str], fragments: list[str]) -> None:
    status, out, err = run(*arguments)
    assert status in (3, 4) and out == ""
    one_error_line(err, *fragments)


def test_the_help_says_the_exit_codes_and_the_kinds() -> None:
    out = run("--help")[1]
    assert "exit 0 only when every answer is right, 1 otherwise" in " ".join(out.split())
    assert "weight (with --model coref)" in " ".join(out.split())
