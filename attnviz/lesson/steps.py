"""The lesson's steps, defined once: the terminal, the slides, the page, the notebook display and
``--steps`` all read this table, and nothing else numbers or names a step.

A step's number is its place in the table, counted from 1, and nothing else writes it: help
texts, error messages and the lesson's own cross-references ("as in step 5") ask the table for
it by the step's key (``label("scaled", trace)``), so that adding a row renumbers every surface.
Steps that happen in each head (``per_head``) come in a run: the lesson goes through the whole
run for one head, then for the next. The focus view (``focus``) is written only when the lesson
follows a word; it comes last.

Each step is written by one module, ``attnviz.lesson.<key>`` unless ``module`` names another:
its ``write(lesson, head)`` adds the step's blocks (prose, tables, worked examples), and an
optional ``title(lesson, head)`` completes the table's title with this trace's numbers
("Scale by √d_k" becomes "Scale by √d_k = √4 = 2.00"). Adding a step is a row here and that file.

An ``optional`` step is written only when ``--steps`` names it by its key (``--steps blockwise``):
it has no number of the plain steps' (so theirs stay as they are), and its heading is labelled
after the step it follows ("Step 6b"). Inside the lesson it is numbered past every plain step.

A step with a ``when`` is in the lessons of the traces it holds for only (rotary positions: a
trace with ``rope``), and is numbered only there: the steps after it count one further in those
lessons, and every other lesson keeps the paper's numbers.

Light on purpose (no numpy): the command line's options and ``attnviz --help`` read it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Step:
    """One step of the lesson."""

    key: str  # what the step shows, in one word: slide file names, the page's anchors
    title: str  # the same on every surface; its module may complete it with this trace's numbers
    brief: str = ""  # what --steps' help calls it ("tokens and X"); "" for the title's start
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
    Step("tokens", "Tokens and embeddings X", "tokens and X", arrays=("X", "E", "PE", "X_source")),
    Step(
        "window",
        "A sliding window: the keys each token may read",
        "the sliding window's mask",
        arrays=("mask",),
        when=lambda trace: trace.window is not None,
    ),
    Step(
        "qkv",
        "Queries, keys and values",
        "Q K V",
        per_head=True,
        arrays=("W_Q", "W_K", "W_V", "Q", "K", "V"),
        examples=("projection",),
    ),
    Step(
        "latent",
        "Latent attention: K and V made from one shared latent",
        "K and V from the latent c",
        per_head=True,
        arrays=("W_DKV", "c", "W_UK", "W_UV", "scores_absorbed", "output_absorbed"),
        examples=("absorption",),
        when=lambda trace: trace.c is not None,
    ),
    Step(
        "rope",
        "Rotary positions: q and k turned by their position",
        "q and k turned by their position",
        per_head=True,
        arrays=("Q_rotated", "K_rotated"),
        examples=("rotation", "relative_position"),
        when=lambda trace: trace.rope is not None,
    ),
    Step(
        "scores",
        "Raw scores Q·Kᵀ",
        "Q·Kᵀ",
        per_head=True,
        arrays=("scores",),
        examples=("dot_product",),
    ),
    Step(
        "scaled",
        "Scale by √d_k",
        "÷√d_k",
        per_head=True,
        arrays=("scaled",),
        examples=("scaling",),
    ),
    Step(
        "weights",
        "Softmax: attention weights, each row of scores normalised",
        "softmax",
        per_head=True,
        arrays=("weights",),
        examples=("softmax_unshifted", "softmax"),
    ),
    Step(
        "z",
        "Z = weights·V, the head's output",
        "Z",
        per_head=True,
        arrays=("Z",),
        examples=("weighted_sum", "weighted_sum_element"),
    ),
    Step(
        "blockwise",
        "FlashAttention's softmax, a block of keys at a time",
        "the softmax and Z a block of keys at a time, as FlashAttention computes them",
        arrays=("Q", "K", "V", "weights", "Z"),
        examples=("blockwise",),
        section="One head, a block of keys at a time",
        optional=True,
    ),
    Step(
        "output",
        "Concatenate the heads and project with W_O",
        "Concat and W_O",
        arrays=("concat", "W_O", "output"),
        examples=("output_sum",),
        section="All heads",
    ),
    Step(
        "focus",
        "Focus",
        "the focus view",
        arrays=("weights", "V", "W_O"),
        examples=("weighted_sum", "weighted_sum_element", "contribution"),
        focus=True,
    ),
)


def numbered(
    steps: tuple[Step, ...], trace: Any = None, *, assume: Collection[str] = ()
) -> dict[int, Step]:
    """The steps of the lesson of ``trace`` by number, from 1 (without a trace: the steps
    every lesson has, and those keyed in ``assume``): every step but the optional ones, which
    --steps names."""
    kept = (s for s in steps if not s.optional and (s.applies(trace) or s.key in assume))
    return dict(enumerate(kept, start=1))


def in_order(
    steps: tuple[Step, ...], trace: Any = None, *, assume: Collection[str] = ()
) -> list[tuple[int, str, Step]]:
    """Every step of the lesson of ``trace`` in the table's order with its number and the label
    its heading shows: a plain step's number ("6"); an optional step, numbered past every plain
    step, is labelled after the step before it ("6b", then "6c"). ``assume``: as numbered's."""
    plain = len(numbered(steps, trace, assume=assume))
    ordered: list[tuple[int, str, Step]] = []
    number, extra, letter = 0, 0, "a"
    for step in steps:
        if not (step.applies(trace) or step.key in assume):
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


