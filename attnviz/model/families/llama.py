"""Llama-family decoders: config.json's model_type "llama" (Llama 2 and 3, TinyLlama, SmolLM2, …)
and, in attnviz.model.families.qwen2, "qwen2", which adds biases to Q, K and V.

    h₀ = E_token[ids]                                     # no position vectors: RoPE below
    for each layer:
        X  = RMSNorm₁(h)                                   # pre-norm, x / √(mean(x²) + ε) · γ
        Q_i = X·W_Q[i] (+ b_Q[i]),  K_g = X·W_K[g],  V_g = X·W_V[g]     # G ≤ h key/value heads
        Q̃_i, K̃_g = RoPE(Q_i), RoPE(K_g)                    # each pair rotated by position·θ
        h  = h + Concat_i(softmax(mask(Q̃_i·K̃_gᵀ / √d_k))·V_g)·W_O,  g = i // (h/G)
        h  = h + (SiLU(RMSNorm₂(h)·W_gate) ⊙ (RMSNorm₂(h)·W_up))·W_down    # SwiGLU
    output = RMSNorm_f(h)

The mask is causal. Grouped-query attention: h/G query heads share each key/value head, so W_K,
W_V, K, V are [G, …] and are never repeated per query head. RoPE pairs coordinate i with
i + d_k/2 in Hugging Face checkpoints ("half"); a GGUF file's weights pair 2i with 2i + 1
("adjacent"), and ``LlamaWeights.rope`` says which. (Touvron et al. 2023; as Hugging Face's
LlamaModel and Qwen2Model with eager attention.)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import causal_mask, sliding_window_mask
from attnviz.errors import AttnvizError
from attnviz.model.base import (
    Architecture,
    Family,
    ModelConfig,
    ModelTrace,
    finite,
    integer,
    number,
)
from attnviz.model.families.rotary import (
    attention_weights,
    rms_norm_columns,
    rotary_attention,
    swiglu_columns,
)
from attnviz.model.sources.tensors import Tensors
from attnviz.positions import Rope
from attnviz.provenance import Masking, Provenance
from attnviz.trace import frozen_array
from attnviz.weights import AttentionWeights


class LayerTensors(Protocol):
    """What a layer is read from: a checkpoint's tensors by name (sources.tensors.Tensors)
    or a GGUF file's (attnviz.model.sources.gguf_model.GgufTensors), in one dtype."""

    dtype: type

    def get(self, name: str, shape: tuple[int, ...]) -> FloatArray: ...


@dataclass(frozen=True)
class LlamaConfig(ModelConfig):
    """A Llama-family config.json's sizes: ModelConfig's, with layer_norm_eps RMSNorm's ε."""

    n_kv_heads: int = 0  # G, the key/value heads; 0 is refused
    rope_theta: float = 10000.0  # RoPE's base
    sliding_window: int | None = None  # keys further back than this are hidden, when set
    window_layers: tuple[int, ...] = ()  # the layers (from 0) with that window; the others full
    qkv_bias: bool = False  # b_Q, b_K, b_V: Qwen2's, or Llama's with attention_bias
    output_bias: bool = False  # b_O: Llama's with attention_bias

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_kv_heads <= 0 or self.n_heads % self.n_kv_heads:
            raise AttnvizError(
                f"{self.n_heads} query heads cannot share {self.n_kv_heads} key/value heads "
                "equally (num_key_value_heads must divide num_attention_heads)"
            )
        if not (math.isfinite(self.rope_theta) and self.rope_theta > 1):
            raise AttnvizError(f"rope_theta must be a number above 1, got {self.rope_theta}")
        if self.d_k % 2:
            raise AttnvizError(f"RoPE rotates pairs of coordinates; d_k {self.d_k} is odd")
        if self.sliding_window is not None and self.sliding_window <= 0:
            raise AttnvizError(
                f"sliding_window must be a positive number of tokens, got {self.sliding_window}"
            )


