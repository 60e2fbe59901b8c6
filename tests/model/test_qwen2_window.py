"""A Qwen2 checkpoint's own sliding window, against Hugging Face transformers.

tests/model/make_qwen2_window_golden.py gave tiny_qwen2 use_sliding_window, a window of 3 tokens
and max_window_layers 1 (no layer_types, as checkpoints before transformers 5), and stored what
transformers' Qwen2Model computes: layer 1 reads every earlier key, layer 2 only the last three.
attnviz must give the same attention weights and hidden states after every layer.

Tolerances: float32 1e-5, as for the plain checkpoint (test_llama.py): both sides add the same
products in other orders (BLAS, torch), a few float32 roundings of numbers of size 1 to 10;
float64 1e-10, the reference computed in float64 throughout (make_llama.float64_reference).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("safetensors", reason="needs the optional extra attnviz[model]")
pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")

from attnviz.attention import causal_mask, sliding_window_mask  # noqa: E402
from attnviz.model.run import trace_model  # noqa: E402

HERE = Path(__file__).resolve().parent
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(HERE / "golden_qwen2_window.npz", allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def windowed(tmp_path_factory: pytest.TempPathFactory, golden: dict[str, np.ndarray]) -> Path:
    """tiny_qwen2 with the config.json changes the golden file was made with."""
    folder = tmp_path_factory.mktemp("qwen2") / "tiny_qwen2_window"
    shutil.copytree(HERE / "tiny_qwen2", folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config |= json.loads(str(golden["meta_window"]))
    config.pop("layer_types", None)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", [0, 1])
def test_the_models_own_window_matches_transformers_in_every_layer(
    golden: dict[str, np.ndarray], windowed: Path, index: int, dtype: str
) -> None:
    run = trace_model(str(golden[f"s{index}_sentence"]), str(windowed), dtype=dtype)
    assert list(run.encoding.ids) == golden[f"s{index}_input_ids"].tolist()
    layers = run.trace.layers
    n = len(run.trace.tokens)
    # transformers' windows, layer by layer (0: none): layer 2 alone, 3 tokens, shorter than n
    window = int(golden["meta_layer_windows"][1])
    assert golden["meta_layer_windows"].tolist() == [0, window] and 1 < window < n
    assert [layer.window for layer in layers] == [None, window]
    np.testing.assert_array_equal(layers[0].mask, causal_mask(n))
    np.testing.assert_array_equal(layers[1].mask, sliding_window_mask(n, window))
    tolerance = TOLERANCE[dtype]
    weights = np.stack([layer.weights for layer in layers])
    expected = golden[f"s{index}_{dtype}_attentions"]
    assert (expected[1][:, ~sliding_window_mask(n, window)] == 0).all()  # the reference's window
    np.testing.assert_allclose(weights, expected, rtol=0, atol=tolerance)
    np.testing.assert_allclose(
        run.trace.hidden_states, golden[f"s{index}_{dtype}_hidden_states"], rtol=0, atol=tolerance
    )


def test_the_window_changes_the_numbers_it_is_checked_on(golden: dict[str, np.ndarray]) -> None:
    """The same sentence through the checkpoint without its window (golden_qwen2.npz, the
    same weights): layer 1 the same, layer 2's weights far apart, so the comparison above
    would fail had attnviz ignored the window."""
    with np.load(HERE / "golden_qwen2.npz", allow_pickle=False) as data:
        plain = data["s0_float64_attentions"]
        assert data["s0_sentence"] == golden["s0_sentence"]
    windowed = golden["s0_float64_attentions"]
    np.testing.assert_allclose(windowed[0], plain[0], rtol=0, atol=1e-12)
    assert np.abs(windowed[1] - plain[1]).max() > 0.1
