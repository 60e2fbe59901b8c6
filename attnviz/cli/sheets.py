"""``attnviz worksheet``: parses its options and makes one call to attnviz.api.worksheet."""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
from pathlib import Path
from typing import Annotated

import typer

from attnviz.cli.console import surface
from attnviz.cli.groups import Leave, Reword
from attnviz.cli.values import file_path, typed_text
from attnviz.options import TraceOptions

#: The sentence when none is given; --hand's is shorter (its tables are copied onto paper).
DEFAULT_SENTENCE = "The animal didn't cross the street because it was too tired"
HAND_SENTENCE = "The animal crossed because it was tired"


def worksheet(
    trace_options: Annotated[
        TraceOptions,
        Leave("pad_to", "dtype", "export_layer"),
        Reword(
            seed="Seed of the set: the random (or --hand) layer and the cells asked; sheet k "
            "of --copies uses seed + k - 1."
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="The set to write: .pdf, .html or .md, with its answer key beside it as "
            "NAME-key.EXT (sheet.pdf and sheet-key.pdf); or .gift (Moodle GIFT) or .xml "
            "(Moodle XML), one quiz whose questions hold their answers, tolerances and worked "
            "solutions. Existing files are replaced.",
            show_default=False,
            parser=file_path,
        ),
    ],
    sentence: Annotated[
        str | None,
        typer.Argument(
            help=f'The sentence, in quotes (default: "{DEFAULT_SENTENCE}"; with --hand '
            f'"{HAND_SENTENCE}").',
            show_default=False,
            metavar="[SENTENCE]",
            callback=typed_text,
        ),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="The kinds of questions, comma-separated: projection, score, scaled, softmax, "
            "z, output, rope, cache, blockwise, weight (default: every kind the layer has).",
            show_default=False,
        ),
    ] = None,
    count: Annotated[int, typer.Option("--count", help="Questions on each sheet (1 to 40).")] = 6,
    copies: Annotated[
        int,
        typer.Option(
            "--copies",
            help="Sheets in the set (1 to 100), each with its own numbers and its own cells, "
            "numbered, in one file (each from a new page), their keys in the other.",
        ),
    ] = 1,
    paper: Annotated[str, typer.Option("--paper", help="a4 or letter (.pdf and .html).")] = "a4",
    hand: Annotated[
        bool,
        typer.Option(
            "--hand",
            help="Numbers for pencil and paper: d_model 4, 2 heads, inputs -1, 0, 1 and halves, "
            "drawn so that every intermediate stays short; the sheet says so.",
        ),
    ] = False,
) -> None:
    """Write a worksheet set for SENTENCE: exercises with the numbers needed and boxes to fill,
    and a separate answer key with every worked solution.

    Example: attnviz worksheet --hand --copies 3 --seed 7 -o sheet.pdf

    For a learning platform: attnviz worksheet --hand -o quiz.gift (or quiz.xml)
    """
    from attnviz.api import worksheet as command

    text = sentence if sentence is not None else HAND_SENTENCE if hand else DEFAULT_SENTENCE
    options = command.SheetOptions(command.parse_kinds(kind), count, copies, paper, hand)
    command.run(text, trace_options, options, output, surface())
