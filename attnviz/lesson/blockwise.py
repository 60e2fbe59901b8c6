"""The blockwise step, shown only when --steps names it: the example word's row of one head, its
softmax and z computed a block of keys at a time, as FlashAttention does
(attnviz.analysis.blockwise), to the same weights and the same z as the softmax and Z steps."""

from __future__ import annotations

import math

import numpy as np

from attnviz import worked
from attnviz.errors import option
from attnviz.labels import format_number, plural, subscript
from attnviz.lesson.blocks import Matrix, Span
from attnviz.lesson.examples import MOST_TERMS, fewest_decimals, rounds_to
from attnviz.lesson.writer import HeadView, LessonWriter
from attnviz.results import BlockUpdate


def title(lesson: LessonWriter, head: HeadView | None) -> str:
    word = lesson.all_queries[lesson.example]
    head_number = lesson.selection.heads[0] + 1
    return f"FlashAttention's softmax, a block of keys at a time: {word!r} in head {head_number}"


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    index = lesson.selection.heads[0]
    example = worked.blockwise(lesson.trace, index, lesson.example, lesson.options.block)
    _why(lesson)
    _how(lesson, example)
    for number, update in enumerate(example.online.updates, start=1):
        lesson.show(_block_table(lesson, example, number, update))
    lesson.show(_running_table(lesson, example))
    _worked(lesson, example)
    _same_as_softmax_and_z(lesson, example)


def _why(lesson: LessonWriter) -> None:
    matrix = "n_target × n_source" if lesson.trace.is_cross else "n × n"
    lesson.say(
        f"FlashAttention computes {lesson.steps_label('weights', 'z')} together, a block of keys "
        "at a time, so that the "
        f"{matrix} matrix of scores and weights is never stored: each query keeps only a running "
        "maximum m, sum l and output o in fast memory, and each block of K and V is read from "
        "memory once. The "
        "result is exact, not an approximation: the same weights and the same z, up to "
        "rounding in the last digits."
    )


def _how(lesson: LessonWriter, example: worked.BlockwiseExample) -> None:
    online, trace = example.online, lesson.trace
    n_keys, updates = len(example.weights), online.updates
    given = option("block", online.block)
    if len(updates) == 1:
        sizes = f"one block ({given}): the plain softmax"
        sizes += "; a smaller block shows the rescaling" if n_keys > 1 else ""
    else:
        sizes = f"{plural(len(updates), 'block')} of {online.block}"
        if updates[-1].stop - updates[-1].start != online.block:
            sizes += f", the last of {updates[-1].stop - updates[-1].start}"
        if lesson.options.block is not None:
            sizes += f" ({given})"
        elif n_keys >= 3:
            sizes += f" ({given}, the default for {n_keys} keys: 3 or 4 blocks)"
        else:
            sizes += f" ({given}, the default for {n_keys} keys: one a block)"
    h, kv = subscript(example.head + 1), subscript(trace.kv_head(example.head) + 1)
    rotated = "" if trace.Q_rotated is None else "rotated "
    hidden = (
        f" Every key as computed is here, {lesson.hidden_names()} included."
        if lesson.selection.hidden
        else ""
    )
    lesson.say(
        "The row of ",
        Span(repr(lesson.all_queries[example.query]), slot="query!r"),
        f" in head {example.head + 1}: its {plural(n_keys, 'key')} in {sizes}.{hidden} "
        "Three numbers run along, from m = −∞, l = 0 and "
        "o = 0: m, the largest score so far; l, the sum of exp(s_j − m) so far; o, the sum of "
        f"exp(s_j − m)·v_j so far, a vector of d_v = {trace.d_k}. For each block, with "
        f"s_j = q·k_j / √d_k from {rotated}Q{h} and K{kv} as in "
        f"step {lesson.step_label('scaled')} (−∞ where masked):",
    )
    for line in (
        "m_new = max(m_old, the block's largest s_j)",
        "l_new = exp(m_old − m_new)·l_old + Σ_j exp(s_j − m_new)",
        f"o_new = exp(m_old − m_new)·o_old + Σ_j exp(s_j − m_new)·v_j      (v_j from V{kv})",
    ):
        lesson.say(Span("  "), Span(line, "bold"))
    lesson.say(
        "The factor exp(m_old − m_new) is 1 while the maximum stays and below 1 when it grows: "
        "what was summed with the old maximum subtracted is rescaled to the new one, so every "
        "term of l and o is exp(s_j − m) for the current m, as if m had been known from the "
        "start. At block 1 the factor is exp(−∞ − m) = 0: there is nothing yet to rescale."
    )
    _masked_note(lesson, example)


