"""Which cell a question asks about: ``question`` for a cell the caller chooses (the page asks
for the cell a student clicked), ``exercise_set`` for a reproducible set drawn with a seeded
generator (the terminal, the worksheet: the same seed gives the same set everywhere)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from attnviz.exercise import rope_cache, softmaxes, sums
from attnviz.exercise.questions import KINDS, Question
from attnviz.provenance import WeightsKind
from attnviz.trace import AttentionTrace

BUILDERS: dict[str, Callable[..., Question]] = {
    "projection": sums.projection,
    "score": sums.score,
    "scaled": softmaxes.scaled,
    "softmax": softmaxes.softmax,
    "z": sums.z,
    "output": sums.output,
    "rope": rope_cache.rope,
    "cache": rope_cache.cache,
    "blockwise": softmaxes.blockwise,
    "weight": softmaxes.weight,
}

#: Kinds whose builder takes ``matrix`` (Q, K or V) and ``decimals``.
_WITH_MATRIX = ("projection", "rope")
_WITHOUT_DECIMALS = ("cache",)


def question(
    trace: AttentionTrace,
    kind: str,
    *,
    head: int,
    row: int,
    column: int,
    layer: int = 0,
    matrix: str = "Q",
    decimals: int = 2,
) -> Question:
    """The question of ``kind`` about one cell (head, row and column from 0, as ``where``
    gives them back): for rope and projection ``matrix`` says Q, K or V; for blockwise
    ``column`` is the block, from 0 (at least 1); for cache the cell is ignored."""
    if kind not in BUILDERS:
        raise ValueError(f"no kind of question {kind!r}; kinds: {', '.join(KINDS)}")
    extra: dict[str, Any] = {}
    if kind in _WITH_MATRIX:
        extra["matrix"] = matrix
    if kind not in _WITHOUT_DECIMALS:
        extra["decimals"] = decimals
    return BUILDERS[kind](trace, head=head, row=row, column=column, layer=layer, **extra)


def suits(trace: AttentionTrace, kind: str) -> str | None:
    """Why ``kind`` cannot be asked of ``trace`` (a clause naming the option it needs), or None."""
    if kind == "rope" and trace.rope is None:
        return "needs rotary positions (positions rope)"
    if kind == "weight" and trace.provenance.weights.kind != WeightsKind.PRETRAINED:
        return "needs a trained model (model coref)"
    if kind == "blockwise" and len(trace.key_tokens) < 2:
        return "needs at least two words (two blocks of keys)"
    return None


def exercise_set(
    traces: Sequence[AttentionTrace],
    kinds: Sequence[str],
    count: int,
    seed: int,
    *,
    layers: Sequence[int] | None = None,
) -> tuple[Question, ...]:
    """``count`` questions, the kinds taken in turn, each cell drawn with a generator seeded
    by ``seed``: the same arguments give the same set. Each question is about one of
    ``traces`` (drawn; the weight, about the last); ``layers`` are their numbers (from 0) in
    the model, as ``where`` gives them back (default 0, 1, …)."""
    numbers = list(range(len(traces)) if layers is None else layers)
    rng = np.random.default_rng(seed)
    found = []
    for index in range(count):
        kind = kinds[index % len(kinds)]
        chosen = int(rng.integers(len(traces))) if kind != "weight" else len(traces) - 1
        trace = traces[chosen]
        cell = _cell(trace, kind, rng)
        found.append(question(trace, kind, layer=numbers[chosen], **cell))
    return tuple(found)


def _allowed_row(trace: AttentionTrace, rng: np.random.Generator) -> int:
    """A query row, drawn among those that see two keys or more (a row that sees one gives
    it all its weight, 1, whatever the numbers), else among all."""
    rows = np.flatnonzero((~trace.masked).sum(axis=1) >= 2)
    return int(rng.choice(rows)) if rows.size else int(rng.integers(trace.n_tokens))


def _cell(trace: AttentionTrace, kind: str, rng: np.random.Generator) -> dict[str, Any]:
    """head, row, column (and matrix) for a question of ``kind``, drawn with ``rng``."""
    head = int(rng.integers(trace.n_heads))
    row = _allowed_row(trace, rng)
    allowed = np.flatnonzero(~trace.masked[row])
    key = int(rng.choice(allowed))
    if kind == "projection":
        matrix = str(rng.choice(["Q", "K", "V"]))
        return {"head": head, "row": row, "column": int(rng.integers(trace.d_k)), "matrix": matrix}
    if kind == "score" and len(allowed) > 1:
        # q_i·k_i: its transposed reading would be the answer itself
        key = int(rng.choice(allowed[allowed != row]))
    if kind == "scaled":
        # A score near 0 scales to near 0, where no mistake shows: one of 0.5 or more, if any.
        sizable = allowed[np.abs(trace.scores[head, row, allowed]) >= 0.5]
        key = int(rng.choice(sizable)) if sizable.size else key
    if kind in ("score", "scaled", "softmax"):
        return {"head": head, "row": row, "column": key}
    if kind == "z":
        return {"head": head, "row": row, "column": int(rng.integers(trace.d_k))}
    if kind == "output":
        return {"head": 0, "row": row, "column": int(rng.integers(trace.d_model))}
    if kind == "rope":
        turned = int(rng.integers(1, trace.n_tokens)) if trace.n_tokens > 1 else 0
        matrix = "V" if rng.random() < 0.25 else str(rng.choice(["Q", "K"]))
        return {
            "head": head,
            "row": turned,
            "column": int(rng.integers(trace.d_k)),
            "matrix": matrix,
        }
    if kind == "blockwise":
        return _block_cell(trace, head, rng)
    if kind == "weight":
        return _weight_cell(trace, head)
    return {"head": 0, "row": 0, "column": 0}  # cache: the whole layer


def _block_cell(trace: AttentionTrace, head: int, rng: np.random.Generator) -> dict[str, Any]:
    """A row and a block after the first holding at least one allowed key."""
    from attnviz.analysis.blockwise import default_block, key_blocks

    n_keys = len(trace.key_tokens)
    blocks = key_blocks(n_keys, default_block(n_keys))
    cells = [
        (row, index)
        for row in range(trace.n_tokens)
        for index, (start, stop) in enumerate(blocks)
        if index >= 1 and (~trace.masked[row, start:stop]).any()
    ]
    # Blocks that raise the running maximum first: there the old sum is rescaled.
    raising = [
        (row, index)
        for row, index in cells
        if _largest(trace, head, row, blocks[index])
        > _largest(trace, head, row, (0, blocks[index][0]))
    ]
    cells = raising or cells
    row, index = cells[int(rng.integers(len(cells)))]
    return {"head": head, "row": row, "column": index}


def _largest(trace: AttentionTrace, head: int, row: int, span: tuple[int, int]) -> float:
    """The largest allowed scaled score of ``row`` among keys span[0] … span[1] − 1."""
    start, stop = span
    allowed = ~trace.masked[row, start:stop]
    scores = np.asarray(trace.scaled[head, row, start:stop])[allowed]
    return float(scores.max()) if scores.size else -np.inf


def _weight_cell(trace: AttentionTrace, head: int) -> dict[str, Any]:
    """The row of the word a trained model answers at ("it"), else the last word; the key it
    gives the most weight: what "it" gives "animal"."""
    answers_at = trace.provenance.weights.answers_at
    rows = [i for i, token in enumerate(trace.tokens) if token in answers_at]
    row = rows[-1] if rows else trace.n_tokens - 1
    return {"head": head, "row": row, "column": int(np.argmax(trace.weights[head, row]))}
