"""The fast path (attnviz.kernels) against the textbook path (attnviz.attention): the same
trace within float rounding, on random sizes, with and without every option of a layer, and a
Llama-family layer (kernels.rotary_steps: grouped heads, both RoPE pairings, masks, biases).

Tolerance: the two paths compute the same sums in other orders (one stacked product W·Xᵀ
against h small products X·W_i, a bias inside the product against one added after it, BLAS
kernels that block a product differently for another layout). A sum of k terms computed in two
orders differs by at most about k·ε·Σ|terms| (ε: 1.2e-7 in float32, 2.2e-16 in float64), not
by a fraction of the sum itself, which may cancel to near 0. So each array is compared within
1e-5 (float32) or 1e-12 (float64) of a bound on its terms, carried through the steps
(term_scales): about 100 ε in float32 for sums of up to 48 terms and the softmax's exponential,
and a margin in float64. A wrong head, key or bias is off by about the terms themselves.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz
from attnviz import attention, kernels
from attnviz.attention_inputs import AttentionOptions, checked_inputs
from attnviz.config import AttentionConfig
from attnviz.positions import Positions, Rope, sinusoidal_positions
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights, random_weights

from support import examples

#: Relative to a bound on each array's terms (term_scales); see the module's docstring for why.
TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


def assert_same_trace(fast: AttentionTrace, textbook: AttentionTrace) -> None:
    """Every array of the two traces equal within TOLERANCE of the type computed in."""
    fast_arrays, textbook_arrays = fast.arrays(), textbook.arrays()
    scales = term_scales(textbook)
    assert fast_arrays.keys() == textbook_arrays.keys()
    for key, expected in textbook_arrays.items():
        got = fast_arrays[key]
        assert got.shape == expected.shape and got.dtype == expected.dtype, key
        if expected.dtype == bool:
            np.testing.assert_array_equal(got, expected, err_msg=key)
            continue
        scale = scales.get(key, float(np.abs(expected).max(initial=0.0)))
        # X's type is the one computed in (a float64 bias may promote a float32 product).
        tolerance = TOLERANCE[textbook.X.dtype] * max(scale, 1e-30)
        np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance, err_msg=key)


def term_scales(trace: AttentionTrace) -> dict[str, float]:
    """For each computed array, a bound on the absolute terms its numbers are sums of, the
    earlier steps' rounding carried along: what the two orders of summing may differ by,
    divided by ε."""
    a = np.abs
    keys_x = trace.X if trace.X_source is None else trace.X_source
    projected = max(
        float((a(inputs) @ a(w)).max() + (0.0 if b is None else a(b).max()))
        for inputs, w, b in (
            (trace.X, trace.W_Q, trace.b_Q),
            (keys_x, trace.W_K, trace.b_K),
            (keys_x, trace.W_V, trace.b_V),
        )
    )
    rotated = 2 * projected  # a turned pair: a·cos θ − b·sin θ, |…| ≤ |a| + |b|
    scores = trace.d_k * rotated**2 * 2  # q·k, and the rounding of q and k themselves
    scaled = scores / np.sqrt(trace.d_k)
    weights = 2 * scaled  # ∂w_i/∂s_j = w_i(δ_ij − w_j): |Δw| ≤ 2·max|Δs|
    n_keys = trace.weights.shape[-1]
    values = n_keys * (weights * float(a(trace.V).max()) + projected)  # Σ_j w_ij·v_j
    output = trace.d_model * (values * float(a(trace.W_O).max()))  # Concat·W_O
    output += float((a(trace.concat) @ a(trace.W_O)).max())
    return {
        "Q": projected,
        "K": projected,
        "V": projected,
        "Q_rotated": rotated,
        "K_rotated": rotated,
        "scores": scores,
        "scaled": scaled,
        "weights": weights,
        "Z": values,
        "concat": values,
        "output": output,
    }


@st.composite
def layers(draw: st.DrawFn) -> tuple[list[str], np.ndarray, AttentionWeights, AttentionOptions]:
    """A layer and its inputs: random sizes, G dividing h, float32 or float64, with or without
    biases (of the weights' type, riding in the stacked product, or of another, added apart),
    and one of: nothing more, a mask, rotary positions, sinusoidal positions, cross-attention."""
    n_kv_heads = draw(st.integers(1, 3))
    n_heads = n_kv_heads * draw(st.integers(1, 3))
    d_k = 2 * draw(st.integers(1, 8))
    n, seed = draw(st.integers(1, 12)), draw(st.integers(0, 2**32 - 1))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    config = AttentionConfig(n_heads * d_k, n_heads, seed, n_kv_heads=n_kv_heads)
    rng = np.random.default_rng(seed)
    drawn = random_weights(config, rng)
    matrices = {key: getattr(drawn, key).astype(dtype) for key in ("W_Q", "W_K", "W_V", "W_O")}
    biases: dict[str, np.ndarray] = {}
    bias_dtype = draw(st.sampled_from([None, dtype, np.float64]))
    if bias_dtype is not None:
        shapes = {"b_Q": (n_heads, d_k), "b_K": (n_kv_heads, d_k), "b_V": (n_kv_heads, d_k)}
        shapes["b_O"] = (config.d_model,)
        biases = {key: rng.normal(size=shape).astype(bias_dtype) for key, shape in shapes.items()}
    weights = AttentionWeights(**matrices, **biases)
    x = rng.normal(size=(n, config.d_model)).astype(dtype)
    tokens = [f"w{i}" for i in range(n)]
    option = draw(st.sampled_from(["plain", "mask", "rope", "sinusoidal", "cross"]))
    if option == "mask":
        mask = rng.random((n, n)) < 0.5
        mask[np.arange(n), rng.integers(0, n, n)] = True  # every row may attend to something
        return tokens, x, weights, AttentionOptions(mask=mask)
    if option == "rope":
        return (
            tokens,
            x,
            weights,
            AttentionOptions(rope=Rope(10000.0, draw(st.sampled_from(["half", "adjacent"])))),
        )
    if option == "sinusoidal":
        encoding = sinusoidal_positions(n, config.d_model).astype(dtype)
        return tokens, x, weights, AttentionOptions(positional_encoding=encoding)
    if option == "cross":
        n_source = draw(st.integers(1, 12))
        source = rng.normal(size=(n_source, config.d_model)).astype(dtype)
        names = [f"s{i}" for i in range(n_source)]
        return tokens, x, weights, AttentionOptions(source_tokens=names, source_x=source)
    return tokens, x, weights, AttentionOptions()


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(layer=layers())
def test_the_fast_path_gives_the_textbook_trace(
    layer: tuple[list[str], np.ndarray, AttentionWeights, AttentionOptions],
) -> None:
    tokens, x, weights, options = layer
    textbook = attention.traced(attention.steps, tokens, x, weights, options)
    fast = attention.traced(kernels.fused_steps, tokens, x, weights, options)
    assert_same_trace(fast, textbook)


def test_model_mode_entry_is_the_textbook_layer_on_the_fast_path() -> None:
    """kernels.multi_head_attention, as a model's layer calls it: the provenance and mask it is
    given, the textbook's numbers, and Concat a view of Z (the fast path wrote Z into it)."""
    trace = attnviz.trace_attention("the cat sat on the mat", config=AttentionConfig(16, 4))
    mask = attention.causal_mask(len(trace.tokens))
    args = (trace.tokens, np.asarray(trace.X), _weights_of(trace))
    fast = kernels.multi_head_attention(*args, provenance=trace.provenance, mask=mask)
    textbook = attnviz.multi_head_attention(*args, provenance=trace.provenance, mask=mask)
    assert_same_trace(fast, textbook)
    assert fast.provenance == trace.provenance and fast.mask is not None
    assert np.shares_memory(fast.concat, fast.Z)
    assert not np.shares_memory(textbook.concat, textbook.Z)


def _weights_of(trace: AttentionTrace) -> AttentionWeights:
    return AttentionWeights(trace.W_Q, trace.W_K, trace.W_V, trace.W_O, trace.provenance.weights)


def test_the_fast_path_refuses_what_the_textbook_path_refuses() -> None:
    """The checks run before either path: one sentence, the same for both."""
    weights = random_weights(AttentionConfig(8, 2), np.random.default_rng(0))
    x = np.full((2, 8), 1e200)
    for call in (
        lambda: kernels.multi_head_attention(["a", "b"], x, weights, provenance=None, mask=None),
        lambda: attnviz.multi_head_attention(["a", "b"], x, weights),
    ):
        with pytest.raises(attnviz.AttnvizError, match="overflow float64"):
            call()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_softmax_in_one_buffer_is_the_textbook_softmax_bit_for_bit(dtype: type) -> None:
    scores = np.random.default_rng(3).normal(size=(3, 5, 7)).astype(dtype) * 4
    scores[0, 1, 2] = -np.inf  # a masked pair
    np.testing.assert_array_equal(kernels.softmax_in_place(scores), attention.softmax(scores))


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_z_written_where_concat_puts_it_is_the_same_z(n_kv_heads: int) -> None:
    """Z written straight into the concatenation's room holds the numbers of the plain product,
    and the concatenation is then that room itself: no copy of the heads side by side."""
    rng = np.random.default_rng(5)
    weights = attention.softmax(rng.normal(size=(4, 6, 6)))
    v = rng.normal(size=(n_kv_heads, 6, 3))
    room = kernels.concat_buffer(4, 6, 3, np.dtype(np.float64))
    z = kernels.weigh_values_into(weights, v, room)
    assert z is room
    np.testing.assert_array_equal(z, attention.weigh_values(weights, v))
    concat = attention.concat_heads(z)
    assert np.shares_memory(concat, z)
    expected = np.concatenate(list(attention.weigh_values(weights, v)), axis=1)
    np.testing.assert_array_equal(concat, expected)


def test_times_reads_a_weight_stored_out_by_in_and_gives_x_w() -> None:
    rng = np.random.default_rng(2)
    stored = rng.normal(size=(6, 4))  # [out, in], as a torch Linear keeps it
    x = rng.normal(size=(5, 4))
    np.testing.assert_allclose(kernels.times(x, stored.T), x @ stored.T, rtol=1e-13)
    assert kernels.times(x, stored.T).shape == (5, 6)


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None)
@given(
    n_tokens=st.integers(1, 9),
    n_heads=st.integers(1, 6),
    d_k=st.integers(1, 8),
    biases=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_projecting_together_gives_the_numbers_of_each_projection(
    n_tokens: int, n_heads: int, d_k: int, biases: bool, seed: int
) -> None:
    config = AttentionConfig(d_model=n_heads * d_k, n_heads=n_heads, seed=seed)
    rng = np.random.default_rng(seed)
    drawn = random_weights(config, rng)
    bias = {key: rng.normal(size=(n_heads, d_k)) for key in ("b_Q", "b_K", "b_V")} if biases else {}
    weights = AttentionWeights(
        W_Q=drawn.W_Q,
        W_K=drawn.W_K,
        W_V=drawn.W_V,
        W_O=drawn.W_O,
        **bias,
        **({"b_O": rng.normal(size=config.d_model)} if biases else {}),
    )
    x = rng.normal(size=(n_tokens, config.d_model))
    # The biases as the stacked rows' last column (as AttentionWeights holds them), and apart.
    rows = weights.stacked_rows
    assert rows.shape == (3 * config.d_model, config.d_model + biases)
    apart = rows[:, : config.d_model], (rows[:, -1] if biases else None)
    for together in (
        kernels.project_together(x, rows, None, n_heads, d_k),
        kernels.project_together(x, *apart, n_heads, d_k),
    ):
        for got, name in zip(together, "QKV", strict=True):
            w, b = getattr(weights, f"W_{name}"), getattr(weights, f"b_{name}")
            expected = attention.project(x, w, b)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_a_sinusoidal_layer_is_said_to_be_positioned() -> None:
    """The options reach the trace alike on both paths: PE kept, the provenance saying so."""
    weights = random_weights(AttentionConfig(8, 2), np.random.default_rng(1))
    x = np.random.default_rng(1).normal(size=(3, 8))
    options = AttentionOptions(positional_encoding=sinusoidal_positions(3, 8))
    fast = attention.traced(kernels.fused_steps, ["a", "b", "c"], x, weights, options)
    assert fast.PE is not None and fast.provenance.embeddings.positions is Positions.sinusoidal


# -- rotary layers with grouped key/value heads (kernels.rotary_steps) -------------------------


@dataclass(frozen=True)
class StoredLayer:
    """A rotary layer's weights as a checkpoint stores them, [out, in] (kernels.StoredRows)."""

    qkv_rows: np.ndarray  # [(h + 2G)·d_k, d_model]
    qkv_bias: np.ndarray | None  # [(h + 2G)·d_k]
    output_rows: np.ndarray  # [d_model, h·d_k]

    def weights(self, n_heads: int, n_kv_heads: int, b_o: np.ndarray | None) -> AttentionWeights:
        """The x·W views of these rows, as families.llama's LlamaLayer gives them."""
        d_model = self.qkv_rows.shape[1]
        d_k = d_model // n_heads
        starts = np.cumsum([0, n_heads, n_kv_heads, n_kv_heads]) * d_k
        w_q, w_k, w_v = (
            self.qkv_rows[start:end].reshape(-1, d_k, d_model).transpose(0, 2, 1)
            for start, end in zip(starts[:-1], starts[1:], strict=True)
        )
        biases = {}
        if self.qkv_bias is not None and b_o is not None:
            b_q, b_k, b_v = (
                self.qkv_bias[start:end].reshape(-1, d_k)
                for start, end in zip(starts[:-1], starts[1:], strict=True)
            )
            biases = {"b_Q": b_q, "b_K": b_k, "b_V": b_v, "b_O": b_o}
        return AttentionWeights(w_q, w_k, w_v, self.output_rows.T, **biases)


@st.composite
def rotary_layers(
    draw: st.DrawFn,
) -> tuple[StoredLayer, list[str], np.ndarray, AttentionWeights, AttentionOptions]:
    """A Llama-family layer and its inputs: random sizes, G dividing h, float32 or float64, no
    biases (Llama), Q, K and V biases (Qwen2, b_O zero) or all four (Llama's attention_bias);
    RoPE pairing "half" (Hugging Face) or "adjacent" (GGUF); causal, causal and padding, or no
    mask; X as the transpose of the columns the forward pass keeps, or in C order."""
    n_kv_heads = draw(st.integers(1, 3))
    n_heads = n_kv_heads * draw(st.integers(1, 3))
    d_k = 2 * draw(st.integers(1, 8))
    n, seed = draw(st.integers(1, 12)), draw(st.integers(0, 2**32 - 1))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rng = np.random.default_rng(seed)
    d_model, width = n_heads * d_k, (n_heads + 2 * n_kv_heads) * d_k

    def normal(*shape: int) -> np.ndarray:
        return (rng.normal(size=shape) / np.sqrt(d_model)).astype(dtype)

    biases = draw(st.sampled_from(["none", "qwen2", "all"]))
    stored = StoredLayer(
        normal(width, d_model),
        None if biases == "none" else normal(width),
        normal(d_model, d_model),
    )
    b_o = {"none": None, "qwen2": np.zeros(d_model, dtype), "all": normal(d_model)}[biases]
    weights = stored.weights(n_heads, n_kv_heads, b_o)
    x_t = rng.normal(size=(d_model, n)).astype(dtype)
    x = x_t.T if draw(st.booleans()) else np.ascontiguousarray(x_t.T)
    mask: np.ndarray | None = attention.causal_mask(n)
    masking = draw(st.sampled_from(["causal", "padding", "none"]))
    if masking == "padding":
        mask = mask & attention.padding_mask(draw(st.integers(1, n)), n)
    elif masking == "none":
        mask = None
    rope = Rope(
        draw(st.sampled_from([10000.0, 100.0])), draw(st.sampled_from(["half", "adjacent"]))
    )
    tokens = [f"w{i}" for i in range(n)]
    return stored, tokens, x, weights, AttentionOptions(mask=mask, rope=rope)


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(layer=rotary_layers())
def test_the_rotary_fast_path_gives_the_textbook_trace(
    layer: tuple[StoredLayer, list[str], np.ndarray, AttentionWeights, AttentionOptions],
) -> None:
    stored, tokens, x, weights, options = layer
    textbook = attention.traced(attention.steps, tokens, x, weights, options)
    fast = attention.traced(
        functools.partial(kernels.rotary_steps, stored), tokens, x, weights, options
    )
    assert_same_trace(fast, textbook)


@pytest.mark.parametrize(
    ("n_heads", "n_kv_heads", "dtype", "pairing", "biases"),
    [
        (9, 3, np.float32, "adjacent", False),  # SmolLM2's heads, as a GGUF file pairs them
        (4, 2, np.float64, "half", True),  # Qwen2's biases, as Hugging Face pairs them
        (2, 2, np.float32, "half", True),  # every head its own keys
    ],
)
def test_a_rotary_layer_on_the_fast_path_is_the_textbook_layer(
    n_heads: int, n_kv_heads: int, dtype: type, pairing: str, biases: bool
) -> None:
    """The layouts the models use, in the plain run; the property test above draws the rest."""
    rng = np.random.default_rng(n_heads)
    d_k, n = 8, 7
    d_model, width = n_heads * d_k, (n_heads + 2 * n_kv_heads) * d_k
    stored = StoredLayer(
        rng.normal(size=(width, d_model)).astype(dtype) / 4,
        rng.normal(size=width).astype(dtype) if biases else None,
        rng.normal(size=(d_model, d_model)).astype(dtype) / 4,
    )
    weights = stored.weights(n_heads, n_kv_heads, np.zeros(d_model, dtype) if biases else None)
    x = rng.normal(size=(d_model, n)).astype(dtype).T
    options = AttentionOptions(mask=attention.causal_mask(n), rope=Rope(10000.0, pairing))
    tokens = [f"w{i}" for i in range(n)]
    fast = attention.traced(
        functools.partial(kernels.rotary_steps, stored), tokens, x, weights, options
    )
    textbook = attention.traced(attention.steps, tokens, x, weights, options)
    assert_same_trace(fast, textbook)
    assert fast.Q_rotated is not None and fast.mask is not None
    # Q and K of a group, and V, were never repeated per query head.
    assert fast.K.shape == fast.V.shape == (n_kv_heads, n, d_k)


def test_a_layer_whose_memory_was_budgeted_with_its_run_is_not_estimated_again() -> None:
    """A model's run estimates every layer's trace at once (model_limits.check_model_run), in
    its own dtype: the layer is then not refused by the one-layer estimate (check_trace)."""
    n, d_model, n_heads = 512, 320, 160  # 3·h·n² numbers alone are 1 GB in float64
    weights = random_weights(AttentionConfig(d_model, n_heads), np.random.default_rng(0))
    x, tokens = np.zeros((n, d_model)), [f"w{i}" for i in range(n)]
    with pytest.raises(attnviz.AttnvizError, match="of memory"):
        checked_inputs(tokens, x, weights, AttentionOptions())
    given = checked_inputs(tokens, x, weights, AttentionOptions(), budgeted=True)
    assert given.x.shape == (n, d_model)
