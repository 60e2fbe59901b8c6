"""Regenerate docs/worksheet.png: ``python docs/make_worksheet_picture.py``.

The first page of a hand sheet (``attnviz worksheet --hand --seed 7``) beside the first page
of its key, drawn by the same code that writes the PDF (attnviz.render.worksheet.pdf), on A4.
The set is seeded and the PNG carries no date, so running the script twice gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from attnviz.api.worksheet import SheetOptions, sheets
from attnviz.options import TraceOptions
from attnviz.render.figures.saving import DPI, new_figure, save_figure
from attnviz.render.figures.settings import drawing
from attnviz.render.worksheet.pdf import page_figures

DOCS = Path(__file__).resolve().parent
SENTENCE = "The animal crossed because it was tired"
PAGE_DPI = 80  # pixels per inch of each page: an A4 page is 662 × 935 pixels
GAP = 24  # pixels around and between the pages


def main() -> None:
    import numpy as np

    made, _ = sheets(SENTENCE, TraceOptions(seed=7), SheetOptions(count=6, hand=True))
    with drawing():
        pixels = []
        for key in (False, True):
            page = next(page_figures(made, "a4", key=key))
            page.set_dpi(PAGE_DPI)
            page.canvas.draw()
            pixels.append(np.asarray(page.canvas.buffer_rgba())[..., :3])
        height, width, _ = pixels[0].shape
        total_width, total_height = 2 * width + 3 * GAP, height + 2 * GAP
        # One picture pixel per page pixel at the DPI save_figure writes.
        picture = new_figure(total_width / DPI, total_height / DPI)
        picture.patch.set_facecolor("#d9d9d9")  # the table the pages lie on
        for index, image in enumerate(pixels):
            left = GAP + index * (width + GAP)
            axes = picture.add_axes(
                (
                    left / total_width,
                    GAP / total_height,
                    width / total_width,
                    height / total_height,
                )
            )
            axes.imshow(image, interpolation="none")
            axes.set_axis_off()
        save_figure(picture, DOCS / "worksheet.png")


if __name__ == "__main__":
    main()
