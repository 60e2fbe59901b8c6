"""``attnviz exercise``: questions from the student's sentence, checked. Parses its options,
makes one call to attnviz.api.exercise.run and returns its exit code."""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
import sys
from pathlib import Path
from typing import Annotated

import typer

from attnviz.cli.console import surface
from attnviz.cli.groups import Leave
from attnviz.cli.values import typed_text
from attnviz.options import Options, TraceOptions, ViewOptions

#: The sentence when none is given: short enough for questions by hand; with a model, the
#: sentence its weight question is about ("it" and "animal").
SENTENCE = "The cat sat on the mat"
MODEL_SENTENCE = "The animal didn't cross the street because it was too tired"


def exercise(
    trace_options: Annotated[
        TraceOptions,
        Leave("preset", "embeddings", "oov", "weights", "dtype", "pad_to", "latent"),
    ],
    view: Annotated[ViewOptions, Leave("head", "focus", "words", "hide_special")],
    sentence: Annotated[
        str | None,
        typer.Argument(
            help=f'The sentence, in quotes (default: "{SENTENCE}"; with --model, '
            f'"{MODEL_SENTENCE}").',
            show_default=False,
            metavar="[SENTENCE]",
            callback=typed_text,
        ),
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            help="What to ask, repeatable or comma-separated: projection, score, scaled, "
            "softmax, z, output, rope (with --positions rope), cache (with --kv-heads for "
            "grouped-query attention), blockwise, weight (with --model coref). Default: a mix "
            "of what the layer has.",
            show_default=False,
        ),
    ] = None,
    count: Annotated[int, typer.Option("--count", help="How many questions (1 to 100).")] = 5,
    answers: Annotated[
        Path | None,
        typer.Option(
            "--answers",
            help="Check a file of answers, one a line in order (blank or - skips one), and "
            "print a report; exit 0 only when every answer is right, 1 otherwise.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Questions from SENTENCE's lesson, one number each, checked and diagnosed.

    At a terminal: one question at a time, the inputs as tables; type a number (0.5, -1.2e-1,
    0,5); a wrong answer is diagnosed (forgot ÷√d_k, softmax down a column, weighted the keys,
    …) and the solution worked out; the score at the end (Ctrl-C stops with the score so far).
    Otherwise the questions are printed, to answer on paper and check with --answers FILE.
    --seed draws the layer and the questions: the same seed gives the same set.

    Example: attnviz exercise "The cat sat on the mat" --kind scaled,softmax --count 4
    """
    from attnviz.api import exercise as command

    if sentence is None:
        sentence = MODEL_SENTENCE if trace_options.model is not None else SENTENCE
    interactive = answers is None and sys.stdin.isatty() and sys.stdout.isatty()
    status = command.run(
        sentence,
        Options(trace_options, view),
        surface(),
        kind=[part for given in kind or () for part in given.split(",")],
        count=count,
        seed=trace_options.seed,
        answers=answers,
        interactive=interactive,
    )
    if status:
        raise typer.Exit(status)
