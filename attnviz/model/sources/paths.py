"""Where a model is looked for: the user's home folder, which a container's unknown user may
not have, and a name or path as a message shows it."""

from __future__ import annotations

from pathlib import Path

from attnviz.tokens import printable


def home_folder() -> Path | None:
    """The user's home folder; None when there is none to find: HOME unset and no entry for
    the user in the user database (a container run with --user as an unknown user id)."""
    try:
        return Path.home()
    except (RuntimeError, KeyError, OSError):
        return None


def shortened(text: str) -> str:
    """``text`` as a message shows it: printable, and cut in the middle past 48 characters."""
    return printable(text if len(text) <= 48 else f"{text[:24]}…{text[-24:]}")
