"""The softmax step's worked examples: the row's largest weight from the scaled table's own numbers,
exp(s_ij) / Σ_k exp(s_ik), or shifted by the row's largest score when exp() of the scores is too
large to write out; and (all of the text, --full) one more as attnviz computes it, for a key
whose shifted score is not 0. Every number is read back from the printed text and recomputed
from the export, not from the code that chose the decimals."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.lesson.steps import step_number

from support import CliRunner, needs_model

runner = CliRunner()
IT = "The animal didn't cross the street because it was too tired"
TINY_GPT2 = str(Path(__file__).resolve().parent.parent / "model" / "tiny_gpt2")
SHIFT = re.compile(r"Row 'it', column (\S+), (\S+) − (\S+) = (\S+):")
UNSHIFTED = re.compile(r"Row 'it', column (\S+) \(its largest weight\), from the scaled table:")


def explained(tmp_path: Path, *args: str) -> tuple[str, dict[str, np.ndarray]]:
    export = tmp_path / "trace.npz"
    result = runner.invoke(
        app, ["explain", IT, *args, "--full", "--export", str(export)], env={"COLUMNS": "3000"}
    )
    assert result.exit_code == 0, result.stderr
    with np.load(export, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    return result.stdout, arrays


def softmax_step(output: str) -> list[str]:
    """Each head's softmax step, up to its table."""
    heading = f"Step {step_number('weights')} · "
    return [part.split("\nweights")[0] for part in output.split(heading)[1:]]


def worked(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.startswith("  exp(")]


def value(printed: str) -> float:
    return -math.inf if printed == "−∞" else float(printed)


def decimals(printed: str) -> int:
    return len(printed.partition(".")[2])


def check_head(text: str, scaled: np.ndarray, weights: np.ndarray) -> bool:
    """Check one head's softmax step against its row of the export; True when it showed the
    unshifted form."""
    lines = worked(text)
    shift = SHIFT.search(text)
    assert shift is not None, text
    score, largest, shifted = shift.group(2, 3, 4)
    # A negative number subtracted is written in parentheses: "− (-0.37)", never "− -0.37".
    assert not largest.startswith("-"), shift.group(0)
    if largest.startswith("("):
        assert largest.startswith("(-") and largest.endswith(")"), shift.group(0)
        largest = largest[1:-1]
    # The key named: the one whose scaled score is printed (labels are the lesson's own).
    key = int(np.argmin(np.abs(scaled - float(score))))
    # The subtraction holds by hand, from the scaled scores as printed.
    assert f"{float(score) - float(largest):.{decimals(shifted)}f}" == shifted
    assert float(largest) == pytest.approx(scaled.max(), abs=0.5 * 10.0 ** -decimals(largest))
    assert float(score) == pytest.approx(scaled[key], abs=0.5 * 10.0 ** -decimals(score))
    assert lines[-1].startswith(f"exp({shifted}) / (")
    if weights[key] < weights.max():  # a key below the row's largest: not exp(0) = 1
        assert not lines[-1].startswith(f"exp({0:.{decimals(shifted)}f})")
        order = np.sort(np.unique(scaled))[::-1]
        assert scaled[key] == order[1]  # the runner-up
    assert lines[-1].endswith(f"= {weights[key]:.2f}")
    unshifted = UNSHIFTED.search(text)
    if unshifted is None:  # the row's largest weight, shifted: exp(0) over the shifted sum
        top = int(np.argmax(weights))
        assert len(lines) == 2 and re.match(r"exp\(0\.0+\) / \(", lines[0])
        assert lines[0].endswith(f"= {weights[top]:.2f}")
        return False
    top = int(np.argmax(weights))
    first = lines[0]
    exponents = re.findall(r"exp\(([^)]*)\)", first.split(" / (", 1)[1].split(")) = ")[0] + ")")
    if "…" not in first:  # the table's own numbers, in its order
        for printed, number in zip(exponents, scaled, strict=True):
            assert value(printed) == pytest.approx(number, abs=0.5 * 10.0 ** -decimals(printed))
        assert decimals(exponents[0]) <= 3
    numerator, total_and_result = first.split(" = ")[1], first.split(" = ")[2]
    e, total = numerator.split(" / ")
    top_printed = first[4 : first.index(")")]
    assert value(top_printed) == pytest.approx(
        scaled[top], abs=0.5 * 10.0 ** -decimals(top_printed)
    )
    assert math.exp(float(top_printed)) == pytest.approx(float(e), abs=0.5 * 10.0 ** -decimals(e))
    assert f"{float(e) / float(total):.2f}" == total_and_result == f"{weights[top]:.2f}"
    return True


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--decimals", "0"),
        ("--decimals", "1"),
        ("--causal",),
        ("--seed", "3"),
        ("--positions", "rope"),
    ],
)
def test_softmax_examples_hold_for_random_weights(args: tuple[str, ...], tmp_path: Path) -> None:
    output, arrays = explained(tmp_path, *args)
    keys = [str(t) for t in arrays["tokens"]]
    it = keys.index("it")
    heads = softmax_step(output)
    assert len(heads) == arrays["weights"].shape[0]
    scaled = np.where(
        np.isinf(arrays["scaled"]) | (arrays["weights"] == 0) & ("--causal" in args),
        -np.inf,
        arrays["scaled"],
    )
    shown = [
        check_head(text, scaled[h, it], arrays["weights"][h, it]) for h, text in enumerate(heads)
    ]
    if not args or args[0] == "--decimals":  # the default sentence: at least once unshifted
        assert any(shown)


