"""Ablating a head (uniform weights in its place): the ablated output against a recomputation in
plain numpy, identities (nothing ablated, a head already uniform), a hand-made case, the
measures, and a whole toy model's ablation redone by hand."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.analysis.ablation import (
    ablate_heads,
    ablated_output,
    rank_correlation,
    readout_of,
    relative_change,
    tied_embeddings,
    total_variation,
    uniform_weights,
)
from attnviz.attention import causal_mask, padding_mask
from attnviz.model.run import LoadedModel, load_model
from attnviz.selection import ViewOptions, select
from attnviz.weights import AttentionWeights

from support import needs_model

TIRED = "the animal didn't cross the street because it was too tired"
TINY_GPT2 = str(Path(__file__).resolve().parents[1] / "model" / "tiny_gpt2")


def test_uniform_weights_spread_over_the_allowed_keys_only() -> None:
    full = uniform_weights(2, 3, None, np.float64)
    np.testing.assert_array_equal(full, np.full((2, 3), 1 / 3))
    causal = uniform_weights(3, 3, causal_mask(3), np.float64)
    np.testing.assert_allclose(causal, [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]])
    padded = uniform_weights(3, 3, padding_mask(2, 3), np.float32)
    assert padded.dtype == np.float32
    np.testing.assert_allclose(padded, [[0.5, 0.5, 0]] * 3)


def test_a_hand_made_head_becomes_the_mean_of_its_values() -> None:
    # One head, d_model = d_k = 2, W_V = W_O = I, no biases: output = weights · X. Uniform
    # weights make every row the mean of the two rows of X, [2, 1].
    x = np.array([[1.0, 0.0], [3.0, 2.0]])
    eye = np.eye(2)[np.newaxis]
    weights = AttentionWeights(W_Q=eye * 4, W_K=eye, W_V=eye, W_O=np.eye(2))
    trace = attnviz.multi_head_attention(["a", "b"], x, weights)
    assert not np.allclose(trace.output, [[2.0, 1.0]] * 2)  # the learned weights are not flat
    np.testing.assert_allclose(ablated_output(trace, 0), [[2.0, 1.0], [2.0, 1.0]])


@pytest.mark.parametrize("head", [0, 1, 2])
def test_ablated_output_is_the_layer_recomputed_with_uniform_weights(head: int) -> None:
    trace = attnviz.trace_attention(
        "the cat sat on the mat", config=attnviz.AttentionConfig(d_model=12, n_heads=3, seed=5)
    )
    n, h, d_k = trace.n_tokens, trace.n_heads, trace.d_k
    # Independently: V from X and W_V, each head's weights·V, the chosen head's weights flat.
    values = np.einsum("nd,hdk->hnk", trace.X, trace.W_V)
    weights = np.array(trace.weights, copy=True)
    weights[head] = 1.0 / n
    z = np.einsum("hij,hjk->hik", weights, values)
    concat = np.concatenate([z[i] for i in range(h)], axis=1)  # [n, h·d_k]
    expected = concat @ trace.W_O
    assert concat.shape == (n, h * d_k)
    np.testing.assert_allclose(ablated_output(trace, head), expected, atol=1e-12)
    assert not np.allclose(ablated_output(trace, head), trace.output)


def test_a_causal_padded_layer_keeps_its_masks_when_ablated() -> None:
    shown = attnviz.explain("I am good", causal=True, pad_to=5, seed=2)
    trace = shown.trace
    assert trace.mask is not None
    values = np.einsum("nd,hdk->hnk", trace.X, trace.W_V)
    flat = trace.mask / trace.mask.sum(axis=1, keepdims=True)
    z = np.array(trace.Z, copy=True)
    z[1] = flat @ values[1]
    expected = np.concatenate(list(z), axis=1) @ trace.W_O
    np.testing.assert_allclose(ablated_output(trace, 1), expected, atol=1e-12)


def test_the_measures_by_hand() -> None:
    assert relative_change(np.array([3.0, 4.0]), np.array([3.0, 4.0])) == 0.0
    assert relative_change(np.array([3.0, 4.0]), np.array([0.0, 4.0])) == pytest.approx(3 / 5)
    assert total_variation(np.array([0.5, 0.5, 0.0]), np.array([0.5, 0.5, 0.0])) == 0.0
    assert total_variation(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == 1.0
    assert total_variation(np.array([0.6, 0.4]), np.array([0.3, 0.7])) == pytest.approx(0.3)


def test_rank_correlation_by_hand() -> None:
    assert rank_correlation(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 90.0])) == 1.0
    assert rank_correlation(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == -1.0
    # Ties share their mean rank: ranks [0.5, 0.5, 2] and [0, 1, 2].
    x = np.array([0.5, 0.5, 0.9])
    expected = np.corrcoef([0.5, 0.5, 2.0], [0.0, 1.0, 2.0])[0, 1]
    assert rank_correlation(x, np.array([1.0, 2.0, 3.0])) == pytest.approx(expected)
    assert math.isnan(rank_correlation(np.ones(3), np.array([1.0, 2.0, 3.0])))


def ablation_of(loaded: LoadedModel, focus: str = "it") -> attnviz.analysis.ablation.Ablation:
    run = loaded.forward()
    selection = select(run.layers[-1], ViewOptions(focus=focus))
    assert selection.focus is not None
    readout, why = readout_of(loaded, selection.focus)
    return ablate_heads(loaded, run, selection, readout, no_readout=why)


def test_coref_ablation_redone_in_plain_numpy() -> None:
    """coref: two attention-only layers of one head, X_l = X_{l−1} + output_l, a pointer readout
    (softmax of layer 2's scaled scores in the row of "it")."""
    loaded = load_model(TIRED, "coref", dtype="float64")
    ablation = ablation_of(loaded)
    w = loaded.weights
    ids = list(loaded.encoding.ids)
    it = loaded.encoding.tokens.index("it")
    assert ablation.position == it and ablation.focus_keys == len(ids)

    def layer(x: np.ndarray, index: int, flat: bool) -> tuple[np.ndarray, np.ndarray]:
        weights = w.layers[index]
        q, k, v = (x @ m[0] for m in (weights.W_Q, weights.W_K, weights.W_V))
        scaled = q @ k.T / math.sqrt(q.shape[1])
        soft = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        soft /= soft.sum(axis=1, keepdims=True)
        if flat:
            soft = np.full_like(soft, 1 / len(x))
        return x + soft @ v @ weights.W_O, scaled

    def answer(scaled: np.ndarray) -> np.ndarray:
        row = np.exp(scaled[it] - scaled[it].max())
        return row / row.sum()

    x0 = w.E[ids] + w.P[: len(ids)]
    x1, _ = layer(x0, 0, False)
    x2, scaled2 = layer(x1, 1, False)
    by_layer = {effect.layer: effect for effect in ablation.effects}
    for ablated_layer, effect in by_layer.items():
        y1, _ = layer(x0, 0, ablated_layer == 1)
        y2, scaled2_after = layer(y1, 1, ablated_layer == 2)
        change = np.linalg.norm(x2[it] - y2[it]) / np.linalg.norm(x2[it])
        assert effect.hidden_change == pytest.approx(change, rel=1e-9)
        tv = 0.5 * np.abs(answer(scaled2) - answer(scaled2_after)).sum()
        assert effect.output_change == pytest.approx(tv, abs=1e-12)
    assert by_layer[2].output_change == 0.0  # the last layer's scores do not move
    assert [e.hidden_change for e in ablation.effects] == sorted(
        (e.hidden_change for e in ablation.effects), reverse=True
    )
    assert ablation.words[by_layer[2].target] == "animal" and by_layer[2].weight > 0.99


@pytest.mark.slow
@needs_model  # the tiny GPT-2's tokenizer
def test_ablating_a_head_that_is_already_uniform_changes_nothing() -> None:
    """tiny GPT-2 with head 2 of block 1 given W_Q = 0 and b_Q = 0: every score is 0, the causal
    softmax is uniform over the words up to each row's own, as ablation makes it."""
    loaded = load_model("the cat sat because it was tired", TINY_GPT2, dtype="float64")
    blocks = loaded.weights.blocks
    attention = blocks[0].attention
    w_q, b_q = np.array(attention.W_Q), np.array(attention.b_Q)
    w_q[1], b_q[1] = 0.0, 0.0
    flat = replace(blocks[0], attention=replace(attention, W_Q=w_q, b_Q=b_q))
    weights = replace(loaded.weights, blocks=(flat, *blocks[1:]))
    ablation = ablation_of(replace(loaded, weights=weights))
    effect = next(e for e in ablation.effects if (e.layer, e.head) == (1, 2))
    assert effect.hidden_change < 1e-12 and effect.output_change is not None
    assert effect.output_change < 1e-12
    assert all(e.hidden_change > 1e-3 for e in ablation.effects if e is not effect)
    assert ablation.causal and ablation.focus_keys == ablation.position + 1


@needs_model
def test_gpt2_reads_its_whole_token_table_as_the_output_layer() -> None:
    loaded = load_model("the cat sat because it was tired", TINY_GPT2)
    run = loaded.forward()
    selection = select(run.layers[-1], ViewOptions(focus="it"))
    assert selection.focus is not None
    readout, why = readout_of(loaded, selection.focus)
    assert readout is not None and why == ""
    assert "next-token distribution after 'it'" in readout.what
    position = selection.focus.index
    p = readout.distribution(run, run.layers[-1], position)
    table = tied_embeddings(loaded)
    assert table is not None and table.shape == (320, 32)
    # The table's rows for the sentence are the token embeddings the model read.
    np.testing.assert_array_equal(table[list(loaded.encoding.ids)], loaded.weights.token_embeddings)
    logits = np.asarray(run.last_hidden_state[position], np.float64) @ table.T.astype(np.float64)
    expected = np.exp(logits - logits.max())
    np.testing.assert_allclose(p, expected / expected.sum(), rtol=1e-6)


def test_a_toy_model_answers_only_where_it_was_trained_to() -> None:
    loaded = load_model(TIRED, "coref-word")
    run = loaded.forward()
    for word, has_readout in (("it", True), ("street", False)):
        selection = select(run.layers[-1], ViewOptions(focus=word))
        assert selection.focus is not None
        readout, why = readout_of(loaded, selection.focus)
        assert (readout is not None) is has_readout
        if not has_readout:
            assert why == (
                "coref-word was trained to answer at 'it' only, so at 'street' only the hidden "
                "state is measured."
            )
