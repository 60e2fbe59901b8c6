"""The record every reader returns, and the one width limit every format shares."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attnviz.config import MAX_D_MODEL
from attnviz.embeddings import Embeddings
from attnviz.embeddings.record import too_wide
from attnviz.provenance import EmbeddingsKind, EmbeddingsOrigin


def test_embeddings_say_nothing_unless_told() -> None:
    embeddings = Embeddings(np.zeros((3, 4)), EmbeddingsOrigin(EmbeddingsKind.GIVEN))
    assert embeddings.notes == ()


def test_too_wide_names_the_width_the_limit_and_where_it_is_said() -> None:
    assert too_wide(Path("v.npy"), MAX_D_MODEL + 1).message == (
        f"Embeddings file v.npy has vectors of {MAX_D_MODEL + 1} numbers; attnviz takes at most "
        f"{MAX_D_MODEL} (its largest d_model), so use vectors of at most {MAX_D_MODEL} dimensions."
    )
    header = too_wide(Path("v.vec"), "123456… (40 digits)", ", line 1: its header", "declares")
    assert header.message.startswith(
        "Embeddings file v.vec, line 1: its header declares vectors of 123456… (40 digits) numbers;"
    )
