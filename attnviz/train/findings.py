"""What a trained toy model learned, measured on this run's numbers: where each probe's focus
word looks in every layer, how each head scores on the pattern its task calls for, and, for
coref, held-out accuracy by part, sentence length and noun order, what the answer relies on
(held-out accuracy with the words' positions shuffled, with the adjective swapped for one of the
other kind), where the last layer needs layer 1's work (its output zeroed at chosen positions)
and, when the last layer's row of "it" looks elsewhere, where that word looked in layer 1."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.train import network
from attnviz.train.coref import ANIMAL_ADJECTIVES, ANIMALS, PLACE_ADJECTIVES, PLACES
from attnviz.train.tasks import Examples, Probe, Readout, Task


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
class Share:
    """Held-out accuracy on a part of the held-out examples."""

    label: str  # "held-out templates", "11 words", "the animal first"
    accuracy: float
    count: int  # examples in the part


@dataclass(frozen=True)
class Reliance:
    """Held-out accuracy when one thing the model might use is taken away or changed."""

    change: str  # what was done, in words
    accuracy: float  # against the answer that change calls for (see ``follows``)
    follows: bool  # True: the right answer moved with the change (the adjective swapped)


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
    parts: tuple[Share, ...] = ()  # coref: the task's held-out groups (templates, pairs)
    by_length: tuple[Share, ...] = ()  # coref: each sentence length
    by_order: tuple[Share, ...] = ()  # coref: the animal first, the place first
    reliance: tuple[Reliance, ...] = ()  # coref: positions shuffled, adjective swapped


def findings(task: Task, shape: network.Shape, parameters: Mapping[str, FloatArray]) -> Findings:
    held = task.held_out
    coref = task.name.startswith("coref")
    # One pass over the held-out examples serves every measure of the model as trained.
    run = network.measure(parameters, shape, held)
    right = np.asarray(run.logits.argmax(axis=-1) == held.targets)
    token = task.readout is Readout.TOKEN
    return Findings(
        accuracy=float(right[held.targets >= 0].mean() if token else right.mean()),
        sequences_right=_sequences_right(right, held) if token else None,
        probes=tuple(_probe(task, shape, parameters, probe) for probe in task.probes),
        ablations=_ablations(task, shape, parameters) if coref else (),
        readings=_readings(task, run) if coref else (),
        patterns=_patterns(task, shape, run) if token else (),
        parts=_shares(right, task.groups),
        by_length=_by_length(right, held.lengths) if held.lengths is not None else (),
        by_order=_by_order(right, task.animal_first),
        reliance=_reliance(task, shape, parameters) if coref else (),
    )


def _shares(right: np.ndarray, groups: tuple[tuple[str, np.ndarray], ...]) -> tuple[Share, ...]:
    """Held-out accuracy in each group: right [N] bool, each group's rows [N] bool."""
    return tuple(
        Share(label, float(right[rows].mean()), int(rows.sum()))
        for label, rows in groups
        if rows.any()
    )


def _by_length(right: np.ndarray, lengths: np.ndarray) -> tuple[Share, ...]:
    return _shares(
        right, tuple((f"{n} words", lengths == n) for n in sorted(set(lengths.tolist())))
    )


def _by_order(right: np.ndarray, animal_first: np.ndarray | None) -> tuple[Share, ...]:
    if animal_first is None:
        return ()
    return _shares(right, (("the animal first", animal_first), ("the place first", ~animal_first)))


def _reliance(
    task: Task, shape: network.Shape, parameters: Mapping[str, FloatArray]
) -> tuple[Reliance, ...]:
    """Held-out accuracy with each word given the position vector of another of its sentence's
    positions (a random permutation per sentence, from a fixed seed), and with the adjective
    swapped for the one of the same index of the other kind (tired ↔ wide), which moves the right
    answer to the other noun."""
    held = task.held_out
    n = held.ids.shape[1]
    lengths = held.lengths if held.lengths is not None else np.full(len(held.ids), n)
    rng = np.random.default_rng(0)
    # argsort of random keys, padding's keys last: a permutation of each sentence's positions.
    keys = rng.random(held.ids.shape) + (np.arange(n)[None, :] >= lengths[:, None])
    shuffled = np.argsort(keys, axis=1)
    logits = network.measure(parameters, shape, held, positions=shuffled, answer_only=True).logits
    by_position = float((logits.argmax(axis=-1) == held.targets).mean())

    swapped, targets = _adjective_swapped(task)
    logits = network.measure(parameters, shape, held, ids=swapped, answer_only=True).logits
    follows = float((logits.argmax(axis=-1) == targets).mean())
    return (
        Reliance("with the words' positions shuffled", by_position, follows=False),
        Reliance("with the adjective swapped for one of the other kind", follows, follows=True),
    )


