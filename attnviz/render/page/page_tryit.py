"""The page's "Try it" mode, as data: in each step of the layer the page opens on, one cell per
head is hidden and asked as a question (attnviz.exercise's ``question``, the terminal's), with
everything the page needs to judge a typed number as ``Question.check`` does and to say what
it says.

    tryit_data(layers, start, selection, seed) -> dict

The cells are drawn by a generator seeded with ``seed`` and the head (``cells``), so a page
asks the same cells each time it is written. The page's script (tryit.js) only compares
numbers: right within the tolerance; else the mistakes whose numbers are within the tolerance
of the answer given and of the best fitting one; else the first checkpoint whose single slip
gives it. Every sentence it shows is taken here from the question's own verdicts (``check``'s
explanation for a right and for a wrong answer, its mistake and slip lines), with slots
({given}, {name}, {numbers}, …) where the student's number and the readings go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from attnviz.errors import AttnvizError
from attnviz.exercise.questions import Mistake, Question, Slip, format_number
from attnviz.labels import format_number as shown_number
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

#: The longest sentence the mode asks about: a softmax question shows its head's n × n scaled
#: scores, so a page of 64 words and 12 heads carries 49,152 of them.
MAX_WORDS = 64
#: The most numbers one question may carry (its givens, slips and checkpoints): a projection
#: in a model of d_model 384 shows x and every column of its head's W, 12,672 numbers, and
#: is left to attnviz exercise.
MAX_NUMBERS = 3_000
#: The lesson's steps the mode asks in, by their keys, with the kind of question each asks.
ASKED = (
    ("qkv", "projection"),
    ("scores", "score"),
    ("scaled", "scaled"),
    ("weights", "softmax"),
    ("z", "z"),
    ("output", "output"),
)
#: The decimals at which the page may print a number (its tables, picture, row table and worked
#: examples print at 2 to 4): while a question is unanswered, every number printed as its answer
#: or as its cell's own value at one of these is hidden (tryit.js: hideAnswers).
HIDDEN_DECIMALS = range(2, 7)
#: A number far from every answer: its verdict's lines give the sentences' shapes.
FAR = 1e6

#: What the mode says around the questions. The script fills each {name}.
TRYIT_TEXT = {
    "tryIt": "Try it",
    "intro": "Each step below hides one number of the chosen head: work it out from the "
    "numbers shown, type it and press Enter or Check. The page checks it as attnviz exercise "
    "does, with the same tolerance, and names the mistake when your number is what a common "
    "mistake gives.",
    "check": "Check",
    "yourAnswer": "Your answer",
    "notANumber": "Type a number, such as 0.5 or -1.2.",
    "otherLayer": "Try it asks about {layer}, the layer the page opened on: choose it in the "
    "Layer menu.",
    "chooseHead": "Choose a head to try its steps.",
    "leftOut": "This step's question would show {count} numbers, too many for this page: "
    "attnviz exercise --kind {kind} asks it.",
    "or": " or ",
    "and": " and ",
}


def tryit_data(
    layers: Sequence[AttentionTrace], start: int, selection: Selection, seed: int = 0
) -> dict[str, Any]:
    """The mode's data for the page of ``layers`` opening on layer ``start``: its sentences and,
    when the sentence is short enough, one question per asked step and shown head (the output
    step's once), each as the page judges it; else ``reason``."""
    trace = layers[start]
    text = dict(TRYIT_TEXT)
    if trace.n_tokens > MAX_WORDS:
        reason = (
            f"Try it asks about sentences of up to {MAX_WORDS} word pieces; this one has "
            f"{trace.n_tokens}: attnviz exercise asks about any."
        )
        return {"available": False, "reason": reason, "text": text}
    questions, left_out = [], []
    for index, head in enumerate(selection.heads):
        for step, kind, cell in cells(trace, head, seed):
            if step == "output" and index > 0:
                continue  # one output question, the same in every head
            try:
                from attnviz.exercise.sets import question

                asked = question(trace, kind, layer=start, **cell)
            except (AttnvizError, ValueError):
                continue  # a kind this layer cannot be asked (the builder says why)
            place = {"step": step, "head": None if step == "output" else index}
            count = numbers_in(asked)
            if count > MAX_NUMBERS:
                left_out.append({**place, "count": f"{count:,}", "kind": kind})
            else:
                hides = hidden_texts(asked.answer, cell_value(trace, step, cell))
                questions.append({**place, **question_data(asked), "hides": hides})
    return {
        "available": True,
        "text": text,
        "layer": start,
        "questions": questions,
        "leftOut": left_out,
    }


def numbers_in(asked: Question) -> int:
    """How many numbers a question carries: its givens', its slips' and its checkpoints'."""
    shown = sum(len(given.values) for given in asked.givens)
    return shown + len(asked.slips) + len(asked.checkpoints)


def cells(trace: AttentionTrace, head: int, seed: int) -> list[tuple[str, str, dict[str, Any]]]:
    """The cell each asked step hides in ``head``, drawn by a generator seeded with ``seed``
    and the head: a word that is no special token and reads two keys or more, and a key it may
    read (another word for a score, whose transposed reading would otherwise be the answer)."""
    rng = np.random.default_rng([seed, head])
    special = set(trace.provenance.special)
    words = [p for p in range(trace.n_tokens) if p not in special] or list(range(trace.n_tokens))
    # A row that reads one key alone (the first word under a causal mask) has weight 1 there.
    rows = [p for p in words if (~trace.masked[p]).sum() > 1] or words
    found = []
    for step, kind in ASKED:
        row = int(rng.choice(rows))
        allowed = np.flatnonzero(~trace.masked[row])
        others = allowed[allowed != row]
        key = int(rng.choice(others if kind == "score" and others.size else allowed))
        cell: dict[str, Any] = {"head": head, "row": row, "column": key}
        if kind == "projection":
            cell.update(
                column=int(rng.integers(trace.d_k)), matrix=str(rng.choice(["Q", "K", "V"]))
            )
        elif kind == "z":
            cell["column"] = int(rng.integers(trace.d_k))
        elif kind == "output":
            cell.update(head=0, column=int(rng.integers(trace.d_model)))
        found.append((step, kind, cell))
    return found


def cell_value(trace: AttentionTrace, step: str, cell: dict[str, Any]) -> float:
    """The trace's own value of the cell a question asks (its answer is worked from the numbers
    as shown, so it may round differently): of Q, K or V; scores; scaled; weights; Z; output."""
    head, row, column = cell["head"], cell["row"], cell["column"]
    if step == "output":
        return float(trace.output[row, column])
    if step == "qkv":
        matrix = cell["matrix"]
        group = head if matrix == "Q" else trace.kv_head(head)
        return float(getattr(trace, matrix)[group, row, column])
    table = {"scores": trace.scores, "scaled": trace.scaled, "weights": trace.weights}
    return float(table[step][head, row, column] if step in table else trace.Z[head, row, column])


def hidden_texts(*values: float) -> list[str]:
    """Every text the page may print ``values`` as (HIDDEN_DECIMALS), "-" or "−" for a minus."""
    texts = {shown_number(value, decimals) for value in values for decimals in HIDDEN_DECIMALS}
    texts |= {text.replace("-", "−") for text in texts}
    return sorted(texts)


def question_data(asked: Question) -> dict[str, Any]:
    """One question as the page judges and tells it: its text, givens (as shown), answer,
    tolerance, mistakes, slips and solution, and its verdicts' sentences (``sentences``)."""
    return {
        "kind": asked.kind,
        "text": asked.text,
        "where": list(asked.where),
        "givens": [
            {
                "name": given.name,
                "labels": list(given.labels),
                "values": [shown_number(float(value), given.decimals) for value in given.values],
            }
            for given in asked.givens
        ],
        "answer": float(asked.answer),
        "tolerance": float(asked.tolerance),
        "decimals": asked.decimals,
        "mistakes": [
            {
                "key": mistake.key,
                "name": mistake.name,
                "value": float(mistake.value),
                "valueText": format_number(float(mistake.value), asked.decimals + 2),
            }
            for mistake in asked.mistakes
            if np.isfinite(mistake.value)
        ],
        "slips": [
            {"checkpoint": slip.checkpoint, "value": float(slip.value), "what": slip.what}
            for slip in asked.slips
            if np.isfinite(slip.value)
        ],
        "checkpoints": [
            {"label": label, "right": format_number(float(value), asked.decimals + 2)}
            for label, value in asked.checkpoints
        ],
        "solution": list(asked.solution),
        **sentences(asked),
    }


def sentences(asked: Question) -> dict[str, Any]:
    """The lines ``asked.check`` says, with slots for what the page fills in: ``right`` (the
    first line of a right answer's verdict), ``wrong`` ({given}: the student's number, as
    ``f"{value:g}"`` writes it), ``mistake`` ({given}; {name}: the mistakes' names; {numbers}: their
    numbers), ``slip`` ({label} and {right}: a checkpoint's, {what}: the slip's) and
    ``noSlip``. Each is found in a verdict on a number far from every answer, of the question
    with markers for its mistake, checkpoint and slip."""
    far = asked.answer + FAR
    given = f"{far:g}"  # a student's number as check() writes it (tryit.js: generalNumber)
    numbers = format_number(far, asked.decimals + 2)  # a mistake's number as check() writes it
    alone = replace(asked, mistakes=(), slips=())
    wrong = alone.check(far).explanation.split("\n")
    named = replace(asked, mistakes=(Mistake("key", "\x00", far),), slips=())
    mistake = named.check(far).explanation.split("\n")[1].replace("\x00", "{name}")
    slipped = replace(
        asked, mistakes=(), checkpoints=(("\x01", far),), slips=(Slip(0, "\x00", far),)
    )
    slip = slipped.check(far).explanation.split("\n")[-1]
    return {
        "right": asked.check(asked.answer).explanation.split("\n")[0],
        "wrong": _slot(wrong[0], given, "{given}", last=True),
        "mistake": _slot(
            _slot(mistake, numbers, "{numbers}", last=True), given, "{given}", last=False
        ),
        "slip": _slot(slip, numbers, "{right}", last=True)
        .replace("\x01", "{label}")
        .replace("\x00", "{what}"),
        "noSlip": wrong[-1],
    }


def _slot(line: str, text: str, slot: str, *, last: bool) -> str:
    """``line`` with the last (or first) ``text`` in it replaced by ``slot``."""
    at = line.rfind(text) if last else line.find(text)
    if at < 0:
        raise ValueError(f"{text!r} is not in {line!r}")
    return line[:at] + slot + line[at + len(text) :]
