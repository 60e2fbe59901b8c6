"""The commands. Each parses its options, makes one call to the library's command
(attnviz.api.<command>.run, the path the Python API takes too) and leaves the exit code to
groups.command: an error becomes one line on stderr. Heavy modules (matplotlib, the model's
safetensors and tokenizers) are imported by the api, inside the commands that need them."""

# No `from __future__ import annotations`: Typer reads every command's annotations on each
# run, and string annotations would be compiled and evaluated anew each time (several ms).
from typing import Annotated

import typer

from attnviz.api.writing import Recordings
from attnviz.cli.console import surface
from attnviz.cli.groups import Leave, Reword
from attnviz.cli.options import (
    PAGE_STEPS_HELP,
    AllLayers,
    Colormap,
    CompareWith,
    Export,
    Html,
    ImageMeasure,
    ImageScale,
    ImageStyle,
    OpenHead,
    PageOutput,
    PerHead,
    Sentence,
    Slides,
    Step,
    Svg,
    image_option,
    typed_text,
)
from attnviz.lesson.options import LessonOptions
from attnviz.options import Options, TraceOptions, ViewOptions
from attnviz.render.options import ImageOptions, Measure, Style


def explain(
    sentence: Sentence,
    trace_options: TraceOptions,
    view: ViewOptions,
    lesson: LessonOptions,
    step: Step = False,
    svg: Svg = None,
    html: Html = None,
    slides: Slides = None,
    export: Export = None,
) -> None:
    """Print every step of multi-head self-attention for SENTENCE.

    Tokens and X; per head Q, K, V, Q·Kᵀ, ÷ √d_k, softmax and Z = weights·V; then Concat·W_O.

    Example: attnviz explain "The animal didn't cross the street because it was too tired" -f it
    """
    from attnviz.api import explain as command

    to = Recordings(svg, html, slides, export)
    options = Options(trace_options, view)
    command.run(sentence, options, lesson, to, surface(), step=step)


def heatmap(
    sentence: Sentence,
    output: image_option("Image to write: .png, .svg or .pdf.", required=True),  # type: ignore[valid-type]
    trace_options: TraceOptions,
    view: ViewOptions,
    per_head: PerHead = None,
    cmap: Colormap = "viridis",
    export: Export = None,
    all_layers: AllLayers = False,
    style: ImageStyle = Style.grid,
    scale: ImageScale = None,
    measure: ImageMeasure = Measure.weights,
) -> None:
    """Save the attention weights of SENTENCE as a heatmap image, one panel per head.

    Query words are rows, key words columns; a last panel shows where the focus word looks.

    Example: attnviz heatmap --model coref "The animal didn't cross the street because it was
    too tired" -o it.png
    """
    from attnviz.api import heatmap as command

    options = ImageOptions(style, cmap, all_layers, per_head, scale, measure)
    record = Options(trace_options, view)
    command.run(sentence, record, options, (output, export), surface())


def page(
    sentence: Sentence,
    output: PageOutput,
    trace_options: TraceOptions,
    view: ViewOptions,
    lesson: Annotated[
        LessonOptions,
        Leave("show_weights"),
        Reword(steps=PAGE_STEPS_HELP),
    ],
    open_head: OpenHead = None,
    compare: CompareWith = None,
) -> None:
    """Save an interactive lesson page for SENTENCE: one HTML file, offline.

    Click a word: lines to every word, each step's numbers worked out for it, and beside its
    row what each word adds, ‖w_ij·f_h(x_j)‖ with f_h(x_j) = v_j·W_O^h, and its share of the
    row's total; with --model, rollout through the layers below, and for a trained model a
    caution on reading weights as explanations. The head menu names each head's type, scored
    from its whole matrix A: the mean weight on the previous word, the next, itself, the first
    ([CLS]) or the last ([SEP]) (a type at 0.5 or more), else broad when the rows' entropy is
    at least 0.9 of a uniform row's, else mixed. A step-by-step mode for a projector. With
    --model, every layer; --layer picks the first shown.

    Example: attnviz page "The animal didn't cross the street because it was too tired" -o it.html

    Two sentences: attnviz page "The cat sat because it was tired" --compare "The cat sat
    because it was wide" -o pair.html
    """
    from attnviz.api import page as command

    sentences = (sentence, compare)
    options = Options(trace_options, view)
    command.run(sentences, options, lesson, output, surface(), open_head=open_head)


