"""The logit lens: each layer's reading against a literal computation from the lesson's own trace,
and the last layer's reading against the model's next-token distribution."""

from __future__ import annotations

import numpy as np

import attnviz
from attnviz.generation.lens import logit_lens
from attnviz.generation.loading import load_decoder
from attnviz.generation.run import collect, generated_tokens
from attnviz.generation.sampling import Sampling

TEXT = "j k l a b c d e a b"


def test_each_layers_reading_is_its_residual_stream_through_the_output_layer() -> None:
    loaded = load_decoder("induction", "float64")
    ids = loaded.tokenizer(TEXT, loaded.toy_config).ids
    reading = logit_lens(loaded.decoder, ids, position=6, top=16)
    layers = attnviz.explain(TEXT, model="induction", dtype="float64").layers
    w_u = loaded.decoder.weights.W_U  # type: ignore[attr-defined]
    streams = [layers[0].X[6], *(layer.X[6] + layer.output[6] for layer in layers)]
    for row, h in enumerate(streams):
        logits = h @ w_u
        p = np.exp(logits - logits.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        assert reading.top_ids[row].tolist() == order.tolist()
        np.testing.assert_allclose(reading.top_probabilities[row], p[order], atol=1e-12)
        final = reading.top_ids[-1][0]
        assert reading.final_rank[row] == int(np.flatnonzero(order == final)[0]) + 1


def test_the_lens_kept_while_generating_is_the_lens_of_the_whole_text() -> None:
    """--lens keeps each query's residual stream as the cached pass goes; read through the
    output layer it is the logit lens of the whole sequence at that position."""
    from attnviz.generation.lens import read_layers

    loaded = load_decoder("induction", "float64")
    ids = loaded.tokenizer(TEXT, loaded.toy_config).ids
    tokens = collect(generated_tokens(loaded.decoder, ids, 3, Sampling(), None, lens=True))
    fed = [*ids, *(t.choice.chosen for t in tokens[:-1])]
    for token in tokens:
        assert token.states is not None
        cached = read_layers(list(token.states), loaded.decoder, 4, follow=token.choice.chosen)
        whole = logit_lens(loaded.decoder, fed, token.query_position, top=4)
        assert cached.top_ids.tolist() == whole.top_ids.tolist()
        np.testing.assert_allclose(cached.top_probabilities, whole.top_probabilities, atol=1e-12)


def test_the_last_layers_reading_is_the_next_token_distribution() -> None:
    loaded = load_decoder("induction", "float32")
    ids = loaded.tokenizer(TEXT, loaded.toy_config).ids
    reading = logit_lens(loaded.decoder, ids, position=len(ids) - 1, top=5)
    first = collect(generated_tokens(loaded.decoder, ids, 1, Sampling(), None))[0]
    assert reading.top_ids[-1].tolist() == first.choice.shown[:5].tolist()
    np.testing.assert_allclose(
        reading.top_probabilities[-1], first.choice.probabilities[:5], atol=1e-6
    )
    assert reading.final_rank[-1] == 1
