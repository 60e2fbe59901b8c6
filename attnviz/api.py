"""The Python API: what the command line does, as functions that return data.

    >>> import attnviz
    >>> trace = attnviz.explain("The animal didn't cross the street because it was too tired")
    >>> trace.weights.shape                      # [heads, query words, key words]
    (2, 11, 11)
    >>> text = attnviz.lesson(trace)             # the step-by-step lesson, as the terminal shows it
    >>> figure = attnviz.heatmap(trace)          # a matplotlib Figure

``explain`` and ``cross`` take the command line's options as keyword arguments (``model="minilm"``,
``layer=6``, ``head=12``, ``focus="it"``, ``causal=True``, ``pad_to=16``, ``positions=
"sinusoidal"``, …), refuse what it refuses with the same sentence (``AttnvizError``), and
return the trace of the layer asked for, which remembers what was asked to be shown
(``trace.view``) and, for a model, every layer of the run (``trace.model_layers``). The command
line calls ``explained`` and ``crossed``, the same functions with its options types.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from attnviz.core import Dtype, Preset, TraceOptions, cross_layers, trace_layers
from attnviz.embeddings import OutOfVocabulary
from attnviz.errors import AttnvizError
from attnviz.lesson.options import LessonOptions
from attnviz.positions import Positions
from attnviz.render.options import MAX_WIDTH, Scale, Style
from attnviz.selection import Selection, ViewOptions, choose_layer, select
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Progress = Callable[[int, int], None]
E = TypeVar("E", bound=Enum)


class Explained(NamedTuple):
    """A trace as asked for: the chosen layer (remembering its view and the model's layers),
    what the view shows of it, and what the person should be told about how it was made."""

    trace: AttentionTrace
    selection: Selection
    notes: tuple[str, ...]


def explained(
    sentence: str,
    trace_options: TraceOptions,
    view: ViewOptions,
    *,
    progress: Progress | None = None,
) -> Explained:
    """Trace ``sentence`` as ``trace_options`` say and choose what ``view`` shows: the command
    line's ``explain``, with its options types."""
    layers, notes = trace_layers(sentence, trace_options, layer=view.layer, progress=progress)
    trace = _remembering(choose_layer(layers, view.layer), view, layers)
    selection = select(trace, view)
    return Explained(trace, selection, (*notes, *selection.notes))


def crossed(
    source: str,
    target: str,
    trace_options: TraceOptions,
    view: ViewOptions,
    *,
    progress: Progress | None = None,
) -> Explained:
    """Cross-attention as the command line's ``cross`` makes it: queries from ``target``, keys
    and values from ``source``."""
    (trace,), notes = cross_layers(
        source, target, trace_options, layer=view.layer, progress=progress
    )
    trace = _remembering(trace, view, (trace,))
    selection = select(trace, view)
    return Explained(trace, selection, (*notes, *selection.notes))


def explain(
    sentence: str,
    *,
    model: str | None = None,
    layer: int | None = None,
    head: int | None = None,
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
) -> AttentionTrace:
    """Every step of multi-head self-attention on ``sentence``, as ``attnviz explain`` computes
    it; the options are its options (``pad_to=16`` for ``--pad-to 16``).

    Random weights by default (``seed``, ``heads``, ``d_model``, ``preset="paper"``); word
    vectors from ``embeddings`` (GloVe text, .npy, .npz, .json); matrices from ``weights``; or a
    pretrained model, ``model="minilm"`` or ``"gpt2"`` or a checkpoint folder, whose ``layer``
    (from 1, the last by default) is returned. ``head``, ``focus``, ``words`` and
    ``hide_special`` say what the lesson, the heatmap and a notebook show.

    >>> import attnviz
    >>> trace = attnviz.explain("I am good", head=1, focus="am")
    >>> trace.view.head, trace.tokens
    (1, ('I', 'am', 'good'))
    >>> attnviz.explain("I am good", head=3)
    Traceback (most recent call last):
    attnviz.errors.AttnvizError: --head 3 does not exist; heads are numbered 1 to 2.
    """
    _whole(layer=layer, head=head, pad_to=pad_to, seed=seed)
    _flags(words=words, hide_special=hide_special, causal=causal)
    _text(focus=focus, model=model)
    trace_options = _trace_options(
        heads=heads,
        d_model=d_model,
        seed=seed,
        preset=preset,
        embeddings=embeddings,
        oov=oov,
        weights=weights,
        positions=positions,
        model=model,
        dtype=_choice(Dtype, dtype, "dtype"),
        causal=causal,
        pad_to=pad_to,
    )
    view = ViewOptions(layer=layer, head=head, focus=focus, hide_special=hide_special, words=words)
    trace, _, notes = explained(sentence, trace_options, view)
    _tell(notes)
    return trace


def cross(
    source: str,
    target: str,
    *,
    layer: int | None = None,
    head: int | None = None,
    focus: str | None = None,
    heads: int | None = None,
    d_model: int | None = None,
    seed: int = 0,
    preset: str | None = None,
    embeddings: str | Path | None = None,
    oov: str = "error",
    weights: str | Path | None = None,
    positions: str = "none",
) -> AttentionTrace:
    """Encoder–decoder (cross) attention, as ``attnviz cross`` computes it: the queries come
    from ``target``, the keys and values from ``source``. ``layer`` picks a layer of a model's
    export given as ``weights``.

    >>> import attnviz
    >>> trace = attnviz.cross("I am very good", "Je vais bien", focus="vais")
    >>> trace.weights.shape                      # [heads, target words, source words]
    (2, 3, 4)
    """
    _whole(layer=layer, head=head, seed=seed)
    _text(focus=focus)
    trace_options = _trace_options(
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
    trace, _, notes = crossed(source, target, trace_options, view)
    _tell(notes)
    return trace


def lesson(
    trace: AttentionTrace,
    *,
    decimals: int = 2,
    show_weights: bool = False,
    steps: str | int | Iterable[int] | None = None,
    width: int = 100,
    color: bool = False,
    show: bool = False,
) -> str:
    """The step-by-step lesson of ``trace`` as ``attnviz explain`` prints it, as text (with ANSI
    colours when ``color``); ``show=True`` also prints it. What it shows is ``trace.view``;
    ``steps`` ("4-6", "1,3-5", 4 or [4, 5, 6]) keeps only those steps, as --steps does.

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

    from attnviz.render.terminal import render_explain

    _trace_given(trace, "lesson")
    _whole(decimals=decimals, width=width)
    _flags(show_weights=show_weights, color=color, show=show)
    options = LessonOptions(decimals=decimals, show_weights=show_weights, steps=_steps(steps))
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
    render_explain(trace, _selection(trace), console, options)
    text: str = console.file.getvalue()  # type: ignore[attr-defined]
    if show:
        print(text, end="")
    return text


def heatmap(
    trace: AttentionTrace,
    *,
    head: int | None = None,
    focus: str | None = None,
    all_layers: bool = False,
    style: str = "grid",
    cmap: str = "viridis",
    scale: str | None = None,
) -> Figure:
    """The attention weights of ``trace`` as a matplotlib Figure, as ``attnviz heatmap`` draws
    them: one panel per head (``head`` for one), the focus word's row outlined;
    ``style="lines"`` for lines from the focus word; ``all_layers=True`` for every layer and
    head of a model run; ``scale`` "fixed" (colours 0–1), "row" (each row to its largest) or
    "auto" (to the largest shown), by default fixed up to 16 words. ``head`` and ``focus``
    override what ``trace.view`` says.

    >>> import attnviz
    >>> figure = attnviz.heatmap(attnviz.explain("I am good"), head=2)
    >>> [axes.get_title() for axes in figure.axes][:1]
    ['Head 2']
    """
    from attnviz.render.figures import check_colormap

    _trace_given(trace, "heatmap")
    _whole(head=head)
    _text(focus=focus)
    _flags(all_layers=all_layers)
    check_colormap(cmap)
    chosen = _choice(Style, style, "style")
    colours = None if scale is None else _choice(Scale, scale, "scale")
    view = trace.view or ViewOptions()
    view = view._replace(
        head=head if head is not None else view.head,
        focus=focus if focus is not None else view.focus,
    )
    if all_layers:
        from attnviz.render.grid import build_layers_figure

        layers = trace.model_layers or (trace,)
        if head is not None:
            raise AttnvizError("all_layers draws every layer and head; drop head.")
        return build_layers_figure(
            layers, select(layers[0], view._replace(head=None)), cmap=cmap, scale=colours
        )
    selection = select(trace, view)
    if chosen is Style.lines:
        from attnviz.render.plots import build_lines_figure

        return build_lines_figure(trace, selection)
    from attnviz.render.heatmap import build_figure

    return build_figure(trace, selection, cmap=cmap, scale=colours)


class Page:
    """The interactive lesson page of a trace (``attnviz page``): ``html`` is the document,
    ``save(path)`` writes it, and in a notebook it displays itself in an isolated frame."""

    def __init__(self, html: str) -> None:
        self.html = html

    def __repr__(self) -> str:
        return f"<attnviz page: {len(self.html):,} characters of HTML; .save(path) writes it>"

    def _repr_html_(self) -> str:
        """The page in an iframe of its own: its script and style stay inside it (the page's own
        Content-Security-Policy still applies), and it cannot reach the notebook."""
        import html as markup

        return (
            '<iframe sandbox="allow-scripts" style="width:100%;height:760px;border:1px solid #ddd" '
            f'title="attnviz lesson page" srcdoc="{markup.escape(self.html, quote=True)}"></iframe>'
        )

    def save(self, path: str | Path) -> Path:
        """Write the page to ``path`` (.html), atomically; AttnvizError for a folder, another
        extension or an unwritable place, with nothing written."""
        from attnviz.files import atomic_write, check_output_path

        target = Path(path)
        check_output_path(target, (".html", ".htm"), "The page")
        atomic_write(target, lambda temporary: temporary.write_text(self.html, encoding="utf-8"))
        return target


def page(trace: AttentionTrace, *, decimals: int = 2) -> Page:
    """The interactive lesson page of ``trace``: click a word to see where it looks and every
    number of its steps; step by step with the arrow keys. Display it in a notebook, or
    ``.save("lesson.html")``.

    >>> import attnviz
    >>> lesson_page = attnviz.page(attnviz.explain("I am good"))
    >>> lesson_page.html.lower().startswith("<!doctype html>")
    True
    """
    _trace_given(trace, "page")
    _whole(decimals=decimals)
    return Page(trace.to_html(decimals=decimals))


# -- helpers ---------------------------------------------------------------------------------


def _trace_options(
    *,
    heads: int | None,
    d_model: int | None,
    seed: int,
    preset: str | None,
    embeddings: str | Path | None,
    oov: str,
    weights: str | Path | None,
    positions: str,
    **model_options: Any,
) -> TraceOptions:
    """The command line's TraceOptions from keyword arguments: names as strings, paths as
    str or Path; its contradictions refused as it refuses them."""
    return TraceOptions(
        heads=heads,
        d_model=d_model,
        seed=seed,
        preset=_choice(Preset, preset, "preset") if preset is not None else None,
        embeddings=Path(embeddings) if embeddings is not None else None,
        oov=_choice(OutOfVocabulary, oov, "oov"),
        weights=Path(weights) if weights is not None else None,
        positions=_choice(Positions, positions, "positions"),
        **model_options,
    )


def _whole(**values: object) -> None:
    """AttnvizError for an option that must be a whole number (or None) and is not."""
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise AttnvizError(f"{name}={value!r}: give a whole number.")


def _flags(**values: object) -> None:
    """AttnvizError for an option that must be True or False and is not ("no" would count as
    true)."""
    for name, value in values.items():
        if not isinstance(value, bool):
            raise AttnvizError(f"{name}={value!r}: give True or False.")


def _text(**values: object) -> None:
    for name, value in values.items():
        if value is not None and not isinstance(value, str):
            raise AttnvizError(f'{name}={value!r}: give a string, e.g. {name}="it".')


def _steps(steps: object) -> str | None:
    """``steps`` as the command line's --steps: "4-6" as it is, 4 as "4", [4, 5, 6] as
    "4,5,6"."""
    if steps is None or isinstance(steps, str):
        return steps
    numbers = list(steps) if isinstance(steps, Iterable) else [steps]
    if any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
        raise AttnvizError(
            f'steps={steps!r}: give step numbers, e.g. steps="4-6" or steps=[4, 5, 6].'
        )
    return ",".join(str(number) for number in numbers)


def _trace_given(trace: object, function: str) -> None:
    if not isinstance(trace, AttentionTrace):
        raise AttnvizError(
            f"{function}() takes a trace, as attnviz.explain(sentence) returns it; "
            f"got {type(trace).__name__}."
        )


def _remembering(
    trace: AttentionTrace, view: ViewOptions, layers: tuple[AttentionTrace, ...]
) -> AttentionTrace:
    """``trace`` with the view asked for and, in a model run, every layer of it."""
    return replace(trace, view=view, model_layers=layers if len(layers) > 1 else None)


def _selection(trace: AttentionTrace) -> Selection:
    return select(trace, trace.view or ViewOptions())


def _choice(kind: type[E], value: str | E, name: str) -> E:
    """``value`` as a member of ``kind``; AttnvizError naming the choices otherwise."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(repr(member.value) for member in kind)
        raise AttnvizError(f"{name}={value!r} is not a choice; use one of {choices}.") from None


def _tell(notes: tuple[str, ...]) -> None:
    """What the command line prints as notes on stderr, as warnings."""
    for message in notes:
        warnings.warn(message, UserWarning, stacklevel=3)
