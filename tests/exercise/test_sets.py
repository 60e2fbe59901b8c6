"""Sets of questions over random sentences, seeds, sizes and kinds: the right answer is right,
every offered mistake's number is diagnosed as that mistake (or a set holding it when numbers
coincide), the answer is what a literal per-word loop over the shown numbers gives, and the
shown numbers are the trace's own, rounded as said."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz
from attnviz.exercise.questions import KINDS, Question
from attnviz.exercise.sets import exercise_set, question, suits
from attnviz.trace import AttentionTrace

from support import examples, needs_model

WORDS = ("the", "cat", "sat", "on", "mat", "it", "was", "tired", "a", "dog", "ran", "far")
RANDOM_KINDS = tuple(kind for kind in KINDS if kind != "weight")


def literal(question: Question) -> float:
    """The answer recomputed from the givens with plain Python loops, word by word."""
    g = [given.values for given in question.givens]
    kind, (_, _, _, row, column) = question.kind, question.where
    if kind == "projection":
        x, bias = g[0], (g[-1][0] if question.givens[-1].labels == ("bias",) else 0.0)
        w = g[1 + column]
        return sum(x[m] * w[m] for m in range(len(x))) + bias
    if kind == "score":
        return sum(a * b for a, b in zip(g[0], g[1], strict=True))
    if kind == "scaled":
        return g[0][0] / math.sqrt(g[1][0])
    if kind in ("softmax", "weight"):
        scores = g[row] if kind == "softmax" else [s / math.sqrt(g[1][0]) for s in g[0]]
        top = max(s for s in scores if s != -math.inf)
        exps = [math.exp(s - top) if s != -math.inf else 0.0 for s in scores]
        return exps[column] / sum(exps)
    if kind == "z":
        return sum(w * v for w, v in zip(g[0], g[1], strict=True))
    if kind == "output":
        n_heads = sum(1 for given in question.givens if given.name.startswith("z"))
        concat = [v for values in g[:n_heads] for v in values]
        bias = g[-1][0] if question.givens[-1].labels == ("bias",) else 0.0
        return sum(c * w for c, w in zip(concat, g[n_heads], strict=True)) + bias
    if kind == "rope":
        (a, b), (m,), (theta,) = g[0], g[1], g[2]
        first = int(question.givens[0].name.split("coordinates ")[1].split(" and ")[0])
        if question.givens[0].name.startswith("v"):  # v is not turned
            return a if first == column + 1 else b
        angle = m * theta
        if first == column + 1:
            return a * math.cos(angle) - b * math.sin(angle)
        return a * math.sin(angle) + b * math.cos(angle)
    if kind == "cache":
        n, _, groups, d_k, _ = g[0]
        return 2 * n * groups * d_k
    (m_old,), (l_old,), block = g[0], g[1], g[2]
    m_new = max(m_old, *block)
    return math.exp(m_old - m_new) * l_old + sum(math.exp(s - m_new) for s in block)


def assert_judged_truly(question: Question) -> None:
    """The right answer is right; each mistake's number is diagnosed as it."""
    assert question.check(question.answer).right
    assert question.check(round(question.answer, question.decimals)).right
    for mistake in question.mistakes:
        assert abs(mistake.value - question.answer) > question.tolerance
        verdict = question.check(mistake.value)
        assert not verdict.right
        assert mistake.key in verdict.mistakes, (question.kind, mistake, verdict)
        for key in verdict.mistakes:  # a coincidence: the other numbers are within tolerance
            other = next(m for m in question.mistakes if m.key == key)
            assert abs(other.value - mistake.value) <= question.tolerance * (1 + 1e-9)
        assert verdict.mistake is not None and mistake.name in verdict.mistake


traces = st.builds(
    lambda words, seed, heads, causal, rope, grouped: (
        attnviz.explain(
            " ".join(words),
            seed=seed,
            heads=heads,
            d_model=4 * heads,
            causal=causal,
            positions="rope" if rope else "none",
            kv_heads=1 if grouped else None,
        ).trace
    ),
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=7),
    st.integers(0, 10_000),
    st.sampled_from([1, 2]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=examples(200) if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 10)
