"""The generation loop: the prefill chooses token 1, each later pass feeds one token, the cache
grows by one row a token, generation stops at an end-of-text token, and the proof compares the
cached run with one pass over everything."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.generation.loading import load_decoder
from attnviz.generation.run import GeneratedToken, Window, collect, generated_tokens, prove
from attnviz.generation.sampling import Sampling

PROMPT = "j k l a b c d e a b"


GREEDY = Sampling()


def _run(
    count: int,
    sampling: Sampling = GREEDY,
    seed: int | None = None,
    end: frozenset[int] = frozenset(),
) -> tuple[object, tuple[int, ...], tuple[GeneratedToken, ...]]:
    loaded = load_decoder("induction", "float64")
    ids = loaded.tokenizer(PROMPT, loaded.toy_config).ids
    steps = generated_tokens(loaded.decoder, ids, count, sampling, seed, end=end)
    return loaded, ids, collect(steps)


def test_each_token_reads_one_more_key_and_the_cache_grows_by_one_row() -> None:
    loaded, ids, tokens = _run(4)
    n = len(ids)
    assert [t.number for t in tokens] == [1, 2, 3, 4]
    assert [t.query_position for t in tokens] == [n - 1, n, n + 1, n + 2]
    assert [t.cache.tokens for t in tokens] == [n, n + 1, n + 2, n + 3]
    for token in tokens:
        for row in token.attention:
            assert row.shape == (loaded.decoder.n_heads, token.query_position + 1)  # type: ignore[attr-defined]
            np.testing.assert_allclose(row.sum(axis=-1), 1.0, atol=1e-12)
    # The prefill appends the prompt's n rows; every later pass one row.
    assert [t.new_keys[0].shape[1] for t in tokens] == [n, 1, 1, 1]


def test_generation_stops_after_an_end_token() -> None:
    loaded, ids, tokens = _run(6)
    second = tokens[1].choice.chosen
    _, _, stopped = _run(6, end=frozenset({second}))
    assert len(stopped) == 2 and stopped[-1].choice.chosen == second


def test_the_proof_finds_the_cached_run_equal_to_one_pass_and_would_see_a_wrong_row() -> None:
    loaded, ids, tokens = _run(5)
    proof = prove(loaded.decoder, ids, tokens, 1.0)  # type: ignore[attr-defined]
    assert proof.tokens == 5
    assert max(proof.weights, proof.hidden, proof.probabilities) < 1e-10  # float64
    # A row the cache got wrong would show: the proof is not blind.
    broken = list(tokens)
    wrong = broken[2].attention[0].copy()
    wrong[0, ::-1] = wrong[0].copy()
    broken[2] = type(broken[2])(
        **{**broken[2].__dict__, "attention": (wrong, *broken[2].attention[1:])}
    )
    assert prove(loaded.decoder, ids, broken, 1.0).weights > 0.1  # type: ignore[attr-defined]


def test_the_same_seed_samples_the_same_text_and_another_seed_may_not() -> None:
    sampling = Sampling(temperature=3.0)
    runs = {seed: [t.choice.chosen for t in _run(5, sampling, seed)[2]] for seed in (1, 1, 2, 3, 4)}
    assert _run(5, sampling, 1)[2][-1].choice.chosen == runs[1][-1]
    assert len({tuple(r) for r in runs.values()}) > 1


@pytest.mark.parametrize("keep_first", [0, 1])
def test_a_sliding_cache_gives_what_one_masked_pass_gives(keep_first: int) -> None:
    """Token by token with a cache of 4 rows (tokens dropped as they leave the window) and one
    pass over everything with the window's mask: the same weights, states and probabilities."""
    loaded = load_decoder("induction", "float64")
    ids = loaded.tokenizer(PROMPT, loaded.toy_config).ids
    window = Window(4, keep_first)
    steps = generated_tokens(loaded.decoder, ids, 5, GREEDY, None, window=window)  # type: ignore[attr-defined]
    tokens = collect(steps)
    assert all(len(t.key_positions) == 4 for t in tokens[1:])
    assert all((0 in t.key_positions) == bool(keep_first) for t in tokens[1:])
    proof = prove(loaded.decoder, ids, tokens, 1.0, window)  # type: ignore[attr-defined]
    assert max(proof.weights, proof.hidden, proof.probabilities) < 1e-10
