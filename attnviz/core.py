"""The one call that turns a sentence into an AttentionTrace: tokens, X, weights, every step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from attnviz.attention import causal_mask, multi_head_attention, padding_mask
from attnviz.config import MAX_TOKENS, AttentionConfig, resolve_config
from attnviz.embeddings import Embeddings, OutOfVocabulary, load_embeddings, random_embeddings
from attnviz.errors import AttnvizError, FileProblem
from attnviz.tokens import check_token_count, tokenize
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights, load_weights, random_weights

PAD = "[PAD]"


class Traced(NamedTuple):
    """A trace and what the person who asked for it should be told about how it was made."""

    trace: AttentionTrace
    notes: tuple[str, ...]


def trace_attention(
    sentence: str | Sequence[str],
    *,
    config: AttentionConfig | None = None,
    embeddings: Embeddings | np.ndarray | str | Path | None = None,
    weights: AttentionWeights | str | Path | None = None,
    oov: OutOfVocabulary | str = OutOfVocabulary.error,
) -> AttentionTrace:
    """Compute multi-head self-attention on ``sentence`` and return every intermediate.

    sentence:   a string (split into words and punctuation) or a list of tokens.
    config:     sizes and seed; by default d_model 8, 2 heads, seed 0, or the sizes the
                embeddings/weights imply. Given explicitly, it must agree with them.
    embeddings: None for seeded random vectors, an [n, d_model] array, or a word-vector file
                (GloVe/word2vec text, .npy, .npz, .json).
    weights:    None for seeded random W_Q, W_K, W_V, W_O, an AttentionWeights, or an .npz/.json
                file with those keys (an exported trace works).
    oov:        "error" (default) or "random": what to do with words a vocabulary file lacks.

    >>> trace = trace_attention("I am good")
    >>> trace.weights.shape   # [heads, n_tokens, n_tokens]
    (2, 3, 3)
    """
    if config is None:
        return trace_with_options(sentence, embeddings=embeddings, weights=weights, oov=oov).trace
    return trace_with_options(
        sentence,
        d_model=config.d_model,
        n_heads=config.n_heads,
        seed=config.seed,
        embeddings=embeddings,
        weights=weights,
        oov=oov,
    ).trace


def trace_with_options(
    sentence: str | Sequence[str],
    *,
    d_model: int | None = None,
    n_heads: int | None = None,
    seed: int = 0,
    paper: bool = False,
    embeddings: Embeddings | np.ndarray | str | Path | None = None,
    weights: AttentionWeights | str | Path | None = None,
    oov: OutOfVocabulary | str = OutOfVocabulary.error,
    causal: bool = False,
    pad_to: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Traced:
    """The trace from the command line's options: sizes may be left to the files to decide.

    causal: decoder self-attention, each word sees only itself and the words before it.
    pad_to: append [PAD] tokens (zero embeddings) up to this length and mask them as keys.
    progress: called with (bytes_read, file_size) while a word-vector text file is streamed.
    Returns the trace and notes for the user (words given random vectors, and so on).
    """
    tokens = tokenize(sentence) if isinstance(sentence, str) else check_token_count(sentence)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise AttnvizError(f"The seed (--seed) must be a whole number >= 0, got {seed!r}.")
    try:
        oov = OutOfVocabulary(oov)
    except ValueError:
        raise AttnvizError(f"oov must be 'error' or 'random', got {oov!r}.") from None
    if isinstance(weights, (str, Path)):
        weights = load_weights(Path(weights))
    if isinstance(embeddings, (str, Path)):
        embeddings = load_embeddings(
            Path(embeddings), tokens, oov=oov, seed=seed, progress=progress
        )
    elif isinstance(embeddings, np.ndarray):
        embeddings = Embeddings(X=np.asarray(embeddings, dtype=np.float64), source="given array")
    if embeddings is not None and not np.isfinite(embeddings.X).all():
        raise AttnvizError("The embeddings hold NaN or infinity; give finite numbers.")
    config = resolve_config(
        d_model=d_model,
        n_heads=n_heads,
        seed=seed,
        paper=paper,
        embedding_width=embeddings.X.shape[-1] if embeddings is not None else None,
        weights_shape=(weights.n_heads, weights.d_model) if weights is not None else None,
    )
    if embeddings is None:
        embeddings = Embeddings(
            X=random_embeddings(tokens, config.d_model, config.seed),
            source=f"seeded random vectors (seed {config.seed})",
        )
    if embeddings.X.shape != (len(tokens), config.d_model):
        raise AttnvizError(
            f"The embeddings have shape {list(embeddings.X.shape)}; with {len(tokens)} tokens "
            f"and d_model {config.d_model} they must be [{len(tokens)}, {config.d_model}]."
        )
    if weights is None:
        weights = random_weights(config, np.random.default_rng(config.seed))
    x, n_real = embeddings.X, len(tokens)
    if pad_to is not None:
        if not n_real <= pad_to <= MAX_TOKENS:
            raise AttnvizError(
                f"--pad-to {pad_to}: the sentence has {n_real} tokens; pad to between {n_real} "
                f"and {MAX_TOKENS}."
            )
        # [PAD] rows are zeros, as a padding embedding usually is; they are masked as keys.
        tokens = [*tokens, *([PAD] * (pad_to - n_real))]
        x = np.vstack([x, np.zeros((pad_to - n_real, x.shape[1]))])
    mask = None
    if causal or pad_to is not None:
        mask = np.ones((len(tokens), len(tokens)), dtype=bool)
        if causal:
            mask &= causal_mask(len(tokens))
        if pad_to is not None:
            mask &= padding_mask(n_real, len(tokens))
    trace = multi_head_attention(
        tokens,
        x,
        weights,
        config=config,
        embeddings_source=embeddings.source,
        weights_source=weights.source,
        mask=mask,
    )
    return Traced(trace, embeddings.notes + _other_embeddings_note(trace, weights))


def _other_embeddings_note(trace: AttentionTrace, weights: AttentionWeights) -> tuple[str, ...]:
    """When --weights is a trace of this very sentence made with other X, say how to reuse it.

    Loading a trace as --weights takes its W matrices only; its numbers come back exactly only
    with the same X (same seed and embeddings), which is easy to miss.
    """
    path = weights.path
    if path is None:
        return ()
    try:
        their = load_embeddings(path, list(trace.tokens))
    except FileProblem:
        return ()  # not a trace, or one of another sentence
    if np.array_equal(their.X, trace.X):
        return ()
    return (
        f"{path} was made with other embeddings (another --seed or --embeddings), so only its "
        f"weights are reused; add --embeddings {path} to reuse its X too.",
    )


def trace_cross(
    source: str | Sequence[str],
    target: str | Sequence[str],
    *,
    d_model: int | None = None,
    n_heads: int | None = None,
    seed: int = 0,
    paper: bool = False,
    embeddings: str | Path | None = None,
    weights: AttentionWeights | str | Path | None = None,
    oov: OutOfVocabulary | str = OutOfVocabulary.error,
    progress: Callable[[int, int], None] | None = None,
) -> Traced:
    """Cross-attention (encoder–decoder), as when translating "I am good" into "Je vais bien":
    queries from the target words, keys and values from the source words.
    """
    source_tokens = _side(source, "source")
    target_tokens = _side(target, "target")
    traced = trace_with_options(
        [*target_tokens, *source_tokens],
        d_model=d_model,
        n_heads=n_heads,
        seed=seed,
        paper=paper,
        embeddings=embeddings,
        weights=weights,
        oov=oov,
        progress=progress,
    )
    both = traced.trace
    n_target = len(target_tokens)
    weights_used = AttentionWeights(
        W_Q=both.W_Q, W_K=both.W_K, W_V=both.W_V, W_O=both.W_O, source=both.weights_source
    )
    trace = multi_head_attention(
        target_tokens,
        both.X[:n_target],
        weights_used,
        config=both.config,
        embeddings_source=both.embeddings_source,
        weights_source=both.weights_source,
        source_tokens=source_tokens,
        source_x=both.X[n_target:],
    )
    return Traced(trace, traced.notes)


def _side(words: str | Sequence[str], name: str) -> list[str]:
    if isinstance(words, str):
        if not words.strip():
            raise AttnvizError(
                f"The {name} sentence is empty; cross needs both, e.g. "
                'attnviz cross "I am good" "Je vais bien".'
            )
        return tokenize(words)
    return check_token_count(words)
