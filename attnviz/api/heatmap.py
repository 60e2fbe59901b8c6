"""``attnviz heatmap``: the attention weights drawn, as a matplotlib Figure (``attnviz.heatmap``)
or as image files (the command)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from attnviz import arguments as check
from attnviz import layer_limits
from attnviz.api.explain import explained_on, export_planned
from attnviz.api.explanation import Explanation, Shown, explanation_of
from attnviz.api.surface import Surface
from attnviz.api.writing import check_outputs, check_per_head, check_sizes
from attnviz.limits import check_pictures
from attnviz.options import Options
from attnviz.render.options import ImageOptions, Measure, Scale, Style
from attnviz.selection import select
from attnviz.serial import one_at_a_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def save_pictures(
    explanation: Explanation, output: Path, options: ImageOptions
) -> tuple[list[Path], tuple[str, ...]]:
    """``attnviz heatmap``'s files: what ``options`` ask, as the explanation shows it; the paths
    written and a note for words the pictures' font draws as boxes."""
    from attnviz.analysis.analyses import for_pictures
    from attnviz.render.figures.images import save_images

    trace, measure = explanation.trace, options.measure.value
    analyses = for_pictures(explanation.layers, trace, measure, grid=options.all_layers)
    return save_images(analyses, trace, explanation.selection, output, options)


def run(
    sentence: str,
    lesson_options: Options,
    options: ImageOptions,
    files: tuple[Path, Path | None],
    surface: Surface,
) -> None:
    """``attnviz heatmap -o IMAGE [--export FILE]``: the pictures refused before the run when
    they cannot be drawn or written, then drawn and written, all or none."""
    from attnviz.files import staged_writes
    from attnviz.outputs import write_export
    from attnviz.render.figures.images import all_layers_refused, pictures_refused

    output, export = files
    view = lesson_options.view
    given = {"layer": view.layer, "head": view.head, "per_head": options.per_head}
    pictures_refused(
        options, drawing_one=[name for name, value in given.items() if value is not None]
    )
    all_layers_refused(options, model_run=lesson_options.trace.model is not None)
    check_outputs(export, (output, "--output"))
    check_per_head(options.per_head, output, export)
    every_token = not (view.words or view.hide_special)  # else fewer rows: counted after the run
    with (
        export_planned(export, lesson_options),
        layer_limits.counted_before_run(
            layer_limits.check_layer_pictures if options.all_layers else None, every_token
        ),
    ):
        explanation = explained_on(sentence, lesson_options, surface)
    per_head = None if options.all_layers else bool(options.per_head)
    check_sizes(explanation, export=export, per_head=per_head)
    if options.all_layers:
        shown = explanation.selection
        n_layers, n_heads = len(explanation.layers), explanation.trace.n_heads
        layer_limits.check_layer_pictures(n_layers, n_heads, shown.n_rows, shown.n_columns)
    with staged_writes():  # every file, or none
        written, notes = save_pictures(explanation, output, options)
        if export is not None:
            write_export(explanation.layers, export)
            written.append(export)
    surface.notes(notes)
    surface.wrote_all(written)


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

    explanation = explanation_of(shown, "heatmap")
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
        from attnviz.analysis.analyses import for_pictures
        from attnviz.render.figures.grid import build_layers_figure

        trace, measure = explanation.trace, options.measure.value
        analyses = for_pictures(explanation.layers, trace, measure, grid=True)
        return build_layers_figure(
            analyses, selection, cmap=cmap, scale=options.scale, measure=options.measure
        )
    if options.style is Style.lines:
        from attnviz.render.figures.plots import build_lines_figure

        return build_lines_figure(explanation.trace, selection)
    from attnviz.analysis.analyses import for_pictures
    from attnviz.render.figures.heatmap import build_figure

    measure = options.measure.value
    analyses = for_pictures(explanation.layers, explanation.trace, measure, grid=False)
    return build_figure(
        explanation.trace, selection, cmap=cmap, scale=options.scale,
        measure=options.measure, run=analyses,
    )  # fmt: skip
