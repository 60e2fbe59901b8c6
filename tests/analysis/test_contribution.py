"""Weight against contribution (Kobayashi et al. 2020): norms, shares, and one row for a view."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.analysis.contribution import (
    OVERWEIGHT_FACTOR,
    contribution_norms,
    contribution_vectors,
    contributions,
    row_contribution,
    shares,
    transformed_values,
)
from attnviz.trace import AttentionTrace

from support import needs_model

SENTENCE = "The animal didn't cross the street because it was too tired"


def random_trace() -> AttentionTrace:
    return attnviz.trace_attention(
        SENTENCE, config=attnviz.AttentionConfig(d_model=12, n_heads=3, seed=4)
    )


def looped_norms(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """‖w_ij · ((x_j·W_V^h + b_V^h)·W_O^h)‖ one head, query and key at a time, from raw arrays."""
    X, W_V, W_O, weights = arrays["X"], arrays["W_V"], arrays["W_O"], arrays["weights"]
    n_heads, n_queries, n_keys = weights.shape
    d_k = W_V.shape[-1]
    norms = np.zeros(weights.shape)
    for h in range(n_heads):
        rows = W_O[h * d_k : (h + 1) * d_k]
        for i in range(n_queries):
            for j in range(n_keys):
                value = X[j] @ W_V[h]
                if "b_V" in arrays:
                    value = value + arrays["b_V"][h]
                norms[h, i, j] = np.linalg.norm(weights[h, i, j] * (value @ rows))
    return norms


def exported(trace: AttentionTrace, folder: Path) -> dict[str, np.ndarray]:
    path = folder / "trace.npz"
    attnviz.export_trace(trace, path)
    with np.load(path) as data:
        return {
            key: np.asarray(data[key], dtype=np.float64)
            for key in data.files
            if key != "config" and "tokens" not in key
        }


def test_norms_equal_a_per_word_loop_over_the_export(tmp_path: Path) -> None:
    trace = random_trace()
    found = contributions(trace)
    np.testing.assert_allclose(found.norms, looped_norms(exported(trace, tmp_path)), atol=1e-12)


def test_cross_attention_keys_are_the_source_words(tmp_path: Path) -> None:
    trace = attnviz.cross("I am very good", "Je vais bien").trace
    found = contributions(trace)
    assert found.norms.shape == (trace.n_heads, 3, 4)
    arrays = exported(trace, tmp_path)
    arrays["X"] = arrays["X_source"]  # keys and values come from the source
    np.testing.assert_allclose(found.norms, looped_norms(arrays), atol=1e-12)
    row = row_contribution(trace, 0, 1)
    assert row.word == "vais" and [e.word for e in row.keys] == ["I", "am", "very", "good"]


def test_shares_sum_to_one_per_row_and_follow_the_norms() -> None:
    found = contributions(random_trace())
    np.testing.assert_allclose(found.shares.sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(
        found.shares, found.norms / found.norms.sum(axis=-1, keepdims=True), atol=1e-15
    )


def test_contribution_vectors_add_up_to_the_output() -> None:
    """Σ_h Σ_j w_ij f_h(x_j) = Concat·W_O: the vectors are a decomposition of the output."""
    trace = random_trace()
    vectors = contribution_vectors(trace.weights, transformed_values(trace.V, trace.W_O))
    np.testing.assert_allclose(vectors.sum(axis=(0, 2)), trace.output, atol=1e-12)
    np.testing.assert_allclose(
        np.linalg.norm(vectors, axis=-1), contributions(trace).norms, atol=1e-12
    )


def test_a_hand_checked_row() -> None:
    """Weights 0.75 and 0.25 on values of length 1 and 6: norms 0.75 and 1.5, shares ⅓ and ⅔."""
    weights = np.array([[[0.75, 0.25]]])
    norms = contribution_norms(weights, np.array([[1.0, 6.0]]))
    np.testing.assert_allclose(norms, [[[0.75, 1.5]]])
    np.testing.assert_allclose(shares(norms), [[[1 / 3, 2 / 3]]])
    assert np.isnan(shares(np.zeros((1, 1, 2)))).all()


def test_row_record_matches_the_arrays() -> None:
    trace = random_trace()
    found = contributions(trace)
    row = row_contribution(trace, 2, 7)
    assert (row.head, row.query, row.word) == (2, 7, "it")
    assert [entry.word for entry in row.keys] == list(trace.tokens)
    for entry in row.keys:
        assert entry.weight == pytest.approx(found.weights[2, 7, entry.key], abs=1e-15)
        assert entry.value_norm == pytest.approx(found.value_norms[2, entry.key], abs=1e-12)
        assert entry.transformed_norm == pytest.approx(
            found.transformed_norms[2, entry.key], abs=1e-12
        )
        assert entry.norm == pytest.approx(entry.weight * entry.transformed_norm, abs=1e-12)
        assert entry.share == pytest.approx(found.shares[2, 7, entry.key], abs=1e-12)
    assert row.total == pytest.approx(found.norms[2, 7].sum(), abs=1e-12)
    assert [e.share for e in row.by_share()] == sorted((e.share for e in row.keys), reverse=True)
    assert [e.weight for e in row.by_weight()] == sorted((e.weight for e in row.keys), reverse=True)
    for entry in row.overweighted():
        assert entry.weight >= OVERWEIGHT_FACTOR * entry.share and entry.weight > 1 / 11


@pytest.mark.parametrize(("head", "query"), [(-1, 0), (3, 0), (0, 11)])
def test_row_out_of_range_is_refused(head: int, query: int) -> None:
    with pytest.raises(ValueError, match="is not in 0"):
        row_contribution(random_trace(), head, query)


@pytest.mark.slow
@needs_model
def test_minilm_cls_has_weight_but_little_contribution(tmp_path: Path) -> None:
    """The README's example: layer 6, head 12, the row of "it". [CLS] has the second largest
    weight (≈0.15) but a short value, so about 1% of the row's contribution, below "tired"."""
    trace = attnviz.explain(SENTENCE, model="minilm").layers[5]
    assert trace.b_V is not None
    it = trace.tokens.index("it")
    row = row_contribution(trace, 11, it)
    cls, tired = row.keys[0], row.keys[trace.tokens.index("tired")]
    assert cls.word == "[CLS]" and row.by_weight()[1] is cls
    assert cls.weight == pytest.approx(0.15, abs=0.005)
    assert tired.weight == pytest.approx(0.04, abs=0.005)
    assert cls.share == pytest.approx(0.01, abs=0.002) and cls.share < tired.share
    assert cls.value_norm == pytest.approx(0.34, abs=0.005)
    assert row.keys[trace.tokens.index("animal")].value_norm == pytest.approx(6.24, abs=0.005)
    assert row.overweighted() == (cls,)
    norms = looped_norms(exported(trace, tmp_path))  # with b_V, independently of the trace
    np.testing.assert_allclose(
        [entry.norm for entry in row.keys], norms[11, it], rtol=1e-5, atol=1e-6
    )
