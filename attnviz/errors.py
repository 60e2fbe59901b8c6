"""One exception type for every problem a person can fix, the exit codes the CLI uses, and how
a message names an option: as the command line's flag or as the Python API's keyword argument."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum, IntEnum
from pathlib import PurePath
from typing import Any


class ExitStatus(IntEnum):
    """Exit codes of the ``attnviz`` command, named so tests and scripts can rely on them."""

    SUCCESS = 0
    ERROR = 1  # an unexpected failure: a bug, please report it
    USAGE = 2  # the command line itself is malformed (Typer's own code for this)
    BAD_INPUT = 3  # a sentence, size or option value that attnviz cannot use
    BAD_FILE = 4  # a file that is missing, unreadable, corrupt or of the wrong shape
    CANNOT_WRITE = 5  # an output path that cannot be written
    HUNG_UP = 129  # SIGHUP: the terminal closed (128 + 1, as shells report it)
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
    PIPE_CLOSED = 141  # standard output's reader stopped reading (| head): 128 + SIGPIPE (13)
    TERMINATED = 143  # SIGTERM: kill, a service manager, a CI timeout (128 + 15)


class AttnvizError(Exception):
    """A problem with the user's input, carrying the one sentence that tells them how to fix it.

    ``str(error)`` is that sentence; ``error.exit_status`` is the exit code the CLI uses.
    """

    def __init__(self, message: str, exit_status: ExitStatus = ExitStatus.BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.exit_status = exit_status


class FileProblem(AttnvizError):
    """An input file that is missing, unreadable, corrupt or holds the wrong shapes."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitStatus.BAD_FILE)


class OutputProblem(AttnvizError):
    """An output path that cannot be written (missing folder, no permission, unknown extension)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitStatus.CANNOT_WRITE)


# -- naming an option ---------------------------------------------------------------------------

#: Whether the command line is running: messages then name its flags (``--head 3``); in Python
#: they name the API's keyword arguments (``head=3``). Set by ``command_line()`` only.
_ON_COMMAND_LINE: ContextVar[bool] = ContextVar("attnviz_on_command_line", default=False)

#: Keyword arguments whose flag is not their name with dashes for underscores.
_FLAGS = {"d_ks": "--dk"}

_UNSET: Any = object()


@contextmanager
def command_line() -> Iterator[None]:
    """While the command line runs a command: every ``option()`` names a flag."""
    token = _ON_COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _ON_COMMAND_LINE.reset(token)


def option(name: str, value: object = _UNSET, *, metavar: str | None = None) -> str:
    """An option as the person wrote it, for a message: ``option("head", 3)`` is ``--head 3``
    on the command line and ``head=3`` in Python; ``option("focus", "the:2")`` is
    ``--focus the:2`` or ``focus="the:2"``; ``option("heads")`` is ``--heads`` or ``heads``;
    ``option("layer", metavar="N")`` is ``--layer N`` or ``layer=N``. ``name`` is the API's
    keyword argument; a flag is the same name with dashes (``pad_to``: ``--pad-to``)."""
    if _ON_COMMAND_LINE.get():
        flag = _FLAGS.get(name, "--" + name.replace("_", "-"))
        if metavar is not None:
            return f"{flag} {metavar}"
        if value is _UNSET or value is True:
            return flag
        return f"{flag} {_typed(value)}"
    if metavar is not None:
        return f"{name}={metavar}"
    return name if value is _UNSET else f"{name}={_literal(value)}"


def spelled(command_line: str, python: str) -> str:
    """Words that differ beyond an option's name: an example, ``--dk 4,16,64`` or
    ``d_ks=[4, 16, 64]``."""
    return command_line if _ON_COMMAND_LINE.get() else python


def quoted(value: str) -> str:
    """A value the command line shows quoted (``--steps '1,,3'``), as Python shows any text."""
    return repr(clipped(value)) if _ON_COMMAND_LINE.get() else _literal(value)


def _typed(value: object) -> str:
    """A value as typed on the command line: 3, the:2, sinusoidal, lesson.html."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return shown_number(value)
    return clipped(str(value))


