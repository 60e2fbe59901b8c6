"""``attnviz generate --export``: every step's numbers in plain arrays, read back without pickle."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import attnviz
from attnviz.files import load_npz
from attnviz.generation.export import save_generation


def test_every_step_is_in_the_file_and_reads_back_equal(tmp_path: Path) -> None:
    result = attnviz.generate("j k l a b c d e a b", tokens=3, temperature=1.5, seed=4)
    path = tmp_path / "run.npz"
    save_generation(path, result)
    arrays = load_npz(path, "export")
    assert arrays["generated_ids"].tolist() == [t.choice.chosen for t in result.tokens]
    assert arrays["prompt_tokens"].tolist() == list(result.prompt_tokens)
    assert "".join(arrays["texts"].tolist()) == "".join(result.texts)
    for token in result.tokens:
        j = token.number
        np.testing.assert_array_equal(arrays[f"{j}.attention"], np.stack(token.attention))
        np.testing.assert_array_equal(arrays[f"{j}.keys"], np.stack(token.new_keys))
        assert arrays[f"{j}.cache_bytes"] == token.cache.bytes
        assert float(arrays[f"{j}.draw"]) == token.choice.draw
    assert float(arrays["temperature"]) == 1.5 and int(arrays["seed"]) == 4