def cross(
    source: Annotated[
        str,
        typer.Argument(
            help="The source sentence (keys and values).", metavar="SOURCE", callback=typed_text
        ),
    ],
    target: Annotated[
        str,
        typer.Argument(
            help="The target sentence (queries).", metavar="TARGET", callback=typed_text
        ),
    ],
    trace_options: Annotated[
        TraceOptions, Leave("model", "dtype", "pad_to", "causal", "latent", "window")
    ],
    view: Annotated[
        ViewOptions,
        Leave("hide_special", "words"),
        Reword(
            layer="With a model's export as --weights/--embeddings: the layer to read from it, "
            "from 1 (cross runs no model itself: it takes no --model)."
        ),
    ],
    lesson: LessonOptions,
    export: Export = None,
    output: image_option("Also save the heatmap: .png, .svg or .pdf.") = None,  # type: ignore[valid-type]
    causal: Annotated[
        bool, typer.Option("--causal", help="Refused: a causal mask is for self-attention.")
    ] = False,
    step: Step = False,
    svg: Svg = None,
    html: Html = None,
    slides: Slides = None,
) -> None:
    """Encoder–decoder (cross) attention: queries from TARGET, keys and values from SOURCE.

    The same steps as explain, with a rectangular attention matrix: target rows, source columns.

    Example: attnviz cross "I am good" "Je vais bien" --focus vais
    """
    from attnviz.api import cross as command

    to = Recordings(svg, html, slides, export, heatmap=output)
    options = Options(trace_options, view)
    command.run((source, target), options, lesson, to, surface(), step=step, causal=causal)


def scaling(
    dk: Annotated[
        str, typer.Option("--dk", help="The d_k sizes to try, comma-separated (up to 4096).")
    ] = "4,16,64,256,1024",
    keys: Annotated[int, typer.Option("--keys", help="Keys each query is scored against.")] = 16,
    queries: Annotated[int, typer.Option("--queries", help="Random queries per d_k.")] = 400,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the random q and k (standard normal components).")
    ] = 0,
    output: image_option("Also save a plot: .png, .svg or .pdf.") = None,  # type: ignore[valid-type]
) -> None:
    """The experiment behind ÷√d_k: softmax of q·k with and without the scaling.

    Variance of q·k, largest weight, entropy and gradient size for each d_k; then why the
    divisor is √d_k and not the square root of the number of words: what ÷√n would do to the
    same query and keys as words are added.

    Example: attnviz scaling --dk 4,16,64,256,1024 -o scaling.png
    """
    from attnviz.api import scaling as command

    command.run(dk, surface(), keys=keys, queries=queries, seed=seed, output=output)


def demo(
    step: Annotated[
        bool, typer.Option("--step", help="Pause between steps and examples until a key (q quits).")
    ] = False,
    use_model: Annotated[
        bool,
        typer.Option(
            "--model/--no-model",
            help="End with all-MiniLM-L6-v2, a real pretrained model, when it is installed.",
        ),
    ] = True,
) -> None:
    """A ten-minute class on attention, screen by screen, each with a sentence of context.

    "I am good" step by step; "The animal didn't cross the street because it was too tired" with
    random weights; coref, trained to point, on it and on "…too wide"; coref-word, the right
    answer with attention elsewhere; coref trained live; all-MiniLM-L6-v2 when installed.

    Example: attnviz demo --step
    """
    from attnviz.api import demo as command

    command.run(surface(), step=step, use_model=use_model)
