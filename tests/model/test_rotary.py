"""attnviz.model.families.rotary: RMSNorm, SwiGLU, RoPE in both pairings, and attention with grouped
key/value heads, on random inputs: its trace assembled by attention.traced from views of the
layer's stored rows, nothing copied, an overflow named with the layer. (Its fused steps against
the textbook's: tests/test_kernels.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnviz import attention_inputs
from attnviz.attention import causal_mask
from attnviz.errors import FileProblem
from attnviz.model.families.llama import LlamaLayer, sealed
from attnviz.model.families.rotary import (
    rms_norm,
    rms_norm_columns,
    rope_angles,
    rotary_attention,
    rotate,
    swiglu_columns,
)
from attnviz.positions import Rope
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)
from attnviz.trace import AttentionTrace


def test_rms_norm_divides_by_the_root_mean_square_without_centring() -> None:
    rng = np.random.default_rng(0)
    x, gamma = rng.normal(3.0, 2.0, (5, 16)), rng.normal(size=16)
    expected = x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + 1e-5) * gamma
    np.testing.assert_allclose(rms_norm(x, gamma, 1e-5), expected, rtol=1e-14)
    assert rms_norm(x.astype(np.float32), gamma.astype(np.float32), 1e-5).dtype == np.float32
    # The forward pass keeps the vectors as columns: the same numbers, transposed.
    np.testing.assert_allclose(rms_norm_columns(x.T, gamma, 1e-5), expected.T, rtol=1e-14)


def test_swiglu_is_silu_of_the_gate_times_the_up_projection() -> None:
    rng = np.random.default_rng(1)
    x, gate, up = rng.normal(size=(4, 8)), rng.normal(size=(8, 6)), rng.normal(size=(8, 6))
    g = x @ gate
    expected = g / (1 + np.exp(-g)) * (x @ up)
    # From gate_proj's and up_proj's weights as stored, [out, in], one above the other.
    rows = np.concatenate([gate.T, up.T])
    np.testing.assert_allclose(swiglu_columns(x.T, rows), expected.T, rtol=1e-13)
    huge = swiglu_columns(np.array([[-1e4], [1e4]]), np.array([[1.0, 1.0], [0.0, 0.0]]))
    assert np.isfinite(huge).all()  # e^−g overflowing to ∞ gives SiLU 0, not NaN


@pytest.mark.parametrize("pairing", ["half", "adjacent"])
def test_each_pair_turns_by_position_times_theta(pairing: str) -> None:
    rope = Rope(base=100.0, pairing=pairing)
    d_k, n = 6, 4
    cos, sin = rope_angles(rope, n, d_k, np.float64)
    theta = 100.0 ** (-np.arange(0, d_k, 2) / d_k)  # θ_i = base^(−2i/d_k)
    np.testing.assert_allclose(cos, np.cos(np.arange(n)[:, None] * theta), rtol=1e-15)
    x = np.random.default_rng(2).normal(size=(3, n, d_k))
    rotated = rotate(x, rope, cos, sin)
    pairs = [(i, i + d_k // 2) for i in range(d_k // 2)]
    if pairing == "adjacent":
        pairs = [(2 * i, 2 * i + 1) for i in range(d_k // 2)]
    for i, (a, b) in enumerate(pairs):
        angle = np.arange(n)[:, None] * theta[i]
        np.testing.assert_allclose(
            rotated[..., a], x[..., a] * np.cos(angle.T) - x[..., b] * np.sin(angle.T), atol=1e-14
        )
        np.testing.assert_allclose(
            rotated[..., b], x[..., b] * np.cos(angle.T) + x[..., a] * np.sin(angle.T), atol=1e-14
        )


def test_both_pairings_give_the_same_scores_once_the_coordinates_are_arranged_for_them() -> None:
    rng = np.random.default_rng(3)
    d_k, n = 8, 6
    q, k = rng.normal(size=(1, n, d_k)), rng.normal(size=(1, n, d_k))
    # Coordinate i of the "half" layout is 2i of the "adjacent" one, i + d_k/2 is 2i + 1.
    order = np.empty(d_k, int)
    order[0::2], order[1::2] = np.arange(d_k // 2), np.arange(d_k // 2, d_k)
    scores = {}
    for pairing, (qq, kk) in (("half", (q, k)), ("adjacent", (q[..., order], k[..., order]))):
        rope = Rope(pairing=pairing)
        cos, sin = rope_angles(rope, n, d_k, np.float64)
        scores[pairing] = rotate(qq, rope, cos, sin) @ rotate(kk, rope, cos, sin).swapaxes(1, 2)
    np.testing.assert_allclose(scores["half"], scores["adjacent"], rtol=1e-12, atol=1e-12)
    # The wrong pairing still runs, but gives other scores.
    rope = Rope(pairing="adjacent")
    cos, sin = rope_angles(rope, n, d_k, np.float64)
    wrong = rotate(q, rope, cos, sin) @ rotate(k, rope, cos, sin).swapaxes(1, 2)
    assert not np.allclose(wrong, scores["half"])


def test_rotated_scores_depend_on_the_distance_only() -> None:
    rng = np.random.default_rng(4)
    d_k, n = 8, 12
    q, k = rng.normal(size=d_k), rng.normal(size=d_k)
    rope = Rope(base=10000.0)
    cos, sin = rope_angles(rope, n, d_k, np.float64)
    rows = rotate(np.tile(q, (1, n, 1)), rope, cos, sin)[0]
    keys = rotate(np.tile(k, (1, n, 1)), rope, cos, sin)[0]
    # q at 5 and k at 2 score as q at 10 and k at 7: the same two vectors 3 apart.
    assert rows[5] @ keys[2] == pytest.approx(rows[10] @ keys[7], rel=1e-12)
    assert rows[5] @ keys[2] != pytest.approx(rows[5] @ keys[3], rel=1e-6)


def _layer(scale: float = 0.1, dtype: type = np.float32, biases: bool = False) -> LlamaLayer:
    """A layer of 4 query heads sharing 2 key/value heads, d_k 4, its arrays read-only all the
    way down as families.llama.load_layer makes them."""
    rng = np.random.default_rng(7)
    h, g, d_k = 4, 2, 4
    d = h * d_k

    def rows(*shape: int) -> np.ndarray:
        return sealed((rng.normal(size=shape) * scale).astype(dtype))

    return LlamaLayer(
        attention_norm=rows(d),
        qkv_rows=rows((h + 2 * g) * d_k, d),
        qkv_bias=rows((h + 2 * g) * d_k) if biases else None,
        output_rows=rows(d, h * d_k),
        b_O=sealed(np.zeros(d, dtype)) if biases else None,
        n_heads=h,
        n_kv_heads=g,
        mlp_norm=rows(d),
        gate_up_rows=rows(2 * 8, d),
        down_rows=rows(d, 8),
    )


def _attend(layer: LlamaLayer, x_t: np.ndarray, number: int = 3) -> AttentionTrace:
    n = x_t.shape[1]
    provenance = Provenance(
        EmbeddingsOrigin(EmbeddingsKind.MODEL, architecture="llama", layer=1),
        WeightsOrigin(WeightsKind.PRETRAINED, model="tiny", architecture="llama", layer=1),
    )
    tokens = [f"w{i}" for i in range(n)]
    return rotary_attention(
        tokens,
        x_t,
        layer,
        Rope(10000.0, "adjacent"),
        provenance=provenance,
        layer=number,
        mask=causal_mask(n),
    )


@pytest.mark.parametrize("biases", [False, True])
def test_the_trace_views_the_layers_stored_rows_and_copies_none(biases: bool) -> None:
    """A model of 30 layers would copy every layer's weights on every run otherwise."""
    layer = _layer(biases=biases)
    x_t = sealed(np.random.default_rng(1).normal(size=(16, 5)).astype(np.float32))
    trace = _attend(layer, x_t)
    for key in ("W_Q", "W_K", "W_V"):
        assert np.shares_memory(getattr(trace, key), layer.qkv_rows), key
        np.testing.assert_array_equal(getattr(trace, key), getattr(layer, key))
    assert np.shares_memory(trace.W_O, layer.output_rows)
    assert np.shares_memory(trace.X, x_t)
    if biases:
        assert trace.b_Q is not None and np.shares_memory(trace.b_Q, layer.qkv_bias)
    assert trace.provenance.weights.layer == 3 and trace.config.kv_heads == 2
    assert not trace.W_Q.flags.writeable and not trace.scores.flags.writeable


