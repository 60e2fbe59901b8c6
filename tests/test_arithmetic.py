"""Every worked example the lesson prints is arithmetically true at the precision printed.

The lines are read back from the CLI's own output, as a student would read them, and worked with
the numbers exactly as printed: a sum of products, a division, exp() of a printed number. Nothing
here calls the code that chose the decimals.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from attnviz.cli import app

from support import CliRunner, needs_model

runner = CliRunner()
TINY_GPT2 = str(Path(__file__).resolve().parent / "model" / "tiny_gpt2")
IT = "The animal didn't cross the street because it was too tired"
NUMBER = r"\(?-?\d+(?:\.\d+)?\)?|\(?−∞\)?"


def value(text: str) -> float:
    text = text.strip().strip("()")
    return -math.inf if text == "−∞" else float(text)


def decimals(text: str) -> int:
    return len(text.strip().strip("()").partition(".")[2])


def rounds_to(computed: float, printed: str) -> bool:
    """``computed`` lies less than half a unit of ``printed``'s last digit away: an exact tie
    (0.01 / 2.00 = 0.005) is refused, since readers round ties differently."""
    return abs(computed - value(printed)) < 0.5 * 10.0 ** -decimals(printed) * (1 - 1e-9)


def sum_of_terms(text: str) -> float:
    """'a×b + c + (-d)×e' worked from the printed numbers."""
    total = 0.0
    for term in text.split(" + "):
        factors = term.split("×")
        assert all(re.fullmatch(NUMBER, f) for f in factors), term
        total += math.prod(value(f) for f in factors)
    return total


def example_lines(output: str) -> list[str]:
    """The worked examples: the lines indented by two spaces that hold an '='."""
    return [line.strip() for line in output.splitlines() if line.startswith("  ") and " = " in line]


def check(line: str) -> bool:
    """Check one worked example; True when it was written out in full and so checked."""
    if "…" in line:  # an elided sum cannot be worked by hand; its parts are checked elsewhere
        return False
    if "·v_" in line:  # Z's step as vectors names the value vectors; its numbers come next line
        assert line.count(" = ") == 1, line  # no rounded vector claimed as the sum
        return False
    if line.startswith("exp("):  # the softmax step: exp(s) / (exp(s₁) + …) = e / total = w
        formula, numerator, rest = line.split(" = ")
        e, total = numerator.split(" / ")
        key = re.match(r"exp\(([^)]*)\)", formula)
        assert key is not None
        assert rounds_to(math.exp(value(key.group(1))), e), line
        assert rounds_to(value(e) / value(total), rest), line
        if "included" not in formula:
            inside = formula.split(" / (", 1)[1][:-1]
            exps = re.findall(r"exp\(([^)]*)\)", inside)
            assert rounds_to(sum(math.exp(value(s)) for s in exps), total), line
        return True
    name, *middle, result = line.split(" = ")
    if not middle:  # the scaling step: a / b = c
        a, b = name.split(" / ")
        assert rounds_to(value(a) / value(b), result), line
        return True
    assert rounds_to(sum_of_terms(middle[0]), result), line
    return True


COMMANDS = {
    "random": ["explain", IT],
    "random, 3 heads, d_model 12, --decimals 3": [
        "explain",
        IT,
        "--heads",
        "3",
        "--d-model",
        "12",
        "--decimals",
        "3",
    ],
    "random, --decimals 0": ["explain", "I am good", "--decimals", "0"],
    "random, --seed 7, --focus it": ["explain", IT, "--seed", "7", "--focus", "it"],
    "--causal": ["explain", IT, "--causal"],
    "--pad-to": ["explain", "I am good", "--pad-to", "6"],
    "--preset paper": ["explain", "I am good", "--preset", "paper"],
    "cross": ["cross", "I am good", "je suis bon"],
}


@pytest.mark.slow
@pytest.mark.parametrize("full", [False, True], ids=["", "--full"])
@pytest.mark.parametrize("name", COMMANDS)
def test_every_printed_worked_example_holds_at_its_precision(name: str, full: bool) -> None:
    result = runner.invoke(
        app, [*COMMANDS[name], *(["--full"] if full else [])], env={"COLUMNS": "3000"}
    )
    assert result.exit_code == 0, result.stderr
    lines = example_lines(result.stdout)
    checked = sum(check(line) for line in lines)
    # The steps of the head shown in full (of every head, --full), from its Q K V to
    # Concat·W_O, nearly all written out in full for these small sizes.
    assert checked >= (8 if full else 4), (name, lines)


MODEL_COMMANDS = {
    "minilm --words --hide-special": [
        "explain",
        "-m",
        "minilm",
        "The zookeeper said it, unbelievably.",
        "--layer",
        "6",
        "--head",
        "12",
        "--words",
        "--hide-special",
        "--decimals",
        "4",
    ],
    "minilm --pad-to": ["explain", "-m", "minilm", "I am good", "--pad-to", "8", "--head", "3"],
    "minilm --words": ["explain", "-m", "minilm", IT, "--words", "--head", "1", "--layer", "2"],
    "gpt2 (causal) --hide-special --words": [
        "explain",
        "-m",
        TINY_GPT2,
        "The zookeeper said it.",
        "--words",
        "--hide-special",
    ],
}


@pytest.mark.slow
@needs_model
@pytest.mark.parametrize("name", MODEL_COMMANDS)
def test_every_worked_example_of_a_model_holds_at_its_precision(name: str) -> None:
    result = runner.invoke(app, MODEL_COMMANDS[name], env={"COLUMNS": "3000"})
    assert result.exit_code == 0, result.stderr
    lines = example_lines(result.stdout)
    checked = sum(check(line) for line in lines)
    assert checked >= 2, (name, lines)


def test_the_checker_catches_a_wrong_line() -> None:
    with pytest.raises(AssertionError):
        check("q_I · k_am = 0.50×0.50 + 1.00×1.00 = 1.26")
    with pytest.raises(AssertionError):
        check("3.06 / 2.00 = 1.54")
    with pytest.raises(AssertionError):  # a tie: 0.005 reads 0.01 at school, 0.00 to even
        check("0.01 / 2.00 = 0.00")
    with pytest.raises(AssertionError):
        check("z_I = 0.56·v_good + 0.44·v_am = [0.12, 0.30]")
    with pytest.raises(AssertionError):
        check("exp(0.00) / (exp(0.00) + exp(-1.00)) = 1.00 / 1.37 = 0.74")
    with pytest.raises(AssertionError):
        check("exp(0.00) / (exp(0.00) + exp(-1.00)) = 1.00 / 1.40 = 0.71")
    assert check("exp(0.00) / (exp(0.00) + exp(-1.00)) = 1.00 / 1.37 = 0.73")
    assert check("exp(0.00) / (exp(0.00) + exp(−∞)) = 1.00 / 1.00 = 1.00")
    assert check("q_I[1] = 0.61×0.06 + (-0.15)×(-0.27) + (-0.07) = 0.01")
