"""``attnviz explain``: every step of multi-head self-attention on one sentence.

    >>> import attnviz
    >>> shown = attnviz.explain("The animal didn't cross the street because it was too tired")
    >>> shown.trace.weights.shape                # [heads, query words, key words]
    (2, 11, 11)
    >>> text = attnviz.lesson(shown)             # the step-by-step lesson, as the terminal shows it
    >>> figure = attnviz.heatmap(shown)          # a matplotlib Figure

``explain`` and ``cross`` take the command line's options as keyword arguments (``model="minilm"``,
``layer=6``, ``head=12``, ``focus="it"``, ``causal=True``, ``pad_to=16``, ``positions=
"sinusoidal"``, …), refuse what it refuses with the same sentence in the API's own words
(``head=3``, where the command line says ``--head 3``), and return an ``Explanation``: the trace
of the layer asked for, every layer of the run, what is shown of it and the notes. ``lesson``,
``heatmap``, ``page`` and ``heads`` take an Explanation (or a bare trace). The command line calls
``run``: the same path with its options types, the lesson printed and its files written.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path

from attnviz import arguments as check
from attnviz import limits
from attnviz.api.explanation import Explanation, told
from attnviz.api.surface import Progress, Surface
from attnviz.api.writing import Recordings, check_sizes
from attnviz.core import TracedLayers, trace_layers
from attnviz.lesson.options import LessonOptions
from attnviz.options import Options, TraceOptions, ViewOptions, options_from
from attnviz.selection import choose_layer, select
from attnviz.serial import one_at_a_time

# -- the path every command takes -------------------------------------------------------------


def explained(sentence: str, options: Options, *, progress: Progress | None = None) -> Explanation:
    """Trace ``sentence`` as ``options.trace`` say and choose what ``options.view`` shows: the
    command line's ``explain`` (and heatmap, page, heads), with its options record."""
    trace_options, routed = one_layer(options)
    traced = trace_layers(sentence, trace_options, progress=progress)
    return explanation_from(traced, options.view, routed)


def one_layer(options: Options) -> tuple[TraceOptions, ViewOptions]:
    """One --layer, one meaning each: with --model the model layer to show (the view's), else
    the layer to read from a model's export given as weights or embeddings (the traces')."""
    trace_options, view = options.trace, options.view
    if view.layer is None or trace_options.model is not None:
        return trace_options, view
    return replace(trace_options, export_layer=view.layer), view._replace(layer=None)


def explanation_from(traced: TracedLayers, asked: ViewOptions, view: ViewOptions) -> Explanation:
    """The layer ``view`` shows, and the one selection every view of this command starts from;
    the Explanation keeps the view as ``asked`` (its --layer, whichever meaning it took)."""
    trace = choose_layer(traced.layers, view.layer)
    selection = select(trace, view)
    notes = (*traced.notes, *selection.notes)
    return Explanation(trace, traced.layers, asked, selection, notes)


def explained_on(sentence: str, options: Options, surface: Surface) -> Explanation:
    """``explained``, with a progress bar while a word-vector file is read; the notes told."""
    with surface.reading(options.trace.embeddings) as progress:
        explanation = explained(sentence, options, progress=progress)
    surface.notes(explanation.notes)
    return explanation


def export_planned(export: Path | None, options: Options) -> AbstractContextManager[None]:
    """A model run's export, estimated before the run (attnviz.model_limits); random weights
    need no estimate, and explain's start-up does not import the model's limits."""
    if options.trace.model is None:
        return nullcontext()
    from attnviz.model_limits import Work, planned

    return planned(Work(export=export))


# -- the command ------------------------------------------------------------------------------


def run(
    sentence: str,
    options: Options,
    lesson: LessonOptions,
    to: Recordings,
    surface: Surface,
    *,
    step: bool = False,
) -> None:
    """``attnviz explain``: every file checked before the work, the lesson printed (paced with
    ``step``), then every file written."""
    to.check()
    with export_planned(to.export, options):
        explanation = explained_on(sentence, options, surface)
    check_sizes(explanation, export=to.export, lesson=lesson, slides=to.slides)
    tell(explanation, lesson, to, surface, step=step)


