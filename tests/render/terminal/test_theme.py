"""Every number attnviz draws outside a terminal reads at least 4.5:1 (WCAG AA) on its cell."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from html import unescape

import numpy as np
import pytest

import attnviz
from attnviz.lesson.options import LessonOptions
from attnviz.render.terminal.lesson import save_lesson
from attnviz.render.terminal.terminal_svg import CELL_WIDTH, LINE_HEIGHT
from attnviz.render.terminal.text import weight_colours
from attnviz.render.terminal.theme import (
    AA_CONTRAST,
    EXPORT_THEME,
    contrast_ratio,
    readable_on,
    relative_luminance,
)

from support import shown, steps_spec

SVG = "{http://www.w3.org/2000/svg}"
NAMED = {"black": (0, 0, 0), "white": (255, 255, 255)}


def rgb(colour: str) -> tuple[int, int, int]:
    if colour in NAMED:
        return NAMED[colour]
    value = colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def test_contrast_ratio_is_wcag_s() -> None:
    assert contrast_ratio((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast_ratio((119, 119, 119), (255, 255, 255)) == pytest.approx(4.48, abs=0.01)
    assert relative_luminance((255, 0, 0)) == pytest.approx(0.2126)
    assert readable_on((0x5C, 0xC8, 0x63)) == "black" and readable_on((0x44, 0x01, 0x54)) == "white"


@pytest.mark.slow
def test_every_weight_s_number_reads_at_least_4_5_to_1_on_its_shade() -> None:
    """Over the whole colour scale (the terminal's, the notebook's and the page's shading)."""
    ratios = [
        contrast_ratio(rgb(text), rgb(background))
        for text, background in map(weight_colours, np.linspace(0.0, 1.0, 2001))
    ]
    assert min(ratios) >= AA_CONTRAST, min(ratios)
    # The exports draw "black" and "white" pure, as the ratios above assume.
    assert EXPORT_THEME.ansi_colors[0] == (0, 0, 0) and EXPORT_THEME.ansi_colors[7] == (255,) * 3


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A causal lesson's weights (every weight from 0 to 1, dim sums, masked cells) as --svg and
    --html write them."""
    folder = tmp_path_factory.mktemp("saved")
    trace = attnviz.explain("The cat sat on the mat", causal=True, heads=1).trace
    svg, html = folder / "l.svg", folder / "l.html"
    save_lesson(
        trace,
        shown(trace),
        LessonOptions(steps=steps_spec("qkv", "weights", "z")),
        80,
        svg=svg,
        html=html,
    )
    return svg.read_text(encoding="utf-8"), html.read_text(encoding="utf-8")


@pytest.mark.slow
def test_every_number_in_the_svg_reads_at_least_4_5_to_1(saved: tuple[str, str]) -> None:
    root = ElementTree.fromstring(saved[0])
    fills = dict(re.findall(r"\.(r\d+) \{ fill: (#[0-9a-f]{6})", saved[0]))
    backdrop = rgb(root.find(f"{SVG}rect").get("fill", ""))  # type: ignore[union-attr]
    groups = root.findall(f"{SVG}g")
    shades: dict[tuple[int, int], tuple[int, int, int]] = {}
    for rect in groups[0].findall(f"{SVG}rect"):
        row = int(rect.get("y", "")) // LINE_HEIGHT
        first = int(rect.get("x", "")) // CELL_WIDTH
        for cell in range(first, first + int(rect.get("width", "")) // CELL_WIDTH):
            shades[(row, cell)] = rgb(rect.get("fill", ""))
    checked = 0
    for text in groups[1].findall(f"{SVG}text"):
        content = "".join(text.itertext())
        if not re.search(r"\d", content):
            continue
        row = int(text.get("y", "")) // LINE_HEIGHT
        xs = [int(x) // CELL_WIDTH for x in (text.get("x") or "0").split()]
        colour = rgb(fills[text.get("class", "")])
        for cell in xs:
            ratio = contrast_ratio(colour, shades.get((row, cell), backdrop))
            assert ratio >= AA_CONTRAST, (content, ratio)
            checked += 1
    assert checked > 200 and len(set(shades.values())) > 5  # many numbers, many shades


def test_every_number_in_the_html_reads_at_least_4_5_to_1(saved: tuple[str, str]) -> None:
    page = saved[1]
    body = re.search(r"body \{\s*color: (#\w+);\s*background-color: (#\w+);", page)
    assert body is not None
    foreground, backdrop = rgb(body[1]), rgb(body[2])
    checked = 0
    for style, text in re.findall(r'<span style="([^"]*)">([^<]*)</span>', page):
        if not re.search(r"\d", unescape(text)):
            continue
        colour = re.search(r"(?<!-)color: (#\w+)", style)
        shade = re.search(r"background-color: (#\w+)", style)
        ratio = contrast_ratio(
            rgb(colour[1]) if colour else foreground, rgb(shade[1]) if shade else backdrop
        )
        assert ratio >= AA_CONTRAST, (text, style, ratio)
        checked += 1
    assert checked > 50