@dataclass(frozen=True)
class LlamaLayer:
    """One decoder layer's weights, each Linear's as the checkpoint stores it, [out, in]: numpy
    (OpenBLAS) computes W·Xᵀ from these rows about a sixth faster than X·W from [in, out]
    columns at 128 tokens (benchmarks/gguf_model.py). W_Q … b_V are the x·W views a trace keeps.
    """

    attention_norm: FloatArray  # γ [d_model], input_layernorm
    # q_proj over k_proj over v_proj, [(h + 2G)·d_k, d_model]: Q, K and V in one product, each
    # head's d_k rows together; and their biases alike, [(h + 2G)·d_k] (Qwen2), else None.
    qkv_rows: FloatArray
    qkv_bias: FloatArray | None
    output_rows: FloatArray  # o_proj, [d_model, h·d_k]
    b_O: FloatArray | None  # [d_model] (Llama with attention_bias), else None
    n_heads: int  # h
    n_kv_heads: int  # G
    mlp_norm: FloatArray  # γ [d_model], post_attention_layernorm
    gate_up_rows: FloatArray  # gate_proj over up_proj, [2·d_ff, d_model]: one product
    down_rows: FloatArray  # down_proj, [d_model, d_ff]

    @functools.cached_property
    def attention(self) -> AttentionWeights:
        """W_Q … b_O below as the AttentionWeights attention.traced takes: views of the rows
        above, not copies (load_layer leaves them read-only all the way down), made once."""
        return attention_weights(self)

    def _heads(self, first: int, count: int) -> FloatArray:
        """Heads first … first + count − 1 of qkv_rows as x·W: [count, d_model, d_k]."""
        d_k = self.qkv_rows.shape[0] // (self.n_heads + 2 * self.n_kv_heads)
        rows = self.qkv_rows[first * d_k : (first + count) * d_k]
        return rows.reshape(count, d_k, rows.shape[1]).transpose(0, 2, 1)

    def _biases(self, first: int, count: int) -> FloatArray | None:
        if self.qkv_bias is None:
            return None
        d_k = self.qkv_bias.shape[0] // (self.n_heads + 2 * self.n_kv_heads)
        return self.qkv_bias[first * d_k : (first + count) * d_k].reshape(count, d_k)

    @property
    def W_Q(self) -> FloatArray:  # [h, d_model, d_k]
        return self._heads(0, self.n_heads)

    @property
    def W_K(self) -> FloatArray:  # [G, d_model, d_k]
        return self._heads(self.n_heads, self.n_kv_heads)

    @property
    def W_V(self) -> FloatArray:  # [G, d_model, d_k]
        return self._heads(self.n_heads + self.n_kv_heads, self.n_kv_heads)

    @property
    def W_O(self) -> FloatArray:  # [h·d_k, d_model]
        return self.output_rows.T

    @property
    def b_Q(self) -> FloatArray | None:  # [h, d_k]
        return self._biases(0, self.n_heads)

    @property
    def b_K(self) -> FloatArray | None:  # [G, d_k]
        return self._biases(self.n_heads, self.n_kv_heads)

    @property
    def b_V(self) -> FloatArray | None:  # [G, d_k]
        return self._biases(self.n_heads + self.n_kv_heads, self.n_kv_heads)

    @property
    def W_down(self) -> FloatArray:  # [d_ff, d_model]
        return self.down_rows.T


@dataclass(frozen=True)
class LlamaWeights:
    """The token table's rows for the sentence, every layer, the final norm, how RoPE pairs."""

    token_embeddings: FloatArray  # [n, d_model] the rows of the sentence's ids
    # Every layer, or (a GGUF file) a sequence that dequantizes each when it is asked for.
    layers: Sequence[LlamaLayer]
    final_norm: FloatArray  # γ [d_model], norm
    eps: float  # RMSNorm's ε
    rope: Rope  # base rope_theta; pairing "half" for Hugging Face checkpoints
    # The model's own sliding window (Qwen2's use_sliding_window, layer_types) and its layers.
    sliding_window: int | None = None
    window_layers: frozenset[int] = frozenset()


