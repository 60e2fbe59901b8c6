"""The softmax a block of keys at a time (attnviz.analysis.blockwise) gives the trace's own row of
weights and z, to 1e-12 in float64, for any block size, sentence and mask; it reads one query
row and K and V a block at a time, each block once, and never makes an n × n matrix."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from attnviz.analysis.blockwise import (
    OnlineSoftmax,
    block_update,
    default_block,
    key_blocks,
    online_softmax,
)
from attnviz.core import trace_with_options
from attnviz.errors import AttnvizError
from attnviz.options import TraceOptions
from attnviz.tokens import tokenize
from attnviz.trace import AttentionTrace

from support import examples

WORDS = ["it", "the", "animal", "street", "I", "am", "good", "tired", "because", "was"]


def row(trace: AttentionTrace, head: int, query: int, block: int) -> OnlineSoftmax:
    allowed = None if trace.mask is None else trace.mask[query]
    return online_softmax(
        trace.Q[head, query], trace.K[head], trace.V[head], block=block, allowed=allowed
    )


def assert_same_row(trace: AttentionTrace, head: int, query: int, online: OnlineSoftmax) -> None:
    size = max(1.0, float(np.abs(trace.V[head]).max()))
    np.testing.assert_allclose(online.z, trace.Z[head, query], rtol=0, atol=1e-12 * size)
    np.testing.assert_allclose(online.weights(), trace.weights[head, query], rtol=0, atol=1e-12)


@pytest.mark.slow  # about 0.4 s for 100 examples; 500 in CI, where 2,000 took a minute
@settings(deadline=None, max_examples=examples(500))
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=14),
    n_heads=st.integers(1, 3),
    seed=st.integers(0, 2**32),
    causal=st.booleans(),
    extra_padding=st.one_of(st.none(), st.integers(0, 5)),
    data=st.data(),
)
def test_every_row_a_block_at_a_time_is_the_traces_row(
    words: list[str],
    n_heads: int,
    seed: int,
    causal: bool,
    extra_padding: int | None,
    data: st.DataObject,
) -> None:
    tokens = tokenize(" ".join(words))
    pad_to = None if extra_padding is None else len(tokens) + extra_padding
    try:
        trace = trace_with_options(
            tokens, TraceOptions(heads=n_heads, seed=seed, causal=causal, pad_to=pad_to)
        ).trace
    except AttnvizError:
        assume(False)
        return
    assert trace.weights.dtype == np.float64
    n = trace.n_tokens
    block = data.draw(st.integers(1, n + 2), label="block")
    head = data.draw(st.integers(0, n_heads - 1), label="head")
    query = data.draw(st.integers(0, n - 1), label="query")
    online = row(trace, head, query, block)
    assert_same_row(trace, head, query, online)
    assert [(u.start, u.stop) for u in online.updates] == list(key_blocks(n, block))
    np.testing.assert_allclose(
        np.concatenate([u.scores for u in online.updates]),
        np.where(trace.masked[query], -np.inf, trace.scaled[head, query]),
        rtol=0,
        atol=1e-12,
    )
    for update in online.updates:  # every block's numbers are what the formulas say
        assert update.m_new == max(update.m_old, float(update.scores.max()))
        assert update.factor == pytest.approx(
            1.0 if update.m_old == update.m_new else math.exp(update.m_old - update.m_new)
        )
        assert update.l_new == pytest.approx(
            update.factor * update.l_old + update.exponentials.sum(), rel=1e-14
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("causal", "pad_to"), [(False, None), (True, None), (False, 15), (True, 13)]
)
def test_every_row_of_every_head_for_every_block_size(causal: bool, pad_to: int | None) -> None:
    tokens = tokenize("The animal didn't cross the street because it was too tired")
    trace = trace_with_options(
        tokens, TraceOptions(heads=2, seed=3, causal=causal, pad_to=pad_to)
    ).trace
    for block in (1, 2, 3, 5, trace.n_tokens, trace.n_tokens + 4):
        for head in range(2):
            for query in range(trace.n_tokens):
                assert_same_row(trace, head, query, row(trace, head, query, block))


def test_a_causal_row_and_padding_leave_wholly_masked_blocks_unchanged() -> None:
    tokens = tokenize("The animal didn't cross the street because it was too tired")
    trace = trace_with_options(tokens, TraceOptions(causal=True, pad_to=14)).trace
    query = tokens.index("it")
    online = row(trace, 0, query, block=3)
    assert_same_row(trace, 0, query, online)
    empty = [u for u in online.updates if not np.isfinite(u.scores).any()]
    assert len(empty) == 2  # keys 10-12 and 13-14 (too, tired, pads): all after 'it' or padding
    for update in empty:
        assert (update.m_new, update.l_new, update.factor) == (update.m_old, update.l_old, 1.0)
        np.testing.assert_array_equal(update.o_new, update.o_old)
        assert not update.exponentials.any()


def test_a_first_block_wholly_masked_starts_nothing() -> None:
    rng = np.random.default_rng(1)
    q, keys, values = (
        rng.standard_normal(4),
        rng.standard_normal((6, 4)),
        rng.standard_normal((6, 3)),
    )
    allowed = np.array([False, False, True, True, False, True])
    online = online_softmax(q, keys, values, block=2, allowed=allowed)
    first = online.updates[0]
    assert (first.m_new, first.l_new, first.factor) == (-math.inf, 0.0, 1.0)
    assert not first.o_new.any()
    scores = np.where(allowed, keys @ q / 2.0, -np.inf)
    weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    np.testing.assert_allclose(online.weights(), weights, atol=1e-15)
    np.testing.assert_allclose(online.z, weights @ values, atol=1e-15)
    assert online.updates[1].factor == 0.0  # exp(−∞ − m): nothing summed yet to rescale


def test_the_factor_rescales_what_was_summed_when_the_maximum_grows() -> None:
    """By hand: scores 0 then ln 4 (q·k / √1), values 1 then 3."""
    q, keys, values = np.array([1.0]), np.array([[0.0], [math.log(4)]]), np.array([[1.0], [3.0]])
    online = online_softmax(q, keys, values, block=1)
    first, second = online.updates
    assert (first.m_new, first.l_new, float(first.o_new[0])) == (0.0, 1.0, 1.0)
    assert second.factor == pytest.approx(0.25)  # exp(0 − ln 4)
    assert second.l_new == pytest.approx(0.25 * 1 + 1)
    assert float(second.o_new[0]) == pytest.approx(0.25 * 1 + 1 * 3)
    assert float(online.z[0]) == pytest.approx((1 * 1 + 4 * 3) / 5)  # softmax [1/5, 4/5]


def test_every_key_masked_is_refused() -> None:
    with pytest.raises(ValueError, match="every key of this row is masked"):
        online_softmax(
            np.ones(2), np.ones((3, 2)), np.ones((3, 2)), block=2, allowed=np.zeros(3, bool)
        )


class BlockReads:
    """K or V that may only be read a block of rows at a time: records each read, and refuses
    anything that would turn it whole into an array."""

    def __init__(self, array: np.ndarray, reads: list[tuple[str, int, int]], name: str) -> None:
        self.array, self.reads, self.name = array, reads, name
        self.shape = array.shape

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, rows: slice) -> np.ndarray:
        assert isinstance(rows, slice) and rows.step is None
        start, stop, _ = rows.indices(len(self.array))
        if stop > start:  # an empty read ([:0], for the dtype) reads no row
            self.reads.append((self.name, start, stop))
        return self.array[rows]

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError(f"{self.name} was read whole")


def test_it_reads_one_query_row_and_each_block_of_k_and_v_once() -> None:
    rng = np.random.default_rng(0)
    n, d_k, block = 11, 4, 3
    q, keys, values = (
        rng.standard_normal(d_k),
        rng.standard_normal((n, d_k)),
        rng.standard_normal((n, 5)),
    )
    reads: list[tuple[str, int, int]] = []
    online = online_softmax(
        q,
        BlockReads(keys, reads, "K"),
        BlockReads(values, reads, "V"),
        block=block,  # type: ignore[arg-type]
    )
    blocks = list(key_blocks(n, block))
    assert reads == [(name, *b) for b in blocks for name in ("K", "V")]
    for update in online.updates:  # nothing it keeps is n long but the scores of one block
        assert update.scores.shape == update.exponentials.shape == (update.stop - update.start,)
        assert update.o_new.shape == (5,)


def test_block_update_takes_one_block_and_the_running_state() -> None:
    update = block_update(
        np.array([2.0]),
        np.array([[1.0], [0.0]]),
        np.array([[1.0], [0.0]]),
        np.array([True, True]),
        (2.0, 1.0, np.array([5.0])),
        7,
    )
    assert (update.start, update.stop, update.m_new, update.factor) == (7, 9, 2.0, 1.0)
    assert update.l_new == pytest.approx(1.0 + 1.0 + math.exp(-2.0))
    assert float(update.o_new[0]) == pytest.approx(5.0 + 1.0)


def test_the_default_block_makes_3_or_4_blocks() -> None:
    for n_keys in range(1, 1000):
        blocks = len(key_blocks(n_keys, default_block(n_keys)))
        assert blocks in (3, 4) if n_keys >= 3 else blocks == n_keys, n_keys


def test_the_records_are_immutable() -> None:
    online = online_softmax(np.ones(2), np.ones((4, 2)), np.ones((4, 3)), block=2)
    update = online.updates[0]
    with pytest.raises(ValueError):
        update.o_new[0] = 1.0
    with pytest.raises(AttributeError):
        update.factor = 2.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="at least one key"):
        key_blocks(4, 0)
