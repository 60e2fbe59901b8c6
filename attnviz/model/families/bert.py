"""BERT-family encoders (BERT, MiniLM, all-MiniLM-L6-v2): config.json's model_type "bert".

    h₀ = LayerNorm(E_word[ids] + E_position[0..n) + E_type[0])
    for each layer:
        a = Concat_i(softmax(Q_i·K_iᵀ / √d_k)·V_i)·W_O + b_O,  Q_i = h·W_Q[i] + b_Q[i], …
        h' = LayerNorm(h + a)                       # residual, then LayerNorm (post-LN)
        h  = LayerNorm(h' + GELU(h'·W_1 + b_1)·W_2 + b_2)

(Devlin et al. 2019, as in Hugging Face's BertModel with eager attention.) Linear weights are
stored [out, in]; they are transposed to [in, out] so that every product reads x·W.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, FileProblem
from attnviz.model.base import (
    Architecture,
    Family,
    ModelConfig,
    ModelTrace,
    attend,
    finite,
    integer,
    kept,
    number,
)
from attnviz.model.functional import gelu, layer_norm, layer_norm_columns
from attnviz.model.sources.checkpoint import read_settings
from attnviz.model.sources.tensors import Tensors
from attnviz.provenance import Provenance
from attnviz.trace import AttentionTrace, frozen_array
from attnviz.weights import AttentionWeights

QKV = ("query", "key", "value")
Norm = tuple[FloatArray, FloatArray]  # γ, β [d_model]


@dataclass(frozen=True)
class BertLayer:
    """One layer's weights: the attention's in x·W form (views of the checkpoint's [out, in]
    rows), the feed-forward block's as stored, [out, in], for W·Xᵀ. (Their biases stay apart: a
    bias column, [W | b]·[Xᵀ; 1], would copy 29 MB of MiniLM's weights at every start, 17 ms,
    to save 0.3 ms a forward pass.)"""

    attention: AttentionWeights  # W_Q, W_K, W_V [h, d_model, d_k], W_O, and the biases
    attention_norm: Norm  # after attention + residual
    W_1_rows: FloatArray  # [d_ff, d_model], intermediate.dense
    b_1: FloatArray  # [d_ff]
    W_2_rows: FloatArray  # [d_model, d_ff], output.dense
    b_2: FloatArray  # [d_model]
    output_norm: Norm  # after feed-forward + residual


@dataclass(frozen=True)
class BertWeights:
    """Embedding tables (only the sentence's rows of the word table) and every layer."""

    word_embeddings: FloatArray  # [n, d_model] the rows of the sentence's ids
    position_embeddings: FloatArray  # [n, d_model] the rows of positions 0 … n − 1
    token_type_embedding: FloatArray  # [d_model] the row of token type 0
    embedding_norm: Norm
    layers: tuple[BertLayer, ...]
    layer_norm_eps: float


def embed(weights: BertWeights, n_tokens: int) -> FloatArray:
    """h₀ = LayerNorm(word + position + token-type embeddings).  -> [n, d_model]"""
    summed = (
        weights.word_embeddings[:n_tokens]
        + weights.position_embeddings[:n_tokens]
        + weights.token_type_embedding
    )
    return layer_norm(summed, *weights.embedding_norm, weights.layer_norm_eps)


def split_heads(w: FloatArray, n_heads: int) -> FloatArray:
    """[d_model, d_model] in x·W form -> [h, d_model, d_k]: head i's columns i·d_k … (i+1)·d_k."""
    d_in, d_out = w.shape
    heads = w.reshape(d_in, n_heads, d_out // n_heads).transpose(1, 0, 2)
    heads.setflags(write=False)  # a copy when w was a transposed view: nobody writes to it
    return heads


FAMILY = Family(
    tokenizer="The model's tokenizer splits the sentence into word pieces, with [CLS] first and "
    "[SEP] last",
    word_order="Word order is already in X: before layer 1 the model adds learned position "
    "embeddings (position_embeddings, one row per position from 0) and the token-type embedding "
    "to the word embeddings, then applies a LayerNorm",
    sublayer="In the model this attention is one sublayer, with biases: Q = X·W_Q + b_Q and so "
    "on. Its output is added back to X and normalised, h' = LayerNorm(X + output); a "
    "feed-forward block, GELU(h'·W₁ + b₁)·W₂ + b₂, is added and normalised the same "
    "way to give the next layer's X.",
    after_attention="In the model it is then added back to X and normalised, LayerNorm(X + "
    "output), and the feed-forward block follows (as described at the top).",
    layer_input=(
        "the model's embeddings (word + position + token type, LayerNorm)",
        "the output of layer {previous} (after its residual and LayerNorm)",
    ),
    special_tokens="[CLS] and [SEP] are added to every input by the tokenizer: [CLS] first and "
    "[SEP] at the end (it separates sentences). BERT's pretraining reads [CLS]'s final vector "
    "to tell whether two sentences follow each other, and a classifier fine-tuned from BERT "
    "reads the whole input from it; a sentence-embedding model may pool every piece's vector "
    "instead. They are not words of the sentence, yet trained models often send much "
    "attention to them in heads that have nothing to do for a word: a common no-op pattern "
    "(in BERT, Clark et al. 2019 found [SEP] receiving much of it in the middle layers).",
    special_names=("[CLS]", "[SEP]"),
)


#: sentence-transformers' pooling modes (1_Pooling/config.json), in words: how the sentence's
#: one vector is made from the final vectors of its pieces.
POOLING_MODES = {
    "pooling_mode_mean_tokens": "the mean of the final vectors of all its pieces, [CLS] and "
    "[SEP] included (mean pooling)",
    "pooling_mode_cls_token": "the final vector of [CLS] (CLS pooling)",
    "pooling_mode_max_tokens": "the largest value of each column over all its pieces' final "
    "vectors (max pooling)",
    "pooling_mode_mean_sqrt_len_tokens": "the sum of the final vectors of all its pieces "
    "divided by the square root of their number",
}


def pooling_about(folder: Path) -> str | None:
    """How a sentence-transformers model makes one vector of a sentence, as its folder's
    1_Pooling/config.json says; None when the folder has none (or says nothing readable),
    so that the lesson never guesses a model's pooling."""
    path = folder / "1_Pooling" / "config.json"
    try:
        if not path.is_file():
            return None
        data = read_settings(path)
    except (FileProblem, OSError):  # a folder that may not be entered says nothing either
        return None
    modes = [words for key, words in POOLING_MODES.items() if data.get(key) is True]
    if len(modes) != 1:
        return None
    return f"Its folder's 1_Pooling/config.json makes the sentence's one vector from {modes[0]}."


class Bert(Architecture):
    model_type = "bert"
    causal = False
    description = "BERT-family encoder"
    family = FAMILY
    prefixes = ("bert.",)  # BertForSequenceClassification and the like
    token_table = "embeddings.word_embeddings.weight"

    def read_config(self, data: Mapping[str, Any]) -> ModelConfig:
        if data.get("is_decoder", False) is not False or data.get("add_cross_attention", False):
            raise AttnvizError(
                "attnviz runs BERT as an encoder, each word attending to every word; this "
                "config.json makes it a decoder (is_decoder or add_cross_attention is set)"
            )
        if (
            data.get("hidden_act", "gelu") != "gelu"
            or data.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise AttnvizError(
                "attnviz runs BERT with hidden_act 'gelu' and absolute positions, not "
                f"{data.get('hidden_act')!r} / {data.get('position_embedding_type')!r}"
            )
        return ModelConfig(
            model_type=self.model_type,
            d_model=integer(data, "hidden_size"),
            n_heads=integer(data, "num_attention_heads"),
            n_layers=integer(data, "num_hidden_layers"),
            d_ff=integer(data, "intermediate_size"),
            max_positions=integer(data, "max_position_embeddings"),
            layer_norm_eps=number(data, "layer_norm_eps", 1e-12),
            pad_token_id=integer(data, "pad_token_id", default=0),
        )

    def load(self, tensors: Tensors, config: ModelConfig, ids: Sequence[int]) -> BertWeights:
        d, h, d_ff = config.d_model, config.n_heads, config.d_ff
        linear = tensors.linear

        def norm(name: str) -> Norm:
            return tensors.norm(name, d)

        layers = []
        for index in range(config.n_layers):
            base = f"encoder.layer.{index}."
            (w_q, b_q), (w_k, b_k), (w_v, b_v) = (
                linear(f"{base}attention.self.{part}", d, d) for part in QKV
            )
            w_o, b_o = linear(f"{base}attention.output.dense", d, d)
            w_1, b_1 = linear(f"{base}intermediate.dense", d, d_ff)
            w_2, b_2 = linear(f"{base}output.dense", d_ff, d)
            attention = AttentionWeights(
                W_Q=split_heads(w_q, h),
                W_K=split_heads(w_k, h),
                W_V=split_heads(w_v, h),
                W_O=w_o,
                b_Q=b_q.reshape(h, -1),
                b_K=b_k.reshape(h, -1),
                b_V=b_v.reshape(h, -1),
                b_O=b_o,
            )
            layers.append(
                BertLayer(
                    attention=attention,
                    attention_norm=norm(f"{base}attention.output.LayerNorm"),
                    W_1_rows=np.ascontiguousarray(w_1.T),  # the checkpoint's rows: no copy
                    b_1=b_1,
                    W_2_rows=np.ascontiguousarray(w_2.T),
                    b_2=b_2,
                    output_norm=norm(f"{base}output.LayerNorm"),
                )
            )
        # One row per token type (2 in BERT, 1 in some checkpoints); a sentence is type 0.
        types = tensors.rows(
            "embeddings.token_type_embeddings.weight", [0], d, rows_are="token types"
        )
        return BertWeights(
            word_embeddings=tensors.rows(self.token_table, ids, d),
            position_embeddings=tensors.leading_rows(
                "embeddings.position_embeddings.weight", len(ids), (config.max_positions, d)
            ),
            token_type_embedding=types[0],
            embedding_norm=norm("embeddings.LayerNorm"),
            layers=tuple(layers),
            layer_norm_eps=config.layer_norm_eps,
        )

    def forward(
        self,
        weights: BertWeights,
        tokens: Sequence[str],
        *,
        provenance: Provenance,
        mask: np.ndarray | None,
    ) -> ModelTrace:
        """Every layer, keeping each one's attention; in the weights' dtype (float32 as the
        checkpoint stores it, or float64)."""
        hidden = finite(embed(weights, len(tokens)), "the embeddings")
        return self.run_layers(weights, tokens, hidden, provenance=provenance, mask=mask)

    def run_layers(
        self,
        weights: BertWeights,
        tokens: Sequence[str],
        hidden: FloatArray,
        *,
        provenance: Provenance,
        mask: np.ndarray | None,
        start: int = 1,
        attention_output: FloatArray | None = None,
    ) -> ModelTrace:
        """Layers ``start`` (from 1) to the last on ``hidden`` [n, d_model], layer start's input.
        ``attention_output`` [n, d_model], when given, stands in for layer start's attention
        output, whose trace is then left out (an ablation re-runs the model from there).

        The fast layout of ``readable_layers`` (the same numbers, checked by
        tests/model/test_bert.py to 1e-12 in float64 and 1e-5 in float32): model mode runs
        this one, for MiniLM's pass is a sixth faster with hᵀ kept as columns."""
        eps = weights.layer_norm_eps
        # The hidden states as columns, hᵀ [d_model, n], all the way: every product is then
        # W·hᵀ from the weights as stored, and every sum adds arrays of one layout. Each layer
        # writes its output straight into the stack of them that the trace keeps.
        states = np.empty(
            (len(weights.layers) - start + 2, *hidden.shape[::-1]), dtype=hidden.dtype
        )
        states[0] = hidden.T
        hidden_t, traces = states[0], []
        for index in range(start - 1, len(weights.layers)):
            layer = weights.layers[index]
            if attention_output is not None and index == start - 1:
                output_t = attention_output.T
            else:
                trace = attend(
                    tokens,
                    hidden_t.T,
                    layer.attention,
                    provenance=provenance,
                    layer=index + 1,
                    mask=mask,
                )
                traces.append(trace)
                output_t = trace.output.T
            after_attention = layer_norm_columns(hidden_t + output_t, *layer.attention_norm, eps)
            inner = layer.W_1_rows @ after_attention  # [d_ff, n], GELU in place below
            feed_forward = layer.W_2_rows @ gelu(inner, out=inner, bias=layer.b_1[:, np.newaxis])
            feed_forward += after_attention
            feed_forward += layer.b_2[:, np.newaxis]
            into = states[index - start + 2]
            layer_norm_columns(feed_forward, *layer.output_norm, eps, out=into)
            hidden_t = finite(into, f"layer {index + 1}")
        hidden_states = states.transpose(0, 2, 1)  # [layers + 1, n, d_model]
        return ModelTrace(
            tokens=tuple(tokens),
            layers=tuple(traces),
            hidden_states=frozen_array(hidden_states, copy=False),
        )


# -- the readable pass: each layer as the docstring's formulas, on rows ----------------------


def layer(
    hidden: FloatArray,
    weights: BertLayer,
    eps: float,
    attention: Callable[[FloatArray], FloatArray],
) -> FloatArray:
    """One post-LN encoder layer on h [n, d_model] -> [n, d_model]:

        h' = LayerNorm(h + attention(h))
        h  = LayerNorm(h' + GELU(h'·W_1 + b_1)·W_2 + b_2)

    ``attention`` [n, d_model] -> [n, d_model]: the multi-head attention as the caller runs and
    keeps it (base.kept), or an ablation's stand-in (base.stand_in)."""
    after_attention = layer_norm(hidden + attention(hidden), *weights.attention_norm, eps)
    inner = gelu(after_attention @ weights.W_1_rows.T + weights.b_1)  # [n, d_ff]
    feed_forward = inner @ weights.W_2_rows.T + weights.b_2
    return layer_norm(after_attention + feed_forward, *weights.output_norm, eps)


def readable_layers(
    weights: BertWeights,
    tokens: Sequence[str],
    hidden: FloatArray,
    *,
    provenance: Provenance,
    mask: np.ndarray | None,
) -> ModelTrace:
    """Every layer on the embeddings ``hidden`` [n, d_model], one ``layer`` after another:
    what ``Bert.run_layers`` computes in columns."""
    hidden_states, traces = [hidden], list[AttentionTrace]()
    for index, weights_of_layer in enumerate(weights.layers):
        attention = kept(
            traces,
            tokens,
            weights_of_layer.attention,
            provenance=provenance,
            layer=index + 1,
            mask=mask,
        )
        hidden = layer(hidden, weights_of_layer, weights.layer_norm_eps, attention)
        hidden_states.append(finite(hidden, f"layer {index + 1}"))
    return ModelTrace(
        tokens=tuple(tokens),
        layers=tuple(traces),
        hidden_states=frozen_array(np.stack(hidden_states), copy=False),
    )


ARCHITECTURE = Bert()
