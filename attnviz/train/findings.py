"""What a trained toy model learned, measured on this run's numbers: where each probe's focus
word looks in every layer, how each head scores on the pattern its task calls for, and, for
coref, which path carries the adjective (held-out accuracy with a layer's output zeroed at
chosen positions) and, when the last layer's row of "it" looks elsewhere, the relay it reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.train import network
from attnviz.train.tasks import (
    ANIMAL_ADJECTIVES,
    ANIMALS,
    PLACE_ADJECTIVES,
    PLACES,
    Examples,
    Probe,
    Readout,
    Task,
)


@dataclass(frozen=True)
class Look:
    """Where one probe's focus word looks in one layer and head."""

    layer: int  # from 1
    head: int  # from 1
    position: int  # the word it gives most weight
    weight: float  # that weight
    answer_weight: float  # the weight on the answer


@dataclass(frozen=True)
class Relay:
    """When the last layer's focus row lands on another word: where that word looked in layer
    1, the layer whose output the last layer reads there."""

    position: int  # the word the last layer's focus row gives most weight
    look: Look  # that word's own row in layer 1, head 1


@dataclass(frozen=True)
class ProbeFinding:
    probe: Probe
    looks: tuple[Look, ...]  # every layer and head, layer 1 first
    answer: str  # what the model answers for the focus word (a word of the sentence or a class)
    correct: bool
    relay: Relay | None  # when the last layer's focus row does not land on the answer


@dataclass(frozen=True)
class Reading:
    """How much some words give another kind of word in a layer, on average over held-out."""

    layer: int
    readers: str  # 'the two nouns', '"it"'
    read: str  # 'the adjective'
    weight: float


@dataclass(frozen=True)
class Ablation:
    """Held-out accuracy with layer ``layer``'s attention output zeroed at ``where``."""

    layer: int
    where: str  # in words: 'at "it"', "at the two nouns"
    accuracy: float


@dataclass(frozen=True)
class Pattern:
    """How much a head does what the task calls for, as a mean weight over held-out rows."""

    layer: int
    head: int
    name: str  # "previous-token", "mirror", "induction"
    formula: str  # what is averaged
    score: float


@dataclass(frozen=True)
class Findings:
    accuracy: float  # held-out: the share of answers right (a token task: one per position)
    # A token task's held-out sequences with every answer right, and how many there are.
    sequences_right: tuple[int, int] | None
    probes: tuple[ProbeFinding, ...]
    ablations: tuple[Ablation, ...]  # coref only
    readings: tuple[Reading, ...]  # coref only
    patterns: tuple[Pattern, ...]  # token tasks only


def findings(task: Task, shape: network.Shape, parameters: Mapping[str, FloatArray]) -> Findings:
    held = task.held_out
    return Findings(
        accuracy=network.accuracy(parameters, shape, held),
        sequences_right=_sequences_right(shape, parameters, held)
        if task.readout is Readout.TOKEN
        else None,
        probes=tuple(_probe(task, shape, parameters, probe) for probe in task.probes),
        ablations=_ablations(task, shape, parameters) if task.name.startswith("coref") else (),
        readings=_readings(task, shape, parameters) if task.name.startswith("coref") else (),
        patterns=_patterns(task, shape, parameters) if task.readout is Readout.TOKEN else (),
    )


def _sequences_right(
    shape: network.Shape, parameters: Mapping[str, FloatArray], held: Examples
) -> tuple[int, int]:
    """How many held-out sequences have every answer right, of how many."""
    guesses = network.forward(parameters, shape, held.ids, held.query).logits.argmax(axis=-1)
    answered = held.targets >= 0
    whole = ((guesses == held.targets) | ~answered).all(axis=1)
    return int(whole.sum()), len(held.ids)


def _probe(
    task: Task, shape: network.Shape, parameters: Mapping[str, FloatArray], probe: Probe
) -> ProbeFinding:
    ids = np.array([[task.vocabulary.index(word) for word in probe.words]])
    run = network.forward(parameters, shape, ids, np.array([probe.focus]))
    looks = []
    for layer, layer_pass in enumerate(run.layers, start=1):
        for head in range(shape.n_heads):
            row = layer_pass.weights[0, head, probe.focus]
            top = int(row.argmax())
            looks.append(Look(layer, head + 1, top, float(row[top]), float(row[probe.answer])))
    guess = int(run.logits[0].argmax(axis=-1)) if run.logits.ndim == 2 else -1
    if task.readout is Readout.POINTER:
        answer, correct = probe.words[guess], guess == probe.answer
    elif task.readout is Readout.WORD:
        answer = task.classes[guess]
        correct = answer == probe.words[probe.answer]
    else:
        token = int(run.logits[0, probe.focus].argmax())
        answer = task.vocabulary[token]
        correct = answer == probe.words[probe.answer]
    relay = None
    last = run.layers[-1].weights[0, 0, probe.focus]
    # A pointer's last row IS its answer: landing elsewhere is a wrong answer, not a relay.
    pointer = task.readout is Readout.POINTER
    if shape.n_layers > 1 and not pointer and int(last.argmax()) != probe.answer:
        position = int(last.argmax())
        row = run.layers[0].weights[0, 0, position]
        top = int(row.argmax())
        relay = Relay(position, Look(1, 1, top, float(row[top]), float(row[probe.answer])))
    return ProbeFinding(probe, tuple(looks), answer, correct, relay)