def per_head_numbers(trace: Any = None, wanted: frozenset[int] | None = None) -> frozenset[int]:
    """The numbers of the steps the lesson of ``trace`` writes once per head: every plain one
    (``wanted`` None), or those of ``wanted`` (an optional one when it is named)."""
    return frozenset(
        number
        for number, _, step in in_order(STEPS, trace)
        if step.per_head and (number in wanted if wanted is not None else not step.optional)
    )


def focus_number(
    steps: tuple[Step, ...], trace: Any = None, *, assume: Collection[str] = ()
) -> int | None:
    """The focus view's number, or None when the table has none."""
    return next((n for n, s in numbered(steps, trace, assume=assume).items() if s.focus), None)


def last_plain_number(
    steps: tuple[Step, ...], trace: Any = None, *, assume: Collection[str] = ()
) -> int:
    """The last step of the lesson of ``trace`` (the focus view aside)."""
    return max(n for n, s in numbered(steps, trace, assume=assume).items() if not s.focus)


# -- a step named by its key --------------------------------------------------------------------


def _found(key: str, trace: Any = None) -> tuple[int, str, Step]:
    """The step keyed ``key`` as the lesson of ``trace`` numbers it (in_order)."""
    for found in in_order(STEPS, trace):
        if found[2].key == key:
            return found
    raise KeyError(f"the lesson has no step {key!r}")  # a bug: a module names a step it lacks


def step_number(key: str, trace: Any = None) -> int:
    """The number of the step keyed ``key`` in the lesson of ``trace`` (without a trace: in
    the lessons without a conditional step): what --steps selects it by and its Pause carries.
    With rotary positions every step after the turning counts one further."""
    return _found(key, trace)[0]


def label(key: str, trace: Any = None) -> str:
    """What the lesson of ``trace`` calls the step keyed ``key`` where a person reads it: its
    number ("5"), or an optional step's label ("6b"). The lesson's cross-references ("as in
    step 5") are written with it, so that they follow the table."""
    return _found(key, trace)[1]


def steps_label(first: str, last: str, trace: Any = None) -> str:
    """ "steps 3 to 5": the steps keyed ``first`` to ``last`` in the lesson of ``trace``;
    "steps 5 and 6" for two in a row."""
    start, end = label(first, trace), label(last, trace)
    joined = " and " if end.isdigit() and start.isdigit() and int(end) == int(start) + 1 else " to "
    return f"steps {start}{joined}{end}"


