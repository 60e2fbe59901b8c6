"""What writing an output may replace, and when two outputs are one file.

attnviz writes a file by renaming a new one onto its name (files.writing), which replaces the
directory entry, never what it points to. So an output name is refused, before any work, when
a rename would not do what "wrote PATH" says:

- a symbolic link: the rename would replace the link and leave its target as it was; writing
  through it instead would let a link planted in a shared folder (/tmp) aim the output at any
  file the person can write. attnviz writes to a file's own name only;
- a file with a second name (a hard link): the other names would keep the old file;
- a file owned by another user: it would become a new file of ours, its owner lost;
- anything but a regular file (a FIFO, a device): it would be replaced, not written into.

Two outputs of one run are the same file when their folders resolve to the same folder and
their names are the same (or when they are already one file under two names).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attnviz.errors import OutputProblem


def refuse_replacing(path: Path, what: str, *, fix: str = "") -> os.stat_result | None:
    """Refuse ``path`` (an output of option ``what``) unless nothing is there or it is a
    regular file of ours with one name; its status, or None when nothing is there. ``fix``
    replaces the usual way out (another name) in the message: for a file in a folder option's
    folder, say."""
    try:
        status = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise OutputProblem(f"{what} {path}: {error.strerror or error}.") from None
    if stat.S_ISDIR(status.st_mode):
        return status  # the caller names the fix (a file name in it)
    if stat.S_ISLNK(status.st_mode):
        raise OutputProblem(link_refusal(path, what, fix=fix))
    if not stat.S_ISREG(status.st_mode):
        problem = "is not a regular file"
        fix = fix or "give a file name"
    elif status.st_nlink > 1:
        problem = (
            f"has {status.st_nlink} names (hard links); writing would give this name a new "
            "file and leave the others the old one"
        )
        left = _left_by_a_killed_run(path, status)
        if left is not None:
            fix = f"remove {left}, a second name a run of attnviz stopped by SIGKILL left"
        fix = fix or "remove the other names or choose another name"
    elif hasattr(os, "geteuid") and status.st_uid != os.geteuid():
        problem = (
            f"belongs to another user (uid {status.st_uid}); writing would replace it with a "
            "file of yours"
        )
        fix = fix or "choose another name"
    else:
        return status
    raise OutputProblem(f"{what} {path} {problem}; {fix}.")


def link_refusal(path: Path, what: str, *, fix: str = "") -> str:
    """The sentence refusing ``path``, a symbolic link, as an output: where it points, whether
    that exists, and the fix."""
    missing = "" if os.path.exists(path) else ", which does not exist"
    return (
        f"{what} {path} is a symbolic link to {link_target(path)}{missing}; attnviz writes "
        "only to a file's own name, never through a link: "
        f"{fix or 'give the path it points to, or another name'}."
    )


def link_target(path: Path) -> str:
    """Where the symbolic link ``path`` points, as it is written (long ones abridged)."""
    try:
        return _abridged(os.readlink(path))
    except OSError:
        return "?"


def output_key(path: Path) -> tuple[str, str]:
    """Where ``path`` would be written: its folder with every link resolved, and its name, so
    that ph/head_1.png, ./ph/head_1.png and link-to-ph/head_1.png are one output."""
    return os.path.realpath(path.parent), path.name


def same_file(first: Path, second: Path) -> bool:
    """Whether two output paths are one file: the same place, or one existing file."""
    if output_key(first) == output_key(second):
        return True
    try:
        return os.path.samefile(first, second)  # one file by two spellings (case, say)
    except OSError:
        return False


def _left_by_a_killed_run(path: Path, status: os.stat_result) -> Path | None:
    """A .attnviz-XXXXXXXX.old beside ``path`` that is the same file: the second name kept
    while a run's outputs are renamed (files.writing), left when SIGKILL ended that run."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return None
    for name in names:
        if name.startswith(".attnviz-") and name.endswith(".old"):
            try:
                other = os.lstat(path.parent / name)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (status.st_dev, status.st_ino):
                return path.parent / name
    return None


def _abridged(text: str, keep: int = 40) -> str:
    """A long link target shown by its two ends, so the message stays one readable line."""
    return text if len(text) <= 2 * keep else f"{text[:keep]}…{text[-keep:]}"