def test_the_default_lesson_shows_both_forms_with_the_tables_numbers(tmp_path: Path) -> None:
    output, _ = explained(tmp_path, "--head", "1")
    text = softmax_step(output)[0]
    assert "exp(3.50) / (exp(1.13) + exp(-0.43)" in text  # row 'it' of scaled₁ as printed
    assert "column 'because', 1.86 − 3.50 = -1.64:" in text
    assert "  exp(-1.64) / (" in text and "= 0.19 / 1.63 = 0.12" in text


@needs_model
@pytest.mark.slow
@pytest.mark.parametrize(
    "model", [("-m", "minilm", "--head", "12"), ("-m", TINY_GPT2), ("-m", "coref")]
)
def test_softmax_examples_hold_for_models(model: tuple[str, ...], tmp_path: Path) -> None:
    output, arrays = explained(tmp_path, *model)
    keys = [str(t) for t in arrays["tokens"]]
    it = next(i for i, k in enumerate(keys) if k.strip("Ġ") == "it")
    heads = softmax_step(output)
    weights = arrays["weights"][-1]  # the last layer's, the one shown
    scaled = np.where(weights == 0, -np.inf, arrays["scaled"][-1])
    chosen = [int(model[3]) - 1] if "--head" in model else range(weights.shape[0])
    for text, h in zip(heads, chosen, strict=True):
        check_head(text, scaled[h, it], weights[h, it])


def test_by_default_the_row_s_largest_weight_is_worked_out_once() -> None:
    """The short lesson works out the weight the focus row gives most, and says why the row's
    largest score is subtracted, with no second example."""
    result = runner.invoke(app, ["explain", IT], env={"COLUMNS": "3000"})
    (text,) = softmax_step(result.stdout)  # head 1 in full; head 2 gives its rows
    assert worked(text) == [
        "exp(3.50) / (exp(1.13) + exp(-0.43) + exp(-3.18) + exp(1.59) + exp(1.13) + exp(-0.83) "
        "+ exp(1.86) + exp(-0.75) + exp(3.50) + exp(-2.05) + exp(0.49)) = 33.1 / 54.0 = 0.61"
    ]
    assert "subtracts the row's largest score m_i" in text


@pytest.mark.slow
def test_the_1_00_on_animal_is_worked_out_shifted_when_exp_is_too_large(tmp_path: Path) -> None:
    """coref's row of "it" puts 1.00 on "animal": the softmax step works that weight out,
    shifted, and says how large exp() of its score would be."""
    _, arrays = explained(tmp_path, "-m", "coref")
    (text,) = softmax_step(
        runner.invoke(app, ["explain", IT, "-m", "coref"], env={"COLUMNS": "3000"}).stdout
    )
    it = [str(t) for t in arrays["tokens"]].index("it")
    scaled = arrays["scaled"][-1][0, it]
    largest = float(scaled.max())
    assert f"Written directly, row 'it' would need exp({largest:.2f})" in text
    assert "Column 'animal' (its largest weight, s − m = 0):" in text
    (line,) = worked(text)
    assert line.startswith("exp(0.00) / (") and line.endswith("= 1.00 / 1.00 = 1.00")


def test_a_negative_largest_score_is_subtracted_in_parentheses() -> None:
    """With rotary positions "I am good"'s row 'I' has a negative largest scaled score: the
    shifted score is written s − (m), as every worked example writes a negative operand."""
    result = runner.invoke(
        app, ["explain", "I am good", "--positions", "rope", "--full"], env={"COLUMNS": "3000"}
    )
    assert result.exit_code == 0, result.stderr
    subtraction = re.search(r"Row 'I', column 'am',\s+(\S+) − (\S+) = (\S+):", result.stdout)
    assert subtraction is not None, result.stdout
    score, largest, shifted = subtraction.groups()
    assert largest.startswith("(-") and largest.endswith(")")
    assert f"{float(score) - float(largest[1:-1]):.{decimals(shifted)}f}" == shifted
