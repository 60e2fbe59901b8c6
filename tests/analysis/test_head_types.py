"""Head types from whole matrices, the focus word's specificity, rows that look at themselves."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.analysis.head_types import (
    BROAD_THRESHOLD,
    POSITION_THRESHOLD,
    HeadType,
    classify,
    counted_rows,
    head_scores,
    run_head_types,
    self_argmax_count,
    self_argmax_rows,
    specificity,
    trace_head_types,
    trace_specificity,
)
from attnviz.attention import causal_mask

from support import needs_model

SENTENCE = "The animal didn't cross the street because it was too tired"
N = 6


def peaked(targets: list[int], peak: float = 0.9, n: int = N) -> np.ndarray:
    """Row i puts ``peak`` on key targets[i] and spreads the rest evenly."""
    weights = np.full((n, n), (1 - peak) / (n - 1))
    weights[np.arange(n), targets] = peak
    return weights


SYNTHETIC = {
    HeadType.previous: (peaked([1, 0, 1, 2, 3, 4]), ()),
    HeadType.next: (peaked([1, 2, 3, 4, 5, 4]), ()),
    HeadType.self: (peaked(list(range(N))), ()),
    HeadType.first: (peaked([1, 0, 0, 0, 0, 0]), ()),
    HeadType.cls: (peaked([1, 0, 0, 0, 0, 0]), (0, N - 1)),
    HeadType.last: (peaked([5, 5, 5, 5, 5, 4]), ()),
    HeadType.sep: (peaked([5, 5, 5, 5, 5, 4]), (0, N - 1)),
    HeadType.broad: (np.full((N, N), 1 / N), ()),
    # Each row looks three words away, ahead in the first half, back in the second: no position
    # or key gets half the weight, and the rows are too peaked to be broad.
    HeadType.mixed: (peaked([3, 4, 5, 0, 1, 2], peak=0.6), ()),
}


@pytest.mark.parametrize("kind", list(SYNTHETIC), ids=lambda kind: kind.value)
def test_synthetic_heads_get_their_type(kind: HeadType) -> None:
    weights, special = SYNTHETIC[kind]
    assert classify(head_scores(weights, special=special)) is kind


def test_thresholds_are_what_the_types_say() -> None:
    assert POSITION_THRESHOLD == 0.5 and BROAD_THRESHOLD == 0.9
    # Just under half on the previous word, and peaked: no type.
    almost = peaked([1, 0, 1, 2, 3, 4], peak=0.49)
    assert head_scores(almost).previous < POSITION_THRESHOLD
    assert classify(head_scores(almost)) is HeadType.mixed


def test_scores_by_hand() -> None:
    weights = np.array([[0.6, 0.3, 0.1], [0.5, 0.2, 0.3], [0.2, 0.7, 0.1]])
    scores = head_scores(weights)
    assert scores.previous == pytest.approx((0.5 + 0.7) / 2)
    assert scores.next == pytest.approx((0.3 + 0.3) / 2)
    assert scores.self == pytest.approx((0.6 + 0.2 + 0.1) / 3)
    assert scores.first == pytest.approx((0.5 + 0.2) / 2)  # row 0 left out: that is itself
    assert scores.last == pytest.approx((0.1 + 0.3) / 2)  # row 2 left out
    entropies = [-sum(w * math.log(w) for w in row) / math.log(3) for row in weights]
    assert scores.entropy == pytest.approx(sum(entropies) / 3)
    assert not scores.first_is_cls and not scores.last_is_sep
    assert classify(scores) is HeadType.previous


def test_a_causal_trace() -> None:
    """Under a causal mask no row may see its next word (NaN), row 0 has no choice and is left
    out, and the entropy is over each row's allowed keys."""
    n = 5
    mask = causal_mask(n)
    first = np.where(mask, 0.1 / np.maximum(np.arange(n)[:, None], 1), 0.0)
    first[:, 0] = 0.9
    first[0, 0] = 1.0
    scores = head_scores(first, mask)
    assert math.isnan(scores.next)
    assert scores.first == pytest.approx(0.9)
    assert classify(scores) is HeadType.first
    uniform = np.where(mask, 1 / np.arange(1, n + 1)[:, None], 0.0)
    assert head_scores(uniform, mask).entropy == pytest.approx(1.0)
    assert classify(head_scores(uniform, mask)) is HeadType.broad
    shown = attnviz.explain(SENTENCE, causal=True)
    for typed in trace_head_types(shown.trace):
        assert math.isnan(typed.scores.next)
        assert 0 <= typed.scores.entropy <= 1


def test_padding_rows_are_left_out() -> None:
    """[PAD] rows (uniform over the real words) would pull the entropy towards 1."""
    trace = attnviz.explain("I am good", pad_to=5).trace
    weights = trace.weights[0]
    with_padding = head_scores(weights, trace.mask, padding=2)
    real = head_scores(weights[:3, :3])
    assert with_padding.entropy == pytest.approx(real.entropy)
    assert with_padding.self == pytest.approx(real.self)


