"""How the lesson is told: decimals, whether the matrices W are printed, which steps, and how
much of it: by default one head in full (the first shown) with each step's explanation, and
for every other head the focus word's row of each table; ``every_head`` shows every head in
full, each explanation once; ``full`` all of the text.

Light on purpose: the command line declares its options with this type, and ``attnviz --help``
imports it without the lesson's writers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from attnviz.errors import AttnvizError, clipped, option, quoted, spelled
from attnviz.lesson import steps as table
from attnviz.lesson.steps import (
    Step,
    condition,
    focus_number,
    last_plain_number,
    named_example,
    numbered,
    optional_numbers,
)

MAX_DECIMALS = 8

_STEPS_SPEC = re.compile(r"(\d+)(?:-(\d+))?", re.ASCII)


@dataclass(frozen=True)
class LessonOptions:
    """How the lesson is told."""

    decimals: int = 2  # digits after the point in tables; worked examples use at least 2
    show_weights: bool = False  # also print W_Q, W_K, W_V and W_O
    steps: str | None = None  # only these steps, as "4-6", "1,3-5" or "blockwise"; None: all
    block: int | None = None  # keys per block in the blockwise step; None: 3 or 4 blocks
    # Every head shown in full, each step's explanation said once, with the first (--head all).
    every_head: bool = False
    # All of the text (--full): every head shown in full and every explanation said with every
    # head, each at its full length. The page shows one head at a time, and a reader who opens
    # it on head 12 must meet them too.
    full: bool = False

    def __post_init__(self) -> None:
        if (
            isinstance(self.decimals, bool)
            or not isinstance(self.decimals, int)
            or not 0 <= self.decimals <= MAX_DECIMALS
        ):
            raise AttnvizError(
                f"{option('decimals', self.decimals)} is out of range; use 0 to {MAX_DECIMALS}."
            )
        if self.block is not None and (
            isinstance(self.block, bool) or not isinstance(self.block, int) or self.block < 1
        ):
            raise AttnvizError(
                f"{option('block', self.block)}: give the number of keys in a block, a whole "
                "number from 1 up, e.g. 4."
            )
        if self.steps is not None:
            parse_steps(self.steps)  # refuses a malformed list before any work is done
        blockwise = optional_numbers(table.STEPS).get("blockwise")
        if self.block is not None and blockwise not in (self.step_numbers or ()):
            add = spelled("--steps blockwise", 'steps="blockwise"')
            raise AttnvizError(
                f"{option('block', self.block)} is for the blockwise step, shown only when "
                f"named: add {add} (or e.g. {named_example()})."
            )

    @property
    def step_numbers(self) -> frozenset[int] | None:
        """The steps to show, or None for every step."""
        return None if self.steps is None else parse_steps(self.steps)


def heads_in_full(shown: tuple[int, ...], options: LessonOptions) -> tuple[int, ...]:
    """The heads the lesson shows in full, from 0: every head ``shown`` (the selection's) with
    --head all or --full, else the first (the one --head names)."""
    return shown if options.full or options.every_head else shown[:1]


def heads_by_rows(n_heads: int, shown: tuple[int, ...], options: LessonOptions) -> tuple[int, ...]:
    """The heads that give the focus word's rows, from 0: every head of the trace not shown in
    full, none with --full (which shows only the heads shown)."""
    if options.full:
        return ()
    in_full = heads_in_full(shown, options)
    return tuple(head for head in range(n_heads) if head not in in_full)


def parse_steps(spec: str, trace: Any = None) -> frozenset[int]:
    """ "1,3-5" -> {1, 3, 4, 5}: step numbers and ranges of them, and the keys of optional
    steps ("blockwise", as the lesson of ``trace`` numbers it), separated by commas.

    Raises AttnvizError for anything else, and for a step that the lesson of ``trace`` (without
    one: every lesson) does not have (the table in attnviz/lesson/steps.py); whether this lesson
    has a focus view is for the lesson to say.
    """
    steps = table.STEPS
    named = optional_numbers(steps, trace)
    # Without a trace (the options, read before any work) a number any lesson has passes; the
    # lesson checks it again against its own steps (a trace with rope has one more).
    plain = len(numbered(steps, trace)) if trace is not None else _most_plain(steps)
    numbers: set[int] = set()
    given = option("steps", metavar=quoted(spec))
    for part in spec.replace(" ", "").split(","):
        match = _STEPS_SPEC.fullmatch(part)
        if part.lower() in named:
            numbers.add(named[part.lower()])
            continue
        if match is None:
            if not spec.strip():
                raise AttnvizError(
                    f"{option('steps')} is empty; give step numbers, e.g. 4-6 or 1,3-5."
                )
            if not part:
                raise AttnvizError(f"{given} has an empty item; give e.g. 4-6 or 1,3-5.")
            if part.isalpha() and named:
                raise AttnvizError(
                    f"{given}: {clipped(part)!r} is neither a step number nor a range of them, "
                    f"nor a step shown only when named ({', '.join(named)}); give e.g. 4-6, 1,3-5 "
                    f"or {named_example(trace)}."
                )
            raise AttnvizError(
                f"{given}: {clipped(part)!r} is neither a step number nor a range of them; "
                "give e.g. 4-6 or 1,3-5."
            )
        for digits in match.groups(default=match.group(1)):
            # Compared as text first: int() of thousands of digits would itself fail.
            if len(digits) > 3 or not 1 <= int(digits) <= plain:
                raise AttnvizError(
                    f"{given}: there is no step {clipped(digits)}; {_which(steps, trace)}."
                )
        first, last = (int(digits) for digits in match.groups(default=match.group(1)))
        if first > last:
            raise AttnvizError(f"{given}: the range {part!r} runs backwards; write {last}-{first}.")
        numbers.update(range(first, last + 1))
    return frozenset(numbers)


def _which(steps: tuple[Step, ...], trace: Any = None) -> str:
    """ "the steps are 1 to 7, and 8 is the focus view"; before any trace, also the numbers of
    a lesson with a conditional step ("(with rotary positions 1 to 8, and 9 is the focus
    view)"), so that the message holds whichever lesson it refuses."""
    which = _range(steps, trace)
    if trace is None:
        # Lessons with one conditional step (rotary positions, a latent, a window): those whose
        # steps number alike are said together; then a lesson with two (a window and rotary
        # positions), whose numbers go furthest.
        conditional = _conditional(steps)
        ranges: dict[str, list[str]] = {}
        for step in conditional:
            ranges.setdefault(_range(steps, assume=(step.key,), said=False), []).append(
                condition(step)
            )
        which += "".join(f" (with {_either(c)} {r})" for r, c in ranges.items())
        if len(conditional) > 1:
            pair = (conditional[0].key, conditional[1].key)
            which += f" (with two of them {_range(steps, assume=pair, said=False)})"
    return which


def _either(names: list[str]) -> str:
    """ "a, b or c" """
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _conditional(steps: tuple[Step, ...]) -> list[Step]:
    return [step for step in steps if step.when is not None and not step.optional]


def _most_plain(steps: tuple[Step, ...]) -> int:
    """The most plain steps a lesson can have, before its trace says which it has: every
    lesson's, with one conditional step, or with two (a window and rotary positions, or a
    window and a latent; a latent's rotary positions are its own, taught in its step, and add
    no step of theirs)."""
    conditional = [step.key for step in _conditional(steps)]
    counts = [len(numbered(steps, assume=(key,))) for key in conditional]
    counts += [len(numbered(steps, assume=tuple(conditional[:2])))] if len(conditional) > 1 else []
    return max([len(numbered(steps)), *counts])


def _range(
    steps: tuple[Step, ...], trace: Any = None, *, assume: tuple[str, ...] = (), said: bool = True
) -> str:
    """ "the steps are 1 to 7, and 8 is the focus view" (``said=False``: "1 to 7, and 8 …")."""
    which = f"1 to {last_plain_number(steps, trace, assume=assume)}"
    focus = focus_number(steps, trace, assume=assume)
    which = which if focus is None else f"{which}, and {focus} is the focus view"
    return f"the steps are {which}" if said else which