FAMILY = Family(
    tokenizer="The model's tokenizer splits the sentence into BPE pieces (a piece that begins a "
    "word carries the space before it, written ▁ or Ġ in its vocabulary, not shown here), and "
    "may put a beginning-of-sequence token such as <s> first",
    word_order="Word order is not in X: a Llama-family model adds no position vectors to its "
    "token embeddings. Inside every layer's attention it rotates each query and key by its "
    "position (RoPE, rotary positions), so that q·k depends on how far apart two tokens are",
    sublayer="In the model this attention is one sublayer of a decoder layer, without biases "
    "(Q = X·W_Q and so on), where X = RMSNorm(h), the residual stream h divided by its root "
    "mean square and multiplied by the norm's weight, one number per coordinate (no mean "
    "subtracted, no bias). Q and K are rotated by their positions (RoPE) before the scores; V "
    "is not. Its output is added back, "
    "h' = h + output; a SwiGLU feed-forward block, (SiLU(X'·W_gate) ⊙ X'·W_up)·W_down with "
    "X' = RMSNorm(h'), is added the same way to give the next layer's h. Each word attends "
    "only to itself and the words before it (a causal mask).",
    after_attention="In the model it is then added to the residual stream, h' = h + output, "
    "and the SwiGLU feed-forward block follows (as described at the top).",
    layer_input=(
        "the model's token embeddings (no position vectors) normalised by input_layernorm, the "
        "RMSNorm before attention",
        "the residual stream after layer {previous} normalised by input_layernorm, the RMSNorm "
        "before attention",
    ),
    special_tokens="<s> (beginning of sequence) is put first by the tokenizer's "
    "post-processor, as the model saw it first in every text it was trained on. It is not a "
    "word of the sentence, yet with a causal mask it is the one key every word can see, and "
    "trained decoders send much of the attention of heads that have nothing to do for a word "
    "to the first token (an attention sink, Xiao et al. 2023).",
    special_names=("<s>",),
    token_unit="piece",
    later_word_order="Word order reaches this X only through the layers below, which rotated "
    "each query and key by its position (RoPE, rotary positions) and let each token read only "
    "itself and the tokens before it (a causal mask): a Llama-family model adds no position "
    "vectors to its token embeddings. This "
    "layer's attention rotates its queries and keys too, so that q·k depends on how far apart "
    "two tokens are",
)


