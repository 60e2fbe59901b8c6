"""A figure's canvas and its file: image formats by extension, and the save that is atomic
(all or nothing) and deterministic (the same figure gives the same bytes).

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnviz.errors import OutputProblem
from attnviz.files import atomic_write
from attnviz.render.figures.fonts import MISSING_GLYPH
from attnviz.render.figures.settings import draws

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


#: Image formats by file extension.
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
IMAGE_EXTENSIONS = tuple(FORMATS)
DPI = 150  # pixels per inch of a PNG; vector formats ignore it


def image_format_of(path: Path) -> str:
    """The image format ``path``'s extension names (png, svg or pdf); OutputProblem otherwise."""
    image_format = FORMATS.get(path.suffix.lower())
    if image_format is None:
        raise OutputProblem(
            f"{path}: unknown image extension {path.suffix or '(none)'!r}; use .png, .svg or .pdf."
        )
    return image_format


@draws
def save_figure(figure: Figure, path: Path) -> None:
    """Write ``figure`` to ``path`` in the format its extension names (.png, .svg or .pdf),
    atomically and deterministically: no dates, no software version, a fixed SVG id salt, so
    the same figure gives the same bytes."""
    image_format = image_format_of(path)
    metadata: dict[str, Any] = {
        "png": {"Software": None},
        "svg": {"Date": None},
        "pdf": {"CreationDate": None, "ModDate": None},
    }[image_format]
    # zlib level 1 rather than Pillow's 6: a third of the time to write a picture of printed
    # weights, for a file about 8 % larger.
    extra: dict[str, Any] = {"pil_kwargs": {"compress_level": 1}} if image_format == "png" else {}

    def write(temporary: Path) -> None:
        # A word in a script the bundled font lacks (emoji, CJK) is drawn as boxes; one warning
        # per glyph would only bury the "wrote ..." line, so it is silenced. (SVG clip-path
        # ids are hashed with attnviz's fixed salt: drawing() sets it.)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=MISSING_GLYPH)
            figure.savefig(temporary, format=image_format, dpi=DPI, metadata=metadata, **extra)

    atomic_write(path, write)


@draws
def new_figure(width: float, height: float, **options: Any) -> Figure:
    """A matplotlib Figure on the Agg canvas: no pyplot, no window, no global state."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, **options)
    FigureCanvasAgg(figure)
    return figure


def place_axes(figure: Figure, left: float, top: float, width: float, height: float) -> Axes:
    """Axes ``width`` × ``height`` inches at ``left``, ``top`` inches from the picture's top-left
    corner: panels are placed in inches computed from the sizes of their words, not by a layout
    engine (matplotlib's constrained layout measured every label by drawing it, about half the
    time of an 8-head picture)."""
    figure_width, figure_height = figure.get_size_inches()
    bottom = figure_height - top - height
    return figure.add_axes(
        (left / figure_width, bottom / figure_height, width / figure_width, height / figure_height)
    )
