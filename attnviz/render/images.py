"""Which pictures ``attnviz heatmap`` draws of the computed layers, and where they go: one
figure of the chosen heads, the lines illustration, or every layer and head at once; with
--per-head, one more file per head. matplotlib is imported by the modules that draw."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnviz.outputs import make_folder, per_head_paths
from attnviz.render.options import ImageOptions, Style
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace


def save_images(
    layers: Sequence[AttentionTrace],
    trace: AttentionTrace,
    selection: Selection,
    output: Path,
    options: ImageOptions,
) -> tuple[list[Path], tuple[str, ...]]:
    """Draw what ``options`` ask of ``trace`` (or, every layer and head, of ``layers``) as
    ``selection`` shows it; the files written, in order, and a note naming the words the
    pictures' font draws as boxes. (The options' contradictions are refused where they enter,
    attnviz.api.pictures_refused.)"""
    from attnviz.render.figures import check_colormap

    check_colormap(options.cmap)
    if options.all_layers:
        from attnviz.render.grid import save_layers_heatmap

        save_layers_heatmap(layers, selection, output, cmap=options.cmap, scale=options.scale)
        return [output], _notes(selection)
    if options.style is Style.lines:
        from attnviz.render.plots import save_lines_figure

        save_lines_figure(trace, selection, output)
        return [output], _notes(selection)
    return save_heads(trace, selection, output, options), _notes(selection)


def _notes(selection: Selection) -> tuple[str, ...]:
    """A note naming the words the pictures' font draws as boxes, if any."""
    from attnviz.render.figures import missing_glyphs_note

    words = [*selection.row_words, *selection.column_words]
    return missing_glyphs_note(words)


def save_heads(
    trace: AttentionTrace, selection: Selection, output: Path, options: ImageOptions
) -> list[Path]:
    """The heads' heatmaps in one figure, and with --per-head one file per head."""
    from attnviz.render.heatmap import save_heatmap

    written = [output]
    if options.per_head is not None:
        make_folder(options.per_head)
    save_heatmap(trace, selection, output, cmap=options.cmap, scale=options.scale)
    if options.per_head is not None:
        extension = output.suffix.lower()
        paths = per_head_paths(options.per_head, selection.heads, trace.n_heads, extension)
        for head, path in zip(selection.heads, paths, strict=True):
            one = selection._replace(heads=(head,), focus=None)
            save_heatmap(trace, one, path, cmap=options.cmap, scale=options.scale)
            written.append(path)
    return written
