"""What the step-by-step lesson says: its sentences, worked examples and tables, as data.

``lesson(trace, selection, options)`` returns the lesson as a list of blocks (headings,
paragraphs, tables, focus bars, pauses). Every number comes from the trace, the worked examples
from attnviz.worked; nothing here computes attention. How the blocks are drawn (wrapping,
table layout, colour) is the renderer's business: render/terminal.py for Rich.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz import worked
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
from attnviz.render.examples import ExampleText
from attnviz.render.labels import ELLIPSIS, occurrence_labels, plural, subscript
from attnviz.render.options import LessonOptions
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


def lesson(
    trace: AttentionTrace, selection: Selection, options: LessonOptions | None = None
) -> list[Block]:
    """The whole lesson for ``trace`` as the ``selection`` shows it."""
    return _Writer(trace, selection, options or LessonOptions()).write()


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
        self.all_queries = occurrence_labels([printable(token) for token in trace.tokens])
        self.all_keys = (
            occurrence_labels([printable(token) for token in trace.key_tokens])
            if trace.is_cross
            else self.all_queries
        )
        self.example = worked.example_query(trace, selection)
        self.example_row = selection.row_of(self.example)
        self.example_column: int | None = None  # the example's key, set for each head
        self.pretrained = trace.provenance.weights.is_pretrained
        hidden = self.hidden_names() if selection.hidden else ""
        self.text = ExampleText(options.decimals, self.all_queries, self.all_keys, hidden)
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
        if matrix.column_labels is self.keys and self.example_column is not None:
            matrix = matrix._replace(keep_column=self.example_column)
        return matrix

    def step(self, number: int, title: str) -> None:
        heading = f"Step {number} · {title}"
        self.blocks += [Pause(heading), Blank(), Heading(heading, "step")]

    def dims(self, count: int) -> list[str]:
        return [str(i) for i in range(1, count + 1)]

    @property
    def n_shown(self) -> int:
        return self.selection.n_rows

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
            self.blocks.append(Pause("Focus"))
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
            Span(" ".join(printable(t) for t in self.selection.row_words), "italic"),
            f"  ({plural(self.n_shown, 'token')})",
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
        if self.pretrained:
            self.say(SUBLAYER_SENTENCE.get(self.architecture, SUBLAYER_SENTENCE["bert"]))
        if self.selection.hidden:
            self.note(
                f"Note: {self.hidden_names()} are left out of the tables. The weights were "
                "computed with them, so a row's weights can sum to less than 1."
            )
        if self.selection.merged:
            self.note(
                "Note: --words shows each word as the mean of its pieces' rows (a weights "
                "column: the sum of its pieces' columns). The worked examples use the word "
                "pieces as computed, so their sums hold exactly."
            )

    def tokens_and_embeddings(self) -> None:
        trace, n = self.trace, self.n_shown
        embeddings = trace.provenance.embeddings
        if embeddings.kind in (EmbeddingsKind.MODEL, EmbeddingsKind.LAYER):
            self.step(1, "Word pieces and X, this layer's input")
            pieces = (
                f"{n} words (--words: each row is the mean of the rows of the word "
                "pieces the model saw, and a word's weight column the sum of its pieces')"
                if self.selection.merged
                else f"{n} word pieces"
            )
            tokenizer = TOKENIZER_SENTENCE.get(self.architecture, TOKENIZER_SENTENCE["bert"])
            if trace.provenance.masking.padding:
                tokenizer += f", then the padding ({printable(trace.tokens[-1])})"
            self.say(
                f"{tokenizer}; shown here: {pieces}. Row i of X is what this layer receives: "
                f"{embeddings.describe()}. X has shape [n, d_model] = [{n}, {trace.d_model}]."
            )
        elif trace.is_cross and trace.X_source is not None:
            self.step(1, "Tokens and embeddings of both sentences")
            self.say(
                "Cross-attention, as in a translation model's decoder: each target word asks "
                "(its query comes from X, the target's embeddings) and the source words answer "
                "(their keys and values come from X_source, the encoder's side). "
                f"X is [n_target, d_model] = [{n}, {trace.d_model}], X_source "
                f"[n_source, d_model] = [{len(self.keys)}, {trace.d_model}]."
            )
            x_source = self.selection.key_rows(trace.X_source)
            self.show(Matrix(x_source, "X_source", self.keys, self.dims(trace.d_model)))
            self.blank()
        else:
            self.step(1, "Tokens and embeddings X")
            self.say(
                f"The sentence is split into {n} tokens. Each token becomes one row "
                f"of X, its embedding: a vector of d_model = {trace.d_model} numbers. "
                f"X has shape [n, d_model] = [{n}, {trace.d_model}]."
            )
        x = self.selection.rows(trace.X)
        self.show(Matrix(x, "X", self.tokens, self.dims(trace.d_model)))

    def head(self, head: int) -> None:
        trace, selection = self.trace, self.selection
        h = subscript(head + 1)
        examples = worked.head_examples(trace, selection, head)
        self.example_column = selection.column_of(examples.dot_product.key)

        def b(name: str) -> str:
            return self.bias(name, h)

        self.blank()
        self.blocks.append(Heading(f"Head {head + 1} of {trace.n_heads}", "section"))
        self.step(2, f"Queries, keys and values of head {head + 1}")
        n, n_keys = self.n_shown, len(self.keys)
        self.say(
            f"Head {head + 1} projects X with its own matrices W_Q{h}, W_K{h}, W_V{h}, each "
            f"[d_model, d_k] = [{trace.d_model}, {trace.d_k}]: Q{h} = X·W_Q{h}{b('Q')}, "
            + (
                f"[n_target, d_k] = [{n}, {trace.d_k}]; K{h} = X_source·W_K{h}, "
                f"V{h} = X_source·W_V{h}, [n_source, d_k] = [{n_keys}, {trace.d_k}]. "
                if trace.is_cross
                else f"K{h} = X·W_K{h}{b('K')}, V{h} = X·W_V{h}{b('V')}, each [n, d_k] = "
                f"[{n}, {trace.d_k}]. "
            )
            + "A query asks what a word is looking for, a key says what it offers, a value is "
            f"what it passes on. Each number of Q{h} is a row of X times a column of W_Q{h}; the "
            f"first of q_{self.all_queries[examples.projection.token]}:"
        )
        self.example_line(self.text.projection(examples.projection))
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
            "word j (column). For example (worked with the unrounded numbers, so multiplying the "
            "rounded ones by hand can differ in the last digit"
            + ("; --decimals 4 shows more):" if self.options.decimals < 4 else "):")
        )
        name = f"q_{self.all_queries[dot.query]} · k_{self.all_keys[dot.key]}"
        self.example_line(self.text.dot_product(dot.q, dot.k, dot.result, name))
        scores = selection.pairs(trace.scores[head])
        self.show(Matrix(scores, f"scores{h} = Q{h}·K{h}ᵀ", self.tokens, self.keys))

        scaling = examples.scaling
        self.step(4, f"Scale by √d_k = √{trace.d_k} = {self.number(scaling.sqrt_d_k)}")
        self.say(
            f"A dot product of d_k = {trace.d_k} terms grows with d_k (its variance is about "
            "d_k), which would push the softmax towards one-hot rows with vanishing gradients. "
            "Dividing by √d_k keeps the scores' variance near 1. For example:"
        )
        self.example_line(
            f"{self.text.exact(scaling.score)} / {self.text.exact(scaling.sqrt_d_k)} = "
            f"{self.text.exact(scaling.result)}"
        )
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
            "Each row becomes positive weights that sum to 1: w_ij = exp(s_ij) / Σ_j' exp(s_ij'). "
            "(attnviz subtracts the row's maximum first, which changes nothing but keeps exp() "
            f"from overflowing.) Row {self.all_queries[softmax.query]!r}, column "
            f"{self.all_keys[softmax.key]!r}:"
        )
        self.example_line(self.text.softmax(softmax))
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
        self.say(
            "Each word's output is the weighted sum of all value vectors, with its row of "
            f"weights: z_i = Σ_j w_ij·v_j. Z{h} has shape [n, d_k] = "
            f"[{n}, {trace.d_k}]. For example:"
        )
        self.example_line(self.text.weighted_sum(examples.weighted_sum))
        z = selection.rows(trace.Z[head])
        self.show(Matrix(z, f"Z{h} = weights{h}·V{h}", self.tokens, self.dims(trace.d_k)))

    def concat_and_project(self) -> None:
        trace, n = self.trace, self.n_shown
        self.blank()
        self.blocks.append(Heading("All heads", "section"))
        self.step(7, "Concatenate the heads and project with W_O")
        blocks = ", ".join(
            f"{head * trace.d_k + 1}–{(head + 1) * trace.d_k} are Z{subscript(head + 1)}"
            for head in range(min(trace.n_heads, 4))
        )
        if trace.n_heads > 4:
            blocks += ", …"
        self.say(
            f"The {trace.n_heads} heads' outputs are put side by side: Concat = [Z₁ | … | Z_h], "
            f"shape [n, h·d_k] = [{n}, {trace.n_heads * trace.d_k}] "
            f"(columns {blocks}). "
            f"W_O [h·d_k, d_model] = [{trace.n_heads * trace.d_k}, {trace.d_model}] mixes them "
            f"back into d_model = {trace.d_model} columns: output = Concat·W_O{self.bias('O')}, "
            "the layer's "
            "result for each word."
        )
        if self.selection.heads != tuple(range(trace.n_heads)):
            self.say(Span("(Concat always uses every head, also those not shown above.)", "dim"))
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
            self.say(Span(self.text.weighted_sum(example, limit=12), "example"))

    def mask_sentence(self) -> str:
        """Why some scores are −∞: the causal mask, the padding mask, or both."""
        masking = self.trace.provenance.masking
        parts = []
        if masking.causal:
            parts.append(
                "Causal mask (decoder self-attention): word i may look only at itself and the "
                "words before it, so every later word is masked."
            )
        if masking.padding:
            pad = printable(self.trace.tokens[-1])
            parts.append(
                f"Padding mask: the {pad} tokens at the end only make the sentence a fixed "
                "length, so no word may look at them; their columns are masked and get zero "
                "weight."
            )
        return " ".join(parts) + " A masked score is set to −∞ before the softmax, and exp(−∞) = 0."
