"""Exports of traces with rotary positions and grouped-query attention: what the file says,
that it reads back exactly, and that its weights run again with --weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attnviz.core import trace_with_options
from attnviz.errors import FileProblem
from attnviz.options import TraceOptions
from attnviz.trace import AttentionTrace
from attnviz.trace_files import export_layers, export_trace, load_trace

SENTENCE = "The cat sat on the mat"


@pytest.fixture(scope="module")
def shared_rope() -> AttentionTrace:
    trace, _ = trace_with_options(
        SENTENCE, TraceOptions(heads=4, d_model=16, kv_heads=2, positions="rope")
    )
    return trace


@pytest.mark.parametrize("extension", [".npz", ".json"])
def test_a_rope_gqa_trace_reads_back_exactly(
    shared_rope: AttentionTrace, tmp_path: Path, extension: str
) -> None:
    path = tmp_path / f"trace{extension}"
    export_trace(shared_rope, path)
    (read,) = load_trace(path)
    assert read.arrays().keys() == shared_rope.arrays().keys()
    for key, array in shared_rope.arrays().items():
        np.testing.assert_array_equal(read.arrays()[key], array, err_msg=key)
    assert read.rope == shared_rope.rope and read.config == shared_rope.config
    assert read.n_kv_heads == 2 and read.kv_head(3) == 1


def test_the_export_says_which_heads_share_keys_and_values(
    shared_rope: AttentionTrace, tmp_path: Path
) -> None:
    path = tmp_path / "trace.json"
    export_trace(shared_rope, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    config = document["config"]
    assert config["n_kv_heads"] == 2
    assert config["kv_head_of_each_head"] == [0, 0, 1, 1]
    assert config["rope"] == {"base": 10000.0, "pairing": "half"}
    assert np.asarray(document["K"]).shape == (2, 6, 4)
    assert np.asarray(document["Q_rotated"]).shape == (4, 6, 4)
    assert np.asarray(document["K_rotated"]).shape == (2, 6, 4)


def test_a_paper_trace_exports_as_before(tmp_path: Path) -> None:
    trace, _ = trace_with_options(SENTENCE)
    path = tmp_path / "trace.json"
    export_trace(trace, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert not {"rope", "n_kv_heads", "kv_head_of_each_head"} & document["config"].keys()
    assert "Q_rotated" not in document


def test_the_weights_of_a_gqa_export_run_again(shared_rope: AttentionTrace, tmp_path: Path) -> None:
    path = tmp_path / "trace.npz"
    export_trace(shared_rope, path)
    again, _ = trace_with_options(SENTENCE, TraceOptions(positions="rope"), weights=path)
    np.testing.assert_array_equal(again.weights, shared_rope.weights)
    assert again.n_kv_heads == 2
    from attnviz.errors import AttnvizError

    with pytest.raises(AttnvizError, match="has 2 key/value heads but 1 were asked for"):
        trace_with_options(SENTENCE, TraceOptions(kv_heads=1), weights=path)


def test_every_layer_of_a_stack_reads_back(shared_rope: AttentionTrace, tmp_path: Path) -> None:
    path = tmp_path / "layers.npz"
    export_layers([shared_rope, shared_rope], path)
    layers = load_trace(path)
    assert len(layers) == 2 and all(layer.rope == shared_rope.rope for layer in layers)
    np.testing.assert_array_equal(layers[1].K_rotated, shared_rope.K_rotated)


def test_rotated_arrays_without_the_config_saying_rope_are_refused(
    shared_rope: AttentionTrace, tmp_path: Path
) -> None:
    path = tmp_path / "trace.json"
    export_trace(shared_rope, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    del document["config"]["rope"]
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FileProblem, match="rotary positions need the config's rope"):
        load_trace(path)
    document["config"]["rope"] = {"base": "ten", "pairing": "half"}
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FileProblem, match="rope needs a base and a pairing"):
        load_trace(path)