def _masked_note(lesson: LessonWriter, example: worked.BlockwiseExample) -> None:
    """What masked keys do, when the row has any: nothing, and a block of them leaves the
    running numbers as they were."""
    updates = example.online.updates
    if not any(np.isinf(update.scores).any() for update in updates):
        return
    empty = [n for n, u in enumerate(updates, start=1) if not np.isfinite(u.scores).any()]
    named = ("block " if len(empty) == 1 else "blocks ") + ", ".join(str(n) for n in empty)
    lesson.note(
        "Masked keys have s_j = −∞ and exp(−∞) = 0: they add nothing"
        + (
            f", and a block of masked keys only ({named} here) leaves m, l and o as they "
            "were (FlashAttention skips such a block without "
            "reading it)."
            if empty
            else "."
        )
    )


def _block_table(
    lesson: LessonWriter, example: worked.BlockwiseExample, number: int, update: BlockUpdate
) -> Matrix:
    """A block's keys: s_j, exp(s_j − m_new) and v_j."""
    trace = lesson.trace
    v = (trace.V[trace.kv_head(example.head)])[update.start : update.stop]
    table = np.column_stack([update.scores, update.exponentials, v])
    masked = np.zeros(table.shape, bool)
    masked[:, 0] = np.isinf(update.scores)
    return Matrix(
        table,
        f"Block {number} of {len(example.online.updates)}: {_keys(update)}, "
        f"m = {lesson.number(update.m_new)}, e_j = exp(s_j − m)",
        lesson.all_keys[update.start : update.stop],
        ["s_j", "e_j", *(f"v{c}" for c in range(1, v.shape[1] + 1))],
        masked=masked if masked.any() else None,
    )


def _keys(update: BlockUpdate) -> str:
    """ "keys 4 to 6", "key 7" """
    if update.stop - update.start == 1:
        return f"key {update.stop}"
    return f"keys {update.start + 1} to {update.stop}"


def _running_table(lesson: LessonWriter, example: worked.BlockwiseExample) -> Matrix:
    """After each block: m, the factor, l and o."""
    updates = example.online.updates
    rows = np.array([[u.m_new, u.factor, u.l_new, *u.o_new] for u in updates])
    masked = np.zeros(rows.shape, bool)
    masked[:, 0] = np.isinf(rows[:, 0])
    return Matrix(
        rows,
        "m, exp(m_old − m), l and o after each block",
        [f"block {n}" for n in range(1, len(updates) + 1)],
        ["m", "factor", "l", *(f"o{c}" for c in range(1, rows.shape[1] - 2))],
        masked=masked if masked.any() else None,
    )


def _worked_block(example: worked.BlockwiseExample) -> int:
    """The block the worked example follows: the first after block 1 whose factor rescales a
    sum (below 1); else the last with a sum to rescale and a key not masked; else block 1."""
    updates = example.online.updates
    for index, update in enumerate(updates[1:], start=1):
        if update.l_old > 0 and update.factor < 1:
            return index
    adding = [i for i, u in enumerate(updates) if u.l_old > 0 and np.isfinite(u.scores).any()]
    return max(adding, default=0)


