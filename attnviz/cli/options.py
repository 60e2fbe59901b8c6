"""Every command-line option, declared once, and the groups they make.

A group is a frozen options type of the library (TraceOptions, ViewOptions, LessonOptions); a
command takes one as a parameter, and ``command()`` (attnviz.cli.groups) turns that parameter
into the group's options on the command line, then hands the command the group built from
them. So --heads or --focus is declared here only, whichever commands take it; every other
option (page's --open-head, heatmap's --cmap, …) is declared here too.
"""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
import typing
from pathlib import Path
from typing import Annotated, Any

import typer

from attnviz.cli import values
from attnviz.cli.values import file_path, head_choice, typed_text, whole_number
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import steps_help
from attnviz.options import FLAGS, TraceOptions, ViewOptions
from attnviz.render.options import Measure, Scale, Style

# -- each option once ---------------------------------------------------------------------------


# The parsers of option values (attnviz.cli.values), as other modules import them from here.
__all__ = ["file_path", "head_choice", "typed_text", "whole_number"]


def declared(name: str, kind: Any) -> Any:
    """``Annotated[kind, typer.Option(…)]`` for option ``name`` of the lesson's options record,
    as attnviz.options.FLAGS spells it; ``kind`` the field's type (text for --head)."""
    flag = FLAGS[name]
    named = {"parser": flag.parser, "callback": flag.callback}
    functions = {key: getattr(values, value) for key, value in named.items() if value}
    info = typer.Option(
        *flag.names,
        help=flag.help,
        show_default=flag.show_default,
        readable=flag.readable,
        **functions,
    )
    return Annotated[str | None if flag.text else kind, info]


def _record_declarations() -> dict[str, Any]:
    """Every option of TraceOptions and ViewOptions, declared from its FLAGS entry."""
    hints = {**typing.get_type_hints(TraceOptions), **typing.get_type_hints(ViewOptions)}
    return {name: declared(name, hints[name]) for name in FLAGS}


DECLARATIONS: dict[str, Any] = {
    # How the traces are made and what is shown: attnviz.options (FLAGS).
    **_record_declarations(),
    # How the lesson is told: LessonOptions.
    "decimals": Annotated[
        int, typer.Option("--decimals", "-d", help="Digits after the point (0–8).")
    ],
    "show_weights": Annotated[
        bool, typer.Option("--show-weights", help="Also print W_Q, W_K, W_V and W_O.")
    ],
    "steps": Annotated[
        str | None,
        typer.Option(
            "--steps",
            help=steps_help(),  # numbered by the table (attnviz/lesson/steps.py)
            show_default=False,
        ),
    ],
    "full": Annotated[
        bool,
        typer.Option(
            "--full",
            help="All of the lesson's text: every head shown in full (or --head's alone) with "
            "every explanation, at full length.",
        ),
    ],
    "block": Annotated[
        int | None,
        typer.Option(
            "--block",
            help="Keys per block in the blockwise step (--steps blockwise). Default: so that the "
            "sentence makes 3 or 4 blocks.",
            show_default=False,
        ),
    ],
}

GROUPS = (TraceOptions, ViewOptions, LessonOptions)

# Arguments and options that are not part of a group, shared by several commands.
Sentence = Annotated[
    str,
    typer.Argument(
        help="The sentence, in quotes.",
        show_default=False,
        metavar="SENTENCE",
        callback=typed_text,
    ),
]
Export = Annotated[
    Path | None,
    typer.Option(
        "--export",
        help="Save every intermediate to FILE.npz or FILE.json.",
        show_default=False,
        parser=file_path,
    ),
]
# The lesson's pacing and its recordings, for explain and cross.
Step = Annotated[bool, typer.Option("--step", help="Pause after each step until a key (q quits).")]
Svg = Annotated[
    Path | None,
    typer.Option(
        "--svg", help="Also save the rendering, colours included, as SVG.", parser=file_path
    ),
]
Html = Annotated[
    Path | None,
    typer.Option(
        "--html", help="Also save the rendering, colours included, as HTML.", parser=file_path
    ),
]
Slides = Annotated[
    Path | None,
    typer.Option(
        "--slides",
        help="Also save each step as a 16:9 slide in this folder: NN-step.svg and NN-step.png "
        "(1920×1080), in the terminal's colours.",
        show_default=False,
        readable=False,
    ),
]

# heatmap's picture options (attnviz.render.options.ImageOptions).
PerHead = Annotated[
    Path | None,
    typer.Option(
        "--per-head",
        help="Also write one image per head into this folder.",
        show_default=False,
        readable=False,
    ),
]
AllLayers = Annotated[
    bool,
    typer.Option(
        "--all-layers",
        help="Every layer and head of a --model run in one grid (refused without "
        "--model: random weights are one layer), each panel headed by its "
        "head's type from its whole matrix A: the mean weight on the previous word, the "
        "next, itself, the first ([CLS]) or the last ([SEP]) (a type at 0.5 or more), else "
        "broad when the rows' entropy is at least 0.9 of a uniform row's, else mixed.",
    ),
]
ImageStyle = Annotated[
    Style,
    typer.Option("--style", help="grid: heatmaps; lines: the focus word's lines to every word."),
]
ImageScale = Annotated[
    Scale | None,
    typer.Option(
        "--scale",
        help="Colours span 0–1 (fixed), each row's largest weight (row), or the largest "
        "weight shown (auto). Default: fixed up to 16 words, else auto.",
        show_default=False,
    ),
]
ImageMeasure = Annotated[
    Measure,
    typer.Option(
        "--measure",
        help="weights: softmax(Q·Kᵀ/√d_k) per head. contribution: each head's shares "
        "‖w_ij·f_h(x_j)‖ / Σ_k ‖w_ik·f_h(x_k)‖, f_h(x_j) = v_j·W_O^h (what word j adds, "
        "not only its weight). rollout: R_l = Â_l·…·Â_1, Â = ½·mean_h A + ½·I, over the "
        "layers up to the one shown (where mixing could carry each input word).",
    ),
]


Colormap = Annotated[str, typer.Option("--cmap", help="A matplotlib colormap name.")]

# page's own options.
PageOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="The page to write: .html (one file; opens offline).",
        show_default=False,
        parser=file_path,
    ),
]
OpenHead = Annotated[
    int | None,
    typer.Option(
        "--open-head",
        help="Open the page on head N (from 1), every head kept in its menu (--head N "
        "keeps head N alone).",
        show_default=False,
    ),
]
CompareWith = Annotated[
    str | None,
    typer.Option(
        "--compare",
        help="A second sentence, in quotes: the page also draws its picture beside the "
        "first's and shows the focus word's row (\"it\" by default) in both, each head's two "
        "rows side by side and the heads ranked by how much the row changed, as attnviz "
        "compare.",
        metavar="SENTENCE_B",
        callback=typed_text,
        show_default=False,
    ),
]
#: --steps on the page: the lesson's steps but the focus view, which is the page's picture.
PAGE_STEPS_HELP = steps_help(page=True)


def image_option(help_text: str, *, required: bool = False) -> Any:
    """``--output/-o``: an image file (.png, .svg or .pdf)."""
    option = typer.Option("--output", "-o", help=help_text, show_default=False, parser=file_path)
    return Annotated[Path if required else Path | None, option]
