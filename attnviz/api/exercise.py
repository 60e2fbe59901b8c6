"""``attnviz exercise``: questions about one number of the lesson, from the student's own
sentence, checked and diagnosed (attnviz.exercise makes and judges them).

    >>> import attnviz
    >>> asked = attnviz.exercise("I am good", kind="scaled", seed=1)
    >>> asked.check(asked.answer).right
    True

The command line calls ``run``: at a terminal one question at a time, with ``--answers FILE``
a graded report, otherwise the questions printed for answering later. The same sentence,
options and seed give the same questions on every surface.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from attnviz import arguments as check
from attnviz.api.explain import explained
from attnviz.api.explanation import Explanation, told
from attnviz.api.surface import Surface
from attnviz.errors import AttnvizError, FileProblem, option
from attnviz.exercise.questions import KINDS, Question, Verdict
from attnviz.options import Options, options_from
from attnviz.serial import one_at_a_time

if TYPE_CHECKING:
    from rich.console import Console

#: The mix when no kind is named: every kind the trace can ask (rope with rotary positions,
#: the weight with a trained model, whose other kinds would be long sums of d_k terms).
RANDOM_MIX = tuple(kind for kind in KINDS if kind != "weight")
MODEL_MIX = ("weight", "scaled", "softmax")

#: The options of attnviz.explain that ``exercise`` takes too (the others change no question
#: or make numbers no student computes by hand: a paper-sized layer, a file's vectors).
EXPLAIN_OPTIONS = (
    "model",
    "layer",
    "heads",
    "d_model",
    "causal",
    "positions",
    "kv_heads",
    "window",
)

#: Questions in one set, at most: a class's homework, not a stress test.
MOST_QUESTIONS = 100

#: An answer as typed: 0.5, -1.2e-1, .5, 3 and a decimal comma (0,5).
_NUMBER = re.compile(r"^[+-]?(\d+([.,]\d*)?|[.,]\d+)([eE][+-]?\d+)?$")

#: What an answers file holds for a question left out.
SKIPPED = ("", "-")


def read_number(text: str) -> float | None:
    """The number a student typed, or None when it is none (a decimal comma is a point)."""
    typed = text.strip().replace("−", "-")
    if not _NUMBER.match(typed):
        return None
    value = float(typed.replace(",", "."))
    return value if math.isfinite(value) else None


def chosen_kinds(kind: str | Sequence[str] | None, explanation: Explanation) -> tuple[str, ...]:
    """The kinds asked: named (a list, or text with commas) or the trace's mix; each one the
    trace can ask, else the one sentence naming the option it needs."""
    from attnviz.exercise.sets import suits

    trace = explanation.trace
    if kind is None or kind == () or kind == []:
        mix = MODEL_MIX if trace.provenance.weights.model else RANDOM_MIX
        return tuple(k for k in mix if suits(trace, k) is None)
    named = kind.split(",") if isinstance(kind, str) else list(kind)
    kinds = [str(k).strip() for k in named if str(k).strip()]
    for name in kinds:
        if name not in KINDS:
            raise AttnvizError(
                f"{option('kind', name)} is no kind of question; give one of {', '.join(KINDS)}."
            )
        why = suits(trace, name)
        if why is not None:
            need = why[why.index("(") + 1 : -1].split(" ", 1)
            raise AttnvizError(
                f"{option('kind', name)} {why.split(' (')[0]}: add {option(need[0], need[1])}."
            )
    if not kinds:
        raise AttnvizError(f"{option('kind')} is empty; give one of {', '.join(KINDS)}.")
    return tuple(dict.fromkeys(kinds))


def questions(
    sentence: str, options: Options, kind: str | Sequence[str] | None, count: int, seed: int
) -> tuple[Question, ...]:
    """The set: the trace explain makes for these options, ``count`` questions drawn with
    ``seed`` (the exercise's, apart from the weights' own seed)."""
    from attnviz.exercise.sets import exercise_set

    if not 1 <= count <= MOST_QUESTIONS:
        raise AttnvizError(
            f"{option('count', count)}: give between 1 and {MOST_QUESTIONS} questions."
        )
    explanation = explained(sentence, options)
    kinds = chosen_kinds(kind, explanation)
    return exercise_set((explanation.trace,), kinds, count, seed, layers=shown_layer(explanation))


def shown_layer(explanation: Explanation) -> tuple[int]:
    """The number (from 0) of the layer the explanation shows, among its layers."""
    return (next(i for i, layer in enumerate(explanation.layers) if layer is explanation.trace),)


@one_at_a_time
def exercise(sentence: str, *, kind: str | None = None, seed: int = 0, **options: Any) -> Question:
    """One question about one number of ``sentence``'s lesson, as ``attnviz exercise`` asks it:
    ``kind`` one of projection, score, scaled, softmax, z, output, rope (with
    ``positions="rope"``), cache, blockwise, weight (with ``model="coref"``), or None for one
    drawn from the mix; ``seed`` draws the layer's random weights (as explain's ``seed``) and
    the cell asked. ``options`` are explain's that make sense for questions: model, layer,
    heads, d_model, causal, positions, kv_heads and window. ``.text``, ``.givens``,
    ``.answer``, ``.tolerance``; ``.check(value)`` returns a Verdict with ``.right``,
    ``.mistake`` (the diagnosed mistake's name, or None) and ``.explanation`` (the worked
    solution). In a notebook the question shows itself.
    """
    check.sentences(sentence=sentence, model=options.get("model"))
    check.given(seed=seed)
    if kind is not None:
        check.text(kind=kind)
    unknown = sorted(set(options) - set(EXPLAIN_OPTIONS))
    if unknown:
        raise AttnvizError(
            f"exercise() takes no option {unknown[0]}=; it takes {', '.join(EXPLAIN_OPTIONS)}."
        )
    explanation = told(explained(sentence, options_from(seed=seed, **options)))
    from attnviz.exercise.sets import exercise_set

    kinds = chosen_kinds(kind, explanation)
    return exercise_set((explanation.trace,), kinds, 1, seed, layers=shown_layer(explanation))[0]


# -- the command ------------------------------------------------------------------------------


def read_answers(path: Path) -> list[str]:
    """The lines of an answers file (UTF-8 text), or the sentence saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise FileProblem(f"No answers file {path}: give a file with one answer a line.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FileProblem(
            f"Cannot read the answers file {path} ({error.__class__.__name__}); give a UTF-8 "
            "text file with one answer a line."
        ) from None


