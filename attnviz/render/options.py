"""How a view is asked to render a trace: the lesson's options and the pictures' options.

Light on purpose: the command line declares its options with these types, and ``attnviz
--help`` imports them without the renderers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import NamedTuple

from attnviz.errors import AttnvizError, option, quoted

MAX_DECIMALS = 8

#: The widest terminal the lesson is laid out for, in columns: COLUMNS=100000000 would otherwise
#: pad every line to a hundred million spaces, while no table needs more than a few hundred.
MAX_WIDTH = 1000

#: The lesson's steps by number: 1 tokens and X; 2 to 6 for each head (Q, K and V; the scores;
#: the scaling; the softmax; Z); 7 Concat and W_O; and, when a word is followed, its focus view,
#: which comes last and is numbered next.
LAST_STEP = 7
FOCUS_STEP = 8

_STEPS_SPEC = re.compile(r"(\d+)(?:-(\d+))?", re.ASCII)


@dataclass(frozen=True)
class LessonOptions:
    """How the lesson is told."""

    decimals: int = 2  # digits after the point in tables; worked examples use at least 2
    show_weights: bool = False  # also print W_Q, W_K, W_V and W_O
    steps: str | None = None  # only these steps, as "4-6" or "1,3-5"; None: every step

    def __post_init__(self) -> None:
        if not 0 <= self.decimals <= MAX_DECIMALS:
            raise AttnvizError(
                f"{option('decimals', self.decimals)} is out of range; use 0 to {MAX_DECIMALS}."
            )
        if self.steps is not None:
            parse_steps(self.steps)  # refuses a malformed list before any work is done

    @property
    def step_numbers(self) -> frozenset[int] | None:
        """The steps to show, or None for every step."""
        return None if self.steps is None else parse_steps(self.steps)


def parse_steps(spec: str) -> frozenset[int]:
    """ "1,3-5" -> {1, 3, 4, 5}: step numbers and ranges of them, separated by commas.

    Raises AttnvizError for anything else, and for a step that no lesson has (past
    FOCUS_STEP); whether this lesson has a focus view, step 8, is for the lesson to say.
    """
    steps: set[int] = set()
    given = option("steps", metavar=quoted(spec))
    for part in spec.replace(" ", "").split(","):
        match = _STEPS_SPEC.fullmatch(part)
        if match is None:
            if not spec.strip():
                raise AttnvizError(
                    f"{option('steps')} is empty; give step numbers, e.g. 4-6 or 1,3-5."
                )
            if not part:
                raise AttnvizError(f"{given} has an empty item; give e.g. 4-6 or 1,3-5.")
            raise AttnvizError(
                f"{given}: {part!r} is neither a step number nor a range of them; "
                "give e.g. 4-6 or 1,3-5."
            )
        for digits in match.groups(default=match.group(1)):
            # Compared as text first: int() of thousands of digits would itself fail.
            if len(digits) > 2 or not 1 <= int(digits) <= FOCUS_STEP:
                raise AttnvizError(
                    f"{given}: there is no step {digits}; the steps are 1 to "
                    f"{LAST_STEP}, and {FOCUS_STEP} is the focus view."
                )
        first, last = (int(digits) for digits in match.groups(default=match.group(1)))
        if first > last:
            raise AttnvizError(f"{given}: the range {part!r} runs backwards; write {last}-{first}.")
        steps.update(range(first, last + 1))
    return frozenset(steps)


class Style(str, Enum):
    """How heatmap draws the weights."""

    grid = "grid"  # a heatmap per head
    lines = "lines"  # the classic illustration: lines from the focus word, one colour per head


class Scale(str, Enum):
    """What the colours of a heatmap span."""

    fixed = "fixed"  # 0 to 1: the same colour is the same weight in every picture
    row = "row"  # each row from 0 to its own largest weight: where each word looks most
    auto = "auto"  # 0 to the largest weight shown


class ImageOptions(NamedTuple):
    """The pictures asked for, besides what the view shows."""

    style: Style = Style.grid
    cmap: str = "viridis"  # a matplotlib colormap name
    all_layers: bool = False  # every layer and head in one grid
    per_head: Path | None = None  # also one image per head in this folder
    scale: Scale | None = None  # None: fixed up to 16 words, else auto (render/figures.py)
