"""Prefill, then one token at a time, then the proof: every number the cached run gave, against
the same model recomputing the whole sequence at once without a cache.

    prefill:  the prompt's n tokens in one pass; the cache holds their K and V in every layer;
              the last row's logits choose token 1
    step j:   token j − 1 (at position n + j − 2) in one pass: its q, k, v only, its k and v
              appended, its query read against all n + j − 1 cached keys; its logits choose token j
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.generation.cache import CacheSize, KVCache
from attnviz.generation.decoder import Decoder, run_block
from attnviz.generation.sampling import Choice, Sampling, choose, softmax


@dataclass(frozen=True, eq=False)
class GeneratedToken:
    """One new token and how it was computed. Its query is the token before it: the prompt's
    last token for the first (read in the prefill pass), else the token generated before."""

    number: int  # j, from 1
    query_position: int  # the position whose query chose it
    attention: tuple[FloatArray, ...]  # per layer, that query's weights over the cache [h, t]
    key_positions: np.ndarray  # [t] the position of each key the cache held for that query
    new_keys: tuple[FloatArray, ...]  # per layer, the k rows appended in this pass [G, m, d_k]
    new_values: tuple[FloatArray, ...]  # per layer, likewise the v rows [G, m, d_k]
    cache: CacheSize  # after this pass
    hidden: FloatArray  # [d_model] the last hidden state (after the final norm) at the query
    logits: FloatArray  # [V]
    choice: Choice
    # The residual stream at the query after each layer (the embedding first), [layers + 1,
    # d_model], when the logit lens was asked for; else None.
    states: FloatArray | None = None


@dataclass(frozen=True)
class CacheProof:
    """The largest differences between the cached run and one pass over the whole sequence."""

    weights: float  # over every layer, head and generated token's row
    hidden: float  # the last hidden states
    probabilities: float  # softmax(logits / T) over the whole vocabulary
    tokens: int  # positions compared


@dataclass(frozen=True)
class Window:
    """A sliding cache: at most ``tokens`` a layer, the first ``keep_first`` always among them."""

    tokens: int
    keep_first: int = 0


def new_cache(decoder: Decoder, capacity: int, window: Window | None) -> KVCache:
    """An empty cache for ``decoder`` with room for ``capacity`` tokens (a window's or not)."""
    return KVCache(
        decoder.n_layers,
        decoder.n_kv_heads,
        decoder.d_k,
        capacity,
        decoder.dtype,
        decoder.n_heads,
        window=None if window is None else window.tokens,
        keep_first=0 if window is None else window.keep_first,
    )


def generated_tokens(
    decoder: Decoder,
    prompt: Sequence[int],
    count: int,
    sampling: Sampling,
    seed: int | None,
    *,
    end: frozenset[int] = frozenset(),
    window: Window | None = None,
    lens: bool = False,
) -> Iterator[GeneratedToken]:
    """Up to ``count`` new tokens after ``prompt``, one at a time as each is chosen; stops after
    a token of ``end`` (the model's end of text). Sampling draws from a numpy Generator seeded
    with ``seed``, one number per token. ``window``: a sliding cache instead of the whole.
    ``lens``: keep each query's residual stream after every layer (for the logit lens)."""
    rng = None if sampling.greedy else np.random.default_rng(seed)
    cache = new_cache(decoder, len(prompt) + count, window)
    fed, start = list(prompt), 0
    for number in range(1, count + 1):
        states: list[FloatArray] | None = [] if lens else None
        final, logits, attention = run_block(decoder, fed, cache, start, states=states)
        choice = choose(logits[-1], sampling, rng)
        layers = range(decoder.n_layers)
        yield GeneratedToken(
            number=number,
            query_position=start + len(fed) - 1,
            attention=tuple(weights[:, -1] for weights in attention),
            key_positions=cache.positions(decoder.n_layers - 1).copy(),
            new_keys=tuple(cache.keys(layer)[:, -len(fed) :].copy() for layer in layers),
            new_values=tuple(cache.values(layer)[:, -len(fed) :].copy() for layer in layers),
            cache=cache.size,
            hidden=final[-1],
            logits=logits[-1],
            choice=choice,
            states=None if states is None else np.concatenate(states),
        )
        if choice.chosen in end:
            return
        start += len(fed)
        fed = [choice.chosen]


def prove(
    decoder: Decoder,
    prompt: Sequence[int],
    tokens: Sequence[GeneratedToken],
    temperature: float,
    window: Window | None = None,
) -> CacheProof:
    """The cached run's numbers against one pass over the prompt and every token fed, with a
    fresh cache (so no row is read from an earlier pass; with a window, its mask): the largest
    absolute differences."""
    fed = [*prompt, *(token.choice.chosen for token in tokens[:-1])]
    asked = [token.query_position for token in tokens]
    cache = new_cache(decoder, len(fed), window)
    final, logits, attention = run_block(decoder, fed, cache, 0, rows=asked)
    weights = hidden = probabilities = 0.0
    for asked_row, token in enumerate(tokens):
        p = token.query_position
        for layer, cached_row in enumerate(token.attention):
            whole = attention[layer][:, p, token.key_positions]
            weights = max(weights, float(np.abs(cached_row - whole).max()))
        hidden = max(hidden, float(np.abs(token.hidden - final[asked_row]).max()))
        cached = softmax(token.logits, temperature)
        whole_p = softmax(logits[asked_row], temperature)
        probabilities = max(probabilities, float(np.abs(cached - whole_p).max()))
    return CacheProof(weights, hidden, probabilities, len(tokens))


def collect(
    steps: Iterator[GeneratedToken], on_token: Callable[[GeneratedToken], None] | None = None
) -> tuple[GeneratedToken, ...]:
    """Every step, ``on_token`` told of each as it is chosen (a live view prints it)."""
    kept = []
    for step in steps:
        kept.append(step)
        if on_token is not None:
            on_token(step)
    return tuple(kept)
