"""The logit lens picture: written whole in each format, with a row per layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnviz.render.figures.lens import save_lens_picture


@pytest.mark.parametrize("suffix", [pytest.param(".png", marks=pytest.mark.slow), ".svg"])
def test_the_picture_is_written_whole(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"lens{suffix}"
    probabilities = np.array([[0.5, 0.2], [0.9, 0.05], [0.99, 0.01]])
    names = [(" a", "é\\n"), (" b", " c"), (" Paris", "<|im_end|>")]
    save_lens_picture(probabilities, names, np.array([0.1, 0.5, 0.99]), "the lens", path)
    data = path.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG") and len(data) > 10_000
    else:
        text = data.decode()
        assert text.rstrip().endswith("</svg>") and "layer 2" in text and "embedding" in text
