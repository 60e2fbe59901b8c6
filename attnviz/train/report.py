"""What `attnviz train` says, as plain sentences built from this run's numbers: what the task,
data and model are when training starts, and what was learned when it ends. The command line,
the Python API and the notebook print the same sentences."""

from __future__ import annotations

from collections.abc import Sequence

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


def percent(share: float) -> str:
    """99.95%, never "100.0%" for a share below 1."""
    text = f"{share:.1%}"
    return f"{share:.2%}" if text == "100.0%" and share < 1 else text


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
    layers = "1 layer" if shape.n_layers == 1 else f"{shape.n_layers} layers"
    return [
        f"Task {task.name}: {task.summary}.",
        f"Data: {len(task.train.ids):,} training examples and {len(task.held_out.ids):,} held "
        f"out ({task.held_out_rule}); {len(task.vocabulary)} words in the vocabulary.",
        f"Model: {layers} of attention only, {heads} each, d_model {shape.d_model}, learned "
        f"positions, no feed-forward block, no LayerNorm; {mask}.",
        "Readout: " + READOUTS[task.readout].format(focus=focus, classes=len(task.classes)) + ".",
        f"Training: Adam, learning rate {task.learning_rate:g}, {task.batch} examples a step, "
        f"seed {seed}.",
    ]


def progress(step: int, loss: float, accuracy: float, answers: Sequence[str]) -> str:
    """One plain line: step, loss, held-out accuracy and each probe's answer weight."""
    line = f"step {step:>4}  loss {loss:6.3f}  held-out {percent(accuracy):>6}"
    return "  ".join([line, *answers])


def finish(task: Task, found: Findings, *, steps: int, seconds: float) -> list[str]:
    """What was learned, layer by layer, from this run's numbers."""
    lines = [
        f"Trained {steps} steps in {seconds:.2f} s of training: held-out accuracy "
        f"{percent(found.accuracy)} ({len(task.held_out.ids):,} examples never trained on).",
    ]
    for probe in found.probes:
        lines.extend(_probe_lines(task, probe))
    lines.extend(_path_lines(found))
    lines.extend(
        f"Layer {p.layer}, head {p.head}: {p.name} score {p.score:.2f} ({p.formula})."
        for p in found.patterns
    )
    if any(p.relay is not None for p in found.probes) and task.readout is Readout.WORD:
        lines.append(
            "Right answer, attention elsewhere: an attention weight says where a word read "
            "from, not what the model used to answer."
        )
    return lines


def _probe_lines(task: Task, found: ProbeFinding) -> list[str]:
    probe = found.probe
    words, focus, answer = probe.words, quoted(probe.words[probe.focus]), probe.words[probe.answer]
    lines = [" ".join(words)]
    for look in found.looks:
        where = f"layer {look.layer}" + (
            f" head {look.head}" if len(found.looks) > task.n_layers else ""
        )
        text = (
            f"  {where}: {focus} gives {quoted(words[look.position])} {look.weight:.2f} (its most)"
        )
        if look.position != probe.answer:
            text += f", {quoted(answer)} {look.answer_weight:.2f}"
        lines.append(text)
    verdict = "right" if found.correct else f"wrong: it should be {quoted(answer)}"
    lines.append(f"  the model's answer: {quoted(found.answer)} ({verdict})")
    if found.relay is not None:
        relay, look = found.relay, found.relay.look
        last = found.looks[-1]
        lines.append(
            f"  The last layer's row of {focus} lands on {quoted(words[relay.position])}, not "
            f"on {quoted(answer)} ({last.answer_weight:.2f})"
            + (", yet the answer is right." if found.correct else ".")
        )
        relay_word, its_most = quoted(words[relay.position]), quoted(words[look.position])
        read = f"{relay_word} itself, in layer 1, gave {its_most} {look.weight:.2f} (its most)"
        if look.position == probe.answer:
            lines.append(f"  {read}: {focus} reads {quoted(answer)} second-hand, through it.")
        else:
            lines.append(f"  {read} and {quoted(answer)} {look.answer_weight:.2f}.")
    return lines


def _path_lines(found: Findings) -> list[str]:
    if len(found.ablations) != 2:
        return []
    at_it, at_nouns = found.ablations
    lines = [
        "Which path carries the adjective? With layer 1's output zeroed "
        f"{at_it.where}, held-out accuracy is {percent(at_it.accuracy)}; zeroed "
        f"{at_nouns.where}, {percent(at_nouns.accuracy)} (picking one of the two nouns at "
        f"random scores 50%; untouched, {percent(found.accuracy)})."
    ]
    if found.readings:
        nouns, it = found.readings
        lines.append(
            f"In layer {nouns.layer}, {nouns.readers} give {nouns.read} {nouns.weight:.2f} on "
            f"average, {it.readers} {it.weight:.2f}."
        )
    cost_it, cost_nouns = found.accuracy - at_it.accuracy, found.accuracy - at_nouns.accuracy
    if max(cost_it, cost_nouns) < 0.05:
        lines.append(
            "Neither costs much: the last layer does not rely on layer 1's output at these words."
        )
    elif cost_nouns >= 2 * cost_it:
        lines.append(
            "Most of it travels through the nouns: what layer 1 adds at the nouns is what the "
            'last layer needs to tell which noun "it" is.'
        )
    elif cost_it >= 2 * cost_nouns:
        lines.append(
            'Most of it travels through "it" itself: what layer 1 adds at "it" decides which '
            "noun the last layer finds."
        )
    else:
        lines.append("Both paths carry part of it: zeroing either one costs accuracy.")
    return lines
