"""What the step-by-step lesson says: its sentences, worked examples and tables, as data.

``lesson(trace, selection, options)`` returns the lesson as a list of blocks (headings,
paragraphs, tables, focus bars, pauses). Every number comes from the trace, the worked examples
from attnviz.worked; nothing here computes attention. How the blocks are drawn (wrapping,
table layout, colour) is the renderer's business: render/terminal.py for Rich.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from attnviz import worked
from attnviz.errors import AttnvizError
from attnviz.provenance import EmbeddingsKind
from attnviz.render.blocks import (
    Bars,
    Blank,
    Block,
    Heading,
    Matrix,
    Paragraph,
    Pause,
    SectionEnd,
    Span,
    Tables,
)
from attnviz.render.examples import ExampleText, position_labels
from attnviz.render.labels import ELLIPSIS, occurrence_labels, plural, subscript
from attnviz.render.options import FOCUS_STEP, LessonOptions
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

#: The tokenizer, and the sublayer around attention, of each architecture, in words.
TOKENIZER_SENTENCE = {
    "bert": "The model's tokenizer splits the sentence into word pieces, with [CLS] first and "
    "[SEP] last",
    "gpt2": "The model's tokenizer splits the sentence into byte-level BPE pieces (a piece that "
    "begins a word carries the space before it, not shown here), with no special tokens",
}
SUBLAYER_SENTENCE = {
    "bert": "In the model this attention is one sublayer, with biases: Q = X·W_Q + b_Q and so "
    "on. Its output is added back to X and normalised, h' = LayerNorm(X + output); a "
    "feed-forward block, GELU(h'·W₁ + b₁)·W₂ + b₂, is added and normalised the same "
    "way to give the next layer's X.",
    "gpt2": "In the model this attention is one sublayer of a decoder block, with biases: "
    "Q = X·W_Q + b_Q and so on, where X = ln_1(h) is the LayerNorm of the residual stream h. "
    "Its output is added back, h' = h + output; a feed-forward block, "
    "GELU(ln_2(h')·W₁ + b₁)·W₂ + b₂, is added the same way to give the next layer's h. "
    "Each word attends only to itself and the words before it (a causal mask).",
}


def _folded(word: str) -> str:
    """A word as an uncased BERT tokenizer sees it: lowercased, accents stripped."""
    import unicodedata

    decomposed = unicodedata.normalize("NFD", word.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def _amount(value: float) -> str:
    """A measured amount in prose: 2 decimals, or 2 significant digits below 0.1, so that a
    small variance does not read as 0.00 (0.0132 -> "0.013")."""
    value = float(value)
    if value == 0 or abs(value) >= 0.1:
        return f"{value:.2f}"
    decimals = 1 - int(np.floor(np.log10(abs(value))))
    return f"{value:.{decimals}f}"


def lesson(
    trace: AttentionTrace, selection: Selection, options: LessonOptions | None = None
) -> list[Block]:
    """The whole lesson for ``trace`` as the ``selection`` shows it: every step, or with
    ``options.steps`` only those (and the header)."""
    options = options or LessonOptions()
    blocks = _Writer(trace, selection, options).write()
    wanted = options.step_numbers
    if wanted is None:
        return blocks
    if FOCUS_STEP in wanted and selection.focus is None:
        raise AttnvizError(
            f"--steps {options.steps!r}: step {FOCUS_STEP} is the focus view, and this lesson "
            f"follows no word; name one with --focus WORD, or show steps 1-{FOCUS_STEP - 1}."
        )
    return only_steps(blocks, wanted)


def only_steps(blocks: Sequence[Block], steps: Collection[int]) -> list[Block]:
    """``blocks`` with only the given steps, each from its Pause to the next, and the header
    before the first. A section's heading (a head, all heads, the focus) is kept before the
    first of its steps that is; SectionEnds are all kept, so a renderer still prints a section
    at a time."""
    kept: list[Block] = []
    heading: list[Block] = []  # the current section's heading, with the blank line before it
    heading_shown = False
    for pause, part in _steps_of(blocks):
        if pause is None:  # the header
            kept += part
            continue
        if _opens_section(part):
            heading, part, heading_shown = part[:2], part[2:], False
        if pause.step in steps:
            kept += [pause, *([] if heading_shown else heading), *part]
            heading_shown = True
        else:
            kept += [block for block in part if isinstance(block, SectionEnd)]
    return kept


def _steps_of(blocks: Sequence[Block]) -> list[tuple[Pause | None, list[Block]]]:
    """The lesson cut at its Pauses: the header (no Pause), then each step's Pause and blocks."""
    steps: list[tuple[Pause | None, list[Block]]] = [(None, [])]
    for block in blocks:
        if isinstance(block, Pause):
            steps.append((block, []))
        else:
            steps[-1][1].append(block)
    return steps


