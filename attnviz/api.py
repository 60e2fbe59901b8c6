"""The Python API, and the one path every command of the command line takes.

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
``explained`` and ``crossed``, the same path with its options types, then the functions below.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from attnviz import arguments as check
from attnviz.core import TracedLayers, cross_layers, trace_layers
from attnviz.errors import AttnvizError, option
from attnviz.explanation import Explanation
from attnviz.lesson.options import LessonOptions
from attnviz.limits import check_pictures
from attnviz.render.options import MAX_WIDTH, ImageOptions, Measure, Scale, Style
from attnviz.selection import ViewOptions, choose_layer, select
from attnviz.serial import one_at_a_time
from attnviz.trace import AttentionTrace
from attnviz.trace_options import Dtype, TraceOptions, trace_options_from

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from attnviz.analysis.heads import HeadRanking, RankBy
    from attnviz.analysis.scaling import ScalingRow

Progress = Callable[[int, int], None]

#: What lesson(), heatmap(), page() and heads() take: what explain() or cross() return, or a
#: bare trace (shown whole: every head, the default focus word).
Shown = Explanation | AttentionTrace


# -- the path every command takes -------------------------------------------------------------


def explained(
    sentence: str,
    trace_options: TraceOptions,
    view: ViewOptions,
    *,
    progress: Progress | None = None,
) -> Explanation:
    """Trace ``sentence`` as ``trace_options`` say and choose what ``view`` shows: the command
    line's ``explain`` (and heatmap, page, heads), with its options types."""
    trace_options, routed = _one_layer(trace_options, view)
    return _explanation(trace_layers(sentence, trace_options, progress=progress), view, routed)


def crossed(
    source: str,
    target: str,
    trace_options: TraceOptions,
    view: ViewOptions,
    *,
    progress: Progress | None = None,
) -> Explanation:
    """Cross-attention as the command line's ``cross`` makes it: queries from ``target``, keys
    and values from ``source``."""
    trace_options, routed = _one_layer(trace_options, view)
    traced = cross_layers(source, target, trace_options, progress=progress)
    return _explanation(traced, view, routed)


def _one_layer(trace_options: TraceOptions, view: ViewOptions) -> tuple[TraceOptions, ViewOptions]:
    """One --layer, one meaning each: with --model the model layer to show (the view's), else
    the layer to read from a model's export given as weights or embeddings (the traces')."""
    if view.layer is None or trace_options.model is not None:
        return trace_options, view
    return replace(trace_options, export_layer=view.layer), view._replace(layer=None)


def _explanation(traced: TracedLayers, asked: ViewOptions, view: ViewOptions) -> Explanation:
    """The layer ``view`` shows, and the one selection every view of this command starts from;
    the Explanation keeps the view as ``asked`` (its --layer, whichever meaning it took)."""
    trace = choose_layer(traced.layers, view.layer)
    selection = select(trace, view)
    notes = (*traced.notes, *selection.notes)
    return Explanation(trace, traced.layers, asked, selection, notes)


def save_pictures(
    explanation: Explanation, output: Path, options: ImageOptions
) -> tuple[list[Path], tuple[str, ...]]:
    """``attnviz heatmap``'s files: what ``options`` ask, as the explanation shows it; the paths
    written and a note for words the pictures' font draws as boxes."""
    from attnviz.analysis.analyses import for_pictures
    from attnviz.render.figures.images import save_images

    trace, measure = explanation.trace, options.measure.value
    run = for_pictures(explanation.layers, trace, measure, grid=options.all_layers)
    return save_images(run, trace, explanation.selection, output, options)


def ranked_heads(explanation: Explanation, rank_by: RankBy) -> HeadRanking:
    """Every (layer, head) ranked by where the focus word looks (``attnviz heads``)."""
    if explanation.selection.focus is None:
        raise AttnvizError(
            f"heads follows one word: name it with {option('focus', metavar='WORD')} (the "
            "default, 'it', is not in the sentence)."
        )
    if explanation.trace.is_cross:
        raise AttnvizError(
            "heads ranks self-attention heads, as explain() returns them: in cross-attention "
            "the keys are another sentence's words, so no offset or head type applies."
        )
    from attnviz.analysis.heads import rank_heads  # not on explain's path: its start-up

    return rank_heads(explanation.layers, explanation.selection, rank_by=rank_by)


