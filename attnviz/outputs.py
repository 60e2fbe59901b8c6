"""The files a command writes: checked before any work is done, named the same way each time.

``check_*`` raise OutputProblem with the fix before anything is computed, so a bad path costs
nothing and leaves nothing behind; ``check_apart`` refuses two outputs of one run that are one
file, a folder option's files known by their names (FolderOutput). Writing itself is atomic
(attnviz.files.atomic_write), and a command's outputs together are all or nothing
(attnviz.files.staged_writes).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from attnviz.errors import OutputProblem
from attnviz.files import (
    check_output_path,
    check_path_length,
    check_writable_folder,
    staged_writes,
)
from attnviz.files.replacing import link_target, refuse_replacing, same_file
from attnviz.files.working_folder import refuse_if_gone
from attnviz.files.writing import kind_of_path
from attnviz.trace import AttentionTrace
from attnviz.trace_files import EXPORT_EXTENSIONS, export_layers, export_trace

IMAGE_EXTENSIONS = (".png", ".svg", ".pdf")


def check_image(path: Path, what: str = "--output") -> str:
    """An image path attnviz can write (.png, .svg or .pdf); its extension."""
    return check_output_path(path, IMAGE_EXTENSIONS, what)


def check_export(path: Path) -> str:
    """A trace export path attnviz can write (.npz or .json); its extension."""
    return check_output_path(path, EXPORT_EXTENSIONS, "--export")


class FolderOutput(NamedTuple):
    """A folder option (--slides, --per-head, --save) and the names of the files it writes."""

    folder: Path
    what: str
    names: re.Pattern[str]  # matched against a file name in lower case


def check_folder(folder: Path, what: str, names: re.Pattern[str] | None = None) -> None:
    """Refuse a folder that cannot be written (or created), before any image is drawn; with
    ``names``, also any file there by one of those names that writing may not replace (a link,
    a file with other names or another owner: files.replacing)."""
    refuse_if_gone(folder, what)
    check_path_length(folder / "head_0000.tmp", what)  # room for the files it will hold
    if os.path.islink(folder) and not os.path.exists(folder):
        # mkdir would fail on the link at the end, after the whole lesson was printed.
        raise OutputProblem(
            f"{what} {folder} is a symbolic link to {link_target(folder)}, which does not "
            "exist; create that folder or give another."
        )
    try:
        exists, is_folder = folder.exists(), folder.is_dir()
    except OSError as error:
        raise OutputProblem(f"{what} {folder}: {error.strerror or error}.") from None
    if exists and not is_folder:
        kind = kind_of_path(folder.stat().st_mode)
        raise OutputProblem(f"{what} {folder} is {kind}, not a folder; give a folder name.")
    check_writable_folder(folder if exists else folder.parent, what, folder)
    if exists and names is not None:
        _check_named_files(folder, what, names)


def _check_named_files(folder: Path, what: str, names: re.Pattern[str]) -> None:
    """Refuse any entry of ``folder`` by one of ``names`` that writing may not replace."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError as error:
        raise OutputProblem(f"{what} {folder}: {error.strerror or error}.") from None
    fix = "remove it or give another folder"
    for name in entries:
        if names.fullmatch(name.lower()):
            status = refuse_replacing(folder / name, what, fix=fix)
            if status is not None and stat.S_ISDIR(status.st_mode):
                raise OutputProblem(
                    f"{what} {folder / name} is a folder where a file is to be written; {fix}."
                )


def per_head_folder(folder: Path, extension: str) -> FolderOutput:
    """--per-head: the folder and its files' names (head_1.png …, the picture's extension)."""
    return FolderOutput(folder, "--per-head", re.compile(rf"head_\d+{re.escape(extension)}"))


def check_apart(
    files: Iterable[tuple[Path | None, str]], folders: Iterable[FolderOutput | None] = ()
) -> None:
    """Refuse, before any work, two outputs of one run that are one file: two options naming
    the same path (resolved: ./a.svg is a.svg), or a file named as one a folder option writes
    there (-o ph/head_1.png with --per-head ph); else the last written would silently replace
    the first, and "wrote" be said of both."""
    given = [(path, what) for path, what in files if path is not None]
    kept = [folder for folder in folders if folder is not None]
    for path, what in [*given, *((folder.folder, folder.what) for folder in kept)]:
        refuse_if_gone(path, what)  # realpath below would fail on it
    for index, (path, what) in enumerate(given):
        for earlier, earlier_what in given[:index]:
            if same_file(earlier, path):
                raise OutputProblem(
                    f"{earlier_what} {earlier} and {what} {path} are the same file; give each "
                    "output its own name."
                )
        for folder in kept:
            same_place = os.path.realpath(path.parent) == os.path.realpath(folder.folder)
            if same_place and folder.names.fullmatch(path.name.lower()):
                raise OutputProblem(
                    f"{what} {path} is one of the files {folder.what} {folder.folder} writes; "
                    "give it another name or another folder."
                )


def make_folder(folder: Path) -> None:
    """Create ``folder`` if it is missing (its parent exists: check_folder said so); within a
    run's staged writes, it is removed again if the run fails (files.staged_writes)."""
    with staged_writes() as outputs:
        outputs.make_folder(folder)


def per_head_paths(folder: Path, heads: Sequence[int], n_heads: int, extension: str) -> list[Path]:
    """One file per head in ``folder``: head_1.png … head_8.png, zero-padded to sort in order
    (head_01 … head_12). ``heads`` are numbered from 0, the names from 1."""
    width = len(str(n_heads))
    return [folder / f"head_{head + 1:0{width}d}{extension}" for head in heads]


def write_export(layers: Sequence[AttentionTrace], path: Path) -> None:
    """A random layer as it is; a pretrained model's layers with a leading layer axis."""
    if layers[0].provenance.weights.is_pretrained:
        export_layers(layers, path)
    else:
        export_trace(layers[0], path)
