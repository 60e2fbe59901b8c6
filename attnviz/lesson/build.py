"""The lesson as blocks: its header, then each step of the table (attnviz/lesson/steps.py),
written by the step's own module, once or once per head shown.

    lesson(trace, selection, options, layers=(), analyses=None) -> list[Block]

``layers``: every layer of the run (``Explanation.layers``), for what follows the layers below
the one shown (the focus view's rollout); a lesson without them leaves that out. ``analyses``:
what the focus view shows of the contributions, head types and rollout, computed once by the
API (attnviz.analysis.analyses.for_lesson) and only looked up here; a lesson that follows a
word needs them.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterator, Sequence
from types import ModuleType

from attnviz.errors import AttnvizError, option, quoted
from attnviz.lesson import head_rows
from attnviz.lesson import header as opening
from attnviz.lesson import steps as table
from attnviz.lesson.blocks import Blank, Block, Heading, Pause, SectionEnd
from attnviz.lesson.caveats import mixtures
from attnviz.lesson.options import LessonOptions, parse_steps
from attnviz.lesson.steps import Step, focus_number, in_order, last_plain_number
from attnviz.lesson.writer import HeadView, LessonWriter
from attnviz.results import Analyses
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace


def lesson(
    trace: AttentionTrace,
    selection: Selection,
    options: LessonOptions | None = None,
    *,
    layers: Sequence[AttentionTrace] = (),
    analyses: Analyses | None = None,
) -> list[Block]:
    """The whole lesson for ``trace`` as the ``selection`` shows it: every step of the table, or
    with ``options.steps`` only those (and the header). ``layers``: every layer of the run,
    ``trace`` among them, or (); ``analyses``: what the analyses found of them (see the module's
    docstring)."""
    options = options or LessonOptions()
    steps = table.STEPS  # read at each call: the table is the one definition of the steps
    # Numbered for this trace: a step only some lessons have (rotary positions) counts here.
    wanted = None if options.steps is None else parse_steps(options.steps, trace)
    focus = focus_number(steps, trace)
    if wanted is not None and focus in wanted and selection.focus is None:
        given = option("steps", metavar=quoted(options.steps or ""))
        raise AttnvizError(
            f"{given}: step {focus} is the focus view, and this lesson follows no word; name "
            f"one with {option('focus', metavar='WORD')}, or show steps "
            f"1-{last_plain_number(steps, trace)}."
        )
    writer = LessonWriter(trace, selection, options, layers, analyses)
    _open(writer)
    for run in _runs(steps, trace, wanted):
        _write_run(writer, run)
    return writer.blocks if wanted is None else only_steps(writer.blocks, wanted)


def header(
    trace: AttentionTrace, selection: Selection, options: LessonOptions | None = None
) -> list[Block]:
    """The lesson's opening alone: its title, the formula, the sentence, the sizes, where X and
    the weights come from, and its notes (hidden tokens, merged pieces, lowercasing)."""
    writer = LessonWriter(trace, selection, options or LessonOptions())
    _open(writer)
    return writer.blocks


def _open(writer: LessonWriter) -> None:
    """The header, and from a model's layer 2 on, what its rows are: the first thing said
    before any row is shown."""
    opening.write(writer)
    if (writer.trace.provenance.embeddings.layer or 1) > 1 and not writer.trace.is_cross:
        writer.say(mixtures(causal=writer.trace.provenance.masking.causal, brief=writer.brief))


Numbered = tuple[int, str, Step]  # a step with its number and its heading's label (in_order)


def _runs(
    steps: tuple[Step, ...], trace: AttentionTrace, wanted: Collection[int] | None
) -> Iterator[list[Numbered]]:
    """The numbered steps of the lesson of ``trace`` in runs: consecutive steps in each head
    together, every other step alone. An optional step is in it only when --steps names it
    (``wanted``), wherever it stands in a run, so that it is written in no other lesson."""
    run: list[Numbered] = []
    for numbered_step in in_order(steps, trace):
        number, _, step = numbered_step
        if step.optional and (wanted is None or number not in wanted):
            continue
        if run and not (step.per_head and run[-1][2].per_head):
            yield run
            run = []
        run.append(numbered_step)
    if run:
        yield run


def _write_run(writer: LessonWriter, run: list[Numbered]) -> None:
    """A run of steps: a head's steps once per head shown, each head a section; another step
    once (the focus view only when a word is followed). Each ends a part of the lesson."""
    if run[0][2].per_head:
        for index in writer.lesson_heads:
            head = writer.head_view(index)
            if not head.in_full:
                _write_rows(writer, run, head)
                continue
            section = f"Head {index + 1} of {writer.trace.n_heads}"
            for position, numbered_step in enumerate(run):
                _write_step(writer, numbered_step, head, section if position == 0 else None)
            writer.blocks.append(SectionEnd())
        return
    ((number, label, step),) = run
    if step.focus and writer.selection.focus is None:
        return
    _write_step(writer, (number, label, step), None, step.section)
    writer.blocks.append(SectionEnd())


def _write_rows(writer: LessonWriter, run: list[Numbered], head: HeadView) -> None:
    """A head not shown in full: one pause, its heading, and the focus word's rows of the
    run's steps that are shown (attnviz/lesson/head_rows.py)."""
    shown = [
        (number, step)
        for number, _, step in run
        if writer.shown_steps is None or number in writer.shown_steps
    ]
    if not shown:
        return
    title = head_rows.heading(writer, head)
    writer.blocks += [Pause(title, shown[0][0], "rows", head.index), Blank()]
    writer.heading(title, "section")
    head_rows.write(writer, head, {step.key for _, step in shown})
    writer.blocks.append(SectionEnd())


