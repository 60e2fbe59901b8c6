"""GPT-2 decoders: config.json's model_type "gpt2".

    h₀ = E_token[ids] + E_position[0..n)
    for each block:
        X  = LayerNorm₁(h)                                         # pre-LN
        h  = h + Concat_i(softmax(mask(Q_i·K_iᵀ / √d_k))·V_i)·W_O + b_O,  Q_i = X·W_Q[i] + b_Q[i]
        h  = h + GELU_tanh(LayerNorm₂(h)·W_fc + b_fc)·W_proj + b_proj
    output = LayerNorm_f(h)

The mask is causal: word i attends to words 0..i only. (Radford et al. 2019, as in Hugging
Face's GPT2Model with eager attention.) GPT-2's Conv1D layers store their weights [in, out]
already, so no transpose; c_attn holds W_Q | W_K | W_V side by side and is split in three.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import causal_mask
from attnviz.errors import AttnvizError
from attnviz.model.base import (
    Architecture,
    Family,
    ModelConfig,
    ModelTrace,
    finite,
    integer,
    kept,
    number,
    stand_in,
)
from attnviz.model.families.bert import split_heads
from attnviz.model.functional import gelu_tanh, layer_norm
from attnviz.model.sources.tensors import Tensors
from attnviz.provenance import Provenance
from attnviz.trace import AttentionTrace, frozen_array
from attnviz.weights import AttentionWeights

Norm = tuple[FloatArray, FloatArray]  # γ, β [d_model]


@dataclass(frozen=True)
class GPT2Block:
    """One block's weights, in x·W form."""

    norm_1: Norm  # ln_1, before attention
    attention: AttentionWeights  # from c_attn (split into Q, K, V) and c_proj
    norm_2: Norm  # ln_2, before the feed-forward block
    W_fc: FloatArray  # [d_model, d_ff]
    b_fc: FloatArray  # [d_ff]
    W_proj: FloatArray  # [d_ff, d_model]
    b_proj: FloatArray  # [d_model]


@dataclass(frozen=True)
class GPT2Weights:
    """The token table's rows for the sentence, the positions, every block, the final norm."""

    token_embeddings: FloatArray  # [n, d_model] the rows of the sentence's ids
    position_embeddings: FloatArray  # [n, d_model] the rows of positions 0 … n − 1
    blocks: tuple[GPT2Block, ...]
    final_norm: Norm  # ln_f
    layer_norm_eps: float


FAMILY = Family(
    tokenizer="The model's tokenizer splits the sentence into byte-level BPE pieces (a piece that "
    "begins a word carries the space before it, not shown here), with no special tokens",
    word_order="Word order is already in X: GPT-2 adds learned position embeddings (wpe, one row "
    "per position from 0) to the token embeddings (wte) before layer 1",
    sublayer="In the model this attention is one sublayer of a decoder block, with biases: "
    "Q = X·W_Q + b_Q and so on, where X = ln_1(h) is the LayerNorm of the residual stream h. "
    "Its output is added back, h' = h + output; a feed-forward block, "
    "GELU(ln_2(h')·W₁ + b₁)·W₂ + b₂, is added the same way to give the next layer's h. "
    "Each word attends only to itself and the words before it (a causal mask).",
    after_attention="In the model it is then added to the residual stream, h' = h + output, and "
    "the feed-forward block follows (as described at the top).",
    layer_input=(
        "the model's embeddings (token + position) normalised by ln_1, the LayerNorm before "
        "attention",
        "the residual stream after layer {previous} normalised by ln_1, the LayerNorm before "
        "attention",
    ),
)


