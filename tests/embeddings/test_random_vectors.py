"""Seeded random embeddings: one standard-normal row per word."""

from __future__ import annotations

import pytest

from attnviz.embeddings import random_embeddings


def test_random_embeddings_shape_and_unit_scale() -> None:
    X = random_embeddings([f"w{i}" for i in range(200)], 16, seed=0)
    assert X.shape == (200, 16)
    assert 0.9 < X.std() < 1.1


@pytest.mark.parametrize("count", [0, 513, 100_000])
def test_random_embeddings_takes_as_many_tokens_as_a_sentence(count: int) -> None:
    """At most MAX_TOKENS rows, refused before any is drawn: 100,000 × 2048 would be 1.6 GB."""
    from attnviz.errors import AttnvizError

    with pytest.raises(AttnvizError):
        random_embeddings(["a"] * count, 2048, 0)
