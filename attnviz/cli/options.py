"""Every command-line option, declared once, and the groups they make.

A group is a frozen options type of the library (TraceOptions, ViewOptions, LessonOptions); a
command takes one as a parameter, and ``command()`` turns that parameter into the group's
options on the command line, then hands the command the group built from them. So --heads or
--focus is declared here only, whichever commands take it.
"""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
import contextlib
import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from attnviz.arguments import empty_path
from attnviz.cli.console import user_errors
from attnviz.cli.values import file_path, head_choice, path_text, typed_text, whole_number
from attnviz.embeddings import OutOfVocabulary
from attnviz.errors import (
    LONGEST_QUOTED,
    AttnvizError,
    command_line,
    shortened,
)
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import steps_help
from attnviz.positions import Positions
from attnviz.render.options import Measure, Scale, Style
from attnviz.selection import ViewOptions
from attnviz.trace_options import Dtype, Preset, TraceOptions

# -- each option once ---------------------------------------------------------------------------


# The parsers of option values (attnviz.cli.values), as other modules import them from here.
__all__ = ["file_path", "head_choice", "typed_text", "whole_number"]


DECLARATIONS: dict[str, Any] = {
    # How the traces are made: TraceOptions.
    "heads": Annotated[
        int | None,
        typer.Option(
            "--heads",
            help="Number of heads h (default: 2, or the weights file's).",
            show_default=False,
        ),
    ],
    "kv_heads": Annotated[
        int | None,
        typer.Option(
            "--kv-heads",
            help="Key/value heads G, each shared by h/G query heads (grouped-query attention; "
            "1 is multi-query). G divides h; default h, the paper's.",
            show_default=False,
        ),
    ],
    "d_model": Annotated[
        int | None,
        typer.Option(
            "--d-model",
            help="Embedding width d_model (default: 8, or the files').",
            show_default=False,
        ),
    ],
    "seed": Annotated[
        int, typer.Option("--seed", help="Seed of the random embeddings and weights.")
    ],
    "preset": Annotated[
        Preset | None,
        typer.Option(
            "--preset",
            help="paper: d_model 512, 8 heads, d_k 64, as in the paper.",
            show_default=False,
        ),
    ],
    "embeddings": Annotated[
        Path | None,
        typer.Option(
            "--embeddings",
            "-e",
            help="Word vectors: GloVe/word2vec text, .npy/.npz (one row per token) or .json.",
            show_default=False,
            readable=False,  # attnviz checks readability itself, with a one-line message
        ),
    ],
    "oov": Annotated[
        OutOfVocabulary,
        typer.Option(
            "--oov", help="Words missing from --embeddings: error, or seeded random vectors."
        ),
    ],
    "weights": Annotated[
        Path | None,
        typer.Option(
            "--weights",
            "-w",
            help="An .npz/.json with W_Q, W_K, W_V, W_O (an exported trace works).",
            show_default=False,
            readable=False,
        ),
    ],
    "model": Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="A trained model: 'coref', 'coref-word' (attnviz's toy models), 'minilm', "
            "'smollm2' (attnviz[model] and each one's package), 'gpt2' (attnviz[model] and a "
            "copy in the local Hugging Face cache: attnviz never downloads), a model folder, a "
            ".gguf file or ollama:NAME.",
            show_default=False,
        ),
    ],
    "dtype": Annotated[
        Dtype,
        typer.Option("--dtype", help="With --model: compute in float32 (as stored) or float64."),
    ],
    "causal": Annotated[
        bool,
        typer.Option(
            "--causal", help="Decoder self-attention: each word sees itself and earlier words."
        ),
    ],
    "positions": Annotated[
        Positions,
        typer.Option(
            "--positions",
            help="Word order for the random layer: none (attention sees a set of words), "
            "sinusoidal (X = E + PE, the paper's positional encoding) or rope (q and k rotated "
            "in each head by their position, base 10000, coordinate i paired with i + d_k/2).",
        ),
    ],
    "pad_to": Annotated[
        int | None,
        typer.Option(
            "--pad-to", help="Pad with [PAD] tokens to N, masked as keys.", show_default=False
        ),
    ],
    # What is shown: ViewOptions.
    "layer": Annotated[
        int | None,
        typer.Option(
            "--layer",
            help="With --model: the layer to show, from 1 (default: the last). With a model's "
            "export as --weights/--embeddings: the layer to read from it.",
            show_default=False,
        ),
    ],
    "head": Annotated[
        str | None,
        typer.Option(
            "--head",
            parser=head_choice,
            help="Head N (from 1): the lesson shows it in full and the other heads' rows of the "
            "focus word; pictures draw it alone. all: every head in full.",
            show_default=False,
        ),
    ],
    "focus": Annotated[
        str | None,
        typer.Option(
            "--focus",
            "-f",
            callback=typed_text,
            help='Word to follow: it, or it:2 for its second occurrence (default: "it" if '
            "present).",
            show_default=False,
        ),
    ],
    "hide_special": Annotated[
        bool,
        typer.Option("--hide-special", help="Leave [CLS], [SEP] and [PAD] out of the views."),
    ],
    "words": Annotated[
        bool,
        typer.Option(
            "--words",
            help="With --model: merge the pieces of each word of the sentence, as spaces "
            "separate them (didn't, tired.), into one row (mean over rows, sum over columns).",
        ),
    ],
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


def image_option(help_text: str, *, required: bool = False) -> Any:
    """``--output/-o``: an image file (.png, .svg or .pdf)."""
    option = typer.Option("--output", "-o", help=help_text, show_default=False, parser=file_path)
    return Annotated[Path if required else Path | None, option]


class Leave:
    """``Annotated[TraceOptions, Leave("model")]``: a command that takes a group without some
    of its options; those keep their defaults."""

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)


