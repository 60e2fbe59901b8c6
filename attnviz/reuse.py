"""Notes for a file reused as --weights: a trace of this very sentence made with other X, or a
model's layer run on other X than the model gave it. Its weights are reused either way; the
note says how to reuse its X too, so that the numbers come back as they were."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attnviz.errors import AttnvizError, clipped, option
from attnviz.positions import Positions
from attnviz.provenance import WeightsOrigin
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights


def reuse_notes(trace: AttentionTrace, weights: AttentionWeights) -> tuple[str, ...]:
    """When --weights is a trace of this very sentence made with other X, say how to reuse it.

    Loading a trace as --weights takes its W matrices only; its numbers come back exactly only
    with the same X (same seed, embeddings and --positions), which is easy to miss.
    """
    path = weights.path
    if path is None:
        return ()
    from attnviz.embeddings import load_embeddings  # the file readers: only for a file reused

    if weights.origin.model is not None:
        return _model_layer_note(trace, weights.origin, path)
    try:
        their = load_embeddings(path, list(trace.tokens))  # a trace's E when it has positions
    except AttnvizError:
        return ()  # not a trace, or one of another sentence
    other_vectors = not np.array_equal(their.X, trace.X if trace.E is None else trace.E)
    # Positions the trace was made with and this run leaves out. (Positions added to a trace
    # made without them change X as asked; that needs no note.)
    theirs = _recorded_positions(path)
    ours = trace.provenance.embeddings.positions
    left_out = theirs if theirs not in (None, Positions.none, ours) else None
    if not other_vectors and left_out is None:
        return ()
    made, fixes = [], []
    if other_vectors:
        made.append(f"other embeddings (another {option('seed')} or {option('embeddings')})")
        fixes.append(option("embeddings", path))
    if left_out is not None:
        made.append(option("positions", left_out))
        fixes.append(option("positions", left_out))
    return (
        f"{path} was made with {' and '.join(made)}, so only its weights are reused; add "
        f"{' '.join(fixes)} to reuse its X too.",
    )


def _model_layer_note(trace: AttentionTrace, origin: WeightsOrigin, path: Path) -> tuple[str, ...]:
    """When --weights is a model's layer run on other X than the model gave it, say how to run
    it on that X: only then are its numbers the model's (up to the attention's output)."""
    from attnviz.embeddings import load_embeddings
    from attnviz.trace_files import recorded_sentence

    try:
        their = load_embeddings(path, list(trace.tokens), layer=origin.layer)
    except AttnvizError:
        their = None  # another sentence, or a file without the layer's X
    if their is not None and np.array_equal(their.X, trace.X):
        return ()
    sentence = recorded_sentence(path)
    made_for = f' and the sentence it was made for, "{clipped(sentence)}"' if sentence else ""
    return (
        f"{path} holds layer {origin.layer} of {origin.model}; here its weights run on other X "
        f"({trace.provenance.embeddings.describe()}). For that layer's attention as the model "
        f"computed it, add {option('embeddings', path)}{made_for}.",
    )


def _recorded_positions(path: Path) -> Positions | None:
    """The --positions a trace file records; None for a file that is not an attnviz trace."""
    from attnviz.trace_files import load_trace

    try:
        first, *_ = load_trace(path)
    except AttnvizError:
        return None
    return first.provenance.embeddings.positions