class SetOptions(NamedTuple):
    """What set ``attnviz exercise`` asks: the kinds (empty: the mix), how many (--count),
    the seed."""

    kinds: Sequence[str]
    size: int
    seed: int


def run(
    sentence: str,
    options: Options,
    surface: Surface,
    asked: SetOptions,
    *,
    answers: Path | None,
    interactive: bool,
    ask: Callable[[str], str] = input,
) -> int:
    """``attnviz exercise``: returns the exit code (0, or 1 when a graded answer is wrong;
    130 when Ctrl-C ended the questions)."""
    lines = read_answers(answers) if answers is not None else None
    made = questions(sentence, options, list(asked.kinds) or None, asked.size, asked.seed)
    console = surface.console()
    if lines is not None:
        return grade(made, lines, console)
    if not interactive:
        printed(made, console)
        return 0
    return one_at_a_time_asked(made, console, ask)


def printed(asked: Sequence[Question], console: Console) -> None:
    """Every question with its inputs, for answering on paper; how to check them at the end."""
    from rich.text import Text

    from attnviz.render.terminal.exercise import question_renderables
    from attnviz.render.terminal.reports import paragraphs

    for position, question in enumerate(asked, 1):
        for line in question_renderables(question, position, len(asked), console):
            console.print(line)
        console.print(Text(f"Answer {position}: ________"))
        console.print()
    how = Text(
        "To check: write one answer a line into a file (blank or - to skip one) and run the "
        "same command with --answers FILE."
    )
    for line in paragraphs(console, how):
        console.print(line)


def grade(asked: Sequence[Question], lines: Sequence[str], console: Console) -> int:
    """The report of an answers file: each question right, wrong (and why) or skipped; the
    score; 0 when every answer is right, else 1."""
    from rich.text import Text

    from attnviz.render.terminal.exercise import score_text

    right = answered = 0
    for position, question in enumerate(asked, 1):
        typed = lines[position - 1].strip() if position <= len(lines) else ""
        value = read_number(typed)
        said = f"{position}. ({question.kind}) "
        if typed in SKIPPED:
            console.print(
                Text(said + f"skipped; the answer is {_answer(question)}."), soft_wrap=True
            )
            continue
        answered += 1
        if value is None:
            wrong = f"wrong: {typed!r} is not a number; the answer is {_answer(question)}."
            console.print(Text(said + wrong), soft_wrap=True)
            continue
        verdict = question.check(value)
        right += verdict.right
        console.print(Text(said + _graded(verdict, typed, question)), soft_wrap=True)
    console.print(score_text(right, answered, len(asked)))
    return 0 if right == len(asked) else 1


def _answer(question: Question) -> str:
    from attnviz.exercise.questions import format_number

    return format_number(question.answer, question.decimals)


def _graded(verdict: Verdict, typed: str, question: Question) -> str:
    """One report line: right, or wrong with the mistake (or none found)."""
    if verdict.right:
        return f"right: {typed}."
    said = f"wrong: {typed}; the answer is {_answer(question)} ({question.tolerance_text()})"
    if verdict.mistake is not None:
        return f"{said}; you {verdict.mistake}."
    where = verdict.explanation.splitlines()[-1]
    return f"{said}; no common mistake gives {typed}. {where}"


def one_at_a_time_asked(
    asked: Sequence[Question], console: Console, ask: Callable[[str], str]
) -> int:
    """At a terminal: each question, a number read (asked again until it is one), the verdict
    and the solution; the score at the end, or when Ctrl-C (130) or the end of input stops."""
    from attnviz.render.terminal.exercise import (
        question_renderables,
        score_text,
        verdict_renderables,
    )

    right = answered = 0
    status = 0
    try:
        for position, question in enumerate(asked, 1):
            for line in question_renderables(question, position, len(asked), console):
                console.print(line)
            value = _read(console, ask)
            if value is None:
                console.print("Skipped.")
            else:
                answered += 1
                verdict = question.check(value)
                right += verdict.right
                for line in verdict_renderables(verdict, console):
                    console.print(line)
            console.print()
    except KeyboardInterrupt:
        console.print()
        status = 130
    except EOFError:
        console.print()
    console.print(score_text(right, answered, len(asked)))
    return status


def _read(console: Console, ask: Callable[[str], str]) -> float | None:
    """A number typed at the prompt, asked again until it is one; None for "-" (skip)."""
    while True:
        typed = ask("Your answer (- to skip): ").strip()
        if typed == "-":
            return None
        value = read_number(typed)
        if value is not None:
            return value
        console.print("Not a number: type one like 0.5, -1.2e-1 or 0,5 (or - to skip).")
