"""The optional step of ATTNVIZ_TEST_EXTRA_STEP=1 (tests/extra_steps.py): one sentence."""

from __future__ import annotations


def write(lesson: object, head: object) -> None:
    """The optional step's one sentence."""
    lesson.say("A made-up step shown only when --steps names it.")  # type: ignore[attr-defined]
