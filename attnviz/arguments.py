"""The Python API's keyword arguments checked as they enter: whole numbers, True or False,
text, a choice among an Enum's values, a list of steps. Each refusal names the argument as it
was written (``head=1.5``), as the command line's own parser names its flags."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import TypeVar

from attnviz.errors import AttnvizError

E = TypeVar("E", bound=Enum)


def whole(**values: object) -> None:
    """AttnvizError for an option that must be a whole number (or None) and is not."""
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise AttnvizError(f"{name}={value!r}: give a whole number.")


def flags(**values: object) -> None:
    """AttnvizError for an option that must be True or False and is not ("no" would count as
    true)."""
    for name, value in values.items():
        if not isinstance(value, bool):
            raise AttnvizError(f"{name}={value!r}: give True or False.")


def text(**values: object) -> None:
    """AttnvizError for an option that must be a string (or None) and is not."""
    for name, value in values.items():
        if value is not None and not isinstance(value, str):
            raise AttnvizError(f'{name}={value!r}: give a string, e.g. {name}="it".')


def steps_text(steps: object) -> str | None:
    """``steps`` as the command line's --steps: "4-6" as it is, 4 as "4", [4, 5, 6] as
    "4,5,6"."""
    if steps is None or isinstance(steps, str):
        return steps
    numbers = list(steps) if isinstance(steps, Iterable) else [steps]
    if any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
        raise AttnvizError(
            f'steps={steps!r}: give step numbers, e.g. steps="4-6" or steps=[4, 5, 6].'
        )
    return ",".join(str(number) for number in numbers)


def choice(kind: type[E], value: str | E, name: str) -> E:
    """``value`` as a member of ``kind``; AttnvizError naming the choices otherwise."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(repr(member.value) for member in kind)
        raise AttnvizError(f"{name}={value!r} is not a choice; use one of {choices}.") from None