def _worked(lesson: LessonWriter, example: worked.BlockwiseExample) -> None:
    index = _worked_block(example)
    update = example.online.updates[index]
    text = lesson.text
    if index > 0:
        m_decimals = _factor_decimals(lesson, update)
        m_old, m_new = (text.exact(m, m_decimals) for m in (update.m_old, update.m_new))
        grew = update.m_new > update.m_old
        lesson.say(
            f"Block {index + 1}, worked out: "
            + (
                "the largest score grows, so l and o are rescaled:"
                if grew
                else "the largest score does not grow here, so the factor is exp(0) = 1:"
            )
        )
        lesson.worked_line(
            "blockwise",
            f"m = max({m_old}, {text.exact(update.scores.max(), m_decimals)}) = {m_new};  "
            f"exp(m_old − m_new) = exp({m_old} − {text.term(update.m_new, m_decimals)}) = "
            f"{text.exact(update.factor)}",
        )
    else:
        lesson.say("Block 1, worked out (m_old = −∞, so the factor is 0 and l_old = 0):")
    allowed = np.isfinite(update.scores)
    exponentials = update.exponentials[allowed]
    if allowed.sum() > MOST_TERMS:
        added = [float(exponentials.sum())]
        sum_name = f"l = factor·l_old + Σ of the block's {int(allowed.sum())} exp(s_j − m)"
    else:
        added, sum_name = [float(e) for e in exponentials], "l = factor·l_old + Σ exp(s_j − m)"
    lesson.worked_line(
        "blockwise",
        f"{sum_name} = {text.products([update.factor], [update.l_old], update.l_new, added)}",
    )
    v = lesson.trace.V[lesson.trace.kv_head(example.head)][update.start : update.stop]
    left = [update.factor, *exponentials]
    right = [float(update.o_old[0]), *v[allowed, 0]]
    lesson.worked_line(
        "blockwise",
        f"o[1] = factor·o_old[1] + Σ exp(s_j − m)·v_j[1] = "
        f"{text.products(left, right, float(update.o_new[0]))}",
    )
    lesson.rounding_note()


def _factor_decimals(lesson: LessonWriter, update: BlockUpdate) -> int:
    """The fewest decimals for m_old and m_new at which exp(m_old − m_new), worked from them as
    printed, gives the printed factor."""
    factor = lesson.text.exact(update.factor)

    def holds(decimals: int) -> bool:
        m_old = float(format_number(update.m_old, decimals))
        m_new = float(format_number(update.m_new, decimals))
        return rounds_to(math.exp(m_old - m_new), factor)

    return fewest_decimals(holds, lesson.text.least)


def _division_decimals(lesson: LessonWriter, o: float, ell: float, z: float) -> int:
    """The fewest decimals for o and l at which o/l, worked from them as printed, gives z."""
    printed = lesson.text.exact(z)

    def holds(decimals: int) -> bool:
        return rounds_to(
            float(format_number(o, decimals)) / float(format_number(ell, decimals)), printed
        )

    return fewest_decimals(holds, lesson.text.least)


def _same_as_softmax_and_z(lesson: LessonWriter, example: worked.BlockwiseExample) -> None:
    """z = o/l worked out, then o/l and its weights beside the softmax and Z steps' own."""
    online, text = example.online, lesson.text
    softmax, z_step = lesson.step_label("weights"), lesson.step_label("z")
    o, ell, z = float(online.o[0]), online.ell, float(online.z[0])
    decimals = _division_decimals(lesson, o, ell, z)
    h = subscript(example.head + 1)
    word = lesson.all_queries[example.query]
    lesson.say("At the end, z = o/l; its first number:")
    lesson.worked_line(
        "blockwise",
        f"z_{word}[1] = o[1]/l = {text.exact(o, decimals)} / {text.exact(ell, decimals)} = "
        f"{text.exact(z)}",
    )
    shown = min(len(online.z), 6)
    more = ", …" if len(online.z) > shown else ""

    def vector(values: np.ndarray) -> str:
        return "[" + ", ".join(text.exact(x) for x in values[:shown]) + more + "]"

    z_gap = float(np.abs(online.z - example.z).max())
    w_gap = float(np.abs(online.weights() - example.weights).max())
    lesson.say(
        f"o/l = {vector(online.z)}, and step {z_step}'s z of {word!r}, its row of Z{h}, is "
        f"{vector(example.z)}: the same, the largest difference {_gap(z_gap)}. The weights, "
        "each block's exp(s_j − m_block) rescaled to the last m by exp(m_block − m) and divided "
        f"by l, are step {softmax}'s row of weights{h} (largest difference {_gap(w_gap)}); "
        "FlashAttention "
        "never keeps them, it needs only o and l."
    )
    lesson.show(
        Matrix(
            np.vstack([online.weights(), example.weights]),
            f"The row of {word!r}: from the blocks, and step {softmax}'s",
            ["blockwise", f"weights{h}"],
            lesson.all_keys,
            shade=True,
            row_sums=True,
        )
    )


def _gap(difference: float) -> str:
    """A difference between two computations of the same number: 0, or 1.1e-16."""
    return "0" if difference == 0 else f"{difference:.1e}"
