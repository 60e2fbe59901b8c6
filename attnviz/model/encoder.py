"""A BERT-family encoder's forward pass in numpy, one small function per step.

    h₀ = LayerNorm(E_word[ids] + E_position[0..n) + E_type[0])
    for each layer:
        a = Concat_i(softmax(Q_i·K_iᵀ / √d_k)·V_i)·W_O + b_O,  Q_i = h·W_Q[i] + b_Q[i], …
        h' = LayerNorm(h + a)                       # residual, then LayerNorm
        h  = LayerNorm(h' + GELU(h'·W_1 + b_1)·W_2 + b_2)

(Devlin et al. 2019, as in Hugging Face's BertModel with eager attention.) Pure functions over
arrays: no files, no printing. Shapes use n tokens, h heads, d_model, d_k = d_model / h, d_ff.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import multi_head_attention
from attnviz.provenance import EmbeddingsKind, Provenance
from attnviz.trace import AttentionTrace, frozen_array
from attnviz.weights import AttentionWeights

# Rational approximations of erf and erfc from the Cephes library (S. L. Moshier, public
# domain), accurate to about 1e-16 in float64: erf(x) = x·T(x²)/U(x²) for |x| < 1, and
# erfc(x) = exp(-x²)·P(x)/Q(x) for 1 <= x < 8. Coefficients are listed from the highest power
# down; Q and U have a leading 1.
_ERF_T = (
    9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
    7.00332514112805075473e3, 5.55923013010394962768e4,
)  # fmt: skip
_ERF_U = (
    1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
    2.26290000613890934246e4, 4.92673942608635921086e4,
)  # fmt: skip
_ERFC_P = (
    2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
    4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
    9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2,
)  # fmt: skip
_ERFC_Q = (
    1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
    9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
    1.65666309194161350182e3, 5.57535340817727675546e2,
)  # fmt: skip


def _polynomial(x: FloatArray, coefficients: Sequence[float]) -> FloatArray:
    """Horner's rule, coefficients from the highest power down, in place after the first step."""
    result = x * coefficients[0] + coefficients[1]
    for coefficient in coefficients[2:]:
        result *= x
        result += coefficient
    return result


def erf(x: FloatArray) -> FloatArray:
    """The error function, elementwise, in x's precision (numpy has none of its own).

    |x| < 1: x·T(x²)/U(x²). 1 <= |x| < 6: 1 - exp(-x²)·P(|x|)/Q(|x|). Beyond 6, erfc(x) < 2e-17
    is below float64's resolution at 1, so erf is ±1 exactly and Cephes' third range (R/S, for
    |x| >= 8) is never needed. Both ranges are computed for every element and the right one
    picked, which is faster in numpy than gathering and scattering each range's elements.
    """
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    squared = x * x
    inner = x * _polynomial(squared, _ERF_T) / _polynomial(squared, _ERF_U)
    clipped = np.clip(np.abs(x), 1.0, 6.0)
    complement = np.exp(-clipped * clipped) * _polynomial(clipped, _ERFC_P)
    complement /= _polynomial(clipped, _ERFC_Q)
    outer = np.copysign(1.0 - complement, x)
    return np.where(np.abs(x) < 1.0, inner, outer)


def gelu(x: FloatArray) -> FloatArray:
    """GELU(x) = x·Φ(x) = ½·x·(1 + erf(x/√2)), the exact form BERT uses (not the tanh one)."""
    return 0.5 * x * (1.0 + erf(x * np.asarray(1 / np.sqrt(2.0), dtype=x.dtype)))


def layer_norm(x: FloatArray, gamma: FloatArray, beta: FloatArray, eps: float) -> FloatArray:
    """(x - mean) / √(var + ε) · γ + β over the last axis.  [n, d_model] -> [n, d_model]"""
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta


