"""Seeded random embeddings: one standard-normal row per word."""

from __future__ import annotations

from attnviz.embeddings import random_embeddings


def test_random_embeddings_shape_and_unit_scale() -> None:
    X = random_embeddings([f"w{i}" for i in range(200)], 16, seed=0)
    assert X.shape == (200, 16)
    assert 0.9 < X.std() < 1.1
