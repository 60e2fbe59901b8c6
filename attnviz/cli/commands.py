"""The commands. Each parses its options, hands the work to attnviz.api (the one path the
library takes too), has its renderer draw the result and picks the exit code; errors become one
line on stderr (see options.command). Heavy modules (matplotlib, the model's safetensors and
tokenizers) are imported inside the commands that need them."""

# No `from __future__ import annotations`: Typer reads every command's annotations on each
# run, and string annotations would be compiled and evaluated anew each time (several ms).
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, NamedTuple

import typer

from attnviz import api, layer_limits, limits
from attnviz.cli.console import new_console, note, pacer, reading_progress, wrote
from attnviz.cli.options import (
    AllLayers,
    Export,
    Html,
    ImageMeasure,
    ImageScale,
    ImageStyle,
    Leave,
    PerHead,
    Reword,
    Sentence,
    Slides,
    Step,
    Svg,
    file_path,
    image_option,
    typed_text,
)
from attnviz.explanation import Explanation
from attnviz.layer_limits import page_counted
from attnviz.lesson.blocks import Block
from attnviz.lesson.options import LessonOptions
from attnviz.render.options import ImageOptions, Measure, Style
from attnviz.selection import Selection, ViewOptions
from attnviz.trace import AttentionTrace
from attnviz.trace_options import TraceOptions

#: d_k of the divisor experiment that attnviz scaling runs after its table.
DIVISOR_D_K = 64

#: --steps on the page: the lesson's steps but the focus view, which is the page's picture.
PAGE_STEPS_HELP = (
    "Only these steps on the page, e.g. 4-6 or 1,3-5 (default: every step): 1 tokens and X; "
    "2–6 each head's Q K V, Q·Kᵀ, ÷√d_k, softmax and Z; 7 Concat and W_O (the focus view is the "
    "page's picture). Shown only when named: blockwise (6b), the softmax and Z a block of keys "
    "at a time, as FlashAttention computes them, in each head."
)


def explained(sentence: str, options: TraceOptions, view: ViewOptions) -> Explanation:
    """``sentence`` traced and shown as the options say (attnviz.api.explained), with a
    progress bar while a word-vector file is read; the notes go to stderr."""
    with reading_progress(options.embeddings) as progress:
        explanation = api.explained(sentence, options, view, progress=progress)
    for message in explanation.notes:
        note(message)
    return explanation


def check_outputs(export: Path | None, *images: tuple[Path | None, str]) -> None:
    """Refuse unwritable outputs before any work is done."""
    if export is None and all(path is None for path, _ in images):
        return  # nothing to write: the file checks are not even imported
    from attnviz.outputs import check_export, check_image

    if export is not None:
        check_export(export)
    for path, what in images:
        if path is not None:
            check_image(path, what)


def check_recordings(svg: Path | None, html: Path | None) -> None:
    """Refuse --svg and --html paths that cannot be written, before any work is done."""
    if svg is None and html is None:
        return
    from attnviz.files import check_output_path

    for path, extensions, what in ((svg, (".svg",), "--svg"), (html, (".html", ".htm"), "--html")):
        if path is not None:
            check_output_path(path, extensions, what)


def check_slides(slides: Path | None, *files: tuple[Path | None, str]) -> None:
    """Refuse a --slides folder that cannot be written, and two outputs that are one file."""
    if slides is None and all(path is None for path, _ in files):
        return  # nothing to write: the file checks are not even imported
    from attnviz.outputs import FolderOutput, check_apart, check_folder

    folder = None
    if slides is not None:
        from attnviz.render.slides.layout import SLIDE_FILE  # 01-title.svg, 02-tokens.png, …

        folder = FolderOutput(slides, "--slides", SLIDE_FILE)
        check_folder(*folder)
    check_apart(files, [folder])


def check_per_head(per_head: Path | None, output: Path, export: Path | None) -> None:
    """Refuse a --per-head folder that cannot be written, and -o or --export naming a file in
    it by a per-head name (head_1.png with -o *.png)."""
    from attnviz.outputs import check_apart, check_folder, per_head_folder

    folder = None
    if per_head is not None:
        folder = per_head_folder(per_head, output.suffix.lower())
        check_folder(*folder)
    check_apart([(output, "--output"), (export, "--export")], [folder])


