"""The lesson's steps, defined once: the terminal, the slides, the page, the notebook display and
``--steps`` all read this table, and nothing else numbers or names a step.

A step's number is its place in the table, counted from 1. Steps that happen in each head
(``per_head``) come in a run: the lesson goes through the whole run for one head, then for the
next. The focus view (``focus``) is written only when the lesson follows a word; it comes last.

Each step is written by one module, ``attnviz.lesson.<key>`` unless ``module`` names another:
its ``write(lesson, head)`` adds the step's blocks (prose, tables, worked examples), and an
optional ``title(lesson, head)`` completes the table's title with this trace's numbers
("Scale by √d_k" becomes "Scale by √d_k = √4 = 2.00"). Adding a step is a row here and that file.

An ``optional`` step is written only when ``--steps`` names it by its key ("--steps 5,6,blockwise"):
it has no number of the plain steps' (so theirs stay as they are), and its heading is labelled
after the step it follows ("Step 6b"). Inside the lesson it is numbered past every plain step.

A step with a ``when`` is in the lessons of the traces it holds for only (rotary positions: a
trace with ``rope``), and is numbered only there: the steps after it count one further in those
lessons, and every other lesson keeps the paper's numbers.

Light on purpose (no numpy): the command line's options and ``attnviz --help`` read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Step:
    """One step of the lesson."""

    key: str  # what the step shows, in one word: slide file names, the page's anchors
    title: str  # the same on every surface; its module may complete it with this trace's numbers
    per_head: bool = False  # written once for each head shown, in a "Head h of H" section
    arrays: tuple[str, ...] = ()  # the trace's arrays it shows (AttentionTrace field names)
    examples: tuple[str, ...] = ()  # its worked examples (attnviz.worked's records)
    section: str | None = None  # the section it opens when it is not a head's: "All heads"
    focus: bool = False  # the focus view: only when a word is followed; no step heading
    module: str | None = None  # the module that writes it; None: attnviz.lesson.<key>
    optional: bool = False  # written only when --steps names its key; labelled "6b" after step 6
    when: Callable[[Any], bool] | None = None  # of an AttentionTrace: whether it has this step

    def applies(self, trace: Any = None) -> bool:
        """Whether the lesson of ``trace`` has this step (without a trace: every lesson)."""
        return self.when is None or (trace is not None and self.when(trace))

    @property
    def writer(self) -> str:
        """The dotted name of the module that writes this step."""
        return self.module or f"attnviz.lesson.{self.key}"


#: The paper's computation, Z = softmax(Q·Kᵀ / √d_k)·V per head, then Concat·W_O, in order.
STEPS: tuple[Step, ...] = (
    Step("tokens", "Tokens and embeddings X", arrays=("X", "E", "PE", "X_source")),
    Step(
        "qkv",
        "Queries, keys and values",
        per_head=True,
        arrays=("W_Q", "W_K", "W_V", "Q", "K", "V"),
        examples=("projection",),
    ),
    Step(
        "rope",
        "Rotary positions: q and k turned by their position",
        per_head=True,
        arrays=("Q_rotated", "K_rotated"),
        examples=("rotation", "relative_position"),
        when=lambda trace: trace.rope is not None,
    ),
    Step("scores", "Raw scores Q·Kᵀ", per_head=True, arrays=("scores",), examples=("dot_product",)),
    Step("scaled", "Scale by √d_k", per_head=True, arrays=("scaled",), examples=("scaling",)),
    Step(
        "weights",
        "Softmax: attention weights, each row of scores normalised",
        per_head=True,
        arrays=("weights",),
        examples=("softmax_unshifted", "softmax"),
    ),
    Step(
        "z",
        "Z = weights·V, the head's output",
        per_head=True,
        arrays=("Z",),
        examples=("weighted_sum", "weighted_sum_element"),
    ),
    Step(
        "blockwise",
        "FlashAttention's softmax, a block of keys at a time",
        arrays=("Q", "K", "V", "weights", "Z"),
        examples=("blockwise",),
        section="One head, a block of keys at a time",
        optional=True,
    ),
    Step(
        "output",
        "Concatenate the heads and project with W_O",
        arrays=("concat", "W_O", "output"),
        examples=("output_sum",),
        section="All heads",
    ),
    Step(
        "focus",
        "Focus",
        arrays=("weights", "V", "W_O"),
        examples=("weighted_sum", "weighted_sum_element", "contribution"),
        focus=True,
    ),
)


def numbered(steps: tuple[Step, ...], trace: Any = None) -> dict[int, Step]:
    """The steps of the lesson of ``trace`` by number, from 1 (without a trace: the steps
    every lesson has): every step but the optional ones, which --steps names."""
    kept = (step for step in steps if not step.optional and step.applies(trace))
    return dict(enumerate(kept, start=1))


def in_order(steps: tuple[Step, ...], trace: Any = None) -> list[tuple[int, str, Step]]:
    """Every step of the lesson of ``trace`` in the table's order with its number and the label
    its heading shows: a plain step's number ("6"); an optional step, numbered past every plain
    step, is labelled after the step before it ("6b", then "6c")."""
    plain = len(numbered(steps, trace))
    ordered: list[tuple[int, str, Step]] = []
    number, extra, letter = 0, 0, "a"
    for step in steps:
        if not step.applies(trace):
            continue
        if step.optional:
            extra, letter = extra + 1, chr(ord(letter) + 1)
            ordered.append((plain + extra, f"{number}{letter}", step))
        else:
            number, letter = number + 1, "a"
            ordered.append((number, str(number), step))
    return ordered


def optional_numbers(steps: tuple[Step, ...], trace: Any = None) -> dict[str, int]:
    """The optional steps' numbers by key, as in_order numbers them."""
    return {step.key: number for number, _, step in in_order(steps, trace) if step.optional}


def focus_number(steps: tuple[Step, ...], trace: Any = None) -> int | None:
    """The focus view's number, or None when the table has none."""
    return next((n for n, step in numbered(steps, trace).items() if step.focus), None)


def last_plain_number(steps: tuple[Step, ...], trace: Any = None) -> int:
    """The last step of the lesson of ``trace`` (the focus view aside)."""
    return max(n for n, step in numbered(steps, trace).items() if not step.focus)
