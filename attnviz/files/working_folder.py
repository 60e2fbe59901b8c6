"""The working folder a relative path is read from or written in, which may no longer exist:
deleted, or its disk gone, while the shell was still in it. Every relative path then names
nothing (a file cannot be made in a deleted folder), and Python's own way of finding out is a
FileNotFoundError from os.getcwd deep inside the work: so it is asked first, in one sentence."""

from __future__ import annotations

import os
from pathlib import PurePath

from attnviz.errors import AttnvizError, FileProblem, OutputProblem


def working_folder_exists() -> bool:
    """Whether the process's working folder still exists (os.getcwd can find its path)."""
    try:
        os.getcwd()
    except OSError:  # FileNotFoundError: deleted; PermissionError: a folder above unreadable
        return False
    return True


def gone(path: PurePath | str, what: str, *, reading: bool = False) -> AttnvizError | None:
    """The problem with relative ``path`` (of option ``what``) when the working folder no
    longer exists, a FileProblem to read it (exit 4) or an OutputProblem to write it (exit 5);
    None for an absolute path or a working folder that exists."""
    if PurePath(path).is_absolute() or working_folder_exists():
        return None
    problem = FileProblem if reading else OutputProblem
    return problem(
        f"{what} {path}: the working folder no longer exists (deleted or moved while the shell "
        "was in it); cd to a folder that exists, or give an absolute path."
    )


def refuse_if_gone(path: PurePath | str, what: str, *, reading: bool = False) -> None:
    """Raise ``gone``'s problem, if there is one."""
    problem = gone(path, what, reading=reading)
    if problem is not None:
        raise problem