@given(trace=traces, seed=st.integers(0, 10_000))
def test_every_kind_is_judged_truly_and_matches_a_literal_loop(
    trace: AttentionTrace, seed: int
) -> None:
    kinds = [kind for kind in RANDOM_KINDS if suits(trace, kind) is None]
    for asked in exercise_set((trace,), kinds, 2 * len(kinds), seed):
        assert_judged_truly(asked)
        assert abs(literal(asked) - asked.answer) <= 1e-9 * max(1, abs(asked.answer))
        assert f"within {asked.tolerance:.{asked.decimals}f}" in asked.text or (
            asked.tolerance == 0 and "exactly" in asked.text
        )


@settings(max_examples=examples(60))
@given(trace=traces, seed=st.integers(0, 10_000))
def test_the_shown_numbers_are_the_traces_own_rounded(trace: AttentionTrace, seed: int) -> None:
    rng = np.random.default_rng(seed)
    head, row = int(rng.integers(trace.n_heads)), int(rng.integers(trace.n_tokens))
    column = int(rng.integers(trace.d_k))
    found = question(trace, "projection", head=head, row=row, column=column)
    assert found.givens[0].values == tuple(round(float(v), 2) + 0.0 for v in trace.X[row])
    assert found.givens[1 + column].values == tuple(
        round(float(v), 2) + 0.0 for v in trace.W_Q[head][:, column]
    )
    key = int(np.flatnonzero(~trace.masked[row])[0])
    found = question(trace, "scaled", head=head, row=row, column=key)
    assert found.givens[0].values == (round(float(trace.scores[head, row, key]), 2) + 0.0,)
    # The answer from rounded inputs stays near the lesson's own number: within what the
    # rounding of the score (half a unit of its second decimal, ÷√d_k) and of the answer allow.
    assert abs(found.answer - trace.scaled[head, row, key]) <= 0.005 / math.sqrt(trace.d_k) + 1e-12


def test_the_same_seed_gives_the_same_set_and_another_seed_another() -> None:
    trace = attnviz.explain("The cat sat on the mat", positions="rope").trace
    kinds = [kind for kind in RANDOM_KINDS if suits(trace, kind) is None]
    first = exercise_set((trace,), kinds, 12, 7)
    assert first == exercise_set((trace,), kinds, 12, 7)
    assert first != exercise_set((trace,), kinds, 12, 8)
    assert [q.kind for q in first] == [*kinds, *kinds][:12]


def test_a_trained_models_weight_is_what_it_gives_its_antecedent() -> None:
    shown = attnviz.explain(
        "The animal didn't cross the street because it was too tired", model="coref"
    )
    (asked,) = exercise_set(shown.layers, ["weight"], 1, 0)
    _, layer, head, row, column = asked.where
    assert layer == len(shown.layers) - 1  # the last layer, which points
    assert shown.trace.tokens[row] == "it" and shown.trace.tokens[column] == "animal"
    assert "'it' give 'animal'" in asked.text
    assert asked.answer == pytest.approx(shown.layers[layer].weights[head, row, column], abs=1e-3)
    assert_judged_truly(asked)


def test_kinds_a_trace_cannot_ask_say_the_option_they_need() -> None:
    trace = attnviz.explain("I am good").trace
    assert suits(trace, "rope") == "needs rotary positions (positions rope)"
    assert suits(trace, "weight") == "needs a trained model (model coref)"
    assert suits(trace, "softmax") is None
    with pytest.raises(ValueError, match="no kind of question 'sum'"):
        question(trace, "sum", head=0, row=0, column=0)


IT = "The animal didn't cross the street because it was too tired"


@pytest.mark.parametrize(
    "model", ["coref", pytest.param("minilm", marks=[needs_model, pytest.mark.slow])]
)
def test_a_models_layer_is_asked_every_kind_truly(model: str) -> None:
    """A model's layer: biases (MiniLM's) among the inputs and in the mistakes; 12 heads."""
    trace = attnviz.explain(IT, model=model).trace
    kinds = [kind for kind in KINDS if suits(trace, kind) is None]
    assert "weight" in kinds and "rope" not in kinds
    for seed in range(3):
        for asked in exercise_set((trace,), kinds, len(kinds), seed):
            assert_judged_truly(asked)
            assert abs(literal(asked) - asked.answer) <= 1e-9 * max(1, abs(asked.answer))
            if asked.kind == "projection" and trace.b_Q is not None:
                assert asked.givens[-1].labels == ("bias",)
                (bias,) = asked.givens[-1].values
                # left out, a bias of less than the tolerance gives the answer: not offered
                offered = "forgot_bias" in {m.key for m in asked.mistakes}
                assert offered == (abs(bias) > asked.tolerance * (1 + 1e-9))
