"""The colours of the lesson outside a terminal (--svg, --html, --slides), and the contrast of
text on them.

A terminal draws "black", "white" and "dim" in its own theme's colours; an export must choose
them. Rich's own export themes draw "black" as grey (#4b4e55) and "white" as light grey, so the
numbers of the largest weights came out grey on green at about 3:1. EXPORT_THEME is dark, with
black and white pure and every colour readable on its background, and weight cells take black
or white text by the WCAG contrast ratio itself, so every number in a shaded cell reads at least
4.5:1 (WCAG AA): on any background one of black and white reaches 4.58:1, the worst case being
a luminance of √(1.05 × 0.05) − 0.05 ≈ 0.179, where both do.

Contrast ratio (WCAG 2): (L_lighter + 0.05) / (L_darker + 0.05), where L is the relative
luminance 0.2126·R + 0.7152·G + 0.0722·B of the linearised sRGB channels.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.color import blend_rgb
from rich.color_triplet import ColorTriplet
from rich.style import Style
from rich.terminal_theme import TerminalTheme

#: The contrast WCAG AA asks of ordinary text.
AA_CONTRAST = 4.5
#: How far Rich blends dim text into its background: the SVG export's share, and the HTML's.
DIM_BLEND_SVG, DIM_BLEND_HTML = 0.4, 0.5

#: Dark, as a projector and a terminal are; the sixteen colours are Rich's SVG export's, but
#: black and white pure, and red, blue and magenta lifted to read 4.5:1 on the background; the
#: foreground bright enough that dim text, blended half-way into the background, still does.
EXPORT_THEME = TerminalTheme(
    (20, 20, 20),
    (240, 240, 240),
    [
        (0, 0, 0),
        (0xE0, 0x6C, 0x75),
        (0x98, 0xA8, 0x4B),
        (0xD0, 0xB3, 0x44),
        (0x7A, 0x9E, 0xD0),
        (0xB8, 0x8F, 0xC0),
        (0x68, 0xA0, 0xB3),
        (255, 255, 255),
    ],
    [
        (0x9A, 0x9B, 0x99),
        (0xFF, 0x5F, 0x60),
        (0x2B, 0xB3, 0x63),
        (0xD0, 0x84, 0x42),
        (0x4D, 0xA3, 0xF0),
        (0xFF, 0x5C, 0x9A),
        (0x4F, 0xB3, 0xB0),
        (0xFD, 0xFD, 0xC5),
    ],
)


def relative_luminance(rgb: Sequence[float]) -> float:
    """WCAG's relative luminance of an sRGB colour given as 0–255 channels (0: black, 1: white)."""
    linear = [
        channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4
        for channel in (value / 255 for value in rgb[:3])
    ]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: Sequence[float], second: Sequence[float]) -> float:
    """WCAG's contrast ratio of two colours (0–255 channels), from 1 (the same) to 21."""
    darker, lighter = sorted((relative_luminance(first), relative_luminance(second)))
    return (lighter + 0.05) / (darker + 0.05)


def readable_on(background: Sequence[float]) -> str:
    """ "black" or "white", whichever has the higher contrast ratio on ``background`` (0–255
    channels): black when L > 0.179, where (L + 0.05) / 0.05 = 1.05 / (L + 0.05)."""
    black = contrast_ratio((0, 0, 0), background)
    white = contrast_ratio((255, 255, 255), background)
    return "black" if black >= white else "white"


def style_colours(
    style: Style, theme: TerminalTheme = EXPORT_THEME, *, dim_blend: float = DIM_BLEND_SVG
) -> tuple[ColorTriplet, ColorTriplet | None]:
    """The text colour and the background colour (None: the theme's own) of a terminal style,
    as Rich's exports draw it: reverse swaps the two, dim blends the text ``dim_blend`` of the
    way into the background."""
    colour = theme.foreground_color
    if style.color is not None and not style.color.is_default:
        colour = style.color.get_truecolor(theme)
    background = None
    if style.bgcolor is not None and not style.bgcolor.is_default:
        background = style.bgcolor.get_truecolor(theme, foreground=False)
    if style.reverse:
        colour, background = background or theme.background_color, colour
    if style.dim:
        colour = blend_rgb(colour, background or theme.background_color, dim_blend)
    return colour, background