def test_specificity_by_hand() -> None:
    """A previous-token-like head: the focus row's 0.8 on its previous word is what every row
    does (offset baseline 0.75), so only 0.05 of it is specific; the key baseline alone (the
    selectivity) would say 0.7."""
    weights = np.array(
        [
            [0.7, 0.1, 0.1, 0.1],
            [0.8, 0.1, 0.05, 0.05],
            [0.1, 0.8, 0.05, 0.05],
            [0.1, 0.1, 0.7, 0.1],
        ]
    )
    found = specificity(weights, 2)
    expected = [0.1 - (0.7 + 0.8 + 0.1) / 3, 0.8 - 0.75, 0.05 - 0.3, 0.05 - (0.25 / 3)]
    np.testing.assert_allclose(found, expected, atol=1e-12)


def test_specificity_under_a_causal_mask() -> None:
    mask = causal_mask(3)
    weights = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.2, 0.6]])
    found = specificity(weights, 1, mask)
    assert math.isnan(found[2])  # the focus word may not see it
    # key 0: by key row 2 gives 0.2 (row 0 has no choice); by offset −1 row 2 gives 0.2
    assert found[0] == pytest.approx(0.5 - 0.2)
    assert found[1] == pytest.approx(0.5 - 0.6)  # the diagonal of row 2


def test_self_argmax_by_hand() -> None:
    """Row 0 of head 1 ties (0.5 on both): it names no largest weight and does not count."""
    weights = np.array([[[0.5, 0.5], [0.3, 0.7]], [[0.4, 0.6], [0.9, 0.1]]])
    np.testing.assert_array_equal(self_argmax_rows(weights), [[False, True], [False, False]])
    np.testing.assert_array_equal(counted_rows(weights), [[False, True], [True, True]])


def test_rows_without_a_choice_or_with_a_tie_are_not_counted() -> None:
    """Under a causal mask the first row has one key; "it it it it" gives every key of a row
    the same weight: neither says whether a word looks most at itself."""
    first = attnviz.explain("I am good", causal=True)
    assert not counted_rows(first.trace.weights, first.trace.mask)[:, 0].any()
    ties = attnviz.explain("it it it it")
    assert not counted_rows(ties.trace.weights).any()
    assert self_argmax_count(ties.layers) == (0, 0)


def test_self_argmax_leaves_padding_out() -> None:
    shown = attnviz.explain("I am good", pad_to=5)
    rows = self_argmax_rows(shown.trace.weights, shown.trace.mask, padding=2)
    assert not rows[:, 3:].any()
    count, total = self_argmax_count(shown.layers)
    assert total == 2 * 3 and count == int(rows.sum())


def test_random_default_has_no_self_attending_row(tmp_path: Path) -> None:
    """Issue §7.1: with the default random weights, 0 of 22 rows look most at themselves."""
    shown = attnviz.explain(SENTENCE)
    path = tmp_path / "trace.npz"
    attnviz.export_trace(shown.trace, path)
    with np.load(path) as data:
        weights = data["weights"]
    # Rows whose largest weight is one key's alone: "The" and "the" have the same X, so the
    # same key, and a row that looks most at them ties between the two.
    alone = [
        (h, i)
        for h in range(weights.shape[0])
        for i in range(11)
        if (weights[h, i] == weights[h, i].max()).sum() == 1
    ]
    n_self = sum(int(np.argmax(weights[h, i]) == i) for h, i in alone)
    assert self_argmax_count(shown.layers) == (n_self, len(alone)) == (0, 19)


@pytest.mark.slow
@needs_model
def test_minilm(tmp_path: Path) -> None:
    """Layer 1 head 3 puts ≥ 0.999 on the previous token in every row: a previous-token head,
    in which the row of "it" is not specific to "it" although its selectivity is ≈ +1. Over the
    whole run 87 of 1,080 rows look most at themselves, "it" in 1 of 72 heads."""
    layers = attnviz.explain(SENTENCE, model="minilm").layers
    path = tmp_path / "layers.npz"
    attnviz.export_layers(layers, path)
    with np.load(path) as data:
        weights = np.asarray(data["weights"], dtype=np.float64)  # [L, h, n, n]
    n = weights.shape[-1]
    previous = weights[0, 2, np.arange(1, n), np.arange(n - 1)]
    assert previous.min() >= 0.999
    every = run_head_types(layers)
    assert [(t.layer, t.head) for t in every[:13]] == [(1, h) for h in range(1, 13)] + [(2, 1)]
    typed = every[2]
    assert (typed.layer, typed.head, typed.type) == (1, 3, HeadType.previous)
    assert typed.scores.previous == pytest.approx(previous.mean())
    assert typed.scores.first_is_cls and typed.scores.last_is_sep
    it, because = layers[0].tokens.index("it"), layers[0].tokens.index("because")
    others = [row for row in range(n) if row != it]
    selectivity = weights[0, 2, it, because] - weights[0, 2, others, because].mean()
    assert selectivity > 0.9
    assert abs(trace_specificity(layers[0], it)[2, because]) < 0.01
    animal = layers[5].tokens.index("animal")
    assert int(np.nanargmax(trace_specificity(layers[5], it)[11])) == animal
    assert self_argmax_count(layers) == (87, 1080)
    it_self = sum(
        int(np.argmax(weights[layer, h, it]) == it) for layer in range(6) for h in range(12)
    )
    assert it_self == 1
    assert sum(self_argmax_rows(layer.weights)[:, it].sum() for layer in layers) == 1