class GPT2(Architecture):
    model_type = "gpt2"
    causal = True
    description = "GPT-2 decoder"
    family = FAMILY
    prefixes = ("transformer.",)  # GPT2LMHeadModel's checkpoints
    token_table = "wte.weight"

    def read_config(self, data: Mapping[str, Any]) -> ModelConfig:
        activation = data.get("activation_function", "gelu_new")
        if activation not in ("gelu_new", "gelu_pytorch_tanh"):
            raise AttnvizError(
                f"attnviz runs GPT-2 with activation_function 'gelu_new', not {activation!r}"
            )
        if data.get("scale_attn_by_inverse_layer_idx") or data.get("scale_attn_weights") is False:
            raise AttnvizError(
                "attnviz runs GPT-2 with its scores scaled by √d_k only "
                "(scale_attn_weights true, scale_attn_by_inverse_layer_idx false)"
            )
        d_model = integer(data, "n_embd", "hidden_size")
        # GPT-2 has no padding token; its end-of-text token pads a batch.
        pad = data.get("pad_token_id")
        if pad is None:
            pad = data.get("eos_token_id")
        return ModelConfig(
            model_type=self.model_type,
            d_model=d_model,
            n_heads=integer(data, "n_head", "num_attention_heads"),
            n_layers=integer(data, "n_layer", "num_hidden_layers"),
            d_ff=integer(data, "n_inner", default=4 * d_model),
            max_positions=integer(data, "n_positions", "n_ctx", "max_position_embeddings"),
            layer_norm_eps=number(data, "layer_norm_epsilon", 1e-5),
            pad_token_id=pad if isinstance(pad, int) and not isinstance(pad, bool) else None,
        )

    def load(self, tensors: Tensors, config: ModelConfig, ids: Sequence[int]) -> GPT2Weights:
        d, h, d_ff = config.d_model, config.n_heads, config.d_ff
        conv1d = tensors.conv1d

        def norm(name: str) -> Norm:
            return tensors.norm(name, d)

        blocks = []
        for index in range(config.n_layers):
            base = f"h.{index}."
            w_qkv, b_qkv = conv1d(f"{base}attn.c_attn", d, 3 * d)
            w_o, b_o = conv1d(f"{base}attn.c_proj", d, d)
            w_fc, b_fc = conv1d(f"{base}mlp.c_fc", d, d_ff)
            w_proj, b_proj = conv1d(f"{base}mlp.c_proj", d_ff, d)
            # c_attn = [W_Q | W_K | W_V]: columns 0…d, d…2d, 2d…3d.
            attention = AttentionWeights(
                W_Q=split_heads(w_qkv[:, :d], h),
                W_K=split_heads(w_qkv[:, d : 2 * d], h),
                W_V=split_heads(w_qkv[:, 2 * d :], h),
                W_O=w_o,
                b_Q=b_qkv[:d].reshape(h, -1),
                b_K=b_qkv[d : 2 * d].reshape(h, -1),
                b_V=b_qkv[2 * d :].reshape(h, -1),
                b_O=b_o,
            )
            blocks.append(
                GPT2Block(
                    norm_1=norm(f"{base}ln_1"),
                    attention=attention,
                    norm_2=norm(f"{base}ln_2"),
                    W_fc=w_fc,
                    b_fc=b_fc,
                    W_proj=w_proj,
                    b_proj=b_proj,
                )
            )
        return GPT2Weights(
            token_embeddings=tensors.rows(self.token_table, ids, d),
            position_embeddings=tensors.leading_rows(
                "wpe.weight", len(ids), (config.max_positions, d)
            ),
            blocks=tuple(blocks),
            final_norm=norm("ln_f"),
            layer_norm_eps=config.layer_norm_eps,
        )

    def forward(
        self,
        weights: GPT2Weights,
        tokens: Sequence[str],
        *,
        provenance: Provenance,
        mask: np.ndarray | None,
    ) -> ModelTrace:
        """Every block, keeping each one's attention (on ln_1 of the residual stream), with the
        causal mask (and ``mask``, the padding mask, when given)."""
        n = len(tokens)
        hidden = finite(
            weights.token_embeddings[:n] + weights.position_embeddings[:n], "the embeddings"
        )
        return self.run_layers(weights, tokens, hidden, provenance=provenance, mask=mask)

    def run_layers(
        self,
        weights: GPT2Weights,
        tokens: Sequence[str],
        hidden: FloatArray,
        *,
        provenance: Provenance,
        mask: np.ndarray | None,
        start: int = 1,
        attention_output: FloatArray | None = None,
    ) -> ModelTrace:
        """Blocks ``start`` (from 1) to the last on the residual stream ``hidden`` [n, d_model]
        before block start, then the final LayerNorm; always causal, ``mask`` (the padding
        mask, when given) combined with it. ``attention_output`` [n, d_model], when given,
        stands in for block start's attention output, whose trace is then left out (an ablation
        re-runs the model from there)."""
        n = len(tokens)
        allowed = causal_mask(n) if mask is None else causal_mask(n) & mask
        eps = weights.layer_norm_eps
        hidden_states, traces = [hidden], list[AttentionTrace]()
        for index in range(start - 1, len(weights.blocks)):
            if attention_output is not None and index == start - 1:
                attention = stand_in(attention_output)
            else:
                attention = kept(
                    traces,
                    tokens,
                    weights.blocks[index].attention,
                    provenance=provenance,
                    layer=index + 1,
                    mask=allowed,
                )
            hidden = block(hidden, weights.blocks[index], eps, attention)
            hidden_states.append(finite(hidden, f"layer {index + 1}"))
        # As Hugging Face reports it: the last hidden state after the final LayerNorm.
        hidden_states[-1] = finite(
            layer_norm(hidden, *weights.final_norm, eps), "the final LayerNorm"
        )
        return ModelTrace(
            tokens=tuple(tokens),
            layers=tuple(traces),
            hidden_states=frozen_array(np.stack(hidden_states), copy=False),
        )


def block(
    hidden: FloatArray,
    weights: GPT2Block,
    eps: float,
    attention: Callable[[FloatArray], FloatArray],
) -> FloatArray:
    """One pre-LN decoder block on the residual stream h [n, d_model] -> [n, d_model]:

        h = h + attention(ln_1(h))
        h = h + mlp(ln_2(h))

    ``attention`` [n, d_model] -> [n, d_model]: the masked multi-head attention, as the caller
    runs and keeps it (or an ablation's stand-in)."""
    hidden = hidden + attention(layer_norm(hidden, *weights.norm_1, eps))
    return hidden + mlp(layer_norm(hidden, *weights.norm_2, eps), weights)


def mlp(x: FloatArray, weights: GPT2Block) -> FloatArray:
    """GELU_tanh(x·W_fc + b_fc)·W_proj + b_proj.  [n, d_model] -> [n, d_ff] -> [n, d_model]"""
    return gelu_tanh(x @ weights.W_fc + weights.b_fc) @ weights.W_proj + weights.b_proj


ARCHITECTURE = GPT2()
