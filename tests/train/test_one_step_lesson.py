"""The lesson of one gradient step as printed: every worked example holds by hand from the
digits shown, the numbers beside each sentence are the record's, and it fits 80 columns plain."""

from __future__ import annotations

import io
import math
import re

import numpy as np
import pytest
from rich.cells import cell_len
from rich.console import Console

from attnviz.lesson.gradient_examples import result_decimals
from attnviz.model.sources.shipped import SHIPPED
from attnviz.render.terminal.training_step import print_gradient_step, render_gradient_step
from attnviz.train.one_step import GradientStep, gradient_step
from attnviz.train.tasks import Readout

READOUTS = [Readout.POINTER, Readout.WORD]
#: The lines of a worked example: two spaces, then what is worked out.
WORKED = re.compile(r"^  (∂L/∂|L = |Σ = |W_)")


@pytest.fixture(scope="module", params=READOUTS, ids=lambda readout: readout.value)
def step(request: pytest.FixtureRequest) -> GradientStep:
    readout: Readout = request.param
    return gradient_step(readout=readout)


def printed(step: GradientStep, width: int) -> str:
    out = io.StringIO()
    render_gradient_step(step, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def worked_lines(text: str) -> list[str]:
    """Each worked example as one line (printed wide, so none is wrapped)."""
    return [line.strip() for line in text.splitlines() if WORKED.match(line)]


def rounds_to(value: float, printed: str) -> bool:
    """Whether ``value`` is within half a unit of the last digit of ``printed`` (0.123 or
    1.23e-06): what a reader checks."""
    mantissa, _, exponent = printed.partition("e")
    decimals = len(mantissa.partition(".")[2]) - int(exponent or 0)
    return abs(value - float(printed)) <= 0.5 * 10.0**-decimals


def by_hand(expression: str) -> float:
    """What a reader gets from the printed digits: −ln, ×, −, / as written."""
    python = re.sub(r"−ln (\S+)", r"-log(\1)", expression)
    python = python.replace("×", "*").replace("−", "-")
    assert re.fullmatch(r"[-+*/() .0-9loge]+", python), expression
    value: float = eval(python, {"__builtins__": {}}, {"log": math.log})
    return value


@pytest.mark.slow
def test_every_worked_example_holds_by_hand(step: GradientStep) -> None:
    lines = worked_lines(printed(step, 2000))
    assert len(lines) >= 12
    for line in lines:
        _, _, worked = line.partition(" ← ") if " ← " in line else line.partition(" = ")
        *expressions, result = worked.split(" = ")
        assert expressions, line
        for expression in expressions:
            assert rounds_to(by_hand(expression), result), line


def test_the_softmax_backward_example_uses_the_printed_sum(step: GradientStep) -> None:
    lines = worked_lines(printed(step, 2000))
    sums = [line for line in lines if line.startswith("Σ = ")]
    entries = [line for line in lines if line.startswith("∂L/∂s_it,animal = ")]
    assert len(sums) == len(entries) == (1 if step.readout is Readout.POINTER else 2)
    for total, entry in zip(sums, entries, strict=True):
        printed_total = total.rsplit(" = ", 1)[1]
        assert f" − {printed_total})" in entry or f" − ({printed_total}))" in entry


@pytest.mark.slow
def test_the_closing_line_is_the_records_weight_before_and_after(step: GradientStep) -> None:
    text = " ".join(printed(step, 2000).split())
    before, after = step.referent_weight_before, step.referent_weight_after
    decimals = max(result_decimals(before), result_decimals(after))
    moved = "rose" if after > before else "fell"  # the word readout does not ask it to rise
    assert (
        f"The weight of 'animal' in the row of 'it', layer 2: {before:.{decimals}f} → "
        f"{after:.{decimals}f} ({moved})." in text
    )
    assert f"The loss went from {step.loss:.3f} to {step.loss_after:.3f}." in text
    assert "plain gradient descent" in text and "lr = 0.001" in text


@pytest.mark.slow
def test_the_pointer_lesson_says_where_the_gradient_enters() -> None:
    text = " ".join(printed(gradient_step(), 2000).split())
    assert "the gradient enters layer 2 at its scaled scores, below its softmax" in text
    assert "after its softmax" not in text  # the readout's softmax is differentiated already
    assert "W_O₂ and W_V₂ get a gradient of 0 in every entry" in text
    assert "Through W_O₂" not in text and "Through W_O₁" in text
    word = " ".join(printed(gradient_step(readout=Readout.WORD), 2000).split())
    assert "Through W_O₂" in word and "∂L/∂W_U = X_L[it]ᵀ·∂L/∂logits" in word
    assert "the loss does not ask for this weight" in word


@pytest.mark.parametrize("width", [80, 100])
def test_it_fits_the_width_plain_and_has_no_nan(step: GradientStep, width: int) -> None:
    text = printed(step, width)
    assert "\x1b" not in text
    assert "elided" not in text  # every number is shown (and there is no --export to point to)
    assert "nan" not in text.lower().replace("animal", "")
    assert max(cell_len(line) for line in text.splitlines()) <= width
    assert text.splitlines()[0] == "attnviz · one training step, every number"


@pytest.mark.slow
def test_no_color_gives_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    record = print_gradient_step(Console(file=out, width=80), readout="word", seed=0)
    assert record.readout is Readout.WORD
    assert "\x1b" not in out.getvalue()


@pytest.mark.parametrize("readout", READOUTS, ids=lambda readout: readout.value)
def test_a_trained_models_step_holds_by_hand_too(readout: Readout) -> None:
    """From a trained model's weights (p near 1, gradients near 0: the model attnviz ships for
    this readout) the examples still hold."""
    name = "coref" if readout is Readout.POINTER else "coref-word"
    with np.load(SHIPPED / name / "weights.npz", allow_pickle=False) as stored:
        parameters = dict(stored)
    step = gradient_step(readout=readout, parameters=parameters)
    assert math.exp(-step.loss) > 0.9  # trained: the right answer's p = e^−loss, near 1
    text = printed(step, 2000)
    assert "Weights: the coref model's weights as given." in " ".join(text.split())
    for line in worked_lines(text):
        _, _, worked = line.partition(" ← ") if " ← " in line else line.partition(" = ")
        *expressions, result = worked.split(" = ")
        for expression in expressions:
            assert rounds_to(by_hand(expression), result), line
    assert max(cell_len(line) for line in printed(step, 80).splitlines()) <= 80


@pytest.mark.parametrize("readout", READOUTS, ids=lambda readout: readout.value)
def test_a_gradient_of_zero_is_said_not_summed_over_no_products(readout: Readout) -> None:
    """A trained model's weights can make a whole column of ∂L/∂scores exactly 0 (softmax
    weights of exactly 0 or 1 in float64): the lesson then says so, in every layer where it is
    true and only there, instead of writing an empty sum."""
    name = "coref" if readout is Readout.POINTER else "coref-word"
    with np.load(SHIPPED / name / "weights.npz", allow_pickle=False) as stored:
        step = gradient_step(readout=readout, parameters=dict(stored))
    text = " ".join(printed(step, 2000).split())
    said = text.count("No score on 'animal' has a gradient")
    zero = sum(not layer.d_scores[0, :, step.referent].any() for layer in step.layers)
    assert said == zero
    assert text.count("∂L/∂k_animal[") == len(step.layers) - zero
    assert not re.search(r"\b0 products", text) and "=  =" not in text