class Llama(Architecture):
    model_type = "llama"
    causal = True
    description = "Llama-family decoder"
    family = FAMILY
    prefixes = ("model.",)  # LlamaForCausalLM's checkpoints
    token_table = "embed_tokens.weight"
    #: Qwen2's Q, K and V always have biases; Llama's have them with attention_bias true.
    qkv_bias_always = False
    #: Qwen2's config has a sliding window (use_sliding_window, layer_types); transformers'
    #: Llama reads neither and attends to every earlier token, so a Llama config's are ignored.
    own_window = False

    def read_config(self, data: Mapping[str, Any]) -> LlamaConfig:
        refuse_variants(data)
        d_model = integer(data, "hidden_size")
        n_heads = integer(data, "num_attention_heads")
        head_dim = data.get("head_dim")
        if head_dim is not None and n_heads > 0 and head_dim != d_model // n_heads:
            raise AttnvizError(
                f"hidden_size {d_model} over num_attention_heads {n_heads} gives heads of d_k "
                f"{d_model // n_heads}, and attnviz runs heads of d_k = hidden_size / heads, not "
                f"head_dim {head_dim}; correct whichever of the three is wrong, or use a model "
                "whose heads are that size"
            )
        pad = data.get("pad_token_id")
        if pad is None:
            pad = data.get("eos_token_id")
        return LlamaConfig(
            model_type=self.model_type,
            d_model=d_model,
            n_heads=n_heads,
            n_layers=integer(data, "num_hidden_layers"),
            d_ff=integer(data, "intermediate_size"),
            max_positions=integer(data, "max_position_embeddings"),
            layer_norm_eps=number(data, "rms_norm_eps", 1e-6),
            pad_token_id=pad if isinstance(pad, int) and not isinstance(pad, bool) else None,
            n_kv_heads=integer(data, "num_key_value_heads", default=n_heads),
            rope_theta=rope_theta(data),
            sliding_window=sliding_window(data) if self.own_window else None,
            window_layers=window_layers(data) if self.own_window else (),
            qkv_bias=self.qkv_bias_always or data.get("attention_bias") is True,
            output_bias=not self.qkv_bias_always and data.get("attention_bias") is True,
        )

    def load(self, tensors: Tensors, config: ModelConfig, ids: Sequence[int]) -> LlamaWeights:
        assert isinstance(config, LlamaConfig)
        return LlamaWeights(
            token_embeddings=tensors.rows(self.token_table, ids, config.d_model),
            layers=tuple(load_layer(tensors, config, index) for index in range(config.n_layers)),
            final_norm=tensors.get("norm.weight", (config.d_model,)),
            eps=config.layer_norm_eps,
            rope=Rope(base=config.rope_theta, pairing="half"),
            sliding_window=config.sliding_window,
            window_layers=frozenset(config.window_layers if config.sliding_window else ()),
        )

    def forward(
        self,
        weights: LlamaWeights,
        tokens: Sequence[str],
        *,
        provenance: Provenance,
        mask: np.ndarray | None,
    ) -> ModelTrace:
        """Every layer, keeping each one's attention (on RMSNorm₁ of the residual stream), with
        the causal mask (and ``mask``, the padding mask, when given)."""
        hidden = finite(weights.token_embeddings[: len(tokens)], "the embeddings")
        return self.run_layers(weights, tokens, hidden, provenance=provenance, mask=mask)

    def run_layers(
        self,
        weights: LlamaWeights,
        tokens: Sequence[str],
        hidden: FloatArray,
        *,
        provenance: Provenance,
        mask: np.ndarray | None,
        start: int = 1,
        attention_output: FloatArray | None = None,
    ) -> ModelTrace:
        """Layers ``start`` (from 1) to the last on the residual stream ``hidden`` [n, d_model]
        before layer start, then the final RMSNorm; always causal, ``mask`` (the padding mask,
        when given) combined with it. ``attention_output`` [n, d_model], when given, stands in
        for layer start's attention output, whose trace is then left out."""
        n = len(tokens)
        allowed = causal_mask(n) if mask is None else causal_mask(n) & mask
        eps = weights.eps
        # The residual stream as columns, hᵀ [d_model, n], all the way: every product is then
        # W·hᵀ from the weights as stored, and every sum adds arrays of one layout.
        hidden_t = np.ascontiguousarray(hidden.T)
        states, traces = [hidden_t], []
        for index in range(start - 1, len(weights.layers)):
            layer = weights.layers[index]
            if attention_output is not None and index == start - 1:
                output_t = attention_output.T
            else:
                windowed, masking = own_window(weights, index, allowed, provenance)
                trace = rotary_attention(
                    tokens,
                    sealed(rms_norm_columns(hidden_t, layer.attention_norm, eps)),  # X, kept
                    layer,
                    weights.rope,
                    provenance=provenance._replace(masking=masking),
                    layer=index + 1,
                    mask=windowed,
                )
                traces.append(trace)
                output_t = trace.output.T
            hidden_t = hidden_t + output_t
            feed_forward = swiglu_columns(  # [d_ff, n]
                rms_norm_columns(hidden_t, layer.mlp_norm, eps), layer.gate_up_rows
            )
            update = layer.down_rows @ feed_forward
            update += hidden_t
            hidden_t = finite(update, f"layer {index + 1}")
            states.append(hidden_t)
        # As Hugging Face's GPT-2 reports it: the last hidden state after the final norm.
        states[-1] = finite(
            rms_norm_columns(hidden_t, weights.final_norm, eps), "the final RMSNorm"
        )
        hidden_states = np.stack(states).transpose(0, 2, 1)  # [layers + 1, n, d_model]
        return ModelTrace(
            tokens=tuple(tokens),
            layers=tuple(traces),
            hidden_states=frozen_array(hidden_states, copy=False),
        )