def test_numbers_that_overflow_are_named_with_the_layer() -> None:
    layer = _layer(scale=1e20)  # finite weights, Q and K about 1e21: Q·Kᵀ passes 3.4e38
    x_t = np.ones((16, 3), np.float32)
    message = (
        "Layer 7 of the model: the numbers overflow float32 in its attention (Q·Kᵀ reaches "
        "infinity); check the checkpoint."
    )
    with pytest.raises(FileProblem) as raised:
        _attend(layer, x_t, number=7)
    assert raised.value.message == message


def test_the_layer_is_not_refused_by_the_one_layer_memory_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Model mode estimated the whole run before it started (model_limits.check_model_run), in
    its own dtype: a layer of a run it accepted is not estimated again, so never refused."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("check_trace ran")

    monkeypatch.setattr(attention_inputs, "check_trace", refuse)
    trace = _attend(_layer(), np.ones((16, 4), np.float32))
    assert trace.weights.shape == (4, 4, 4)


@pytest.mark.parametrize(
    ("model", "extra"),
    [("tiny_llama", "safetensors"), ("tiny_qwen2", "safetensors"), ("tiny_llama.gguf", "gguf")],
)
def test_a_loaded_models_traces_view_its_weights_as_read(model: str, extra: str) -> None:
    """families.llama.load_layer leaves every array read-only all the way down, so that each
    layer's trace views the weights read instead of copying them on every run."""
    pytest.importorskip(extra, reason="needs the optional extra attnviz[model]")
    pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")
    from attnviz.model.run import load_model

    loaded = load_model("The animal was tired", str(Path(__file__).resolve().parent / model))
    traces = loaded.forward().layers
    for layer, trace in zip(loaded.weights.layers, traces, strict=True):
        assert np.shares_memory(trace.W_Q, layer.qkv_rows)
        assert np.shares_memory(trace.W_O, layer.output_rows)
