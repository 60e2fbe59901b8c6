"""One family's layers run on new tokens against the K/V cache: ``run_block`` takes m tokens at
positions start … start + m − 1 (the whole prompt at once, then one token at a time) and gives
their hidden states after every layer and each layer's attention weights, [h, m, t].

    for each layer:  q, k, v of the new tokens only;  K, V = the cache's rows + k, v
                     weights = softmax(mask(q·Kᵀ / √d_k)),  z = weights·V
                     (row r, the token at position start + r, sees keys 0 … start + r)

Families: the Llama family (Llama, Qwen2, SmolLM2, from a folder or a GGUF file), GPT-2 and
attnviz's own toy decoders (``attnviz train … --save`` of a causal task with a token readout).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.generation.cache import KVCache


class Decoder(Protocol):
    """What generation asks of a model: sizes, token vectors, a layer on new tokens, logits."""

    n_layers: int
    n_heads: int  # h
    n_kv_heads: int  # G
    d_k: int
    dtype: type
    max_positions: int  # the positions it has (learned or trained for)

    def embed(self, ids: Sequence[int], start: int) -> FloatArray:
        """The vectors layer 1 reads for tokens ``ids`` at positions start, start + 1, ….
        -> [m, d_model]"""
        ...

    def layer(
        self, index: int, hidden: FloatArray, cache: KVCache, start: int
    ) -> tuple[FloatArray, FloatArray]:
        """Layer ``index`` (from 0) on the new tokens' hidden states [m, d_model], their keys
        and values appended to the cache: (the hidden states after it [m, d_model], the new
        rows of attention weights [h, m, t])."""
        ...

    def logits(self, hidden: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(the last hidden state as the model reports it [m, d_model] (after the final norm),
        the logits over the vocabulary [m, V])."""
        ...

    def output_rows(self, index: int) -> FloatArray:
        """Layer ``index``'s W_O in x·W form, [h·d_k, d_model]: head h's rows h·d_k … take its
        z to the output."""
        ...


def attend_cached(
    queries: FloatArray, keys: FloatArray, values: FloatArray, allowed: np.ndarray
) -> tuple[FloatArray, FloatArray]:
    """Each new token's query against the cached keys it may read (``allowed`` [m, t]: causal,
    and a sliding window's). h/G query heads share each key/value head.
    [h, m, d_k], [G, t, d_k], [G, t, d_k], [m, t] -> weights [h, m, t], Z [h, m, d_k]"""
    n_heads, m, d_k = queries.shape
    n_kv, t, _ = keys.shape
    group = n_heads // n_kv
    # Heads g·(h/G) … (g + 1)·(h/G) − 1 read key/value head g: their rows stacked, one product.
    grouped = queries.reshape(n_kv, group * m, d_k)
    scaled = (grouped @ keys.transpose(0, 2, 1)).reshape(n_heads, m, t)
    scaled /= queries.dtype.type(math.sqrt(d_k))
    scaled[:, ~allowed] = -np.inf  # every row sees at least its own key
    scaled -= scaled.max(axis=-1, keepdims=True)  # the row's largest first: no overflow
    weights = np.exp(scaled)
    weights /= weights.sum(axis=-1, keepdims=True)
    z = (weights.reshape(n_kv, group * m, t) @ values).reshape(n_heads, m, d_k)
    return weights, z


