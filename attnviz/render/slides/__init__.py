"""Slides of the lesson (--slides DIR): one 16:9 picture per step, and per head where a step
shows several heads, each as SVG and as PNG, for a projector.

A slide shows what the terminal shows of its step: the step's blocks (attnviz/lesson/) are
drawn by render/terminal/lesson.py into a Rich console recording in truecolor, and every styled run
of that text is set at its cell with matplotlib, in the colours --svg gives the terminal's
styles (render/terminal/theme.py: dark, every number at least 4.5:1 on its cell). The font is DejaVu
Sans Mono, which matplotlib ships, and the SVG keeps the text as paths: a slide looks the same
on any machine, offline.

Sizes are for the back row: a PNG is 1920 × 1080 pixels and the text is set at 32 px (44 px for
titles), so a line of it is about 37 px tall. A step longer than a slide goes on over the next
ones, titled "(continued)"; the text never shrinks to fit.

    layout.py   sizes, font, colours, the console a slide's text is laid out in; Slide
    plan.py     plan_slides: the lesson cut into slides
    draw.py     draw_slide, save_slide, save_slides: matplotlib, imported inside them
"""

from attnviz.render.slides.draw import draw_slide, save_slide, save_slides
from attnviz.render.slides.layout import (
    COLUMNS,
    MAX_LINES,
    SLIDE_FILE,
    SLIDE_HEIGHT_PX,
    SLIDE_WIDTH_PX,
    TEXT_PX,
    THEME,
    TITLE_PX,
    Slide,
)
from attnviz.render.slides.plan import plan_slides

__all__ = [
    "COLUMNS",
    "MAX_LINES",
    "SLIDE_FILE",
    "SLIDE_HEIGHT_PX",
    "SLIDE_WIDTH_PX",
    "TEXT_PX",
    "THEME",
    "TITLE_PX",
    "Slide",
    "draw_slide",
    "plan_slides",
    "save_slide",
    "save_slides",
]