def _write_step(
    writer: LessonWriter, numbered_step: Numbered, head: HeadView | None, section: str | None
) -> None:
    number, label, step = numbered_step
    module = _module(step)
    title = module.title(writer, head) if hasattr(module, "title") else step.title
    writer.open_step(number, step, title, head, section, label=label)
    module.write(writer, head)


def _module(step: Step) -> ModuleType:
    """The module that writes ``step``; AttnvizError for a table naming none (a bug)."""
    try:
        return importlib.import_module(step.writer)
    except ModuleNotFoundError:
        raise AttnvizError(f"the lesson's step {step.key!r} has no module {step.writer}") from None


def only_steps(blocks: Sequence[Block], steps: Collection[int]) -> list[Block]:
    """``blocks`` with only the given steps, each from its Pause to the next, and the header
    before the first. A section's heading (a head, all heads, the focus) is kept before the
    first of its steps that is; SectionEnds are all kept, so a renderer still prints a section
    at a time."""
    kept: list[Block] = []
    heading: list[Block] = []  # the current section's heading, with the blank line before it
    heading_shown = False
    for pause, part in _steps_of(blocks):
        if pause is None:  # the header
            kept += part
            continue
        if _opens_section(part):
            heading, part, heading_shown = part[:2], part[2:], False
        if pause.step in steps:
            kept += [pause, *([] if heading_shown else heading), *part]
            heading_shown = True
        else:
            kept += [block for block in part if isinstance(block, SectionEnd)]
    return kept


def _steps_of(blocks: Sequence[Block]) -> list[tuple[Pause | None, list[Block]]]:
    """The lesson cut at its Pauses: the header (no Pause), then each step's Pause and blocks."""
    steps: list[tuple[Pause | None, list[Block]]] = [(None, [])]
    for block in blocks:
        if isinstance(block, Pause):
            steps.append((block, []))
        else:
            steps[-1][1].append(block)
    return steps


def _opens_section(part: Sequence[Block]) -> bool:
    """Whether a step's blocks begin with a section's heading (a blank line, then the rule)."""
    return (
        len(part) >= 2
        and isinstance(part[0], Blank)
        and isinstance(part[1], Heading)
        and part[1].level == "section"
    )