def tell(
    explanation: Explanation,
    lesson: LessonOptions,
    to: Recordings,
    surface: Surface,
    *,
    step: bool = False,
) -> None:
    """The lesson printed (paced with --step), then every file asked for, all or none; the
    lesson is written once, whatever it is drawn on."""
    from attnviz.lesson.build import lesson as written_lesson
    from attnviz.render.terminal.lesson import render_explain, save_lesson

    trace, selection = explanation.trace, explanation.selection
    explanation.check_lesson(lesson)
    lesson = explanation.lesson_options(lesson)
    blocks = written_lesson(
        trace,
        selection,
        lesson,
        layers=explanation.layers,
        analyses=explanation.lesson_analyses(),
    )
    if to.slides is not None:  # every slide counted, before the lesson is printed
        from attnviz.render.slides.plan import plan_slides

        limits.check_slide_count(len(plan_slides(trace, selection, lesson, blocks=blocks)))
    console = surface.console()
    pause = surface.pacer(console) if step else None
    render_explain(trace, selection, console, lesson, pause=pause, blocks=blocks)
    if to == Recordings():
        return  # nothing to write: the file writers are not even imported
    from attnviz.files import staged_writes
    from attnviz.outputs import write_export

    with staged_writes():  # every file, or none
        written = save_lesson(
            trace, selection, lesson, console.width, svg=to.svg, html=to.html, blocks=blocks
        )
        if to.slides is not None:
            from attnviz.render.slides import save_slides

            slides, notes = save_slides(trace, selection, lesson, to.slides, blocks=blocks)
            surface.notes(notes)
            written += slides
        if to.heatmap is not None:
            from attnviz.render.figures.heatmap import save_heatmap

            save_heatmap(trace, selection, to.heatmap)
            written.append(to.heatmap)
        if to.export is not None:
            write_export(explanation.layers, to.export)
            written.append(to.export)
    surface.wrote_all(written)


# -- the Python API ---------------------------------------------------------------------------


@one_at_a_time
def explain(
    sentence: str,
    *,
    model: str | None = None,
    layer: int | None = None,
    head: int | str | None = None,
    focus: str | None = None,
    words: bool = False,
    hide_special: bool = False,
    heads: int | None = None,
    d_model: int | None = None,
    seed: int = 0,
    preset: str | None = None,
    embeddings: str | Path | None = None,
    oov: str = "error",
    weights: str | Path | None = None,
    dtype: str = "float32",
    causal: bool = False,
    positions: str = "none",
    pad_to: int | None = None,
    kv_heads: int | None = None,
    latent: int | None = None,
    window: int | None = None,
) -> Explanation:
    """Every step of multi-head self-attention on ``sentence``, as ``attnviz explain`` computes
    it; the options are its options (``pad_to=16`` for ``--pad-to 16``).

    Random weights by default (``seed``, ``heads``, ``d_model``, ``preset="paper"``); word
    vectors from ``embeddings`` (GloVe text, .npy, .npz, .json); matrices from ``weights``; or a
    trained model, ``model="coref"`` or ``"coref-word"`` (attnviz's toy models, shipped),
    ``"minilm"`` or ``"gpt2"`` or a model folder, whose ``layer``
    (from 1, the last by default) is shown. ``head``, ``focus``, ``words`` and ``hide_special``
    say what the lesson, the heatmap and a notebook show. ``positions="rope"`` rotates q and k;
    ``kv_heads=G`` shares each key/value head among h/G query heads; ``latent=D_C`` makes
    keys and values from one latent of width D_C per token (DeepSeek-V2's); ``window=W`` (with
    ``causal=True``, or a decoder model) lets each token read only itself and the W − 1 before
    it. Returns an Explanation:
    ``.trace`` is the layer's AttentionTrace; in a notebook it shows its lesson.

    >>> import attnviz
    >>> shown = attnviz.explain("I am good", head=1, focus="am")
    >>> shown.view.head, shown.trace.tokens
    (1, ('I', 'am', 'good'))
    >>> attnviz.explain("I am good", head=3)
    Traceback (most recent call last):
    attnviz.errors.AttnvizError: head=3 does not exist; heads are numbered 1 to 2.
    """
    check.sentences(sentence=sentence, model=model)
    options = options_from(
        model=model,
        layer=layer,
        head=head,
        focus=focus,
        words=words,
        hide_special=hide_special,
        heads=heads,
        d_model=d_model,
        seed=seed,
        preset=preset,
        embeddings=embeddings,
        oov=oov,
        weights=weights,
        dtype=dtype,
        causal=causal,
        positions=positions,
        pad_to=pad_to,
        kv_heads=kv_heads,
        latent=latent,
        window=window,
    )
    return told(explained(sentence, options))