def write_slides(
    trace: AttentionTrace,
    selection: Selection,
    lesson: LessonOptions,
    folder: Path | None,
    blocks: Sequence[Block],
) -> list[Path]:
    """--slides: the lesson's ``blocks`` as slides into ``folder`` (checked before the work
    began); the paths written."""
    if folder is None:
        return []
    from attnviz.render.slides import save_slides

    written, notes = save_slides(trace, selection, lesson, folder, blocks=blocks)
    for message in notes:
        note(message)
    return written


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
    check_outputs(export)
    check_recordings(svg, html)
    check_slides(slides, (svg, "--svg"), (html, "--html"), (export, "--export"))
    with api.export_planned(export, trace_options):
        explanation = explained(sentence, trace_options, view)
    check_sizes(explanation, export=export, lesson=lesson, slides=slides)
    tell(explanation, lesson, step, Recordings(svg, html, slides, export))


def check_sizes(
    explanation: Explanation,
    *,
    export: Path | None,
    lesson: LessonOptions | None = None,
    slides: Path | None = None,
    per_head: bool | None = None,
) -> None:
    """Refuse exports, slides and heatmaps (``per_head``: each head drawn again, None: none)
    too large to write (attnviz.limits), before the lesson is printed or anything drawn."""
    shown, layers = explanation.selection, explanation.layers
    if export is not None:  # a model's every layer, else the one (outputs.write_export)
        pretrained = layers[0].provenance.weights.is_pretrained
        limits.check_export_size(layers if pretrained else layers[:1], export)
    if slides is not None and lesson is not None:
        lesson = explanation.lesson_options(lesson)
        n_heads = explanation.trace.n_heads
        in_full = len(shown.heads) if lesson.full or lesson.every_head else 1
        by_rows = 0 if lesson.full else n_heads - in_full
        fewest = limits.fewest_slides(in_full, lesson.step_numbers, by_rows)
        limits.check_slide_count(fewest, at_least=True)
    if per_head is not None:
        limits.check_pictures(len(shown.heads), shown.n_rows, shown.n_columns, per_head=per_head)


class Recordings(NamedTuple):
    """What explain and cross write besides the lesson they print (checked before the work)."""

    svg: Path | None
    html: Path | None
    slides: Path | None
    export: Path | None
    heatmap: Path | None = None


def tell(explanation: Explanation, lesson: LessonOptions, step: bool, to: Recordings) -> None:
    """The lesson printed (paced with --step), then every file asked for, all or none; the
    lesson is written once, whatever it is drawn on."""
    from attnviz.lesson.build import lesson as written_lesson
    from attnviz.render.terminal.lesson import render_explain, save_lesson

    trace, selection = explanation.trace, explanation.selection
    explanation.check_lesson(lesson)
    lesson = explanation.lesson_options(lesson)
    blocks = written_lesson(trace, selection, lesson, layers=explanation.layers)
    if to.slides is not None:  # every slide counted, before the lesson is printed
        from attnviz.render.slides.plan import plan_slides

        limits.check_slide_count(len(plan_slides(trace, selection, lesson, blocks=blocks)))
    console = new_console()
    pause = pacer(console) if step else None
    render_explain(trace, selection, console, lesson, pause=pause, blocks=blocks)
    if to == Recordings(None, None, None, None):
        return  # nothing to write: the file writers are not even imported
    from attnviz.files import staged_writes
    from attnviz.outputs import write_export

    with staged_writes():  # every file, or none
        written = save_lesson(
            trace, selection, lesson, console.width, svg=to.svg, html=to.html, blocks=blocks
        )
        written += write_slides(trace, selection, lesson, to.slides, blocks)
        if to.heatmap is not None:
            from attnviz.render.figures.heatmap import save_heatmap

            save_heatmap(trace, selection, to.heatmap)
            written.append(to.heatmap)
        if to.export is not None:
            write_export(explanation.layers, to.export)
            written.append(to.export)
    for path in written:
        wrote(path)