def _adjective_swapped(task: Task) -> tuple[np.ndarray, np.ndarray]:
    """The held-out sentences with each adjective swapped for its counterpart of the other kind
    (tired ↔ wide, hungry ↔ busy, …), and the answers that calls for: the other noun."""
    held, vocabulary = task.held_out, task.vocabulary
    ids = held.ids.copy()
    index = {word: i for i, word in enumerate(vocabulary)}
    counterpart = np.arange(len(vocabulary))
    for animal_word, place_word in zip(ANIMAL_ADJECTIVES, PLACE_ADJECTIVES, strict=True):
        counterpart[index[animal_word]], counterpart[index[place_word]] = (
            index[place_word],
            index[animal_word],
        )
    inside = _inside(held)
    ids = np.where(inside, counterpart[ids], ids)
    nouns = np.isin(held.ids, [index[word] for word in (*ANIMALS, *PLACES)]) & inside
    rows = np.arange(len(ids))
    if task.readout is Readout.POINTER:
        answer_position = held.targets
    else:
        class_ids = np.array([index[word] for word in task.classes])
        answer_position = (held.ids == class_ids[held.targets][:, None]).argmax(axis=1)
    other = nouns.copy()
    other[rows, answer_position] = False
    other_position = other.argmax(axis=1)  # the sentence's other noun
    if task.readout is Readout.POINTER:
        return ids, other_position
    class_of = {int(word_id): number for number, word_id in enumerate(class_ids)}
    return ids, np.array([class_of[int(i)] for i in held.ids[rows, other_position]])


def _inside(examples: Examples) -> np.ndarray:
    """[N, n] bool: the positions that hold a word of their sentence (not padding)."""
    n = examples.ids.shape[1]
    if examples.lengths is None:
        return np.ones(examples.ids.shape, dtype=bool)
    return np.arange(n)[None, :] < examples.lengths[:, None]


def _sequences_right(right: np.ndarray, held: Examples) -> tuple[int, int]:
    """How many held-out sequences have every answer right, of how many.  right: [N, n]"""
    answered = held.targets >= 0
    whole = (right | ~answered).all(axis=1)
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
    at_nouns = np.isin(held.ids, list(nouns)) & _inside(held)
    return tuple(
        Ablation(1, where, _accuracy(shape, parameters, held, {1: positions}))
        for where, positions in (('at "it"', at_it), ("at the two nouns", at_nouns))
    )


def _readings(task: Task, run: network.Measured) -> tuple[Reading, ...]:
    """Layer 1's mean weight on the adjective, from the two nouns and from "it" (``run``: the
    held-out examples' forward pass)."""
    held = task.held_out
    weights = run.weights[0][:, 0]  # [N, n, n]
    rows = np.arange(len(held.ids))
    inside = _inside(held)
    adjectives = {task.vocabulary.index(w) for w in (*ANIMAL_ADJECTIVES, *PLACE_ADJECTIVES)}
    nouns = {task.vocabulary.index(word) for word in (*ANIMALS, *PLACES)}
    adjective = (np.isin(held.ids, list(adjectives)) & inside).argmax(axis=1)  # [N] its position
    noun_at = np.isin(held.ids, list(nouns)) & inside  # [N, n]: exactly two per sentence
    on_adjective = weights[rows, :, adjective]  # [N, n]: each row's weight on the adjective
    from_nouns = on_adjective[noun_at].mean()
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
    logits = network.measure(parameters, shape, examples, ablate=ablate, answer_only=True).logits
    return float((logits.argmax(axis=-1) == examples.targets).mean())


def _patterns(task: Task, shape: network.Shape, run: network.Measured) -> tuple[Pattern, ...]:
    """Each head's score on the patterns its task calls for (``run``: the held-out examples'
    forward pass)."""
    held = task.held_out
    n = held.ids.shape[1]
    found = []
    for layer, layer_weights in enumerate(run.weights, start=1):
        for head in range(shape.n_heads):
            weights = layer_weights[:, head]  # [N, n, n]
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