@dataclass(frozen=True)
class EncoderLayerWeights:
    """One layer, transposed so every product is x·W (checkpoints store Linear as [out, in])."""

    attention: AttentionWeights  # W_Q, W_K, W_V [h, d_model, d_k], W_O, and the biases
    attention_norm: tuple[FloatArray, FloatArray]  # γ, β [d_model] after attention + residual
    W_1: FloatArray  # [d_model, d_ff]
    b_1: FloatArray  # [d_ff]
    W_2: FloatArray  # [d_ff, d_model]
    b_2: FloatArray  # [d_model]
    output_norm: tuple[FloatArray, FloatArray]  # γ, β [d_model] after feed-forward + residual


@dataclass(frozen=True)
class EncoderWeights:
    """Embedding tables and every layer of the encoder."""

    word_embeddings: FloatArray  # [n_ids, d_model] rows for the sentence's ids only
    position_embeddings: FloatArray  # [n_positions, d_model]
    token_type_embedding: FloatArray  # [d_model] the row of token type 0
    embedding_norm: tuple[FloatArray, FloatArray]  # γ, β [d_model]
    layers: tuple[EncoderLayerWeights, ...]
    layer_norm_eps: float


@dataclass(frozen=True, eq=False)
class EncoderTrace:
    """Every layer's attention trace, and the hidden state between layers."""

    tokens: tuple[str, ...]  # [n] word pieces, [CLS] and [SEP] included
    layers: tuple[AttentionTrace, ...]  # layer l's X is its input hidden state; biases included
    hidden_states: FloatArray  # [L + 1, n, d_model]: embeddings, then each layer's output

    @property
    def last_hidden_state(self) -> FloatArray:
        return self.hidden_states[-1]


def embed(weights: EncoderWeights, n_tokens: int) -> FloatArray:
    """h₀ = LayerNorm(word + position + token-type embeddings).  -> [n, d_model]"""
    summed = (
        weights.word_embeddings[:n_tokens]
        + weights.position_embeddings[:n_tokens]
        + weights.token_type_embedding
    )
    return layer_norm(summed, *weights.embedding_norm, weights.layer_norm_eps)


def run_encoder(
    tokens: Sequence[str],
    weights: EncoderWeights,
    *,
    provenance: Provenance,
    mask: np.ndarray | None = None,
) -> EncoderTrace:
    """The forward pass, keeping each layer's attention steps.  tokens [n] -> EncoderTrace

    Computed in the weights' dtype (float32 by default, as the checkpoint stores it).
    ``provenance`` is the first layer's; each later layer's is the same but for its number.
    """
    hidden = embed(weights, len(tokens))
    hidden_states = [hidden]
    layer_traces = []
    for index, layer in enumerate(weights.layers):
        trace = multi_head_attention(
            tokens,
            hidden,
            layer.attention,
            provenance=for_layer(provenance, index + 1),
            mask=mask,
        )
        layer_traces.append(trace)
        eps = weights.layer_norm_eps
        after_attention = layer_norm(hidden + trace.output, *layer.attention_norm, eps)
        feed_forward = np.matmul(gelu(np.matmul(after_attention, layer.W_1) + layer.b_1), layer.W_2)
        hidden = layer_norm(after_attention + feed_forward + layer.b_2, *layer.output_norm, eps)
        hidden_states.append(hidden)
    return EncoderTrace(
        tokens=tuple(tokens),
        layers=tuple(layer_traces),
        hidden_states=frozen_array(np.stack(hidden_states), copy=False),
    )


def for_layer(provenance: Provenance, layer: int) -> Provenance:
    """The provenance of layer ``layer`` (from 1): its number in both origins; X is the model's
    embeddings in layer 1 and the previous layer's output after that."""
    kind = EmbeddingsKind.MODEL if layer == 1 else EmbeddingsKind.LAYER
    return provenance._replace(
        embeddings=provenance.embeddings._replace(kind=kind, layer=layer),
        weights=provenance.weights._replace(layer=layer),
    )
