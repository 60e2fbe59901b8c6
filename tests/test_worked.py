"""Worked examples as data: each record's terms add up to the trace's own number, in every mode."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from attnviz import worked
from attnviz.core import cross_layers, trace_layers
from attnviz.options import TraceOptions
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace


def traces() -> dict[str, AttentionTrace]:
    return {
        "default": trace_layers("I am good").layers[0],
        "masked": trace_layers("The cat sat on it", TraceOptions(causal=True, pad_to=7)).layers[0],
        "wide": trace_layers("Thinking Machines", TraceOptions(heads=4, d_model=32)).layers[0],
        "cross": cross_layers("I am very good", "Je vais bien").layers[0],
    }


TRACES = traces()


def pairs(trace: AttentionTrace) -> list[tuple[int, int, int]]:
    return list(
        itertools.product(range(trace.n_heads), range(trace.n_tokens), range(len(trace.key_tokens)))
    )


@pytest.mark.parametrize("name", sorted(TRACES))
def test_every_example_adds_up_to_the_traces_number(name: str) -> None:
    trace = TRACES[name]
    tight = {"rtol": 1e-12, "atol": 1e-12}
    for head, query, key in pairs(trace):
        for matrix in ("Q", "K", "V"):
            token = key if matrix != "Q" else query
            example = worked.projection(trace, head, token, column=1, matrix=matrix)
            assert example.result == getattr(trace, matrix)[head, token, 1]
            total = float(example.x @ example.w) + (example.bias or 0.0)
            np.testing.assert_allclose(total, example.result, **tight)
        dot = worked.dot_product(trace, head, query, key)
        assert dot.result == trace.scores[head, query, key]
        np.testing.assert_allclose(float(dot.q @ dot.k), dot.result, **tight)
        scaling = worked.scaling(trace, head, query, key)
        assert scaling.sqrt_d_k == math.sqrt(trace.d_k)
        np.testing.assert_allclose(scaling.score / scaling.sqrt_d_k, scaling.result, **tight)
        softmax = worked.softmax_example(trace, head, query, key)
        assert softmax.result == trace.weights[head, query, key]
        assert (softmax.exponentials[softmax.masked] == 0).all()
        assert (softmax.shifted[softmax.masked] == -np.inf).all()
        np.testing.assert_allclose(softmax.exponentials.sum(), softmax.total, **tight)
        np.testing.assert_allclose(
            softmax.exponentials[key] / softmax.total, softmax.result, **tight
        )
    for head, query in itertools.product(range(trace.n_heads), range(trace.n_tokens)):
        weighted = worked.weighted_sum(trace, head, query)
        np.testing.assert_array_equal(weighted.result, trace.Z[head, query])
        np.testing.assert_allclose(weighted.weights @ weighted.values, weighted.result, **tight)
        assert list(weighted.weights[list(weighted.order)]) == sorted(
            weighted.weights, reverse=True
        )
    for token in range(trace.n_tokens):
        output = worked.output_element(trace, token, column=2)
        assert output.result == trace.output[token, 2]
        bias = output.bias or 0.0
        np.testing.assert_allclose(
            output.concat_row @ output.w_o_column + bias, output.result, **tight
        )
        np.testing.assert_allclose(output.head_blocks.sum() + bias, output.result, **tight)


@pytest.mark.parametrize("name", sorted(TRACES))
def test_the_heads_parts_of_the_output_add_up_to_concat_times_w_o(name: str) -> None:
    trace = TRACES[name]
    blocks = worked.head_blocks(trace)
    assert blocks.shape == (trace.n_heads, trace.n_tokens, trace.d_model)
    np.testing.assert_allclose(blocks.sum(axis=0), trace.output, rtol=1e-12, atol=1e-12)


def test_the_examples_follow_the_focus_word_and_the_key_it_attends_to_most() -> None:
    trace = TRACES["masked"]
    selection = select(trace, ViewOptions(focus="sat", head=1))
    examples = worked.head_examples(trace, selection, 0)
    sat = trace.tokens.index("sat")
    assert examples.dot_product.query == sat == examples.weighted_sum.query
    assert examples.dot_product.key == int(np.argmax(trace.weights[0, sat]))
    assert examples.softmax.key == examples.scaling.key == examples.dot_product.key
    # Without a focus word: the first shown row; a hidden key is never the example's key.
    hidden = select(trace, ViewOptions(hide_special=True, focus="The"))
    for head in range(trace.n_heads):
        key = worked.example_key(trace, hidden, head, worked.example_query(trace, hidden))
        assert key not in trace.provenance.special


def test_masked_keys_are_exactly_zero_in_the_softmax_example() -> None:
    trace = TRACES["masked"]
    example = worked.softmax_example(trace, 0, 1, 0)  # "cat" may see "The" and itself only
    assert example.masked.tolist() == [False, False, True, True, True, True, True]
    assert example.exponentials[2:].tolist() == [0.0] * 5
