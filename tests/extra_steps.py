"""ATTNVIZ_TEST_EXTRA_STEP=1 runs the suite with two rows more in the table of steps
(``attnviz.lesson.steps.STEPS``), as a new lesson step adds them: a plain step in each head's run
right after the tokens, which moves every later step one further, and an optional one after
FlashAttention's, labelled "c" after the step before it. Tests that name a step by its key pass
either way; a test that wrote a number would fail. tests/conftest.py calls ``install`` in
every process of the run, before any test module is imported."""

from __future__ import annotations

import os

from attnviz.lesson import steps as table
from attnviz.lesson.steps import Step

SWITCH = "ATTNVIZ_TEST_EXTRA_STEP"

#: The plain step: per head, first of the heads' run; written by this module's ``write``.
PLAIN = Step("recap", "A recap of the head's words", "a recap", per_head=True, module=__name__)
#: The optional step: shown only when --steps names "aside"; written by extra_aside_step.
OPTIONAL = Step(
    "aside", "An aside", "an aside", per_head=True, module="extra_aside_step", optional=True
)
#: The keys of the two rows.
ADDED = (PLAIN.key, OPTIONAL.key)


def switched_on() -> bool:
    """Whether this run has the two extra steps."""
    return os.environ.get(SWITCH) == "1"


def install() -> None:
    """Puts the two rows into the table (once: a second call changes nothing)."""
    rows = table.STEPS
    if PLAIN in rows:
        return
    keys = [step.key for step in rows]
    tokens, blockwise = keys.index("tokens"), keys.index("blockwise")
    table.STEPS = (
        *rows[: tokens + 1],
        PLAIN,
        *rows[tokens + 1 : blockwise + 1],
        OPTIONAL,
        *rows[blockwise + 1 :],
    )


def write(lesson: object, head: object) -> None:
    """The plain step's one sentence."""
    lesson.say("A made-up step that the table gained for this run of the tests.")  # type: ignore[attr-defined]