@dataclass
class LlamaDecoder:
    """A Llama-family model (Llama, Qwen2, SmolLM2) with every layer held: RMSNorm, Q/K/V of
    the new tokens rotated by their positions (RoPE), G key/value heads, SwiGLU."""

    weights: object  # families.llama.LlamaWeights, its layers kept
    token_table: FloatArray  # [V, d_model] every token's embedding
    unembedding: FloatArray  # [V, d_model] the output layer (the token table when tied)
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_k: int
    max_positions: int
    dtype: type = np.float32

    def embed(self, ids: Sequence[int], start: int) -> FloatArray:
        return np.asarray(self.token_table[list(ids)])

    def layer(
        self, index: int, hidden: FloatArray, cache: KVCache, start: int
    ) -> tuple[FloatArray, FloatArray]:
        from attnviz.model.families.llama import LlamaWeights
        from attnviz.model.families.rotary import rms_norm, rope_angles, rotate, swiglu_columns

        weights = self.weights
        assert isinstance(weights, LlamaWeights)
        layer = weights.layers[index]
        h, g, d_k, m = self.n_heads, self.n_kv_heads, self.d_k, hidden.shape[0]
        x = rms_norm(hidden, layer.attention_norm, weights.eps)
        projected = x @ layer.qkv_rows.T  # [m, (h + 2G)·d_k]
        if layer.qkv_bias is not None:
            projected += layer.qkv_bias
        q = projected[:, : h * d_k].reshape(m, h, d_k).transpose(1, 0, 2)
        k = projected[:, h * d_k : (h + g) * d_k].reshape(m, g, d_k).transpose(1, 0, 2)
        v = projected[:, (h + g) * d_k :].reshape(m, g, d_k).transpose(1, 0, 2)
        cos, sin = rope_angles(weights.rope, start + m, d_k, self.dtype)
        cos, sin = cos[start:], sin[start:]  # the new tokens' positions
        q, k = rotate(q, weights.rope, cos, sin), rotate(k, weights.rope, cos, sin)
        cache.append(index, k, v, start)
        allowed = cache.visible(index, start, hidden.shape[0])
        attention, z = attend_cached(q, cache.keys(index), cache.values(index), allowed)
        output = z.transpose(1, 0, 2).reshape(m, h * d_k) @ layer.output_rows.T
        if layer.b_O is not None:
            output += layer.b_O
        hidden = hidden + output
        normed = rms_norm(hidden, layer.mlp_norm, weights.eps)
        feed_forward = layer.down_rows @ swiglu_columns(normed.T, layer.gate_up_rows)
        return hidden + feed_forward.T, attention

    def logits(self, hidden: FloatArray) -> tuple[FloatArray, FloatArray]:
        from attnviz.model.families.llama import LlamaWeights
        from attnviz.model.families.rotary import rms_norm

        assert isinstance(self.weights, LlamaWeights)
        final = rms_norm(hidden, self.weights.final_norm, self.weights.eps)
        return final, final @ self.unembedding.T

    def output_rows(self, index: int) -> FloatArray:
        from attnviz.model.families.llama import LlamaWeights

        assert isinstance(self.weights, LlamaWeights)
        return self.weights.layers[index].W_O


@dataclass
class GPT2Decoder:
    """GPT-2: learned positions added to the token vectors, pre-LN blocks with biases, GELU, and
    the token table as the output layer (tied)."""

    weights: object  # families.gpt2.GPT2Weights, every block
    token_table: FloatArray  # [V, d_model] wte
    position_table: FloatArray  # [max_positions, d_model] wpe
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_k: int
    max_positions: int
    dtype: type = np.float32

    def embed(self, ids: Sequence[int], start: int) -> FloatArray:
        positions = self.position_table[start : start + len(ids)]
        vectors: FloatArray = self.token_table[list(ids)] + positions
        return vectors

    def layer(
        self, index: int, hidden: FloatArray, cache: KVCache, start: int
    ) -> tuple[FloatArray, FloatArray]:
        from attnviz.model.families.gpt2 import GPT2Weights, mlp
        from attnviz.model.functional import layer_norm

        assert isinstance(self.weights, GPT2Weights)
        block, eps = self.weights.blocks[index], self.weights.layer_norm_eps
        x = layer_norm(hidden, *block.norm_1, eps)
        attention = block.attention
        # GPT-2 has every bias (families.gpt2.load reads them all).
        assert attention.b_Q is not None and attention.b_K is not None
        assert attention.b_V is not None and attention.b_O is not None
        q, k, v = (
            np.einsum("md,hdk->hmk", x, w) + b[:, np.newaxis, :]
            for w, b in (
                (attention.W_Q, attention.b_Q),
                (attention.W_K, attention.b_K),
                (attention.W_V, attention.b_V),
            )
        )
        cache.append(index, k, v, start)
        allowed = cache.visible(index, start, hidden.shape[0])
        weights, z = attend_cached(q, cache.keys(index), cache.values(index), allowed)
        m = hidden.shape[0]
        output = z.transpose(1, 0, 2).reshape(m, self.n_heads * self.d_k) @ attention.W_O
        hidden = hidden + output + attention.b_O
        return hidden + mlp(layer_norm(hidden, *block.norm_2, eps), block), weights

    def logits(self, hidden: FloatArray) -> tuple[FloatArray, FloatArray]:
        from attnviz.model.families.gpt2 import GPT2Weights
        from attnviz.model.functional import layer_norm

        assert isinstance(self.weights, GPT2Weights)
        final = layer_norm(hidden, *self.weights.final_norm, self.weights.layer_norm_eps)
        return final, final @ self.token_table.T

    def output_rows(self, index: int) -> FloatArray:
        from attnviz.model.families.gpt2 import GPT2Weights

        assert isinstance(self.weights, GPT2Weights)
        return self.weights.blocks[index].attention.W_O