def load_layer(tensors: LayerTensors, config: LlamaConfig, index: int) -> LlamaLayer:
    """Layer ``index`` (from 0) of a checkpoint's tensors, each Linear's weight as stored,
    [out, in] (``tensors``: read like sources.tensors.Tensors; a GGUF file's dequantize
    here, one layer at a time)."""
    d, h, g, d_ff = config.d_model, config.n_heads, config.n_kv_heads, config.d_ff
    d_k = config.d_k
    base = f"layers.{index}."

    def rows(name: str, n_out: int, n_in: int) -> FloatArray:
        return tensors.get(f"{base}{name}.weight", (n_out, n_in))

    def bias(name: str, n_out: int) -> FloatArray:
        return tensors.get(f"{base}{name}.bias", (n_out,))

    def stacked(*parts: FloatArray) -> FloatArray:
        """The parts one above the other, in C order (W·Xᵀ reads its rows contiguously)."""
        together = np.concatenate(parts) if len(parts) > 1 else np.ascontiguousarray(parts[0])
        return sealed(together)

    def stacked_rows(*parts: tuple[str, int, int]) -> FloatArray:
        """Weights (name, out, in) one above the other: a GGUF file dequantizes them straight
        into one array (GgufTensors.stacked), a checkpoint's are concatenated."""
        if hasattr(tensors, "stacked"):
            named = [(f"{base}{name}.weight", (n_out, n_in)) for name, n_out, n_in in parts]
            return sealed(tensors.stacked(named))
        return stacked(*(rows(*part) for part in parts))

    qkv_bias = b_o = None
    if config.qkv_bias:
        parts = ("q_proj", h * d_k), ("k_proj", g * d_k), ("v_proj", g * d_k)
        qkv_bias = stacked(*(bias(f"self_attn.{name}", n) for name, n in parts))
    if config.output_bias:
        b_o = bias("self_attn.o_proj", d)
    elif config.qkv_bias:  # Qwen2: a trace has all four biases or none; this one is 0
        b_o = sealed(np.zeros(d, tensors.dtype))
    return LlamaLayer(
        attention_norm=tensors.get(f"{base}input_layernorm.weight", (d,)),
        qkv_rows=stacked_rows(
            ("self_attn.q_proj", h * d_k, d),
            ("self_attn.k_proj", g * d_k, d),
            ("self_attn.v_proj", g * d_k, d),
        ),
        qkv_bias=qkv_bias,
        output_rows=stacked(rows("self_attn.o_proj", d, h * d_k)),
        b_O=b_o,
        n_heads=h,
        n_kv_heads=g,
        mlp_norm=tensors.get(f"{base}post_attention_layernorm.weight", (d,)),
        gate_up_rows=stacked_rows(("mlp.gate_proj", d_ff, d), ("mlp.up_proj", d_ff, d)),
        down_rows=stacked(rows("mlp.down_proj", d, d_ff)),
    )


def sealed(array: FloatArray) -> FloatArray:
    """``array``, made here or fresh from the checkpoint and held by nobody else, read-only all
    the way down: the layer's AttentionWeights and every trace then take its views as they are
    (attnviz.trace.frozen_array copies an array that could still change, through itself or the
    array it views), not a copy of the layer's weights per run."""
    base: object = array
    while isinstance(base, np.ndarray):
        base.setflags(write=False)
        base = base.base
    return array


