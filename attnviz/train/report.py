"""What `attnviz train` says, as plain sentences built from this run's numbers: what the task,
data and model are when training starts, and what was learned when it ends. The command line,
the Python API and the notebook print the same sentences."""

from __future__ import annotations

from collections.abc import Sequence

from attnviz.labels import occurrence_labels, percent
from attnviz.train.findings import Findings, ProbeFinding
from attnviz.train.network import Shape
from attnviz.train.tasks import Readout, Task

READOUTS = {
    Readout.POINTER: "pointer: the last layer's softmax in the row of {focus} is the model's "
    "answer, a weight for each position of the sentence (its attention is its prediction)",
    Readout.WORD: "word: an output layer reads X at {focus} after the last layer and names the "
    "answer among the {classes} nouns, as a language model names its next word",
    Readout.TOKEN: "token: an output layer reads X at every position after the last layer and "
    "names a token of the vocabulary",
}


def quoted(word: str) -> str:
    return f'"{word}"'


def start(task: Task, shape: Shape, *, seed: int) -> list[str]:
    """What is about to be trained: the task, its data, the model and how it learns."""
    focus = quoted(task.probes[0].words[task.probes[0].focus])
    mask = (
        "a causal mask (each position reads itself and the ones before)"
        if shape.causal
        else "no mask (every word reads every word, after it too)"
    )
    heads = "1 head" if shape.n_heads == 1 else f"{shape.n_heads} heads"
    layers = (
        f"1 layer of attention only, with {heads}"
        if shape.n_layers == 1
        else f"{shape.n_layers} layers of attention only, {heads} each"
    )
    fewest, most = task.lengths
    lengths = f" of {fewest} to {most} words" if fewest != most else ""
    checked = ""
    if task.checked is not None:
        checked = (
            f" While training, held-out accuracy is measured on {len(task.checked):,} of them "
            f"every {task.check_every} steps; the summary measures all."
        )
    return [
        f"Task {task.name}: {task.summary}.",
        f"Data: {len(task.train.ids):,} training examples{lengths} and "
        f"{len(task.held_out.ids):,} held out ({task.held_out_rule}); "
        f"{len(task.vocabulary)} words in the vocabulary.{checked}",
        f"Model: {layers}, d_model {shape.d_model}, learned "
        f"positions, no feed-forward block, no LayerNorm; {mask}.",
        "Readout: " + READOUTS[task.readout].format(focus=focus, classes=len(task.classes)) + ".",
        f"Training: Adam, learning rate {task.learning_rate:g}{_decay(task)}, {task.batch} "
        "examples a step, "
        f"seed {seed}.",
    ]


def _decay(task: Task) -> str:
    if task.decay_steps is None:
        return ""
    return f" falling as 1/√(1 + step/{task.decay_steps:g})"


def answer_legend(task: Task, focus: str, answer: str) -> str:
    """What the green word is, true for every readout: only a pointer's last layer is trained
    to look at it."""
    if task.readout is Readout.POINTER:
        return f"answer {answer} (green): the last layer's row of {focus} is trained to be it"
    return f"answer {answer} (green): the output layer names it; no row must look there"


def progress(step: int, loss: float, accuracy: float, answers: Sequence[str]) -> str:
    """One plain line: step, loss, held-out accuracy and each probe's answer weight."""
    line = f"step {step:>4}  loss {loss:6.3f}  held-out {percent(accuracy):>6}"
    return "  ".join([line, *answers])


#: Below this held-out accuracy a model has not learned its task: what zeroing a layer costs,
#: or where its attention lands, says little about how it does the task.
TRAINED = 0.9


def finish(task: Task, found: Findings, *, steps: int, seconds: float) -> list[str]:
    """What was learned, layer by layer, from this run's numbers."""
    lines = [f"Trained {steps} steps in {seconds:.2f} s of training: " + _accuracy(task, found)]
    lines.extend(_share_lines(found))
    for probe in found.probes:
        lines.extend(_probe_lines(task, probe))
    lines.extend(_reliance_lines(task, found))
    lines.extend(_path_lines(task, found))
    lines.extend(
        f"Layer {p.layer}, head {p.head}: {p.name} score {p.score:.2f} ({p.formula})."
        for p in found.patterns
    )
    relayed = [p for p in found.probes if p.relay is not None]
    if relayed and all(p.correct for p in relayed) and found.accuracy >= TRAINED:
        lines.append(
            "Right answer, attention elsewhere: an attention weight says where a word read "
            "from, not what the model used to answer."
        )
    return lines


def _accuracy(task: Task, found: Findings) -> str:
    examples = len(task.held_out.ids)
    if found.sequences_right is None:
        return (
            f"held-out accuracy {percent(found.accuracy)} ({examples:,} examples never trained on)."
        )
    right, total = found.sequences_right
    answers = int((task.held_out.targets >= 0).sum())
    return (
        f"held-out accuracy {percent(found.accuracy)} of {answers:,} answers, one at each "
        f"position of {total:,} sequences never trained on; {right:,} of the {total:,} "
        "sequences entirely right."
    )