class Reword:
    """``Annotated[ViewOptions, Reword(layer="…")]``: a command whose options of a group mean
    something narrower there than the group's help says (cross takes no --model, so its
    --layer only reads a model's export)."""

    def __init__(self, **helps: str) -> None:
        self.helps = helps


def _reworded(declaration: Any, help_text: str) -> Any:
    """An option's ``Annotated[type, typer.Option(…)]`` with its help replaced."""
    kind, info = typing.get_args(declaration)
    info = copy.copy(info)
    info.help = help_text
    return Annotated[kind, info]


# -- groups to options and back -------------------------------------------------------------------


def command(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with each group parameter spread into the group's options for Typer; when
    Typer calls it, the options are gathered back into the group (validated on construction).
    An AttnvizError, from a group or the command, becomes one line on stderr and its exit code;
    while the command runs, its messages name the command line's flags (errors.option).
    """
    hints = typing.get_type_hints(function, include_extras=True)
    parameters: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        annotation, left_out, helps = _group_of(hints[name])
        if annotation is None:
            # Keyword-only, like the spread options: Typer passes every value by name.
            parameters.append(
                parameter.replace(
                    annotation=_strict(hints[name]), kind=inspect.Parameter.KEYWORD_ONLY
                )
            )
            continue
        names = []
        for option, default in _options_of(annotation):
            if option in left_out:
                continue
            names.append(option)
            parameters.append(
                inspect.Parameter(
                    option,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=default,
                    annotation=_strict(
                        _reworded(DECLARATIONS[option], helps[option])
                        if option in helps
                        else DECLARATIONS[option]
                    ),
                )
            )
        groups[name] = (annotation, names)
    # --model names a model or its folder: a path too, though typed as text.
    path_options = {p.name for p in parameters if _is_path_text(p.annotation)} | {"model"}

    @functools.wraps(function)
    def gathered(**values: Any) -> Any:
        typed = [value for value in values.values() if isinstance(value, (str, Path))]
        with command_line(), user_errors(), _quoting_briefly(typed):
            for name in sorted(path_options & values.keys()):
                if values[name] == "":  # kept by the parsers: path_text
                    raise empty_path(name)
            for name, (group, names) in groups.items():  # a group refuses contradictions
                values[name] = group(**{option: values.pop(option) for option in names})
            return function(**values)

    gathered.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    gathered.__annotations__ = {p.name: p.annotation for p in parameters}
    del gathered.__wrapped__  # Typer must see the spread signature, not the function's
    return gathered


@contextlib.contextmanager
def _quoting_briefly(typed: list[str | Path]) -> Iterator[None]:
    """An AttnvizError's message with every long value the person typed (a path of 100,000
    characters, a page of a focus word) clipped to its first characters (errors.shortened)."""
    try:
        yield
    except AttnvizError as error:
        if any(len(str(value)) > LONGEST_QUOTED for value in typed):
            error.message = shortened(error.message, typed)
            error.args = (error.message,)
        raise


def _strict(declaration: Any) -> Any:
    """An option of whole numbers (``Annotated[int | None, typer.Option(…)]``) parsed by
    whole_number; a path option (``Path`` or ``Path | None``) by its own parser or path_text,
    declared to Typer as text (``_PathText``) so that Typer does not make "" Path("."): the
    command refuses "" by the option's name; any other declaration as it is."""
    if typing.get_origin(declaration) is not Annotated:
        return declaration
    kind, *extras = typing.get_args(declaration)
    numeric = kind is int or set(typing.get_args(kind)) == {int, type(None)}
    path = kind is Path or set(typing.get_args(kind)) == {Path, type(None)}
    infos = [extra for extra in extras if isinstance(extra, typer.models.ParameterInfo)]
    if len(infos) != 1 or not (path or numeric and infos[0].parser is None):
        return declaration
    info = copy.copy(infos[0])
    if path:
        info.parser = info.parser or path_text
        return Annotated[_PathText if kind is Path else _PathText | None, info]
    info.parser = whole_number
    return Annotated[kind, info]


class _PathText(str):
    """What Typer is told a path option holds, so that it leaves the parser's value alone
    (for a ``Path`` it would call Path() on it); the command gets a Path, or "" to refuse."""


def _is_path_text(declaration: Any) -> bool:
    """Whether a declaration ``_strict`` made is a path option's."""
    if typing.get_origin(declaration) is Annotated:
        declaration = typing.get_args(declaration)[0]
    return declaration is _PathText or set(typing.get_args(declaration)) == {_PathText, type(None)}


def _group_of(annotation: Any) -> tuple[type | None, frozenset[str], dict[str, str]]:
    """The options group an annotation names, the options it leaves out, and the help of
    those it rewords."""
    left_out: frozenset[str] = frozenset()
    helps: dict[str, str] = {}
    if typing.get_origin(annotation) is Annotated:
        annotation, *extras = typing.get_args(annotation)
        for extra in extras:
            if isinstance(extra, Leave):
                left_out = extra.names
            elif isinstance(extra, Reword):
                helps = extra.helps
    return (annotation if annotation in GROUPS else None), left_out, helps


def _options_of(group: type) -> list[tuple[str, Any]]:
    """A group's options and their defaults: a frozen dataclass's fields, a NamedTuple's; those
    declared as options (TraceOptions.export_layer is set by --layer, through the view)."""
    if dataclasses.is_dataclass(group):
        fields = [(field.name, field.default) for field in dataclasses.fields(group)]
    else:
        defaults: dict[str, Any] = group._field_defaults  # type: ignore[attr-defined]
        fields = [(name, defaults[name]) for name in group._fields]  # type: ignore[attr-defined]
    return [(name, default) for name, default in fields if name in DECLARATIONS]