def refuse_variants(data: Mapping[str, Any]) -> None:
    """AttnvizError naming the first feature of config.json that attnviz does not run: SiLU
    only, default RoPE only (no scaling), no mixture of experts, no MLP biases."""
    activation = data.get("hidden_act", "silu")
    if activation != "silu":
        raise AttnvizError(
            f"attnviz runs Llama-family models with hidden_act 'silu', not {activation!r}"
        )
    for key in ("rope_scaling", "rope_parameters"):
        settings = data.get(key)
        if isinstance(settings, Mapping):
            kind = settings.get("rope_type", settings.get("type", "default"))
            if kind != "default":
                raise AttnvizError(
                    f"the model scales its rotary positions ({key} rope_type {kind!r}); attnviz "
                    "runs only the default RoPE"
                )
        elif settings is not None:
            raise AttnvizError(f"{key} is {settings!r}, not an object of settings")
    experts = next(
        (key for key in ("num_local_experts", "num_experts", "n_routed_experts") if data.get(key)),
        None,
    )
    if experts is not None:
        raise AttnvizError(
            f"the model is a mixture of experts ({experts} {data[experts]}), which attnviz does "
            "not run"
        )
    if data.get("mlp_bias"):
        raise AttnvizError("attnviz runs Llama-family models without MLP biases (mlp_bias false)")


def rope_theta(data: Mapping[str, Any]) -> float:
    """RoPE's base: config.json's rope_theta, at the top level (before transformers 5) or inside
    rope_parameters; 10000 when neither says."""
    parameters = data.get("rope_parameters")
    if isinstance(parameters, Mapping) and parameters.get("rope_theta") is not None:
        return number(parameters, "rope_theta", 10000.0)
    return number(data, "rope_theta", 10000.0)


def own_window(
    weights: LlamaWeights, index: int, allowed: np.ndarray, provenance: Provenance
) -> tuple[np.ndarray, Masking]:
    """Layer ``index``'s (from 0) mask and masking: ``allowed`` [n, n] (causal, padding, and
    a window the run was given), within the model's own sliding window in the layers that have
    it; the window recorded is the narrower of the two, as their intersection is."""
    own, masking = weights.sliding_window, provenance.masking
    if own is None or index not in weights.window_layers:
        return allowed, masking
    window = own if masking.window is None else min(own, masking.window)
    return allowed & sliding_window_mask(len(allowed), own), masking._replace(window=window)


def window_layers(data: Mapping[str, Any]) -> tuple[int, ...]:
    """The layers (from 0) with the sliding window, as transformers' Qwen2Config reads them:
    those layer_types names "sliding_attention", else, with a window, those from
    max_window_layers on. A layer named "sliding_attention" without a window (use_sliding_window
    false) is refused: transformers sets its window to None there and cannot run the model."""
    layer_types = data.get("layer_types")
    if isinstance(layer_types, list):
        named = tuple(i for i, kind in enumerate(layer_types) if kind == "sliding_attention")
        if named and sliding_window(data) is None:
            raise AttnvizError(
                f"layer_types names layer {named[0] + 1} sliding_attention, but "
                "use_sliding_window is not true, so that layer has no window (transformers "
                "cannot run the model either); set use_sliding_window to true and sliding_window "
                "to the window's tokens, or name the layer full_attention"
            )
        return named
    if sliding_window(data) is None:
        return ()
    first = integer(data, "max_window_layers", default=28)  # Qwen2Config's default
    return tuple(range(first, integer(data, "num_hidden_layers")))


def sliding_window(data: Mapping[str, Any]) -> int | None:
    """The sliding window the model's attention uses, or None: sliding_window when
    use_sliding_window is true, as transformers' Qwen2Config reads it (it sets the window to
    None otherwise, whatever layer_types says). Its layers: ``window_layers``."""
    if data.get("use_sliding_window") is not True or data.get("sliding_window") is None:
        return None
    return integer(data, "sliding_window")


ARCHITECTURE = Llama()