@dataclass
class ToyDecoder:
    """attnviz's own toy decoder: X₀ = E[id] + P[position], attention layers with residual
    connections, no norm and no feed-forward block; W_U reads the vocabulary off the last X."""

    weights: object  # families.toy.ToyWeights, with W_U over the vocabulary
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_k: int
    max_positions: int
    dtype: type = np.float32

    def embed(self, ids: Sequence[int], start: int) -> FloatArray:
        from attnviz.model.families.toy import ToyWeights

        assert isinstance(self.weights, ToyWeights)
        vectors: FloatArray = self.weights.E[list(ids)] + self.weights.P[start : start + len(ids)]
        return vectors

    def layer(
        self, index: int, hidden: FloatArray, cache: KVCache, start: int
    ) -> tuple[FloatArray, FloatArray]:
        from attnviz.model.families.toy import ToyWeights

        assert isinstance(self.weights, ToyWeights)
        layer = self.weights.layers[index]
        q = np.einsum("md,hdk->hmk", hidden, layer.W_Q)
        k = np.einsum("md,hdk->hmk", hidden, layer.W_K)
        v = np.einsum("md,hdk->hmk", hidden, layer.W_V)
        cache.append(index, k, v, start)
        allowed = cache.visible(index, start, hidden.shape[0])
        attention, z = attend_cached(q, cache.keys(index), cache.values(index), allowed)
        m = hidden.shape[0]
        output = z.transpose(1, 0, 2).reshape(m, self.n_heads * self.d_k) @ layer.W_O
        return hidden + output, attention

    def logits(self, hidden: FloatArray) -> tuple[FloatArray, FloatArray]:
        from attnviz.model.families.toy import ToyWeights

        assert isinstance(self.weights, ToyWeights) and self.weights.W_U is not None
        return hidden, hidden @ self.weights.W_U

    def output_rows(self, index: int) -> FloatArray:
        from attnviz.model.families.toy import ToyWeights

        assert isinstance(self.weights, ToyWeights)
        return self.weights.layers[index].W_O


#: run_block's rows by default: the last, whose logits choose the next token.
LAST_ROW = slice(-1, None)


def run_block(
    decoder: Decoder,
    ids: Sequence[int],
    cache: KVCache,
    start: int,
    *,
    rows: slice | Sequence[int] = LAST_ROW,
    states: list[FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray, tuple[FloatArray, ...]]:
    """Tokens ``ids`` at positions start … through every layer, the cache holding the tokens
    before them: (the last hidden states [r, d_model] and logits [r, V] of ``rows``, the new
    tokens' rows asked for (the last one: the next token's), each layer's attention weights
    [h, m, t]). Logits cost d_model·V products a row (SmolLM2: 28 million): only those asked.
    ``states``, when given, receives the residual stream of ``rows`` before layer 1 and after
    each layer (the logit lens reads them)."""
    hidden = decoder.embed(ids, start)
    if states is not None:
        states.append(hidden[rows])
    attention = []
    for index in range(decoder.n_layers):
        hidden, weights = decoder.layer(index, hidden, cache, start)
        attention.append(weights)
        if states is not None:
            states.append(hidden[rows])
    final, logits = decoder.logits(hidden[rows])
    return final, logits, tuple(attention)
