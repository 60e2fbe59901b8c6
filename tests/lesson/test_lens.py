"""What ``attnviz lens`` says is read off the reading: where the last layer's token becomes the top
reading and enters the top ten, and the caveat that middle layers were not trained to be read."""

from __future__ import annotations

import numpy as np

from attnviz.generation.lens import LensReading
from attnviz.lesson.blocks import Paragraph
from attnviz.lesson.lens import lens_blocks


def test_the_sentences_follow_the_ranks() -> None:
    ranks = np.array([40, 8, 12, 3, 1, 2, 1, 1])
    reading = LensReading(
        np.zeros((8, 2), dtype=int),
        np.full((8, 2), 0.5),
        ranks,
        np.linspace(0, 0.9, 8),
        position=2,
    )
    names = [("x", "y")] * 7 + [(" Paris", "y")]
    blocks = lens_blocks(reading, names, "m", ("a", "b", "c"), "the final RMSNorm")
    said = " ".join("".join(s.text for s in b.spans) for b in blocks if isinstance(b, Paragraph))
    assert "' Paris' is the top reading from layer 6 on" in said
    assert "among the ten most likely from layer 3 on" in said
    assert "at the last layer its probability is 0.900" in said
    assert "put through the final RMSNorm and the output layer" in said
    assert "The middle layers were not trained to be read this way" in said