def heatmap(
    sentence: Sentence,
    output: image_option("Image to write: .png, .svg or .pdf.", required=True),  # type: ignore[valid-type]
    trace_options: TraceOptions,
    view: ViewOptions,
    per_head: PerHead = None,
    cmap: Annotated[str, typer.Option("--cmap", help="A matplotlib colormap name.")] = "viridis",
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
    from attnviz.files import staged_writes
    from attnviz.outputs import write_export
    from attnviz.render.figures.images import all_layers_refused, pictures_refused

    options = ImageOptions(style, cmap, all_layers, per_head, scale, measure)
    given = {"layer": view.layer, "head": view.head, "per_head": per_head}
    pictures_refused(
        options, drawing_one=[name for name, value in given.items() if value is not None]
    )
    all_layers_refused(options, model_run=trace_options.model is not None)
    check_outputs(export, (output, "--output"))
    check_per_head(per_head, output, export)
    every_token = not (view.words or view.hide_special)  # else fewer rows: counted after the run
    with (
        api.export_planned(export, trace_options),
        layer_limits.counted_before_run(
            layer_limits.check_layer_pictures if all_layers else None, every_token
        ),
    ):
        explanation = explained(sentence, trace_options, view)
    check_sizes(explanation, export=export, per_head=None if all_layers else bool(per_head))
    if all_layers:
        shown = explanation.selection
        n_layers, n_heads = len(explanation.layers), explanation.trace.n_heads
        layer_limits.check_layer_pictures(n_layers, n_heads, shown.n_rows, shown.n_columns)
    with staged_writes():  # every file, or none
        written, notes = api.save_pictures(explanation, output, options)
        if export is not None:
            write_export(explanation.layers, export)
            written.append(export)
    for message in notes:
        note(message)
    for path in written:
        wrote(path)


def page(
    sentence: Sentence,
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="The page to write: .html (one file; opens offline).",
            show_default=False,
            parser=file_path,
        ),
    ],
    trace_options: TraceOptions,
    view: ViewOptions,
    lesson: Annotated[
        LessonOptions,
        Leave("show_weights"),
        Reword(steps=PAGE_STEPS_HELP),
    ],
    open_head: Annotated[
        int | None,
        typer.Option(
            "--open-head",
            help="Open the page on head N (from 1), every head kept in its menu (--head N "
            "keeps head N alone).",
            show_default=False,
        ),
    ] = None,
    compare: Annotated[
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
    ] = None,
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
    from attnviz import paging
    from attnviz.comparing import compared, notes
    from attnviz.explanation import Page
    from attnviz.files import check_output_path

    check_output_path(output, (".html", ".htm"), "--output")
    fewer_rows, one_head = view.words or view.hide_special, view.head is not None
    counted = page_counted(fewer_rows, one_head, two_sentences=compare is not None)
    if compare is None:
        with counted:
            explanation = explained(sentence, trace_options, view)
        html = paging.page_html(explanation, lesson, open_head=open_head)
    else:
        with reading_progress(trace_options.embeddings) as progress, counted:
            pair = compared(
                sentence, compare, trace_options, view._replace(layer=None), progress=progress
            )
        for message in notes(pair):
            note(message)
        html = paging.compared_page_html(pair, view.layer, lesson, open_head=open_head)
    Page(html).save(output)
    wrote(output)


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
    trace_options: Annotated[TraceOptions, Leave("model", "dtype", "pad_to", "causal")],
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
    check_outputs(export, (output, "--output"))
    check_recordings(svg, html)
    outputs = (output, "--output"), (svg, "--svg"), (html, "--html"), (export, "--export")
    check_slides(slides, *outputs)
    trace_options = replace(trace_options, causal=causal)  # refused by cross_layers, with why
    with reading_progress(trace_options.embeddings) as progress:
        explanation = api.crossed(source, target, trace_options, view, progress=progress)
    for message in explanation.notes:
        note(message)
    check_sizes(explanation, export=export, lesson=lesson, slides=slides)
    tell(explanation, lesson, step, Recordings(svg, html, slides, export, heatmap=output))


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
    from attnviz.render.terminal.reports import render_scaling

    d_ks, notes = api.scaling_sizes(dk)
    check_outputs(None, (output, "--output"))
    from attnviz.analysis.scaling import LENGTHS

    drawn_by_divisor = limits.divisor_numbers(LENGTHS, DIVISOR_D_K, queries)
    limits.check_scaling(d_ks, n_keys=keys, n_queries=queries, divisor=drawn_by_divisor)
    for message in notes:
        note(message)
    rows = api.scaling_rows(d_ks, keys=keys, queries=queries, seed=seed)
    from attnviz.divisors import divisor_rows

    divisor = divisor_rows(d_k=DIVISOR_D_K, queries=queries, seed=seed)
    render_scaling(rows, new_console(), n_keys=keys, divisor=divisor)
    if output is not None:
        from attnviz.render.figures.plots import save_scaling_plot

        save_scaling_plot(rows, output, n_keys=keys)
        wrote(output)


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
    from attnviz.render.live.demo import run_demo

    console = new_console()
    from attnviz.demoing import demo_examples

    examples = demo_examples(use_model=use_model)
    run_demo(console, examples, pause=pacer(console) if step else None)