def _share_lines(found: Findings) -> list[str]:
    """Held-out accuracy by part, by sentence length and by noun order (coref)."""
    lines = []
    if found.parts:
        lines.append(
            "Held-out accuracy by part: "
            + "; ".join(f"{s.label}, {percent(s.accuracy)} of {s.count:,}" for s in found.parts)
            + "."
        )
    if found.by_length:
        first, last = found.by_length[0].label, found.by_length[-1].label
        lines.append(
            f"By length, {first.split()[0]} to {last}: "
            + ", ".join(percent(s.accuracy) for s in found.by_length)
            + "."
        )
    if found.by_order:
        lines.append(
            "By noun order: "
            + ", ".join(f"{s.label} {percent(s.accuracy)}" for s in found.by_order)
            + "."
        )
    return lines


def _reliance_lines(task: Task, found: Findings) -> list[str]:
    """What the answer relies on, from this run's held-out accuracy with something changed."""
    if not found.reliance or found.accuracy < TRAINED:
        return []
    lines = []
    for reliance in found.reliance:
        if reliance.follows:
            lines.append(
                f"{reliance.change.capitalize()} (tired ↔ wide, hungry ↔ busy, …), the answer "
                f"moves to the other noun in {percent(reliance.accuracy)} of held-out sentences: "
                + (
                    "the answer follows the adjective."
                    if reliance.accuracy >= TRAINED
                    else "the adjective is not all it answers from."
                )
            )
            continue
        drop = found.accuracy - reliance.accuracy
        verdict = (
            "it does not answer from where the words stand."
            if drop < 0.02
            else "it answers partly from where the words stand."
        )
        lines.append(
            f"{reliance.change.capitalize()} (each word given the position vector of another "
            f"word of its sentence), held-out accuracy is {percent(reliance.accuracy)}: {verdict}"
        )
    return lines


def _probe_lines(task: Task, found: ProbeFinding) -> list[str]:
    probe = found.probe
    words = occurrence_labels(probe.words)
    focus, answer = quoted(words[probe.focus]), words[probe.answer]
    lines = [" ".join(probe.words)]
    for look in found.looks:
        several = len(found.looks) > task.n_layers
        where = f"layer {look.layer}" + (f" head {look.head}" if several else "")
        text = (
            f"  {where}: {focus} gives {quoted(words[look.position])} {look.weight:.2f} (its most)"
        )
        if look.position != probe.answer:
            text += f", {quoted(answer)} {look.answer_weight:.2f}"
        lines.append(text)
    verdict = "right" if found.correct else f"wrong: it should be {quoted(answer)}"
    lines.append(f"  the model's answer: {quoted(found.answer)} ({verdict})")
    if found.relay is not None:
        relay, look, last = found.relay, found.relay.look, found.looks[-1]
        relay_word = quoted(words[relay.position])
        lines.append(
            f"  The last layer's row of {focus} lands on {relay_word}, not on {quoted(answer)} "
            f"({last.answer_weight:.2f})" + (", yet the answer is right." if found.correct else ".")
        )
        its_most = quoted(words[look.position])
        read = f"{relay_word} itself, in layer 1, gave {its_most} {look.weight:.2f} (its most)"
        if look.position == probe.answer:
            lines.append(f"  {read}.")
        else:
            lines.append(f"  {read} and {quoted(answer)} {look.answer_weight:.2f}.")
    return lines


def _path_lines(task: Task, found: Findings) -> list[str]:
    if len(found.ablations) != 2:
        return []
    at_it, at_nouns = found.ablations
    chance = (
        # Its output layer names one of all the task's nouns, not of the sentence's two.
        f"naming one of its {len(task.classes)} nouns at random scores "
        f"{percent(1 / len(task.classes))}, one of the sentence's two 50%"
        if task.readout is Readout.WORD
        else "pointing at one of the two nouns at random scores 50%"
    )
    lines = [
        "Where does the last layer need layer 1's work? With layer 1's output zeroed "
        f"{at_it.where}, held-out accuracy is {percent(at_it.accuracy)}; zeroed "
        f"{at_nouns.where}, {percent(at_nouns.accuracy)} (untouched, {percent(found.accuracy)}; "
        f"{chance})."
    ]
    nouns, it = found.readings
    lines.append(
        f"In layer {nouns.layer}, {nouns.readers} give {nouns.read} {nouns.weight:.2f} on "
        f"average, {it.readers} {it.weight:.2f}."
    )
    lines.append(_path_verdict(found, at_it.accuracy, at_nouns.accuracy))
    return lines


def _path_verdict(found: Findings, at_it: float, at_nouns: float) -> str:
    """The conclusion the zeroing allows, and no more: where the last layer needs layer 1's
    output, not which words' weights carried what (a weight says where a row read from, not
    what the answer used)."""
    if found.accuracy < TRAINED:
        return (
            f"At {percent(found.accuracy)} held-out the model has not learned the task yet: "
            "what zeroing costs says little so far."
        )
    cost_it, cost_nouns = found.accuracy - at_it, found.accuracy - at_nouns
    if max(cost_it, cost_nouns) < 0.05:
        return (
            "Neither costs much: the last layer does not rely on layer 1's output at these words."
        )
    points = f'({_points(cost_nouns)} at the nouns, {_points(cost_it)} at "it")'
    if cost_nouns >= 2 * cost_it:
        return f'The last layer needs layer 1\'s output at the nouns more than at "it" {points}.'
    if cost_it >= 2 * cost_nouns:
        return f'The last layer needs layer 1\'s output at "it" more than at the nouns {points}.'
    return f"Both carry part of it: zeroing either one costs accuracy {points}."


def _points(cost: float) -> str:
    """A drop in accuracy in percentage points: "49.3 points"."""
    return f"{100 * cost:.1f} points"
