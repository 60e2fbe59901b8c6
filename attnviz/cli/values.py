"""How the command line reads an option's value: text as it was typed, whole numbers of ASCII
digits, a head's number or "all", an output file that names no folder. Each parser is named
after the type --help shows (<int>, <path>)."""

# No `from __future__ import annotations`: Typer reads the options' annotations on every run.
import os
from pathlib import Path

import typer

from attnviz.arguments import MAX_DIGITS, digits, folder_ending
from attnviz.errors import clipped
from attnviz.selection import ALL_HEADS


def typed_text(value: str | None) -> str | None:
    """Text from the command line as it was typed. Under a locale that is not UTF-8 (LC_ALL=C
    without Python's UTF-8 mode) Python keeps each byte of "é" that it cannot decode as a
    surrogate (PEP 383); when the bytes are UTF-8, as terminals send them, they are decoded
    here, so that "café" is one word. Bytes that are not UTF-8 are kept, and shown escaped."""
    if value is None or not any("\udc80" <= character <= "\udcff" for character in value):
        return value
    try:
        return os.fsencode(value).decode("utf-8")
    except UnicodeError:
        return value


def whole_number(value: str | int) -> int:
    """A whole number as the command line takes it: an optional sign, then the digits 0–9, at
    most MAX_DIGITS of them. click's own INT is Python's int(), which reads "١٢" (Arabic-Indic
    digits) as 12, "1_000" as 1000 and " 7 " as 7, and echoes a 100,000-digit value whole."""
    if isinstance(value, int):  # a default, not typed
        return value
    unsigned = value[1:] if value[:1] in ("+", "-") else value
    if not digits(unsigned):
        raise typer.BadParameter(f"{clipped(value)!r} is not a valid integer (digits 0-9).")
    if len(unsigned) > MAX_DIGITS:
        raise typer.BadParameter(
            f"{clipped(value)!r} has {len(unsigned):,} digits; no option takes a number of "
            f"more than {MAX_DIGITS}."
        )
    return int(value)


# --help names an option's type after its parser: <int>, as for click's own INT.
whole_number.__name__ = "int"


def head_choice(value: str | int) -> int | str:
    """--head: a head's number, as whole_number reads it, or all."""
    if value == ALL_HEADS or isinstance(value, int):
        return value
    if not digits(value):
        raise typer.BadParameter(f"{clipped(value)!r}: give a head's number, from 1, or all.")
    return whole_number(value)


head_choice.__name__ = "int|all"


def file_path(value: str | Path) -> Path:
    """An output file as the command line takes it (-o, --svg, --html, --export): refused when
    it ends in / (x.png/), which names a folder; click's own PATH would drop the / and write
    x.png. "" is kept as "", as path_text keeps it."""
    if isinstance(value, Path) or value == "":  # a default, not typed; or empty
        return value  # type: ignore[return-value]  # "" never reaches a command
    problem = folder_ending(value)
    if problem is not None:
        raise typer.BadParameter(f"{problem}.")
    return Path(value)


file_path.__name__ = "path"


def path_text(value: str | Path) -> Path:
    """A path option's value (a file to read, a folder) as typed: a Path, as click's own PATH
    gives it, but for "" (an unset shell variable, most often): kept as "", which the command's
    options refuse by the option's name (arguments.empty_path), where click's PATH would make
    it Path("."), the working folder."""
    if isinstance(value, Path) or value == "":
        return value  # type: ignore[return-value]  # "" never reaches a command
    return Path(value)


path_text.__name__ = "path"
