"""families.bert: the BERT-family encoder, checked against its docstring's formulas written
out as a textbook loop on a tiny random BERT (tests/model/checkpoints.py); parity with Hugging
Face transformers on all-MiniLM-L6-v2 is in test_minilm.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from attnviz.errors import AttnvizError
from attnviz.model.families import bert
from attnviz.model.families.bert import ARCHITECTURE, split_heads
from attnviz.model.run import trace_model
from attnviz.model.sources.checkpoint import read_config
from model.checkpoints import load_tensors, tiny_bert

from support import needs_model


def test_split_heads_gives_each_head_its_own_columns_read_only() -> None:
    w = np.arange(6 * 6, dtype=float).reshape(6, 6)
    heads = split_heads(w, 3)
    assert heads.shape == (3, 6, 2)
    for head in range(3):
        np.testing.assert_array_equal(heads[head], w[:, 2 * head : 2 * head + 2])
    assert not heads.flags.writeable


def test_the_config_is_read_with_bert_defaults_and_other_variants_refused() -> None:
    sizes = {
        "hidden_size": 8,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "intermediate_size": 16,
        "max_position_embeddings": 16,
    }
    config = ARCHITECTURE.read_config(sizes)
    assert (config.d_model, config.n_heads, config.d_k, config.n_layers) == (8, 2, 4, 2)
    assert config.layer_norm_eps == 1e-12 and config.pad_token_id == 0  # BERT's defaults
    assert ARCHITECTURE.model_type == "bert" and not ARCHITECTURE.causal
    for setting in ({"hidden_act": "relu"}, {"position_embedding_type": "relative_key"}):
        with pytest.raises(AttnvizError, match="hidden_act 'gelu' and absolute positions"):
            ARCHITECTURE.read_config(sizes | setting)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta


def textbook_bert(folder: Path, ids: list[int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every layer's attention weights [h, n, n] and every hidden state, computed word by word
    from the module docstring's formulas (float64, math.erf)."""
    stored = load_tensors(folder / "model.safetensors")
    t = {name: array.astype(np.float64) for name, array in stored.items()}

    def linear(x: np.ndarray, name: str) -> np.ndarray:  # stored [out, in]
        return x @ t[f"{name}.weight"].T + t[f"{name}.bias"]

    def norm(x: np.ndarray, name: str) -> np.ndarray:
        return layer_norm(x, t[f"{name}.weight"], t[f"{name}.bias"], 1e-12)

    n, n_heads = len(ids), 2
    embeddings = "embeddings."
    h = (
        t[f"{embeddings}word_embeddings.weight"][ids]
        + t[f"{embeddings}position_embeddings.weight"][:n]
    )
    h = norm(h + t[f"{embeddings}token_type_embeddings.weight"][0], f"{embeddings}LayerNorm")
    hidden, weights = [h], []
    for layer in range(2):
        base = f"encoder.layer.{layer}."
        q, k, v = (linear(h, f"{base}attention.self.{part}") for part in ("query", "key", "value"))
        d_k = q.shape[1] // n_heads
        z = np.zeros_like(q)
        layer_weights = np.zeros((n_heads, n, n))
        for head in range(n_heads):
            columns = slice(head * d_k, (head + 1) * d_k)
            for i in range(n):
                scores = [q[i, columns] @ k[j, columns] / math.sqrt(d_k) for j in range(n)]
                exps = [math.exp(s - max(scores)) for s in scores]
                layer_weights[head, i] = [e / sum(exps) for e in exps]
                z[i, columns] = sum(layer_weights[head, i, j] * v[j, columns] for j in range(n))
        weights.append(layer_weights)
        after = norm(
            h + linear(z, f"{base}attention.output.dense"), f"{base}attention.output.LayerNorm"
        )
        inner = linear(after, f"{base}intermediate.dense")
        gelu = np.vectorize(lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))))(inner)
        h = norm(after + linear(gelu, f"{base}output.dense"), f"{base}output.LayerNorm")
        hidden.append(h)
    return weights, hidden


@needs_model
def test_the_forward_pass_is_the_docstrings_formulas(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "bert")
    assert read_config(folder)[1] is bert.ARCHITECTURE
    run = trace_model("I am good", str(folder), dtype="float64")
    assert run.trace.tokens == ("[CLS]", "i", "am", "good", "[SEP]")
    weights, hidden = textbook_bert(folder, list(run.encoding.ids))
    for layer, expected in zip(run.trace.layers, weights, strict=True):
        np.testing.assert_allclose(layer.weights, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.trace.hidden_states, np.stack(hidden), rtol=0, atol=1e-12)
    # Each layer's attention reads the hidden state before it.
    for index, layer in enumerate(run.trace.layers):
        np.testing.assert_array_equal(layer.X, run.trace.hidden_states[index])


#: How far the fast column layout (Bert.run_layers) may be from the readable row layout
#: (bert.readable_layers): the same sums in another order, so a few units in the last place.
COLUMNS_ATOL = {"float64": 1e-12, "float32": 1e-5}


@needs_model
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_fast_column_layout_is_the_readable_pass(tmp_path: Path, dtype: str) -> None:
    from attnviz.model.run import load_model

    loaded = load_model("I am good", str(tiny_bert(tmp_path / "bert")), dtype=dtype)
    fast = loaded.forward()
    hidden = fast.hidden_states[0]
    plain = bert.readable_layers(
        loaded.weights, loaded.encoding.tokens, hidden, provenance=loaded.provenance, mask=None
    )
    atol = COLUMNS_ATOL[dtype]
    np.testing.assert_allclose(plain.hidden_states, fast.hidden_states, rtol=0, atol=atol)
    for readable, columns in zip(plain.layers, fast.layers, strict=True):
        np.testing.assert_allclose(readable.weights, columns.weights, rtol=0, atol=atol)
        np.testing.assert_allclose(readable.output, columns.output, rtol=0, atol=atol)
    assert plain.hidden_states.dtype == fast.hidden_states.dtype == np.dtype(dtype)
