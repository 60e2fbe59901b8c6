"""Trace export: the exact keys and dtypes, and export -> --weights reproduces the trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.config import AttentionConfig
from attnviz.errors import FileProblem
from attnviz.trace import ARRAY_KEYS
from attnviz.trace_files import export_trace
from attnviz.weights import load_weights

SENTENCE = "The animal didn't cross the street because it was too tired"
EXPORT_KEYS = {"tokens", *ARRAY_KEYS}


def shapes(n: int, h: int, d_model: int) -> dict[str, tuple[int, ...]]:
    d_k = d_model // h
    return {
        "tokens": (n,),
        "X": (n, d_model),
        "W_Q": (h, d_model, d_k),
        "W_K": (h, d_model, d_k),
        "W_V": (h, d_model, d_k),
        "W_O": (h * d_k, d_model),
        "Q": (h, n, d_k),
        "K": (h, n, d_k),
        "V": (h, n, d_k),
        "scores": (h, n, n),
        "scaled": (h, n, n),
        "weights": (h, n, n),
        "Z": (h, n, d_k),
        "concat": (n, h * d_k),
        "output": (n, d_model),
    }


def test_npz_export_has_exactly_the_documented_keys_shapes_and_dtypes(tmp_path: Path) -> None:
    trace = attnviz.trace_attention(SENTENCE, config=AttentionConfig(d_model=12, n_heads=3))
    export_trace(trace, tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as data:
        assert set(data.files) == EXPORT_KEYS | {"config"}
        config = json.loads(str(data["config"]))  # JSON text, read without pickle
        assert config["provenance"]["weights"] == {"kind": "random", "seed": 0}
        for key, shape in shapes(11, 3, 12).items():
            assert data[key].shape == shape, key
            expected_kind = "U" if key == "tokens" else "f"  # config: checked above
            assert data[key].dtype.kind == expected_kind, key
            if key != "tokens":
                assert data[key].dtype == np.float64
                np.testing.assert_array_equal(data[key], getattr(trace, key))
        assert data["tokens"].tolist() == list(trace.tokens)
    assert not list(tmp_path.glob(".*tmp"))


def test_json_export_has_the_same_keys_plus_config_and_exact_floats(tmp_path: Path) -> None:
    trace = attnviz.trace_attention(SENTENCE)
    export_trace(trace, tmp_path / "t.json")
    document = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert set(document) == EXPORT_KEYS | {"config"}
    assert document["config"]["d_model"] == 8 and document["config"]["n_heads"] == 2
    assert document["config"]["d_k"] == 4 and document["config"]["seed"] == 0
    assert document["tokens"] == list(trace.tokens)
    for key in ARRAY_KEYS:
        np.testing.assert_array_equal(np.array(document[key]), getattr(trace, key))


@pytest.mark.parametrize("extension", [".npz", ".json"])
def test_export_then_weights_reproduces_the_trace_exactly(tmp_path: Path, extension: str) -> None:
    original = attnviz.trace_attention(
        SENTENCE, config=AttentionConfig(d_model=16, n_heads=4, seed=9)
    )
    path = tmp_path / f"trace{extension}"
    export_trace(original, path)
    # A different seed changes nothing the weights file fixes; X is fixed by passing it back.
    again = attnviz.trace_attention(
        SENTENCE, embeddings=path if extension == ".npz" else original.X, weights=path
    )
    for key in ARRAY_KEYS:
        np.testing.assert_array_equal(getattr(again, key), getattr(original, key), err_msg=key)


def test_weights_file_errors(tmp_path: Path) -> None:
    np.savez(tmp_path / "partial.npz", W_Q=np.ones((2, 8, 4)))
    with pytest.raises(FileProblem, match="lacks W_K, W_V, W_O"):
        load_weights(tmp_path / "partial.npz")
    np.savez(
        tmp_path / "shapes.npz",
        W_Q=np.ones((2, 8, 4)),
        W_K=np.ones((2, 8, 4)),
        W_V=np.ones((2, 8, 4)),
        W_O=np.ones((8, 7)),
    )
    with pytest.raises(FileProblem, match=r"W_O has shape \[8, 7\]"):
        load_weights(tmp_path / "shapes.npz")
    np.savez(
        tmp_path / "nan.npz",
        W_Q=np.full((2, 8, 4), np.nan),
        W_K=np.ones((2, 8, 4)),
        W_V=np.ones((2, 8, 4)),
        W_O=np.ones((8, 8)),
    )
    with pytest.raises(FileProblem, match="W_Q .* NaN"):
        load_weights(tmp_path / "nan.npz")
    (tmp_path / "w.txt").write_text("x", encoding="utf-8")
    with pytest.raises(FileProblem, match="use an .npz"):
        load_weights(tmp_path / "w.txt")
