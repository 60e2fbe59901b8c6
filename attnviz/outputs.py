"""The files a command writes: checked before any work is done, named the same way each time.

``check_*`` raise OutputProblem with the fix before anything is computed, so a bad path costs
nothing and leaves nothing behind; writing itself is atomic (attnviz.files.atomic_write), and a
command's outputs together are all or nothing (attnviz.files.staged_writes).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnviz.errors import OutputProblem
from attnviz.files import (
    check_output_path,
    check_path_length,
    check_writable_folder,
    staged_writes,
)
from attnviz.trace import AttentionTrace
from attnviz.trace_files import EXPORT_EXTENSIONS, export_layers, export_trace

IMAGE_EXTENSIONS = (".png", ".svg", ".pdf")


def check_image(path: Path, what: str = "--output") -> str:
    """An image path attnviz can write (.png, .svg or .pdf); its extension."""
    return check_output_path(path, IMAGE_EXTENSIONS, what)


def check_export(path: Path) -> str:
    """A trace export path attnviz can write (.npz or .json); its extension."""
    return check_output_path(path, EXPORT_EXTENSIONS, "--export")


def check_folder(folder: Path, what: str) -> None:
    """Refuse a folder that cannot be written (or created), before any image is drawn."""
    check_path_length(folder / "head_0000.tmp", what)  # room for the files it will hold
    try:
        exists, is_folder = folder.exists(), folder.is_dir()
    except OSError as error:
        raise OutputProblem(f"{what} {folder}: {error.strerror or error}.") from None
    if exists and not is_folder:
        raise OutputProblem(f"{what} {folder} is a file; give a folder name.")
    check_writable_folder(folder if exists else folder.parent, what, folder)


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