def _literal(value: object) -> str:
    """A value as written in Python: 3, True, "the:2", "sinusoidal"."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, (str, PurePath)):
        import json  # for a message only: not at start-up

        return json.dumps(clipped(str(value)), ensure_ascii=False)
    return shown_value(value)


# -- quoting what a person gave -----------------------------------------------------------------

#: The longest value a message quotes whole: a path in a deep folder, a long word. Anything
#: longer (a 100,000-digit --heads, a page pasted as a focus word) is quoted by its first
#: QUOTED_CHARACTERS characters and "…": enough to recognise it, never a page of it.
LONGEST_QUOTED = 200
QUOTED_CHARACTERS = 40

#: Whole numbers above this many digits are shown by their size: Python refuses to turn one of
#: more than 4,300 digits into text, and nobody reads one of 40.
_SHOWN_DIGITS = 40


def clipped(text: str) -> str:
    """``text`` as a message quotes it: whole up to LONGEST_QUOTED characters, else its first
    QUOTED_CHARACTERS and "…"."""
    return text if len(text) <= LONGEST_QUOTED else text[:QUOTED_CHARACTERS] + "…"


#: How long a list a message shows: its items (each clipped to QUOTED_CHARACTERS) up to about
#: this many characters, then "… and N more" — a few of a vocabulary, never the whole of it.
LISTED_CHARACTERS = 120


def listed(
    items: Iterable[object], separator: str = ", ", *, form: Callable[[str], str] = str
) -> str:
    """Items for a message: the first few, each clipped, then written by ``form`` (``repr``:
    'it'), as many as fit in LISTED_CHARACTERS (one at least), then "… and N more"."""
    every = [str(item) for item in items]
    shown: list[str] = []
    for item in every:
        text = form(item if len(item) <= QUOTED_CHARACTERS else item[:QUOTED_CHARACTERS] + "…")
        if shown and len(separator.join([*shown, text])) > LISTED_CHARACTERS:
            break
        shown.append(text)
    rest = len(every) - len(shown)
    if rest:
        return f"{separator.join(shown)}{separator.rstrip()} … and {rest:,} more"
    return separator.join(shown)


def shown_number(value: int) -> str:
    """A whole number as a message shows it: 2048, or "a number of about 5,000 digits"."""
    if value.bit_length() <= _SHOWN_DIGITS * 3:  # 2¹²⁰ has 37 digits: always few enough
        return str(value)
    digits = int(value.bit_length() * 0.30103) + 1  # log10(2): the digits of 2^bits
    return f"{'-' if value < 0 else ''}a number of about {digits:,} digits"


def shown_value(value: object) -> str:
    """Any value as a message shows it, as Python writes it, clipped: ``'abc'``, ``1.5``,
    a huge whole number by its size. Never fails, whatever the value's repr does."""
    if isinstance(value, int) and not isinstance(value, bool):
        return shown_number(value)
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if type(value).__module__.startswith("numpy") and isinstance(shape, tuple) and shape:
        # An array by its kind and shape: its repr is lines of numbers, up to a megabyte.
        return f"<{type(value).__name__} of {dtype}, shape {list(shape)}>"
    try:
        text = repr(value)
    except Exception:  # a repr that fails says nothing the type does not
        text = f"<{type(value).__name__}>"
    return clipped(" ".join(text.split()) if "\n" in text else text)  # one line


def shortened(message: str, typed: Iterable[str | PurePath]) -> str:
    """A message about the command line with every long value it quotes (a 100,000-digit
    --heads, a path or focus word of a page) clipped, and any other run of more than
    LONGEST_QUOTED characters without a space (a path made from such a value) likewise."""
    for value in sorted({str(value) for value in typed}, key=len, reverse=True):
        if len(value) > LONGEST_QUOTED:
            message = message.replace(repr(value), repr(clipped(value)))
            message = message.replace(value, clipped(value))
    return re.sub(rf"\S{{{LONGEST_QUOTED + 1},}}", lambda run: clipped(run.group()), message)
