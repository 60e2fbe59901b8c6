"""One training step, every number, in the terminal: attnviz.train.one_step's record as the
lesson blocks of attnviz.lesson.gradient_step, drawn as the forward lesson is drawn."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console

from attnviz.arrays import FloatArray
from attnviz.lesson.gradient_examples import TABLE_DECIMALS
from attnviz.lesson.gradient_step import gradient_step_lesson
from attnviz.lesson.options import LessonOptions
from attnviz.render.terminal.lesson import print_blocks
from attnviz.train.one_step import STEP_LEARNING_RATE, GradientStep, gradient_step
from attnviz.train.tasks import Readout


def render_gradient_step(step: GradientStep, console: Console) -> None:
    """Print the lesson of ``step`` on ``console``."""
    options = LessonOptions(decimals=TABLE_DECIMALS)
    print_blocks(gradient_step_lesson(step), console, options)


def print_gradient_step(
    console: Console,
    *,
    readout: Readout | str = Readout.POINTER,
    seed: int = 0,
    learning_rate: float = STEP_LEARNING_RATE,
    parameters: Mapping[str, FloatArray] | None = None,
) -> GradientStep:
    """One step of gradient descent of the coref model on the seeds' sentence, printed with
    every number (``attnviz train coref --explain-step``); returns the step's record."""
    step = gradient_step(
        readout=Readout(readout), seed=seed, learning_rate=learning_rate, parameters=parameters
    )
    render_gradient_step(step, console)
    return step
