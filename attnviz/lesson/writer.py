"""What every step of the lesson writes with: the trace, the selection, the labels of its words,
the worked example's word, and the blocks written so far.

A step module (attnviz/lesson/<key>.py) receives a ``LessonWriter`` and says its part with
``say``, ``note``, ``show``, ``worked_line``; ``attnviz.lesson.lesson`` opens each step (its
pause and heading) from the table in attnviz/lesson/steps.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnviz import worked
from attnviz.labels import occurrence_labels, plural, subscript
from attnviz.lesson.blocks import (
    Blank,
    Block,
    Heading,
    Matrix,
    Paragraph,
    Pause,
    Span,
    Tables,
    Worked,
)
from attnviz.lesson.examples import ExampleText, position_labels
from attnviz.lesson.options import LessonOptions, heads_by_rows, heads_in_full, parse_steps
from attnviz.lesson.steps import Step
from attnviz.results import Analyses
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from attnviz.model.base import Family


@dataclass(frozen=True)
class HeadView:
    """One head as the lesson goes through it: its index (from 0), its subscript ("₁"), its
    worked examples, and whether it is shown in full (else: the focus word's row of each
    table, with no explanation and no worked example)."""

    index: int
    h: str
    examples: worked.HeadExamples
    in_full: bool = True


class LessonWriter:
    """The lesson's blocks as they are written, and what every step needs to write them."""

    def first_head(self, head: HeadView) -> bool:
        """Whether a step's explanation goes with ``head``: the first head shown in full, or
        every head with all of the text (--full; the page, one head at a time)."""
        return self.options.full or (head.in_full and head.index == self.full_heads[0])

    def shows_step(self, key: str) -> bool:
        """Whether the lesson shows the step keyed ``key`` (--steps may leave it out)."""
        from attnviz.lesson.steps import STEPS, in_order

        numbers = [number for number, _, step in in_order(STEPS, self.trace) if step.key == key]
        return bool(numbers) and (self.shown_steps is None or numbers[0] in self.shown_steps)

    def step_label(self, key: str) -> str:
        """What this lesson calls the step keyed ``key``: "5", or an optional step's "6b". A
        step names another by its key, so that a cross-reference ("as in step 5") follows the
        table, and rotary positions, which add a step 3, move it along."""
        from attnviz.lesson.steps import label

        return label(key, self.trace)

    def steps_label(self, first: str, last: str) -> str:
        """ "steps 5 and 6", "steps 3 to 5": the steps keyed ``first`` to ``last`` here."""
        from attnviz.lesson.steps import steps_label

        return steps_label(first, last, self.trace)

    @property
    def brief(self) -> bool:
        """The lesson's explanations in their short form (not --full)."""
        return not self.options.full

    def __init__(
        self,
        trace: AttentionTrace,
        selection: Selection,
        options: LessonOptions,
        layers: Sequence[AttentionTrace] = (),
        analyses: Analyses | None = None,
    ):
        self.trace = trace
        self._analyses = analyses
        # The model's layers up to and including ``trace`` (what rollout follows); () when the
        # run's layers were not given or ``trace`` is not among them.
        self.layers_up_to = layers_up_to(layers, trace)
        self.n_layers = len(layers)
        self.selection = selection
        self.options = options
        self.blocks: list[Block] = []
        self.tokens = occurrence_labels([printable(word) for word in selection.row_words])
        self.keys = (
            occurrence_labels([printable(word) for word in selection.column_words])
            if trace.is_cross
            else self.tokens
        )
        # The worked examples name the trace's own positions: pieces, hidden tokens included.
        self.all_queries, self.all_keys = position_labels(trace)
        self.example = worked.example_query(trace, selection)
        self.example_row = selection.row_of(self.example)
        self.example_column: int | None = None  # the example's key, set for each head
        # None: every step. Numbered as this trace's lesson numbers them (rotary positions).
        self.shown_steps = None if options.steps is None else parse_steps(options.steps, trace)
        self.current_step = 0  # the number of the step being written
        self.rounding_noted = False  # whether a worked example's rounding has been explained
        self.pretrained = trace.provenance.weights.is_pretrained
        self.text = ExampleText(options.decimals, self.all_queries, self.all_keys)
        # What the model's family says of itself (its tokenizer, its sublayer); None for
        # attnviz's own layer and for a family attnviz does not know, which borrows no sentence.
        # The registry is imported only for a model's layer: the random lesson starts without it.
        architecture = trace.provenance.weights.architecture
        self.family: Family | None = None
        if architecture is not None:
            from attnviz.model.base import family_of

            self.family = family_of(architecture)

    def analyses(self) -> Analyses:
        """What the analyses found of this lesson's trace, as the API handed them
        (attnviz.analysis.analyses.for_lesson): the focus view looks them up, computes none."""
        if self._analyses is None:
            raise ValueError(
                "a lesson that follows a word needs the analyses of its trace "
                "(attnviz.analysis.analyses.for_lesson)"
            )
        return self._analyses

    # -- opening a step ---------------------------------------------------------------------------

    def open_step(
        self,
        number: int,
        step: Step,
        title: str,
        head: HeadView | None,
        section: str | None,
        *,
        label: str | None = None,
    ) -> None:
        """A step's pause and heading, after the heading of the section it opens (``section``:
        a head, all heads), so that pacing and --steps take the two together. The focus view
        has no step heading: it opens its own section. ``label``: what the heading calls the
        step when not its number (an optional step's "6b")."""
        self.current_step = number
        heading = f"Step {label or number} · {title}"
        index = None if head is None else head.index
        self.blocks.append(Pause(title if step.focus else heading, number, step.key, index))
        if section is not None:
            self.blocks += [Blank(), Heading(section, "section")]
        if not step.focus:
            self.blocks += [Blank(), Heading(heading, "step")]

    # -- saying things ----------------------------------------------------------------------------

    def number(self, value: float) -> str:
        return self.text.number(value)

    def bias(self, name: str, head: str = "") -> str:
        """ " + b_Q₁" in a formula when the trace has biases (a pretrained model), else ""."""
        return f" + b_{name}{head}" if self.trace.has_biases else ""

    def say(self, *parts: str | Span) -> None:
        spans = tuple(Span(part) if isinstance(part, str) else part for part in parts)
        self.blocks.append(Paragraph(spans))

    def note(self, text: str) -> None:
        self.say(Span(text, "note"))

    def blank(self) -> None:
        self.blocks.append(Blank())

    def heading(self, text: str, level: str) -> None:
        self.blocks.append(Heading(text, level))

    def worked_line(self, example: str, text: str) -> None:
        """A worked example, indented: ``example`` names which (attnviz.worked's record, as
        in the steps table), ``text`` is it written out for the lesson's example word."""
        self.blocks.append(Worked(example, text))

    def rounding_note(self) -> None:
        """How to read a worked example, said once: after the first example the lesson shows
        (with --steps, the first of the steps shown)."""
        shown = self.shown_steps is None or self.current_step in self.shown_steps
        if self.rounding_noted or not shown:
            return
        self.rounding_noted = True
        decimals = self.text.decimals
        # A result keeps at least 2 decimals, so that it can be checked when the tables show
        # fewer (--decimals 1 or 0): say so rather than "rounded as in the tables".
        rounded = (
            "rounded as in the tables"
            if decimals >= 2
            else f"printed with 2 decimals, where the tables show {plural(decimals, 'decimal')}"
        )
        said = (
            f"(Results {rounded}; the terms carry the decimals it takes to give them by hand.)"
            if self.brief
            else f"(A worked example's result is {rounded}; where every term is written out, "
            "the terms carry as many decimals as it takes for them to give that result by hand.)"
        )
        self.say(Span(said, "dim"))

    def show(self, matrix: Matrix) -> None:
        self.blocks.append(self.keeping_example(matrix))

    def side_by_side(self, matrices: Sequence[Matrix]) -> None:
        kept = tuple(self.keeping_example(m) for m in matrices)
        self.blocks.append(Tables(kept, squeeze=self.brief))

    def keeping_example(self, matrix: Matrix) -> Matrix:
        """Tables of words keep the worked example's row (and column: the key it attends to)
        visible when the middle is elided."""
        if matrix.row_labels is self.tokens:
            matrix = matrix._replace(keep_row=self.example_row)
            if self.selection.merged and any(len(g) > 1 for g in self.selection.row_groups):
                # The formula in the title holds for the pieces; these rows are their means.
                matrix = matrix._replace(title=f"{matrix.title}, pieces merged into words")
        if matrix.column_labels is self.keys and self.example_column is not None:
            matrix = matrix._replace(keep_column=self.example_column)
        return matrix

    # -- sizes and names --------------------------------------------------------------------------

    def dims(self, count: int) -> list[str]:
        return [str(i) for i in range(1, count + 1)]

    @property
    def full_heads(self) -> tuple[int, ...]:
        """The heads shown in full, from 0 (lesson.options.heads_in_full)."""
        return heads_in_full(self.selection.heads, self.options)

    @property
    def lesson_heads(self) -> tuple[int, ...]:
        """Every head the lesson goes through, in order: those in full first, then (unless
        --full) every other head of the trace, which gives the focus word's rows."""
        rows = heads_by_rows(self.trace.n_heads, self.selection.heads, self.options)
        return (*self.full_heads, *rows)

    def head_view(self, head: int) -> HeadView:
        """Head ``head`` (from 0) with its worked examples; the example's key stays visible in
        its tables."""
        examples = worked.head_examples(self.trace, self.selection, head)
        self.example_column = self.selection.column_of(examples.dot_product.key)
        return HeadView(head, subscript(head + 1), examples, head in self.full_heads)

    def focus_label(self) -> str:
        """The word whose rows the heads not shown in full give: the focus word, else the
        worked examples' word, as the tables name it."""
        return self.tokens[self.example_row or 0]

    @property
    def n_shown(self) -> int:
        return self.selection.n_rows

    @property
    def n(self) -> int:
        """n as computed: every token, hidden ones included; word pieces, not merged words."""
        return len(self.trace.tokens)

    def shown_rows(self) -> str:
        """ " (9 rows shown)" after a shape when the tables show fewer rows than were computed."""
        if self.n_shown == self.n:
            return ""
        return f" ({plural(self.n_shown, 'row')} shown)"

    def counted(self) -> str:
        """How many tokens were computed, and how many rows the tables show."""
        unit = "token"
        if self.pretrained:
            unit = "word piece" if self.family is None else self.family.token_unit
        computed = plural(self.n, unit)
        if self.selection.merged:
            return f"{computed}, shown as {self.shown_words()}"
        if self.n_shown != self.n:
            return f"{computed}, {self.n_shown} shown"
        return computed

    def shown_words(self) -> str:
        """The rows of a --words view: "7 words, [CLS] and [SEP]"."""
        special = set(self.trace.provenance.special)
        groups = self.selection.row_groups
        words = sum(1 for group in groups if group[0] not in special)
        names = list(
            dict.fromkeys(printable(self.trace.tokens[g[0]]) for g in groups if g[0] in special)
        )
        if not names:
            return plural(words, "word")
        return f"{plural(words, 'word')}, {listed(names)}"

    def hidden_names(self) -> str:
        """The hidden tokens' names, each once: "[CLS] and [SEP]"."""
        return listed(
            list(dict.fromkeys(printable(self.trace.tokens[p]) for p in self.selection.hidden))
        )


def listed(names: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c" """
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def layers_up_to(
    layers: Sequence[AttentionTrace], trace: AttentionTrace
) -> tuple[AttentionTrace, ...]:
    """``layers`` up to and including ``trace`` (found as the very object, or as its very
    weights, as a notebook's layers hold them); () when it is not among them."""
    for index, layer in enumerate(layers):
        if layer is trace or layer.weights is trace.weights:
            return tuple(layers[: index + 1])
    return ()
