"""A head not shown in full: the focus word's row of each of its tables, in two small tables,
in place of its steps (2 to 6, with rotary positions their turned q and k too).

    q_it, k_it, v_it, (turned q_it, k_it), z_it     [d_k columns]
    scores, scaled, weights of the row of 'it'      [one column per key]

Every number is one of the head's tables as its full lesson prints it (``--head N`` shows that
head in full); with ``--steps``, only the rows of the steps shown.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from attnviz.errors import option
from attnviz.lesson.blocks import Matrix
from attnviz.lesson.writer import HeadView, LessonWriter

#: Each row of the head's d_k-wide table, and the step (by key) whose table it comes from.
VECTOR_STEPS = ("qkv", "rope", "z")
#: Each row of the head's key-wide table, by step key.
ROW_STEPS = ("scores", "scaled", "weights")


def heading(lesson: LessonWriter, head: HeadView) -> str:
    """The head's section heading: which row it gives, and how to see the rest."""
    return (
        f"Head {head.index + 1} of {lesson.trace.n_heads} · the row of "
        f"{lesson.focus_label()!r} ({option('head', head.index + 1)} shows it in full)"
    )


def write(lesson: LessonWriter, head: HeadView, steps: Collection[str]) -> None:
    """The head's rows for the per-head steps keyed ``steps`` (those shown)."""
    trace, selection = lesson.trace, lesson.selection
    word = lesson.focus_label()
    row = lesson.example_row or 0
    kv = trace.kv_head(head.index)
    vectors: list[tuple[str, np.ndarray]] = []
    if "qkv" in steps:
        vectors.append((f"q_{word}", selection.rows(trace.Q[head.index])[row]))
        if not trace.is_cross:  # in cross-attention the keys are the source's words
            vectors.append((f"k_{word}", selection.key_rows(trace.K[kv])[row]))
            vectors.append((f"v_{word}", selection.key_rows(trace.V[kv])[row]))
    if "rope" in steps and trace.Q_rotated is not None and trace.K_rotated is not None:
        vectors.append((f"q_{word} turned", selection.rows(trace.Q_rotated[head.index])[row]))
        vectors.append((f"k_{word} turned", selection.key_rows(trace.K_rotated[kv])[row]))
    if "z" in steps:
        vectors.append((f"z_{word}", selection.rows(trace.Z[head.index])[row]))
    if vectors:
        lesson.show(
            Matrix(
                np.stack([values for _, values in vectors]),
                f"head {head.index + 1}: the rows of {word!r}",
                [label for label, _ in vectors],
                lesson.dims(trace.d_k),
            )
        )
    pairs: list[tuple[str, np.ndarray, np.ndarray | None]] = []
    masked = trace.masked if trace.mask is not None and not trace.mask.all() else None
    if "scores" in steps:
        pairs.append(("scores", selection.pairs(trace.scores[head.index])[row], None))
    if "scaled" in steps:
        scaled = selection.pairs(trace.scaled[head.index], masked=masked)[row]
        cells = None if masked is None else selection.masked_pairs(masked)[row]
        pairs.append(("scaled", scaled, cells))
    if "weights" in steps:
        pairs.append(("weights", selection.pairs(trace.weights[head.index], total=True)[row], None))
    if pairs:
        if vectors:
            lesson.blank()
        cut = np.zeros((len(pairs), len(lesson.keys)), dtype=bool)
        for index, (_, _, cells) in enumerate(pairs):
            if cells is not None:
                cut[index] = cells
        lesson.show(
            Matrix(
                np.stack([values for _, values, _ in pairs]),
                f"head {head.index + 1}: row {word!r} of scores, scaled scores and weights",
                [label for label, _, _ in pairs],
                lesson.keys,
                masked=cut if cut.any() else None,
            )
        )