def _ablations(
    task: Task, shape: network.Shape, parameters: Mapping[str, FloatArray]
) -> tuple[Ablation, ...]:
    """Layer 1's output zeroed at "it", then at the two nouns: the accuracy that is left says
    which of the two carries what the last layer needs (the adjective) to the right place."""
    held = task.held_out
    nouns = {task.vocabulary.index(word) for word in (*ANIMALS, *PLACES)}
    at_it = np.zeros(held.ids.shape, dtype=bool)
    at_it[np.arange(len(held.ids)), held.query] = True
    at_nouns = np.isin(held.ids, list(nouns))
    return tuple(
        Ablation(1, where, _accuracy(shape, parameters, held, {1: positions}))
        for where, positions in (('at "it"', at_it), ("at the two nouns", at_nouns))
    )


def _readings(
    task: Task, shape: network.Shape, parameters: Mapping[str, FloatArray]
) -> tuple[Reading, ...]:
    """Layer 1's mean weight on the adjective, from the two nouns and from "it"."""
    held = task.held_out
    run = network.forward(parameters, shape, held.ids, held.query)
    weights = run.layers[0].weights[:, 0]  # [N, n, n]
    rows = np.arange(len(held.ids))
    adjectives = {task.vocabulary.index(w) for w in (*ANIMAL_ADJECTIVES, *PLACE_ADJECTIVES)}
    nouns = {task.vocabulary.index(word) for word in (*ANIMALS, *PLACES)}
    adjective = np.isin(held.ids, list(adjectives)).argmax(axis=1)  # [N] its position
    noun_rows = [np.nonzero(np.isin(sentence, list(nouns)))[0] for sentence in held.ids]
    from_nouns = np.mean([weights[r, q, adjective[r]] for r in rows for q in noun_rows[r]])
    from_it = weights[rows, held.query, adjective].mean()
    return (
        Reading(1, "the two nouns", "the adjective", float(from_nouns)),
        Reading(1, '"it"', "the adjective", float(from_it)),
    )


def _accuracy(
    shape: network.Shape,
    parameters: Mapping[str, FloatArray],
    examples: Examples,
    ablate: Mapping[int, np.ndarray],
) -> float:
    logits = network.forward(parameters, shape, examples.ids, examples.query, ablate=ablate).logits
    return float((logits.argmax(axis=-1) == examples.targets).mean())


def _patterns(
    task: Task, shape: network.Shape, parameters: Mapping[str, FloatArray]
) -> tuple[Pattern, ...]:
    held = task.held_out
    run = network.forward(parameters, shape, held.ids, held.query)
    n = held.ids.shape[1]
    found = []
    for layer, layer_pass in enumerate(run.layers, start=1):
        for head in range(shape.n_heads):
            weights = layer_pass.weights[:, head]  # [N, n, n]
            for name, formula, score in _scores(task.name, weights, held.ids, n, layer):
                found.append(Pattern(layer, head + 1, name, formula, score))
    return tuple(found)


def _scores(
    task: str, weights: FloatArray, ids: np.ndarray, n: int, layer: int
) -> list[tuple[str, str, float]]:
    """The pattern each token task calls for, scored on every held-out row it applies to."""
    positions = np.arange(n)
    scores = []
    if task == "reverse":
        mirror = weights[:, positions, n - 1 - positions].mean()
        scores.append(("mirror", "mean weight of position i on position n−1−i", float(mirror)))
    if task in ("previous", "induction"):
        previous = weights[:, positions[1:], positions[:-1]].mean()
        scores.append(("previous-token", "mean weight of position i on i−1", float(previous)))
    if task == "induction" and layer > 1:
        scores.append(
            (
                "induction",
                "mean weight of a repeated letter on the letter after its first occurrence",
                _induction_score(weights, ids),
            )
        )
    return scores


def _induction_score(weights: FloatArray, ids: np.ndarray) -> float:
    total, count = 0.0, 0
    for row, sentence in enumerate(ids):
        seen: dict[int, int] = {}
        for position, token in enumerate(sentence):
            earlier = seen.get(int(token))
            if earlier is not None and earlier + 1 < position:
                total += float(weights[row, position, earlier + 1])
                count += 1
            seen[int(token)] = position
    return total / max(count, 1)
