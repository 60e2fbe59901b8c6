"""What every figure shares, one room per kind of thing:

- ``saving``: the canvas, image formats by extension, the deterministic atomic save;
- ``fonts``: text sizes, widths as FreeType measures them, text cut to fit, missing glyphs,
  glyph outlines;
- ``words``: the words along a panel's edges, named, thinned and placed;
- ``titles``: the phrases of a figure's title;
- ``colour``: colormaps, colour scales (--scale) and the colour bar's label;
- ``cells``: numbers printed in cells, hatched masked cells, the focus row's frame.

Below are the functions other parts of attnviz use. matplotlib is imported inside the
functions, so importing this package costs nothing.
"""

from attnviz.render.figures.colour import check_colormap
from attnviz.render.figures.fonts import missing_glyphs_note
from attnviz.render.figures.saving import (
    DPI,
    IMAGE_EXTENSIONS,
    image_format_of,
    new_figure,
    save_figure,
)

__all__ = [
    "DPI",
    "IMAGE_EXTENSIONS",
    "check_colormap",
    "image_format_of",
    "missing_glyphs_note",
    "new_figure",
    "save_figure",
]
