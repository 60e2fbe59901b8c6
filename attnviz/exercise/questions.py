"""The exercise data model: what a student is shown, the answer, and how an answer is judged.

Every surface (the terminal, the worksheet and its key, the page, the notebook) reads the same
frozen Question, so they agree. A Question is pure data: no I/O, no trace, no numpy arrays.

How an answer is judged (``Question.check``):

- right when it is within ``tolerance`` of ``answer`` (the answer is computed from the inputs
  exactly as shown, so a student who uses them gets it);
- otherwise a mistake is named only when the answer is within the tolerance of that mistake's
  number and no other reading fits better: the readings that fit are ranked by distance and
  every one within the tolerance of the best is named ("... or ...");
- otherwise the first checkpoint where a single slip (a dropped term, a flipped sign, stopping
  early) gives the student's number is named as where it *could* have gone wrong; when no single
  slip explains it, the checkpoints are listed to be checked in order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

KINDS: tuple[str, ...] = (
    "projection",
    "score",
    "scaled",
    "softmax",
    "z",
    "output",
    "rope",
    "cache",
    "blockwise",
    "weight",
)

#: A distance within the tolerance also counts when it exceeds it by float noise only (0.1 is
#: not exactly 0.1 in binary: |0.47 - 0.37| > 0.1 by 5.6e-17).
_SLACK = 1e-9


@dataclass(frozen=True)
class Given:
    """One input shown to the student, exactly as shown."""

    name: str  # "q for 'it' (head 1)", "scaled scores of 'it' (head 1)", "W_Q column 2"
    labels: tuple[str, ...]  # what each entry is: the words, or "1", "2", … for dimensions
    values: tuple[float, ...]  # the numbers AS SHOWN (already rounded to `decimals`)
    decimals: int


@dataclass(frozen=True)
class Mistake:
    """One common mistake and the number it gives from the shown inputs."""

    key: str  # "forgot_scale", "divided_by_d_k", "softmax_by_column", ...
    name: str  # "forgot to divide by √d_k" (a sentence fragment)
    value: float


@dataclass(frozen=True)
class Verdict:
    """What ``Question.check`` says about one answer."""

    right: bool
    mistake: str | None  # the diagnosed mistake's name; several joined with " or "
    mistakes: tuple[str, ...]  # every diagnosed mistake's key (0, 1 or more when several fit)
    explanation: str  # the worked solution (and the diagnosis) as plain text lines


@dataclass(frozen=True)
class Slip:
    """A single slip at one checkpoint and the final number it leads to (every other step
    done right): how ``check`` finds where a number could have gone wrong."""

    checkpoint: int  # index into Question.checkpoints
    what: str  # "left out term 3", "flipped the sign of term 2", "stopped here"
    value: float


@dataclass(frozen=True)
class Question:
    """One number asked of the student, with everything needed to judge an answer."""

    kind: str  # projection|score|scaled|softmax|z|output|rope|cache|blockwise|weight
    text: str  # the question as one sentence
    givens: tuple[Given, ...]
    answer: float  # computed from the SHOWN inputs
    decimals: int  # decimals the answer key prints
    tolerance: float  # follows from the shown inputs ("within 0.01")
    solution: tuple[str, ...]  # the worked solution, line by line, plain text, true numbers
    checkpoints: tuple[tuple[str, float], ...]  # intermediate results in order
    mistakes: tuple[Mistake, ...]
    where: tuple[str, int, int, int, int]  # (step key, layer, head, row, column) of the cell
    slips: tuple[Slip, ...] = ()  # single slips at checkpoints (see ``check``)

    def _repr_html_(self) -> str:
        """The question in a notebook: its sentence and its inputs as small tables (every text
        escaped; no script)."""
        parts = [f"<p><b>{escape(self.kind)}</b>: {escape(self.text)}</p>"]
        labels: tuple[str, ...] | None = None
        for given in self.givens:  # inputs labelled alike share a table, a row each
            if given.labels != labels:
                if labels is not None:
                    parts.append("</table>")
                labels = given.labels
                head = "".join(f"<th>{escape(label)}</th>" for label in labels)
                parts.append(f"<table><tr><th></th>{head}</tr>")
            cells = "".join(
                f"<td>{escape(format_number(value, given.decimals))}</td>" for value in given.values
            )
            parts.append(f"<tr><th>{escape(given.name)}</th>{cells}</tr>")
        if labels is not None:
            parts.append("</table>")
        said = escape(self.tolerance_text())
        parts.append(f"<p><i>.check(your answer) says whether it is right, {said}.</i></p>")
        return "\n".join(parts)

    def within(self, value: float, target: float) -> bool:
        """Whether value is target within this question's tolerance."""
        return abs(value - target) <= self.tolerance * (1 + _SLACK) + _SLACK

    def tolerance_text(self) -> str:
        """The tolerance as a student reads it: "within 0.01" (or "exact" for a count)."""
        if self.tolerance == 0:
            return "exact"
        return f"within {format_number(self.tolerance, self.decimals)}"

    def diagnosed(self, value: float) -> tuple[Mistake, ...]:
        """The mistakes a wrong answer is read as: those whose number is within the tolerance of
        the answer given, and within the tolerance of the best fitting one (so that no other
        reading fits better); a mistake whose number is the right answer is never one."""
        if not math.isfinite(value) or self.within(value, self.answer):
            return ()
        fitting = [
            mistake
            for mistake in self.mistakes
            if self.within(value, mistake.value) and not self.within(mistake.value, self.answer)
        ]
        if not fitting:
            return ()
        best = min(fitting, key=lambda mistake: abs(value - mistake.value))
        # Two readings are both named only when their numbers are the same within the
        # tolerance: then neither fits better than the other.
        return tuple(m for m in fitting if self.within(m.value, best.value))

    def slipped(self, value: float) -> Slip | None:
        """The first checkpoint's single slip that gives value, or None."""
        if not math.isfinite(value):
            return None
        found = [slip for slip in self.slips if self.within(value, slip.value)]
        return min(found, key=lambda slip: slip.checkpoint) if found else None

    def check(self, value: float) -> Verdict:
        """Judge one answer: right, a named mistake, or where it could have gone wrong."""
        shown = format_number(self.answer, self.decimals)
        if self.within(value, self.answer):
            lines = [f"Right: the answer is {shown} (yours is {self.tolerance_text()})."]
            return Verdict(True, None, (), "\n".join([*lines, *self.solution]))
        given = f"{value:g}"
        mistakes = self.diagnosed(value)
        lines = [f"Not quite: the answer is {shown} ({self.tolerance_text()}); yours is {given}."]
        if mistakes:
            name = " or ".join(m.name for m in mistakes)
            numbers = " and ".join(format_number(m.value, self.decimals + 2) for m in mistakes)
            lines.append(f"{given} is what you get if you {name}: {numbers}.")
            lines.extend(self.solution)
            keys = tuple(m.key for m in mistakes)
            return Verdict(False, name, keys, "\n".join(lines))
        lines.extend(self.solution)
        lines.extend(self._where_wrong(value))
        return Verdict(False, None, (), "\n".join(lines))

    def _where_wrong(self, value: float) -> list[str]:
        slip = self.slipped(value)
        if slip is not None:
            label, right = self.checkpoints[slip.checkpoint]
            return [
                f"Your number could have gone wrong at: {label} = "
                f"{format_number(right, self.decimals + 2)} (if you {slip.what}, the rest "
                "done right gives your number)."
            ]
        if not self.checkpoints:
            return ["No single slip gives your number: check each step above."]
        label, right = self.checkpoints[0]
        return [
            "No single slip we know of gives your number, so it could have gone wrong as early "
            f"as the first step: check {label} = {format_number(right, self.decimals + 2)}, "
            "then each step after it in order."
        ]


def format_number(value: float, decimals: int) -> str:
    """value at decimals, without a minus sign on a zero ("-0.00" reads as a mistake)."""
    if math.isinf(value):
        return "−∞" if value < 0 else "∞"
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text