def scaling_sizes(d_ks: str) -> tuple[list[int], tuple[str, ...]]:
    """The d_k sizes of ``attnviz scaling``, "4,16,64" -> [4, 16, 64], and a note for each
    capped."""
    from attnviz.analysis.scaling import parse_d_ks

    sizes, notes = parse_d_ks(d_ks)
    return sizes, tuple(notes)


def scaling_rows(sizes: Sequence[int], *, keys: int, queries: int, seed: int) -> list[ScalingRow]:
    """The √d_k experiment (``attnviz scaling``): a row per d_k."""
    from attnviz.analysis.scaling import scaling_experiment

    return scaling_experiment(sizes, n_keys=keys, n_queries=queries, seed=seed)


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
) -> Explanation:
    """Every step of multi-head self-attention on ``sentence``, as ``attnviz explain`` computes
    it; the options are its options (``pad_to=16`` for ``--pad-to 16``).

    Random weights by default (``seed``, ``heads``, ``d_model``, ``preset="paper"``); word
    vectors from ``embeddings`` (GloVe text, .npy, .npz, .json); matrices from ``weights``; or a
    trained model, ``model="coref"`` or ``"coref-word"`` (attnviz's toy models, shipped),
    ``"minilm"`` or ``"gpt2"`` or a model folder, whose ``layer``
    (from 1, the last by default) is shown. ``head``, ``focus``, ``words`` and ``hide_special``
    say what the lesson, the heatmap and a notebook show. ``positions="rope"`` rotates q and k;
    ``kv_heads=G`` shares each key/value head among h/G query heads. Returns an Explanation:
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
    check.head(head)
    check.whole(layer=layer, pad_to=pad_to, seed=seed, kv_heads=kv_heads)
    check.whole(heads=heads, d_model=d_model)
    check.flags(words=words, hide_special=hide_special, causal=causal)
    check.text(focus=focus, model=model)
    check.paths(embeddings=embeddings, weights=weights)
    trace_options = trace_options_from(
        heads=heads,
        d_model=d_model,
        seed=seed,
        preset=preset,
        embeddings=embeddings,
        oov=oov,
        weights=weights,
        positions=positions,
        kv_heads=kv_heads,
        model=model,
        dtype=check.choice(Dtype, dtype, "dtype"),
        causal=causal,
        pad_to=pad_to,
    )
    view = ViewOptions(layer=layer, head=head, focus=focus, hide_special=hide_special, words=words)
    return _told(explained(sentence, trace_options, view))


@one_at_a_time
def cross(
    source: str,
    target: str,
    *,
    layer: int | None = None,
    head: int | str | None = None,
    focus: str | None = None,
    heads: int | None = None,
    d_model: int | None = None,
    seed: int = 0,
    preset: str | None = None,
    embeddings: str | Path | None = None,
    oov: str = "error",
    weights: str | Path | None = None,
    positions: str = "none",
) -> Explanation:
    """Encoder–decoder (cross) attention, as ``attnviz cross`` computes it: the queries come
    from ``target``, the keys and values from ``source``. ``layer`` picks a layer of a model's
    export given as ``weights``.

    >>> import attnviz
    >>> pair = attnviz.cross("I am very good", "Je vais bien", focus="vais")
    >>> pair.trace.weights.shape                 # [heads, target words, source words]
    (2, 3, 4)
    """
    check.sentences(source=source, target=target)
    check.head(head)
    check.whole(layer=layer, seed=seed, heads=heads, d_model=d_model)
    check.text(focus=focus)
    check.paths(embeddings=embeddings, weights=weights)
    trace_options = trace_options_from(
        heads=heads,
        d_model=d_model,
        seed=seed,
        preset=preset,
        embeddings=embeddings,
        oov=oov,
        weights=weights,
        positions=positions,
    )
    view = ViewOptions(layer=layer, head=head, focus=focus)
    return _told(crossed(source, target, trace_options, view))


@one_at_a_time
def lesson(
    shown: Shown,
    *,
    decimals: int = 2,
    show_weights: bool = False,
    steps: str | int | Iterable[int] | None = None,
    width: int = 100,
    color: bool = False,
    show: bool = False,
    block: int | None = None,
    full: bool = False,
) -> str:
    """The step-by-step lesson as ``attnviz explain`` prints it, as text (with ANSI colours
    when ``color``); ``show=True`` also prints it. ``steps`` ("4-6", "1,3-5", 4 or [4, 5, 6])
    keeps only those steps, as --steps does; "5,6,blockwise" adds the softmax a ``block`` of
    keys at a time (FlashAttention's), shown only when named. By default one head is shown in
    full (the first, or the one ``explain``'s ``head`` names; ``head="all"``: every head) and
    every other head gives the focus word's rows; ``full=True`` gives all of the text, every
    explanation with every head shown.

    >>> import attnviz
    >>> text = attnviz.lesson(attnviz.explain("I am good"), width=80)
    >>> text.splitlines()[0]
    'attnviz · multi-head self-attention, step by step'
    >>> scaled = attnviz.lesson(attnviz.explain("I am good"), steps="4")
    >>> "Step 4 ·" in scaled, "Step 3 ·" in scaled
    (True, False)
    """
    import io

    from rich.console import Console

    from attnviz.render.terminal.lesson import render_explain

    explanation = _explanation_of(shown, "lesson")
    check.given(decimals=decimals, width=width)
    check.flags(show_weights=show_weights, color=color, show=show, full=full)
    steps = check.steps_text(steps)
    options = explanation.lesson_options(
        LessonOptions(
            decimals=decimals, show_weights=show_weights, steps=steps, block=block, full=full
        )
    )
    explanation.check_lesson(options)
    if width < 40:
        raise AttnvizError(f"width={width} is too narrow for the tables; give 40 or more.")
    if width > MAX_WIDTH:
        raise AttnvizError(
            f"width={width} is wider than the lesson is laid out for; give at most {MAX_WIDTH}."
        )
    console = Console(
        file=io.StringIO(),
        width=width,
        force_terminal=color,
        color_system="truecolor" if color else None,
        no_color=not color,
        highlight=False,
        force_jupyter=False,  # text, also in a notebook, where Rich would display HTML instead
    )
    render_explain(
        explanation.trace, explanation.selection, console, options, layers=explanation.layers
    )
    printed: str = console.file.getvalue()  # type: ignore[attr-defined]
    if show:
        print(printed, end="")
    return printed


@one_at_a_time
def heatmap(
    shown: Shown,
    *,
    head: int | None = None,
    focus: str | None = None,
    all_layers: bool = False,
    style: str = "grid",
    cmap: str = "viridis",
    scale: str | None = None,
    measure: str = "weights",
) -> Figure:
    """The attention weights as a matplotlib Figure, as ``attnviz heatmap`` draws them: one
    panel per head (``head`` for one), the focus word's row outlined; ``style="lines"`` for
    lines from the focus word; ``all_layers=True`` for every layer and head of a model run;
    ``scale`` "fixed" (colours 0–1), "row" (each row to its largest) or "auto" (to the largest
    shown), by default fixed up to 16 words; ``measure`` "contribution" for each head's
    contribution shares, "rollout" for the rollout up to the layer shown. ``head`` and
    ``focus`` override what was asked of ``explain``.

    >>> import attnviz
    >>> figure = attnviz.heatmap(attnviz.explain("I am good"), head=2)
    >>> [axes.get_title() for axes in figure.axes][:1]
    ['Head 2']
    """
    from attnviz.render.figures import check_colormap
    from attnviz.render.figures.images import all_layers_refused, pictures_refused

    explanation = _explanation_of(shown, "heatmap")
    check.whole(head=head)
    check.text(focus=focus)
    check.text(cmap=cmap, required=True)
    check.flags(all_layers=all_layers)
    options = ImageOptions(
        style=check.choice(Style, style, "style"),
        cmap=cmap,
        all_layers=all_layers,
        scale=None if scale is None else check.choice(Scale, scale, "scale"),
        measure=check.choice(Measure, measure, "measure"),
    )
    pictures_refused(options, drawing_one=("head",) if head is not None else ())
    all_layers_refused(options, model_run=explanation.is_model_run)
    check_colormap(cmap)
    from attnviz.analysis.analyses import for_pictures

    view = explanation.view
    selection = explanation.selection
    wanted = view._replace(
        head=None if all_layers else head if head is not None else view.head,
        focus=focus if focus is not None else view.focus,
    )
    if wanted != view:  # the one selection of this call, as asked here
        selection = select(explanation.trace, wanted)
    if not all_layers:
        check_pictures(len(selection.heads), selection.n_rows, selection.n_columns, per_head=False)
    if all_layers:
        from attnviz.layer_limits import check_layer_pictures

        n_layers, n_heads = len(explanation.layers), explanation.trace.n_heads
        check_layer_pictures(n_layers, n_heads, selection.n_rows, selection.n_columns)
        from attnviz.render.figures.grid import build_layers_figure

        run = for_pictures(explanation.layers, explanation.trace, options.measure.value, grid=True)
        return build_layers_figure(
            run, selection, cmap=cmap, scale=options.scale, measure=options.measure
        )
    if options.style is Style.lines:
        from attnviz.render.figures.plots import build_lines_figure

        return build_lines_figure(explanation.trace, selection)
    from attnviz.render.figures.heatmap import build_figure

    measure = options.measure.value
    run = for_pictures(explanation.layers, explanation.trace, measure, grid=False)
    return build_figure(
        explanation.trace, selection, cmap=cmap, scale=options.scale,
        measure=options.measure, run=run,
    )  # fmt: skip


@one_at_a_time
def heads(shown: Shown, *, rank_by: str = "specificity") -> HeadRanking:
    """Every (layer, head) ranked as ``attnviz heads`` ranks them: ``per_word``, each word's
    top heads; ``per_head``, each head's top word; ``types``, each head's type. ``rank_by``:
    "specificity", w − max(key, offset) (``attnviz heads --help``), "selectivity" or "weight".

    >>> import attnviz
    >>> ranking = attnviz.heads(attnviz.explain("The cat sat because it was tired"))
    >>> best = ranking.per_head[0]               # the head most specific to 'it', and where
    >>> f"layer {best.layer}, head {best.head}: {ranking.words[best.target]!r}"
    "layer 1, head 2: 'was'"
    """
    from attnviz.analysis.heads import RankBy

    explanation = _explanation_of(shown, "heads")
    return ranked_heads(explanation, check.choice(RankBy, rank_by, "rank_by"))


@one_at_a_time
def scaling(
    d_ks: str | Sequence[int] = (4, 16, 64, 256, 1024),
    *,
    keys: int = 16,
    queries: int = 400,
    seed: int = 0,
) -> list[ScalingRow]:
    """The experiment behind ÷√d_k, as ``attnviz scaling`` runs it: for each d_k, ``queries``
    random queries scored against ``keys`` random keys, the softmax's statistics with and
    without the scaling. Sizes above 4096 are capped, with a warning.

    >>> import attnviz
    >>> rows = attnviz.scaling([4, 1024])
    >>> [row.d_k for row in rows], rows[1].unscaled.max_weight > rows[1].scaled.max_weight
    ([4, 1024], True)
    """
    check.given(keys=keys, queries=queries, seed=seed)
    sizes, notes = scaling_sizes(check.sizes_text(d_ks))
    _tell(notes)
    return scaling_rows(sizes, keys=keys, queries=queries, seed=seed)


# -- helpers ---------------------------------------------------------------------------------


def _explanation_of(shown: object, function: str) -> Explanation:
    """What explain() or cross() returned, or a bare trace shown whole."""
    if isinstance(shown, Explanation):
        return shown
    if isinstance(shown, AttentionTrace):
        view = ViewOptions()
        return Explanation(shown, (shown,), view, select(shown, view))
    raise AttnvizError(
        f"{function}() takes a trace, as attnviz.explain(sentence) returns it (or its .trace); "
        f"got {type(shown).__name__}."
    )


def _told(explanation: Explanation) -> Explanation:
    _tell(explanation.notes, stacklevel=4)
    return explanation


def _tell(notes: Iterable[str], stacklevel: int = 3) -> None:
    """What the command line prints as notes on stderr, as warnings."""
    for message in notes:
        warnings.warn(message, UserWarning, stacklevel=stacklevel)


def export_planned(export: Path | None, options: TraceOptions) -> AbstractContextManager[None]:
    """A model run's export, estimated before the run (attnviz.model_limits); random weights
    need no estimate, and explain's start-up does not import the model's limits."""
    if options.model is None:
        return nullcontext()
    from attnviz.model_limits import Work, planned

    return planned(Work(export=export))
