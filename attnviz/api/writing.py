"""The files a command writes besides what it prints: each refused before any work when it
cannot be written or would be too large, then written all or none (attnviz.files)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from attnviz import limits
from attnviz.api.explanation import Explanation
from attnviz.lesson.steps import per_head_numbers

if TYPE_CHECKING:
    from attnviz.lesson.options import LessonOptions


class Recordings(NamedTuple):
    """What explain and cross write besides the lesson they print (checked before the work)."""

    svg: Path | None = None
    html: Path | None = None
    slides: Path | None = None
    export: Path | None = None
    heatmap: Path | None = None

    def check(self) -> None:
        """Refuse unwritable files, and two outputs that are one file, before any work."""
        check_outputs(self.export, (self.heatmap, "--output"))
        check_recordings(self.svg, self.html)
        outputs = (
            (self.heatmap, "--output"),
            (self.svg, "--svg"),
            (self.html, "--html"),
            (self.export, "--export"),
        )
        check_slides(self.slides, *outputs)


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
        per_head_steps = per_head_numbers(explanation.trace, lesson.step_numbers)
        fewest = limits.fewest_slides(in_full, len(per_head_steps), by_rows)
        limits.check_slide_count(fewest, at_least=True)
    if per_head is not None:
        limits.check_pictures(len(shown.heads), shown.n_rows, shown.n_columns, per_head=per_head)