def _opens_section(part: Sequence[Block]) -> bool:
    """Whether a step's blocks begin with a section's heading (a blank line, then the rule)."""
    return (
        len(part) >= 2
        and isinstance(part[0], Blank)
        and isinstance(part[1], Heading)
        and part[1].level == "section"
    )


def header(
    trace: AttentionTrace, selection: Selection, options: LessonOptions | None = None
) -> list[Block]:
    """The lesson's opening alone: its title, the formula, the sentence, the sizes, where X and
    the weights come from, and its notes (hidden tokens, merged pieces, lowercasing)."""
    writer = _Writer(trace, selection, options or LessonOptions())
    writer.header()
    return writer.blocks


class _Writer:
    """Writes the lesson's blocks; each method is one part of the explanation."""

    def __init__(self, trace: AttentionTrace, selection: Selection, options: LessonOptions):
        self.trace = trace
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
        self.shown_steps = options.step_numbers  # None: every step
        self.current_step = 0  # the step being written (FOCUS_STEP in the focus view)
        self.rounding_noted = False  # whether a worked example's rounding has been explained
        self.pretrained = trace.provenance.weights.is_pretrained
        self.text = ExampleText(options.decimals, self.all_queries, self.all_keys)
        self.architecture = trace.provenance.weights.architecture or "bert"

    # -- helpers -------------------------------------------------------------------------------

    def number(self, value: float) -> str:
        return self.text.number(value)

    def bias(self, name: str, head: str = "") -> str:
        """ " + b_Q₁" in a formula when the trace has biases (a pretrained model), else ""."""
        return f" + b_{name}{head}" if self.trace.has_biases else ""

    def say(self, *parts: str | Span) -> None:
        spans = tuple(Span(part) if isinstance(part, str) else part for part in parts)
        self.blocks.append(Paragraph(spans))

    def example_line(self, text: str) -> None:
        self.say("  ", Span(text, "example"))

    def rounding_note(self) -> None:
        """How to read a worked example, said once: after the first example the lesson shows
        (with --steps, the first of the steps shown)."""
        shown = self.shown_steps is None or self.current_step in self.shown_steps
        if self.rounding_noted or not shown:
            return
        self.rounding_noted = True
        self.say(
            Span(
                "(A worked example's result is rounded as in the tables; where every term is "
                "written out, the terms carry as many decimals as it takes for them to give "
                "that result by hand.)",
                "dim",
            )
        )

    def note(self, text: str) -> None:
        self.say(Span(text, "note"))

    def blank(self) -> None:
        self.blocks.append(Blank())

    def show(self, matrix: Matrix) -> None:
        self.blocks.append(self.keeping_example(matrix))

    def side_by_side(self, matrices: Sequence[Matrix]) -> None:
        self.blocks.append(Tables(tuple(self.keeping_example(m) for m in matrices)))

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

    def step(self, number: int, title: str, *, section: str | None = None) -> None:
        """A step's heading, after the heading of the section it opens (``section``: a head,
        all heads), so that pacing and --steps take the two together."""
        heading = f"Step {number} · {title}"
        self.current_step = number
        self.blocks.append(Pause(heading, number))
        if section is not None:
            self.blocks += [Blank(), Heading(section, "section")]
        self.blocks += [Blank(), Heading(heading, "step")]

    def dims(self, count: int) -> list[str]:
        return [str(i) for i in range(1, count + 1)]

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

    def scaling_sentence(self, head: int) -> str:
        """Why ÷√d_k, and what this head's numbers show: the paper's argument holds under its
        assumption (q, k components independent, mean 0, variance 1), which the numbers on
        screen need not meet. Padding rows (filler) and masked pairs are left out of the
        measured variances; hidden [CLS] and [SEP] are not, and the sentence says so."""
        trace = self.trace
        padding = trace.provenance.masking.padding
        n_queries = len(trace.tokens) - padding
        n_keys = len(trace.key_tokens) - (0 if trace.is_cross else padding)
        allowed = ~trace.masked if trace.mask is not None else np.ones(trace.scores.shape[1:], bool)
        allowed = allowed[:n_queries, :n_keys]
        scores = trace.scores[head][:n_queries, :n_keys][allowed]
        scaled = trace.scaled[head][:n_queries, :n_keys][allowed]
        # Finite numbers beyond 1e154 square to infinity: such a variance reads "inf", unwarned.
        with np.errstate(over="ignore", invalid="ignore"):
            q_variance = float(np.var(trace.Q[head][:n_queries]))
            k_variance = float(np.var(trace.K[head][:n_keys]))
            score_variance, scaled_variance = float(scores.var()), float(scaled.var())
        notes = []
        if trace.mask is not None and not allowed.all():
            notes.append("masked pairs left out")
        if padding:
            notes.append(f"the {printable(trace.tokens[-1])} rows left out")
        hidden = [p for p in self.selection.hidden if p < n_queries]
        if hidden:
            names = list(dict.fromkeys(printable(trace.tokens[p]) for p in hidden))
            notes.append(" and ".join(names) + " included")
        if self.selection.merged:
            notes.append("word pieces as computed")
        counted = f"{scores.size} scores" + (f" ({'; '.join(notes)})" if notes else "")
        why = (
            f"Why: if the components of q and k were independent with mean 0 and variance 1 "
            f"(the paper's assumption), q·k, a sum of d_k = {trace.d_k} products, would have "
            f"variance d_k = {trace.d_k}; the larger d_k, the larger the scores, pushing the "
            "softmax towards one-hot rows with vanishing gradients. Dividing by √d_k brings "
            "that variance back to 1. "
        )
        shown = (
            f"Here q and k have components of variance {_amount(q_variance)} and "
            f"{_amount(k_variance)}, and this head's {counted} have variance "
            f"{_amount(score_variance)}, the scaled ones {_amount(scaled_variance)} "
            f"(= {_amount(score_variance)} / {trace.d_k}; a variance here is the mean squared "
            "distance from the mean, ÷N)"
        )
        if trace.provenance.weights.is_drawn:
            shown += (
                ". attnviz's random W_Q and W_K break the assumption on purpose: for embeddings "
                "of variance 1, such as its random ones, they give q and k components of "
                "variance about 2, so that over many sentences the scaled scores' variance is "
                "about 4 and the softmax rows come out neither flat nor one-hot; the few scores "
                "of one sentence can be far from that."
            )
        elif self.pretrained and not trace.provenance.weights.trained:
            shown += ": this checkpoint's untrained weights need not meet the assumption."
        elif self.pretrained:
            shown += ": this model's q and k need not meet the assumption."
        else:
            shown += "."
        spread = [
            np.ptp(trace.scaled[head][i, :n_keys][allowed[i]])
            for i in range(n_queries)
            if allowed[i].any()
        ]
        if spread and max(spread) < 0.1:
            shown += (
                " Every row's scaled scores lie within 0.1 of each other, so the softmax rows "
                "come out nearly flat, every weight near 1 / (the row's number of keys)."
            )
        return why + shown

    def special_tokens_sentence(self, head: int) -> str:
        """What [CLS] and [SEP] are, and how much of this head's attention they receive: trained
        BERT models park attention on them (Clark et al. 2019, "What does BERT look at?")."""
        trace = self.trace
        masked = set(range(len(trace.tokens) - trace.provenance.masking.padding, len(trace.tokens)))
        special = [p for p in trace.provenance.special if p not in masked]
        names = {trace.tokens[p] for p in special}
        if not self.pretrained or not {"[CLS]", "[SEP]"} <= names:
            return ""
        # The mean over the rows shown for the sentence's words (a merged word's row is the
        # mean of its pieces' rows), so that it can be checked against the table.
        received = trace.weights[head][:, special].sum(axis=1)  # [n] each row's share
        groups = [g for g in self.selection.row_groups if g[0] not in trace.provenance.special]
        general = (
            "[CLS] and [SEP] are added to every input by the tokenizer: [CLS] first (its final "
            "vector stands for the whole input when the model is trained to classify) and [SEP] "
            "at the end (it separates sentences). They are not words of the sentence, yet trained "
            "models often send much attention to them in heads that have nothing to do for a "
            "word: a common no-op pattern (in BERT, Clark et al. 2019 found [SEP] receiving much "
            "of it in the middle layers)."
        )
        if not groups:  # no row of a word of the sentence (only [UNK] and the markers)
            return general
        share = float(np.mean([received[list(group)].mean() for group in groups]))
        return (
            f"{general} In this head the rows shown for the sentence's words give them "
            f"{self.number(share)} of their weight on average."
        )

    def after_attention(self) -> str:
        """What a transformer layer does with the attention's output, in this trace's model."""
        if self.pretrained and self.architecture == "gpt2":
            return (
                "In the model it is then added to the residual stream, h' = h + output, and the "
                "feed-forward block follows (as described at the top)."
            )
        if self.pretrained:
            return (
                "In the model it is then added back to X and normalised, LayerNorm(X + output), "
                "and the feed-forward block follows (as described at the top)."
            )
        into = "the decoder's X" if self.trace.is_cross else "X, this layer's input"
        return (
            f"In a full transformer layer it is then added back to {into} (a residual "
            "connection) and normalised, LayerNorm(X + output), and a feed-forward block "
            "follows; attnviz shows the attention sublayer."
        )

    def counted(self) -> str:
        """How many tokens were computed, and how many rows the tables show."""
        unit = "word piece" if self.pretrained else "token"
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
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"{plural(words, 'word')}, {listed}"

    def lowercased(self) -> str:
        """ "'The' is 'the'" when the tokenizer changed the case (or accents) of a word: in
        the tables, or with --words (which shows words as written) in the worked examples."""
        provenance = self.trace.provenance
        for word, group in zip(provenance.words, provenance.word_groups, strict=False):
            if group[0] in provenance.special:
                continue
            pieces = "".join(self.trace.tokens[p].removeprefix("##") for p in group)
            if pieces != word and pieces == _folded(word):
                where = "the worked examples" if self.selection.merged else "the tables"
                return f"{printable(word)!r} is {printable(pieces)!r} in {where}"
        return ""

    def hidden_names(self) -> str:
        """The hidden tokens' names, each once: "[CLS] and [SEP]"."""
        names = list(dict.fromkeys(printable(self.trace.tokens[p]) for p in self.selection.hidden))
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    # -- the lesson ----------------------------------------------------------------------------

    def write(self) -> list[Block]:
        self.header()
        self.tokens_and_embeddings()
        self.blocks.append(SectionEnd())
        for head in self.selection.heads:
            self.head(head)
            self.blocks.append(SectionEnd())
        self.concat_and_project()
        self.blocks.append(SectionEnd())
        if self.selection.focus is not None:
            self.current_step = FOCUS_STEP
            self.blocks.append(Pause("Focus", FOCUS_STEP))
            self.focus_section()
            self.blocks.append(SectionEnd())
        return self.blocks

    def header(self) -> None:
        trace, provenance = self.trace, self.trace.provenance
        kind = "cross-attention (encoder–decoder)" if trace.is_cross else "self-attention"
        self.blocks.append(Heading(f"attnviz · multi-head {kind}, step by step", "title"))
        self.say(
            Span("Z = softmax(Q·Kᵀ / √d_k) · V", "bold"),
            " for each head, then Concat(Z₁ … Z_h) · W_O",
        )
        if trace.is_cross:
            self.say(
                "Source (keys and values): ",
                Span(" ".join(printable(t) for t in self.selection.column_words), "italic"),
                f"  ({self.selection.n_columns} tokens)",
            )
        self.say(
            "Target (queries): " if trace.is_cross else "Sentence: ",
            Span(
                printable(trace.provenance.sentence)
                if trace.provenance.sentence
                else " ".join(printable(t) for t in self.selection.row_words),
                "italic",
            ),
            f"  ({self.counted()})",
        )
        self.say(
            f"Sizes: d_model = {trace.d_model}, h = {plural(trace.n_heads, 'head')}, "
            f"d_k = d_model / h = {trace.d_k}"
        )
        self.say("Embeddings: ", printable(provenance.embeddings.describe()))
        self.say("Weights: ", printable(provenance.weights.describe()))
        if provenance.weights.is_random:
            self.note(
                "Note: the weights are random, not learned. The patterns below come from "
                "random numbers, not from training: they show how attention is computed, "
                "not what a trained model attends to."
            )
        if self.trace.is_cross and provenance.weights.model is not None:
            self.say(
                f"These weights are a self-attention layer of {provenance.weights.model}, run "
                "here as cross-attention on other X: the steps are the same, the numbers are "
                "not the model's."
            )
        elif self.pretrained or provenance.weights.model is not None:  # also from its export
            self.say(SUBLAYER_SENTENCE.get(self.architecture, SUBLAYER_SENTENCE["bert"]))
        if self.selection.hidden:
            self.note(
                f"Note: {plural(len(self.selection.hidden), 'token')} ({self.hidden_names()}) "
                f"{'is' if len(self.selection.hidden) == 1 else 'are'} left out of the tables. "
                + (
                    "The weights were computed with them, so a row's weights can sum to less "
                    "than 1."
                    if float(self.trace.weights[..., list(self.selection.hidden)].max(initial=0))
                    > 0
                    else "They are masked and get no weight, so the rows still sum to 1."
                )
            )
        if self.selection.merged:
            self.note(
                "Note: --words shows each word as the mean of its pieces' rows (a weights "
                "column: the sum of its pieces' columns). The merged tables are averages for "
                "display: softmax and Z = weights·V hold for the word pieces as computed, not "
                "between merged tables, so the worked examples use the pieces."
            )
        lowered = self.lowercased()
        if lowered:
            self.note(
                "Note: the model's tokenizer lowercases the sentence (and strips accents) "
                f"before splitting it, so {lowered}."
            )

    def tokens_and_embeddings(self) -> None:
        trace, n = self.trace, self.n_shown
        embeddings = trace.provenance.embeddings
        if embeddings.kind in (EmbeddingsKind.MODEL, EmbeddingsKind.LAYER):
            self.step(1, "Word pieces and X, this layer's input")
            pieces = (
                f"{self.shown_words()} (--words: each row is the mean of the rows of the word "
                "pieces the model saw, and a word's weight column the sum of its pieces')"
                if self.selection.merged
                else f"{n} word pieces"
            )
            tokenizer = TOKENIZER_SENTENCE.get(self.architecture, TOKENIZER_SENTENCE["bert"])
            if trace.provenance.masking.padding:
                tokenizer += f", then the padding ({printable(trace.tokens[-1])})"
            self.say(
                f"{tokenizer}; shown here: {pieces}. Row i of X is what this layer receives: "
                f"{embeddings.describe()}. X has shape [n, d_model] = "
                f"[{self.n}, {trace.d_model}]{self.shown_rows()}."
            )
        elif trace.is_cross and trace.X_source is not None:
            self.step(1, "Tokens and embeddings of both sentences")
            self.say(
                "Cross-attention, as in a translation model's decoder: each target word asks (its "
                "query) and the source words answer (their keys and values). In the paper the "
                "queries come from the decoder's previous sublayer and the keys and values from "
                "the encoder's final output; here the target's embeddings X and the source's "
                "embeddings X_source stand in for those two. "
                f"X is [n_target, d_model] = [{n}, {trace.d_model}], X_source "
                f"[n_source, d_model] = [{len(self.keys)}, {trace.d_model}]."
            )
            self.word_order()
            x_source = self.selection.key_rows(trace.X_source)
            if trace.E_source is not None and trace.PE_source is not None:
                self.side_by_side(
                    [
                        Matrix(m, name, self.keys, self.dims(trace.d_model))
                        for m, name in (
                            (self.selection.key_rows(trace.E_source), "E_source"),
                            (self.selection.key_rows(trace.PE_source), "PE_source"),
                            (x_source, "X_source = E_source + PE_source"),
                        )
                    ]
                )
            else:
                self.show(Matrix(x_source, "X_source", self.keys, self.dims(trace.d_model)))
            self.blank()
        else:
            self.step(1, "Tokens and embeddings X")
            padding = trace.provenance.masking.padding
            padded = (
                f", then padded with {padding} {printable(trace.tokens[-1])}" if padding else ""
            )
            self.say(
                f"The sentence is split into {plural(self.n - padding, 'token')}{padded}. "
                "Each token becomes one row "
                f"of X, its embedding: a vector of d_model = {trace.d_model} numbers. "
                f"X has shape [n, d_model] = [{self.n}, {trace.d_model}]{self.shown_rows()}."
            )
        if not trace.is_cross:
            self.word_order()
        x = self.selection.rows(trace.X)
        if trace.E is not None and trace.PE is not None:
            self.side_by_side(
                [
                    Matrix(m, name, self.tokens, self.dims(trace.d_model))
                    for m, name in (
                        (self.selection.rows(trace.E), "E (tokens)"),
                        (self.selection.rows(trace.PE), "PE (positions)"),
                        (x, "X = E + PE"),
                    )
                ]
            )
        else:
            self.show(Matrix(x, "X", self.tokens, self.dims(trace.d_model)))

    def word_order(self) -> None:
        """Where word order comes from: learned position embeddings inside a model's X, the
        sinusoidal encoding added here (X = E + PE), or nowhere; each sentence true of this
        trace (the words named are the first two shown with the same row of E, or of X)."""
        trace = self.trace
        embeddings = trace.provenance.embeddings
        # A layer's input read from a model's export (--embeddings with --layer) is the model's.
        if embeddings.kind in (EmbeddingsKind.MODEL, EmbeddingsKind.LAYER) or embeddings.layer:
            reaches = "."
            if (embeddings.layer or 1) > 1:
                reaches = "; the order reaches this layer through the layers before it."
            if self.architecture == "gpt2":
                self.say(
                    "Word order is already in X: GPT-2 adds learned position embeddings (wpe, "
                    "one row per position from 0) to the token embeddings (wte) before layer 1"
                    + reaches
                )
            else:
                self.say(
                    "Word order is already in X: before layer 1 the model adds learned position "
                    "embeddings (position_embeddings, one row per position from 0) and the "
                    "token-type embedding to the word embeddings, then applies a LayerNorm"
                    + reaches
                )
            return

        def same_rows(rows: np.ndarray | None) -> tuple[int, int] | None:
            """The first two shown words (not special tokens) with equal rows: positions."""
            if rows is None:
                return None
            seen: dict[bytes, int] = {}
            for position in range(trace.n_tokens):
                if position in trace.provenance.special or self.selection.row_of(position) is None:
                    continue
                key = np.ascontiguousarray(rows[position]).tobytes()
                if key in seen:
                    return seen[key], position
                seen[key] = position
            return None

        paper = "as the paper does (Vaswani et al. 2017, §3.5)"
        if trace.PE is not None:
            x_names = "X = E + PE"
            if trace.is_cross:
                x_names += " and X_source = E_source + PE_source"
            origin = (
                "counted from 0 in each sentence (the paper adds PE at the bottom of its encoder "
                "and of its decoder)"
                if trace.is_cross
                else "counted from 0"
            )
            text = (
                "Attention alone ignores word order, so each token's embedding E gets its "
                f"position added, {x_names}, {paper}: with positions pos {origin}, "
                "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) in columns 1, 3, … and "
                "PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)) in columns 2, 4, …, so the first "
                "row of PE is [0, 1, 0, 1, …]."
            )
            twins = same_rows(trace.E)
            if twins is not None:
                first, second = twins
                weights_differ = not np.array_equal(
                    trace.weights[:, first], trace.weights[:, second]
                )
                text += (
                    f" {self.all_queries[first]!r} and {self.all_queries[second]!r} share E but "
                    "not PE, so their rows of X differ"
                    + (", and so do their weights." if weights_differ else ".")
                )
            self.say(text)
            return
        twins = same_rows(trace.X)
        if trace.is_cross:
            text = (
                "Attention alone ignores word order: permuting the target words only permutes "
                "the rows of every result below, and permuting the source words only permutes "
                "the rows of K and V and the columns of the scores and weights, leaving Z and "
                "the output as they are"
            )
        elif trace.provenance.masking.causal:
            text = (
                "Attention alone ignores word order; here only the causal mask tells positions "
                "apart"
            )
        else:
            text = (
                "Attention alone ignores word order: it treats the sentence as a set of words. "
                "Permuting the words permutes the rows of X, Q, K, V, Z and the output, and the "
                "rows and the columns of the scores and weights, alike: no number changes, "
                "only where it stands"
            )
        if twins is not None:
            pair = f"{self.all_queries[twins[0]]!r} and {self.all_queries[twins[1]]!r}"
            if trace.tokens[twins[0]] != trace.tokens[twins[1]]:
                pair += " (one word once case is ignored, as embeddings are looked up)"
            if trace.provenance.masking.causal:
                text += (
                    f", so {pair} get identical rows of X, Q, K and V and only the mask gives "
                    "them different weights"
                )
            else:
                text += (
                    f". Nothing in X says where a word is, so {pair} get identical rows of X and "
                    "so identical weights and outputs"
                )
        x_names = "X and X_source" if trace.is_cross else "X"
        self.say(f"{text}. --positions sinusoidal adds each word's position to {x_names}, {paper}.")

    def head(self, head: int) -> None:
        trace, selection = self.trace, self.selection
        h = subscript(head + 1)
        examples = worked.head_examples(trace, selection, head)
        self.example_column = selection.column_of(examples.dot_product.key)

        def b(name: str) -> str:
            return self.bias(name, h)

        self.step(
            2,
            f"Queries, keys and values of head {head + 1}",
            section=f"Head {head + 1} of {trace.n_heads}",
        )
        n_keys = len(self.trace.key_tokens)
        self.say(
            f"Head {head + 1} projects X with its own matrices W_Q{h}, W_K{h}, W_V{h}, each "
            f"[d_model, d_k] = [{trace.d_model}, {trace.d_k}]: Q{h} = X·W_Q{h}{b('Q')}, "
            + (
                f"[n_target, d_k] = [{self.n}, {trace.d_k}]; K{h} = X_source·W_K{h}, "
                f"V{h} = X_source·W_V{h}, [n_source, d_k] = [{n_keys}, {trace.d_k}]. "
                if trace.is_cross
                else f"K{h} = X·W_K{h}{b('K')}, V{h} = X·W_V{h}{b('V')}, each [n, d_k] = "
                f"[{self.n}, {trace.d_k}]{self.shown_rows()}. "
            )
            + f"(V's width d_v equals d_k = {trace.d_k} here, as in the paper.) "
            + "A query asks what a word is looking for, a key says what it offers, a value is "
            f"what it passes on. Each number of Q{h} is a row of X times a column of W_Q{h}; the "
            f"first of q_{self.all_queries[examples.projection.token]}:"
        )
        self.example_line(self.text.projection(examples.projection))
        self.rounding_note()
        if self.options.show_weights:
            self.side_by_side(
                [
                    Matrix(w[head], f"W_{name}{h}", self.dims(trace.d_model), self.dims(trace.d_k))
                    for name, w in (("Q", trace.W_Q), ("K", trace.W_K), ("V", trace.W_V))
                ]
            )
            self.blank()
        x_kv = "X_source" if trace.is_cross else "X"
        q = selection.rows(trace.Q[head])
        k, v = selection.key_rows(trace.K[head]), selection.key_rows(trace.V[head])
        queries = Matrix(q, f"Q{h} = X·W_Q{h}{b('Q')}", self.tokens, self.dims(trace.d_k))
        keys = Matrix(k, f"K{h} = {x_kv}·W_K{h}{b('K')}", self.keys, self.dims(trace.d_k))
        values = Matrix(v, f"V{h} = {x_kv}·W_V{h}{b('V')}", self.keys, self.dims(trace.d_k))
        if trace.is_cross:  # queries have the target's rows, keys and values the source's
            self.show(queries)
            self.blank()
            self.side_by_side([keys, values])
        else:
            self.side_by_side([queries, keys, values])

        dot = examples.dot_product
        self.step(3, "Raw scores Q·Kᵀ")
        self.say(
            "score[i, j] = q_i · k_j: how well the query of word i (row) matches the key of "
            "word j (column). For example:"
        )
        self.example_line(self.text.dot_product(dot))
        self.rounding_note()
        scores = selection.pairs(trace.scores[head])
        self.show(Matrix(scores, f"scores{h} = Q{h}·K{h}ᵀ", self.tokens, self.keys))

        scaling = examples.scaling
        self.step(4, f"Scale by √d_k = √{trace.d_k} = {self.number(scaling.sqrt_d_k)}")
        self.say(self.scaling_sentence(head), " For example:")
        self.example_line(self.text.scaling(scaling))
        self.rounding_note()
        masked = trace.mask is not None and not trace.mask.all()
        if masked:
            self.note(self.mask_sentence())
        self.show(
            Matrix(
                selection.pairs(trace.scaled[head], masked=trace.masked if masked else None),
                f"scaled{h} = scores{h} / √d_k" + (", masked" if masked else ""),
                self.tokens,
                self.keys,
                masked=selection.masked_pairs(trace.masked) if masked else None,
            )
        )

        softmax = examples.softmax
        self.step(5, "Softmax: attention weights")
        self.say(
            "Each row becomes non-negative weights that sum to 1: "
            "w_ij = exp(s_ij) / Σ_j' exp(s_ij')"
            + (", and a masked pair's weight is exactly 0. " if masked else ". ")
            + "(attnviz subtracts the row's maximum first, which changes nothing but keeps exp() "
            "from overflowing.) The Σ column adds the unrounded weights"
            + (
                f"; every sum runs over all keys as computed, {self.hidden_names()} included, "
                "though the tables leave them out"
                if self.selection.hidden
                else ""
            )
            + f". Row {self.all_queries[softmax.query]!r}, column "
            f"{self.all_keys[softmax.key]!r}:"
        )
        self.example_line(self.text.softmax(softmax))
        self.rounding_note()
        if head == self.selection.heads[0]:
            special = self.special_tokens_sentence(head)
            if special:
                self.say(special)
        self.show(
            Matrix(
                selection.pairs(trace.weights[head], total=True),
                f"weights{h} = softmax(scaled{h})",
                self.tokens,
                self.keys,
                shade=True,
                row_sums=True,
            )
        )

        self.step(6, f"Z{h} = weights{h}·V{h}")
        n_rows = "n_target" if trace.is_cross else "n"
        self.say(
            "Each word's output is the weighted sum of all value vectors, with its row of "
            f"weights: z_i = Σ_j w_ij·v_j. Z{h} has shape [{n_rows}, d_v] = "
            f"[{self.n}, {trace.d_k}]{self.shown_rows()}. For example, z of "
            f"{self.all_queries[examples.weighted_sum.query]!r} is the sum below of rows of "
            f"V{h}, and its first number, worked out, is the first number of its row of Z{h}:"
        )
        self.example_line(self.text.weighted_sum(examples.weighted_sum))
        self.example_line(self.text.weighted_sum_element(examples.weighted_sum))
        self.rounding_note()
        z = selection.rows(trace.Z[head])
        self.show(Matrix(z, f"Z{h} = weights{h}·V{h}", self.tokens, self.dims(trace.d_k)))

    def concat_and_project(self) -> None:
        trace, n = self.trace, self.n
        self.step(7, "Concatenate the heads and project with W_O", section="All heads")
        blocks = ", ".join(
            f"{head * trace.d_k + 1}–{(head + 1) * trace.d_k} are Z{subscript(head + 1)}"
            for head in range(min(trace.n_heads, 4))
        )
        if trace.n_heads > 4:
            blocks += ", …"
        self.say(
            f"The {trace.n_heads} heads' outputs are put side by side: Concat = [Z₁ | … | Z_h], "
            f"shape [n, h·d_k] = [{n}, {trace.n_heads * trace.d_k}] "
            f"(columns {blocks}{self.shown_rows().replace(' (', '; ').rstrip(')')}). "
            f"W_O [h·d_k, d_model] = [{trace.n_heads * trace.d_k}, {trace.d_model}] mixes them "
            f"back into d_model = {trace.d_model} columns: output = Concat·W_O{self.bias('O')}, "
            "the attention sublayer's output for each word. "
            f"{self.after_attention()}"
            + (
                " Why several heads: each has its own W_Q, W_K and W_V, so each can look for "
                'something different ("different representation subspaces", in the paper\'s '
                f"words), and with d_k = d_model / h the {trace.n_heads} heads together cost "
                "about as much as one head of full width."
                if trace.n_heads > 1
                else ""
            )
        )
        if self.selection.heads != tuple(range(trace.n_heads)):
            self.say(
                Span("(Concat always uses every head, including those not shown above.)", "dim")
            )
        self.show(
            Matrix(
                self.selection.rows(trace.concat),
                "Concat = [Z₁ | … | Z_h]",
                self.tokens,
                self.dims(trace.concat.shape[1]),
            )
        )
        if self.options.show_weights:
            self.blank()
            self.show(
                Matrix(trace.W_O, "W_O", self.dims(trace.W_O.shape[0]), self.dims(trace.d_model))
            )
        example = worked.output_element(trace, self.example)
        self.blank()
        self.say(
            "W_O's rows for head h, W_O^(h), carry Z_h into the output: Concat·W_O = "
            f"Σ_h Z_h·W_O^(h){self.bias('O')}. For example, the first number of the output of "
            f"{self.all_queries[example.token]!r}, head by head:"
        )
        self.example_line(self.text.output_sum(example))
        self.rounding_note()
        self.show(
            Matrix(
                self.selection.rows(trace.output),
                f"output = Concat·W_O{self.bias('O')}",
                self.tokens,
                self.dims(trace.d_model),
            )
        )

    def focus_section(self) -> None:
        trace, selection = self.trace, self.selection
        focus = selection.focus
        assert focus is not None
        self.blank()
        name = printable(focus.label)
        self.blocks.append(Heading(f"Focus: where does {name!r} look?", "section"))
        row, owner = repr(name), name
        piece = self.all_queries[focus.index]
        if not selection.merged and trace.tokens[focus.index].casefold() != focus.word.casefold():
            row, owner = f"{piece!r} (the first piece of {name!r})", piece
        self.say(
            f"Row {row} of each head's weights, largest first: the share of each word's value "
            f"vector in the output z of {owner!r}."
        )
        rows = selection.focus_weights(trace.weights)
        for head in selection.heads:
            weights = rows[head]
            order = np.argsort(-weights, kind="stable")
            self.blank()
            self.blocks.append(Heading(f"Head {head + 1}", "head"))
            shown = order[:12]
            self.blocks.append(
                Bars(
                    labels=tuple(self.keys[index] for index in shown),
                    weights=tuple(float(weights[index]) for index in shown),
                    texts=tuple(self.number(weights[index]) for index in shown),
                )
            )
            if len(order) > len(shown):
                rest = float(weights[order[len(shown) :]].sum())
                more = len(order) - len(shown)
                self.say(f"{ELLIPSIS} {plural(more, 'more word')}, together {self.number(rest)}")
            if selection.hidden:
                hidden = 1.0 - float(weights.sum())
                self.say(f"(hidden {self.hidden_names()}, together {self.number(hidden)})")
            example = worked.weighted_sum(trace, head, focus.index)
            if selection.merged and len(selection.row_groups[selection.focus_row or 0]) > 1:
                self.say(
                    f"The bars above average the rows of the pieces of {name!r}; each piece has "
                    "its own z, as computed; the first piece's is:"
                )
            self.example_line(self.text.weighted_sum(example, limit=12))
            self.example_line(self.text.weighted_sum_element(example))
            self.rounding_note()

    def mask_sentence(self) -> str:
        return mask_sentence(self.trace)


def mask_sentence(trace: AttentionTrace) -> str:
    """Why some scores are −∞: the causal mask, the padding mask, or both."""
    masking = trace.provenance.masking
    parts = []
    if masking.causal:
        parts.append(
            "Causal mask (decoder self-attention): word i may look only at itself and the "
            "words before it, so every later word is masked. Why: a decoder is trained to "
            "predict each next word, so it must not see the words it is predicting; the mask "
            "also lets training predict every position of a sentence at once."
        )
    if masking.padding:
        pad = printable(trace.tokens[-1])
        parts.append(
            f"Padding mask: the {pad} tokens at the end only make the sentence a fixed "
            "length, so no word may look at them; their columns are masked and get zero "
            "weight. Why padding: sentences of different lengths are computed together in "
            "one batch, as one array, so the shorter ones are filled up to the longest."
        )
    return " ".join(parts) + " A masked score is set to −∞ before the softmax, and exp(−∞) = 0."
