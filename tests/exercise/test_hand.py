"""The hand-sized layer: its numbers come from the small sets it promises, its intermediates
stay within the bounds its note states, and it is the textbook computation, checked against a
literal per-word loop."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import attnviz
from attnviz.errors import AttnvizError
from attnviz.exercise.hand import (
    MAX_HAND_WORDS,
    MAX_PROJECTED,
    MAX_SCORE,
    QUERY_KEY_VALUES,
    VALUE_VALUES,
    X_VALUES,
    hand_note,
    hand_traces,
)
from attnviz.exercise.questions import KINDS

SENTENCES = ("it", "I am good", "The animal crossed because it was tired", "a b c d e f g h")


def _per_word_loop(trace: attnviz.AttentionTrace) -> tuple[np.ndarray, ...]:
    """Every step with Python loops and math.exp, one word and one number at a time."""
    n, h, d_k, d_model = trace.n_tokens, trace.n_heads, trace.d_k, trace.d_model
    x, w_q, w_k, w_v, w_o = (
        np.asarray(a) for a in (trace.X, trace.W_Q, trace.W_K, trace.W_V, trace.W_O)
    )

    def project(w: np.ndarray, head: int, word: int) -> list[float]:
        return [
            sum(float(x[word, d]) * float(w[head, d, c]) for d in range(d_model))
            for c in range(d_k)
        ]

    scores = np.zeros((h, n, n))
    weights = np.zeros((h, n, n))
    z = np.zeros((h, n, d_k))
    for head in range(h):
        q = [project(w_q, head, i) for i in range(n)]
        k = [project(w_k, head, j) for j in range(n)]
        v = [project(w_v, head, j) for j in range(n)]
        for i in range(n):
            row = [sum(a * b for a, b in zip(q[i], k[j], strict=True)) for j in range(n)]
            scores[head, i] = row
            scaled = [s / math.sqrt(d_k) for s in row]
            top = max(scaled)
            exps = [math.exp(s - top) for s in scaled]
            weights[head, i] = [e / sum(exps) for e in exps]
            z[head, i] = [sum(weights[head, i, j] * v[j][c] for j in range(n)) for c in range(d_k)]
    concat = np.array([[z[head, i, c] for head in range(h) for c in range(d_k)] for i in range(n)])
    output = np.array(
        [
            [
                sum(concat[i, r] * float(w_o[r, col]) for r in range(h * d_k))
                for col in range(d_model)
            ]
            for i in range(n)
        ]
    )
    return scores, weights, z, concat, output


@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_hand_trace_is_the_textbook_computation_word_by_word(sentence: str, seed: int) -> None:
    (trace,) = hand_traces(sentence, seed)
    scores, weights, z, concat, output = _per_word_loop(trace)
    # Q, K and the scores are sums of products of halves: exact in binary, so equal exactly.
    assert np.array_equal(trace.scores, scores)
    # The softmax onward: exp and division, summed in another order than numpy's; float64
    # agrees to a few units in the last place of numbers of order 1.
    for ours, loop in ((trace.weights, weights), (trace.Z, z), (trace.concat, concat)):
        np.testing.assert_allclose(ours, loop, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(trace.output, output, rtol=1e-12, atol=1e-12)


def test_the_sizes_and_sets_are_those_made_for_paper() -> None:
    for seed in range(30):
        for sentence in SENTENCES:
            (trace,) = hand_traces(sentence, seed)
            assert (trace.d_model, trace.n_heads, trace.d_k) == (4, 2, 2)
            assert set(np.unique(trace.X)) <= set(X_VALUES)
            assert set(np.unique(trace.W_Q)) | set(np.unique(trace.W_K)) <= set(QUERY_KEY_VALUES)
            assert set(np.unique(trace.W_V)) | set(np.unique(trace.W_O)) <= set(VALUE_VALUES)
            rows = [tuple(row) for row in trace.X.tolist()]
            assert len(set(rows)) == len(rows) and all(any(row) for row in rows)
            # One decimal for Q and K (halves), two for the scores (quarters), within bounds.
            assert np.array_equal(trace.Q * 2, np.round(trace.Q * 2))
            assert np.array_equal(trace.scores * 4, np.round(trace.scores * 4))
            assert np.abs(trace.Q).max() <= MAX_PROJECTED and np.abs(trace.K).max() <= MAX_PROJECTED
            assert np.abs(trace.scores).max() <= MAX_SCORE


def test_the_same_seed_gives_the_same_layer_and_another_seed_another() -> None:
    (first,) = hand_traces("I am good", 3)
    (again,) = hand_traces("I am good", 3)
    (other,) = hand_traces("I am good", 4)
    for key in ("X", "W_Q", "W_K", "W_V", "W_O"):
        assert np.array_equal(getattr(first, key), getattr(again, key))
    assert not all(
        np.array_equal(getattr(first, key), getattr(other, key)) for key in ("X", "W_Q", "W_O")
    )


def test_the_note_states_the_bounds_this_trace_meets() -> None:
    (trace,) = hand_traces("The animal crossed because it was tired", 5)
    note = " ".join(hand_note(trace))
    found = re.search(r"Q and K is at most ([\d.]+) and every \|score\| at most ([\d.]+)", note)
    assert found is not None
    assert float(found[1]) == max(np.abs(trace.Q).max(), np.abs(trace.K).max())
    assert float(found[2]) == np.abs(trace.scores).max()
    below = float(re.search(r"stays below ([\d.]+)", note)[1])  # type: ignore[index]
    assert np.exp(trace.scaled).max() <= below < np.exp(trace.scaled).max() + 0.1 + 1e-9
    assert "d_model 4, 2 heads, d_k 2" in note and "0.7071" in note


def test_the_layer_is_said_to_be_not_learned_on_every_surface() -> None:
    (trace,) = hand_traces("I am good", 0)
    assert trace.provenance.weights.is_random and not trace.provenance.weights.is_drawn
    text = attnviz.lesson(trace, width=100)
    assert "random, not learned" in text and "Step 4" in text
    assert "<!doctype html>" in attnviz.page(trace).html.lower()


def test_a_sentence_too_long_for_paper_is_refused_in_one_sentence() -> None:
    words = " ".join(["word"] * (MAX_HAND_WORDS + 1))
    with pytest.raises(AttnvizError, match=rf"hand takes at most {MAX_HAND_WORDS} words.*has 9"):
        hand_traces(words, 0)
    with pytest.raises(AttnvizError, match="seed"):
        hand_traces("I am good", -1)


@pytest.mark.slow
def test_every_kind_of_exercise_can_be_asked_of_a_hand_layer() -> None:
    """Its quarters can cancel (a row of scores summing to 0, a q of zeros): every question
    and its mistakes are still numbers (the suite turns numpy's warnings into errors)."""
    from attnviz.exercise.sets import exercise_set, suits

    for seed in range(12):
        for sentence in SENTENCES:
            traces = hand_traces(sentence, seed)
            kinds = tuple(kind for kind in KINDS if suits(traces[0], kind) is None)
            for question in exercise_set(traces, kinds, 2 * len(kinds), seed):
                assert math.isfinite(question.answer)
                assert all(math.isfinite(mistake.value) for mistake in question.mistakes)