def named_example(trace: Any = None) -> str:
    """ "5,6,blockwise": the first optional step by its key after the two steps before it, as
    an error message's example of --steps; "" when the table has no optional step."""
    before: list[str] = []
    for number, _, step in in_order(STEPS, trace):
        if step.optional:
            return ",".join([*before[-2:], step.key])
        before.append(str(number))
    return ""


# -- --steps' help, written from the table -------------------------------------------------------


def _and(names: list[str]) -> str:
    """ "a, b and c" """
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _brief(step: Step) -> str:
    return step.brief or step.title.split(":")[0].split(",")[0]


def listing(*, focus: bool = True, each_head: str = "") -> str:
    """The plain steps as every lesson numbers them, a head's steps as one range: "1 tokens
    and X; 2–6 each head's Q K V, Q·Kᵀ, ÷√d_k, softmax and Z; 7 Concat and W_O; 8 the focus
    view". ``focus``: with the focus view; ``each_head``: said after a head's steps."""
    parts: list[str] = []
    run: list[tuple[int, Step]] = []
    for number, step in [*numbered(STEPS).items(), (0, Step("", ""))]:
        if run and not (step.per_head and run[-1][1].per_head):
            if run[0][1].per_head:
                numbers = f"{run[0][0]}–{run[-1][0]}" if len(run) > 1 else str(run[0][0])
                names = _and([_brief(s) for _, s in run])
                parts.append(f"{numbers} each head's {names}{each_head}")
            elif focus or not run[0][1].focus:
                parts.append(f"{run[0][0]} {_brief(run[0][1])}")
            run = []
        run.append((number, step))
    return "; ".join(parts)


def named_listing() -> str:
    """The optional steps, which --steps names by key: "blockwise (6b), the softmax and Z a
    block of keys at a time, as FlashAttention computes them"."""
    return "; ".join(
        f"{step.key} ({name}), {_brief(step)}" for _, name, step in in_order(STEPS) if step.optional
    )


def conditional_note() -> str:
    """What a lesson with a conditional step counts: "With rotary positions step 3 is q and k
    turned by their position, and the steps after it count one further." ("" when the table
    has no such step). With several, each is numbered as in a lesson that has it alone, and
    the steps after each count one further."""
    conditional = [s for s in STEPS if s.when is not None and not s.optional]
    if not conditional:
        return ""
    said = "; ".join(
        f"with {condition(step)} step {_number_assuming(step.key)} is {_brief(step)}"
        for step in conditional
    )
    after = "it" if len(conditional) == 1 else "each"
    return f"{said[0].upper()}{said[1:]}, and the steps after {after} count one further."


def condition(step: Step) -> str:
    """What a conditional step's lessons have, from its title: "rotary positions"."""
    return step.title.split(":")[0].lower()


def _number_assuming(key: str) -> int:
    """The number of the step keyed ``key`` in a lesson that has it (a conditional step's)."""
    return next(n for n, _, s in in_order(STEPS, assume=(key,)) if s.key == key)


def steps_help(*, page: bool = False) -> str:
    """--steps' help, for the lessons (explain, cross) or the page (whose picture is the
    focus view), every number from the table."""
    named = named_listing()
    if page:
        text = (
            "Only these steps on the page, e.g. 4-6 or 1,3-5 (default: every step): "
            f"{listing(focus=False)} (the focus view is the page's picture)."
        )
        named += ", in each head" if named else ""
    else:
        text = (
            "Show only these steps, after the header, e.g. 4-6 or 1,3-5: "
            f"{listing(each_head=' (for every head shown)')}."
        )
    text += f" Shown only when named: {named}." if named else ""
    note = conditional_note()
    return f"{text} {note}" if note else text
