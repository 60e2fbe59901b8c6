"""X and where it came from, as every embeddings reader returns it; and the widest X any accepts."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from attnviz.arrays import FloatArray
from attnviz.config import MAX_D_MODEL
from attnviz.errors import FileProblem
from attnviz.provenance import EmbeddingsOrigin


class Embeddings(NamedTuple):
    """X and where it came from."""

    X: FloatArray  # [n, d_model]
    origin: EmbeddingsOrigin  # how X was made, as the trace's provenance records it
    notes: tuple[str, ...] = ()  # things the user should be told


def too_wide(path: Path, width: int | str, where: str = "", verb: str = "has") -> FileProblem:
    """Vectors wider than any d_model attnviz runs, refused in every format alike.

    ``where`` names the place that says so (", line 1: its header", verb "declares").
    """
    return FileProblem(
        f"Embeddings file {path}{where} {verb} vectors of {width} numbers; attnviz takes at most "
        f"{MAX_D_MODEL} (its largest d_model), so use vectors of at most {MAX_D_MODEL} dimensions."
    )
