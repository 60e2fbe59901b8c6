"""What one of attnviz's toy models is, in words, from its config.json: a toy, not a language
model; its size, words, task, readout and training, each number as the folder records it. The
lesson's header says it, and the demo."""

from __future__ import annotations

from attnviz.errors import listed
from attnviz.labels import percent
from attnviz.model.families.toy import ToyConfig


def about(
    config: ToyConfig,
    name: str,
    answered: tuple[str, str] | None = None,
    words: int | None = None,
) -> str:
    """What this model is, from its config.json: a toy, not a language model; its size, words,
    task, readout and training, each number as the folder records it. ``answered``: (the
    focus word, the model's answer there) for this sentence, when it has the focus word;
    ``words``: the sentence's length, said when it is shorter than any trained on."""
    heads = "1 head" if config.n_heads == 1 else f"{config.n_heads} heads"
    layers = "1 layer" if config.n_layers == 1 else f"{config.n_layers} layers"
    focus = listed(config.focus_words, " or ", form='"{}"'.format) or "the word asked about"
    return (
        f"{name} is a toy transformer trained by attnviz, not a language model: {layers} of "
        f"{heads} each, d_model = {config.d_model}, attention only"
        f"{', causal' if config.causal else ''}, {len(config.vocabulary)} words. Its one task: "
        f"{config.summary}. {_readout(config, focus)} Trained {config.steps:,} steps of Adam "
        f"(seed {config.seed}) on {config.train_examples:,} sentences{_of_lengths(config)}; on "
        f"{config.held_out_examples:,} held-out ones ({config.held_out}) {_accuracy(config)}."
        f"{_answered(answered)}{_shorter(config, words)}"
    )


def _of_lengths(config: ToyConfig) -> str:
    if config.lengths_trained is None:
        return ""
    return f" of {config.lengths_trained} words"


def _shorter(config: ToyConfig, words: int | None) -> str:
    """' This sentence has 5 words, fewer than any it was trained on.', or ""."""
    if words is None or config.trained_lengths is None or words >= config.trained_lengths[0]:
        return ""
    return f" This sentence has {words} words, fewer than any it was trained on."


def _answered(answered: tuple[str, str] | None) -> str:
    """' In this sentence its answer at "it" is "animal".', or "" without the focus word."""
    if answered is None:
        return ""
    focus, answer = answered
    if ":" not in focus:
        return f' In this sentence its answer at "{focus}" is "{answer}".'
    word = focus.rsplit(":", 1)[0]
    return (
        f' This sentence has "{word}" more than once, and every sentence it was trained on had '
        f'one; its answer at the first, "{focus}", is "{answer}".'
    )


def _readout(config: ToyConfig, focus: str) -> str:
    d = config.d_model
    if config.readout == "pointer":
        where = "its last layer" if config.n_heads == 1 else "head 1 of its last layer"
        return (
            f"Its answer is an attention row: {where} was trained so that the row of {focus} "
            f"IS the answer, the word {focus} gives the most weight to."
        )
    if config.readout == "word":
        return (
            f"Its answer comes from an output layer: W_U [{d} × {config.outputs}] reads X at "
            f"{focus} after the last layer and names one of {config.outputs} words; no "
            f"attention row was trained to be the answer, so where {focus} looks need not be "
            "the answer."
        )
    return (
        f"Its answers come from an output layer: W_U [{d} × {config.outputs}] reads X at every "
        "position after the last layer and names a word of its vocabulary there."
    )


def _accuracy(config: ToyConfig) -> str:
    """How many held-out examples it gets right: a count and a percentage that never rounds up
    to 100%; a token readout's share is of its answers, one at each position, not of whole
    sequences, so it is said as such."""
    share = percent(config.held_out_accuracy)
    if config.readout == "token":
        return f"it gets {share} of their answers right, one answer at each position"
    right = round(config.held_out_accuracy * config.held_out_examples)
    return f"it answers {right:,} of {config.held_out_examples:,} ({share}) right"
