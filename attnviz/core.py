"""The one call that turns a sentence into an AttentionTrace: tokens, X, weights, every step."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from attnviz.attention import multi_head_attention
from attnviz.config import AttentionConfig, resolve_config
from attnviz.embeddings import Embeddings, OutOfVocabulary, load_embeddings, random_embeddings
from attnviz.errors import AttnvizError
from attnviz.tokens import check_token_count, tokenize
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights, load_weights, random_weights


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
                embeddings/weights imply.
    embeddings: None for seeded random vectors, an [n, d_model] array, or a word-vector file
                (GloVe/word2vec text, .npy, .npz, .json).
    weights:    None for seeded random W_Q, W_K, W_V, W_O, an AttentionWeights, or an .npz/.json
                file with those keys (an exported trace works).
    oov:        "error" (default) or "random": what to do with words a vocabulary file lacks.

    >>> trace = trace_attention("I am good")
    >>> trace.weights.shape   # [heads, n_tokens, n_tokens]
    (2, 3, 3)
    """
    tokens = tokenize(sentence) if isinstance(sentence, str) else check_token_count(sentence)
    if isinstance(weights, (str, Path)):
        weights = load_weights(Path(weights))
    seed = config.seed if config is not None else 0
    if isinstance(embeddings, (str, Path)):
        embeddings = load_embeddings(Path(embeddings), tokens, oov=OutOfVocabulary(oov), seed=seed)
    elif isinstance(embeddings, np.ndarray):
        embeddings = Embeddings(X=np.asarray(embeddings, dtype=np.float64), source="given array")
    if config is None:
        config = resolve_config(
            seed=seed,
            embedding_width=embeddings.X.shape[-1] if embeddings is not None else None,
            weights_shape=(weights.n_heads, weights.d_model) if weights is not None else None,
        )
    if embeddings is None:
        embeddings = Embeddings(
            X=random_embeddings(tokens, config.d_model, config.seed),
            source=f"seeded random vectors (seed {config.seed})",
        )
    if embeddings.X.ndim != 2 or embeddings.X.shape[1] != config.d_model:
        raise AttnvizError(
            f"The embeddings have shape {list(embeddings.X.shape)}; with d_model {config.d_model} "
            f"they must be [{len(tokens)}, {config.d_model}]."
        )
    if weights is None:
        weights = random_weights(config, np.random.default_rng(config.seed))
    return multi_head_attention(
        tokens,
        embeddings.X,
        weights,
        config=config,
        embeddings_source=embeddings.source,
        weights_source=weights.source,
    )
