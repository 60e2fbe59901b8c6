"""The first token's figures against a literal loop over the lesson's own trace, and the held
text's sliding windows against a cache that drops tokens one step at a time."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz.generation.decoder import run_block
from attnviz.generation.loading import load_decoder
from attnviz.generation.run import Window, new_cache
from attnviz.generation.sinks import first_token, held_text

TEXT = "a c e g b d a c e g b d a"


def test_the_first_tokens_figures_are_a_literal_loops_over_the_trace() -> None:
    loaded = load_decoder("induction", "float64")
    ids = loaded.tokenizer(TEXT, loaded.toy_config).ids
    found = first_token(loaded.decoder, ids)
    layers = attnviz.explain(TEXT, model="induction", dtype="float64").layers
    for layer, trace in enumerate(layers):
        h, n = trace.n_heads, len(ids)
        d_k = trace.V.shape[-1]
        for head in range(h):
            rows_of_w_o = trace.W_O[head * d_k : (head + 1) * d_k]
            norms = [float(np.linalg.norm(trace.V[head, j] @ rows_of_w_o)) for j in range(n)]
            weights, shares = [], []
            for i in range(1, n):
                row = trace.weights[head, i]
                weights.append(row[0])
                shares.append(row[0] * norms[0] / sum(row[j] * norms[j] for j in range(n)))
            assert found.weight[layer, head] == pytest.approx(np.mean(weights), abs=1e-12)
            assert found.share[layer, head] == pytest.approx(np.mean(shares), abs=1e-12)
            assert found.size[layer, head] == pytest.approx(
                norms[0] / np.mean(norms[1:]), rel=1e-12
            )


def test_one_masked_pass_gives_what_a_cache_that_drops_tokens_gives() -> None:
    loaded = load_decoder("induction", "float64")
    decoder = loaded.decoder
    ids = loaded.tokenizer(TEXT, loaded.toy_config).ids
    held = held_text(decoder, ids, window=4, keep_first=1)
    for name, window in (("keep", Window(4, 1)), ("drop", Window(4, 0))):
        cache = new_cache(decoder, len(ids), window)
        stepwise = []
        for position, token in enumerate(ids[:-1]):  # one token at a time, tokens dropped
            _, logits, _ = run_block(decoder, [token], cache, position)
            p = np.exp(logits[-1] - logits[-1].max())
            stepwise.append(np.log(p[ids[position + 1]] / p.sum()))
            assert cache.size.tokens <= 4
        np.testing.assert_allclose(held.log_p[name], stepwise, atol=1e-10)
    # Before position 4 no window hides a token: the same numbers as the whole cache.
    np.testing.assert_allclose(held.log_p["keep"][:4], held.log_p["whole"][:4], atol=1e-12)
    assert np.all(held.tv["drop"][:4] < 1e-12)
    assert np.all((held.tv["keep"] >= 0) & (held.tv["keep"] <= 1))
