"""Which pictures ``attnviz heatmap`` draws of the computed layers, and where they go: one
figure of the chosen heads, the lines illustration, or every layer and head at once; with
--per-head, one more file per head; and the combinations of options refused before any work.
matplotlib is imported by the modules that draw."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnviz.errors import AttnvizError, option
from attnviz.outputs import make_folder, per_head_paths
from attnviz.render.options import ImageOptions, Measure, Style
from attnviz.results import Analyses
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace


def pictures_refused(options: ImageOptions, *, drawing_one: Sequence[str]) -> None:
    """The pictures' contradictions, refused before any work: every layer and head in one
    figure with options that choose one (``drawing_one``: those given, by their API names),
    a colour scale for lines, and a measure other than the weights for lines, or rollout
    (one matrix for every head) for every layer's heads or with one head chosen."""
    if options.all_layers and drawing_one:
        chosen = [option(name) for name in drawing_one]
        listed = ", ".join(chosen[:-1]) + " and " + chosen[-1] if len(chosen) > 1 else chosen[0]
        raise AttnvizError(
            f"{option('all_layers')} draws every layer and head in one figure; drop {listed}."
        )
    if options.style is Style.lines and options.scale is not None:
        raise AttnvizError(
            f"{option('scale')} sets the heatmaps' colours; {option('style', Style.lines)} has "
            f"none (a line's width is its weight): drop {option('scale')}."
        )
    measure = options.measure
    if measure is Measure.weights:
        return
    if options.style is Style.lines:
        raise AttnvizError(
            f"{option('style', Style.lines)} draws attention weights only; drop it to draw "
            f"{option('measure', measure)} as heatmaps."
        )
    if options.all_layers and measure is Measure.rollout:
        raise AttnvizError(
            f"{option('all_layers')} draws every head; {option('measure', measure)} mixes "
            f"them into one matrix: drop {option('all_layers')} to draw it."
        )
    chosen_heads = [option(name) for name in ("head", "per_head") if name in drawing_one]
    if measure is Measure.rollout and chosen_heads:
        raise AttnvizError(
            f"{option('measure', measure)} draws one matrix, the mean of every head of each "
            f"layer rolled out; drop {' and '.join(chosen_heads)}."
        )


def all_layers_refused(options: ImageOptions, *, model_run: bool) -> None:
    """Refuse every layer and head in one grid but of a model run (``model_run``): random or
    loaded weights are one layer, which the plain heatmap draws."""
    if options.all_layers and not model_run:
        raise AttnvizError(
            f"{option('all_layers')} draws every layer of a model, and random or loaded weights "
            f"are one layer: give {option('model', metavar='NAME')} (minilm, gpt2, coref, …) "
            f"or drop {option('all_layers')}."
        )


def save_images(
    run: Analyses,
    trace: AttentionTrace,
    selection: Selection,
    output: Path,
    options: ImageOptions,
) -> tuple[list[Path], tuple[str, ...]]:
    """Draw what ``options`` ask of ``trace`` (or, every layer and head, of ``run``'s layers,
    with what the analyses found of them: attnviz.analysis.analyses.pictures) as
    ``selection`` shows it; the files written, in order, and a note naming the words the
    pictures' font draws as boxes. (The options' contradictions are refused where they enter,
    by pictures_refused above; what a measure cannot draw of this trace, by the drawing.)"""
    from attnviz.render.figures import check_colormap

    check_colormap(options.cmap)
    if options.all_layers:
        from attnviz.render.figures.grid import save_layers_heatmap

        save_layers_heatmap(
            run, selection, output, cmap=options.cmap, scale=options.scale,
            measure=options.measure,
        )  # fmt: skip
        return [output], _notes(selection)
    if options.style is Style.lines:
        from attnviz.render.figures.plots import save_lines_figure

        save_lines_figure(trace, selection, output)
        return [output], _notes(selection)
    return save_heads(trace, selection, output, options, run), _notes(selection)


def _notes(selection: Selection) -> tuple[str, ...]:
    """A note naming the words the pictures' font draws as boxes, if any."""
    from attnviz.render.figures import missing_glyphs_note

    words = [*selection.row_words, *selection.column_words]
    return missing_glyphs_note(words)


def save_heads(
    trace: AttentionTrace,
    selection: Selection,
    output: Path,
    options: ImageOptions,
    run: Analyses | None = None,
) -> list[Path]:
    """The heads' heatmaps in one figure (of ``options.measure``, as ``run`` found it),
    and with --per-head one file per head."""
    from attnviz.render.figures.heatmap import save_heatmap

    written = [output]
    measure = options.measure
    if options.per_head is not None:
        make_folder(options.per_head)
    save_heatmap(
        trace, selection, output, cmap=options.cmap, scale=options.scale, measure=measure,
        run=run,
    )  # fmt: skip
    if options.per_head is not None:
        extension = output.suffix.lower()
        paths = per_head_paths(options.per_head, selection.heads, trace.n_heads, extension)
        for head, path in zip(selection.heads, paths, strict=True):
            one = selection._replace(heads=(head,), focus=None)
            save_heatmap(
                trace, one, path, cmap=options.cmap, scale=options.scale, measure=measure, run=run
            )
            written.append(path)
    return written
