"""Which part of one trace a view shows: the layer, the heads, the focus word, special tokens
hidden or not, word pieces merged into words or not.

A Selection is a view over one trace, never a second trace: it names the trace's positions
behind each shown row and column. Hiding [CLS] and [SEP] leaves their rows and columns out;
merging a word's pieces shows one row per word, the mean of its pieces' rows (a weights row of
means still sums to 1), and one column per word, the mean of its pieces' columns, or for the
attention weights their sum (all the attention that reaches any piece of the word). The worked
examples (attnviz.worked) always use the trace's own positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, option, spelled
from attnviz.options import ViewOptions as ViewOptions  # what a view shows, as views name it
from attnviz.provenance import Provenance
from attnviz.tokens import Focus, default_focus, find_focus, printable
from attnviz.trace import AttentionTrace

#: --head all: every head, each shown in full by the lesson.
ALL_HEADS = "all"

Groups = tuple[tuple[int, ...], ...]


class Selection(NamedTuple):
    """The rows, columns and heads a view shows of one trace, in the trace's positions."""

    heads: tuple[int, ...]  # heads to show, from 0 (printed from 1)
    focus: Focus | None  # the word followed; focus.index is a position of the trace
    row_groups: Groups  # for each shown row, the query positions it stands for
    column_groups: Groups  # for each shown column, the key positions it stands for
    row_words: tuple[str, ...]  # the shown rows' words, as written (not yet escaped)
    column_words: tuple[str, ...]  # the shown columns' words
    hidden: tuple[int, ...] = ()  # positions left out (special tokens, with hide_special)
    merged: bool = False  # rows and columns are words made of several pieces
    notes: tuple[str, ...] = ()  # what the person should be told about the choice

    @property
    def n_rows(self) -> int:
        return len(self.row_groups)

    @property
    def n_columns(self) -> int:
        return len(self.column_groups)

    @property
    def is_whole(self) -> bool:
        """Every position shown as itself: the tables are the trace's own matrices."""
        return not self.hidden and not self.merged

    @property
    def focus_row(self) -> int | None:
        """The shown row of the focus word."""
        return None if self.focus is None else self.row_of(self.focus.index)

    def row_of(self, position: int) -> int | None:
        """The shown row that query ``position`` belongs to; None when it is hidden."""
        return _index_of(self.row_groups, position)

    def column_of(self, position: int) -> int | None:
        """The shown column that key ``position`` belongs to; None when it is hidden."""
        return _index_of(self.column_groups, position)

    @property
    def shown_columns(self) -> tuple[int, ...]:
        """Every key position that some shown column stands for."""
        return tuple(p for group in self.column_groups for p in group)

    def rows(self, array: FloatArray) -> FloatArray:
        """Rows of a per-query array as shown: [n, …] -> [rows, …] (a word: its pieces' mean)."""
        return _gather(array, self.row_groups, axis=0)

    def key_rows(self, array: FloatArray) -> FloatArray:
        """Rows of a per-key array (K, V, X_source) as shown: [n_k, …] -> [columns, …]."""
        return _gather(array, self.column_groups, axis=0)

    def pairs(
        self, matrix: FloatArray, *, total: bool = False, masked: np.ndarray | None = None
    ) -> FloatArray:
        """A query × key matrix as shown: [n_q, n_k] -> [rows, columns].

        Rows: the mean of a word's pieces. Columns: the mean too, or with ``total`` (attention
        weights) the sum, so that a shown row of weights still sums to what reaches its words.
        ``masked`` [n_q, n_k] bool: pairs left out of a word's mean (masked scores, −∞ before
        the softmax); a cell with none left is NaN.
        """
        if masked is not None and not self.is_whole and not total:
            # The mean of the pairs behind each cell that were allowed: their sum over their
            # count (0 / 0, every pair masked, is NaN).
            allowed = (~masked).astype(np.float64)
            sums = self._sum_both(np.where(masked, 0.0, matrix))
            counts = self._sum_both(allowed)
            with np.errstate(invalid="ignore", divide="ignore"):
                means: FloatArray = sums / counts
            return means
        by_rows = _gather(matrix, self.row_groups, axis=0)
        return _gather(by_rows, self.column_groups, axis=1, total=total)

    def _sum_both(self, matrix: FloatArray) -> FloatArray:
        by_rows = _gather(matrix, self.row_groups, axis=0, total=True)
        return _gather(by_rows, self.column_groups, axis=1, total=True)

    def masked_pairs(self, masked: np.ndarray) -> np.ndarray:
        """Which shown cells are masked: [n_q, n_k] bool -> [rows, columns], True where every
        pair behind the cell was masked."""
        rows = np.stack([masked[list(group)].all(axis=0) for group in self.row_groups])
        return np.stack([rows[:, list(group)].all(axis=1) for group in self.column_groups], 1)

    def focus_weights(self, weights: FloatArray) -> FloatArray:
        """The focus word's shown row of weights in each head: [h, n_q, n_k] -> [h, columns]."""
        if self.focus is None:
            raise ValueError("this selection follows no word")
        row = self.focus_row
        assert row is not None  # a focus word is never hidden (select() refuses it)
        group = list(self.row_groups[row])
        return _gather(weights[:, group].mean(axis=1), self.column_groups, axis=1, total=True)


def _index_of(groups: Groups, position: int) -> int | None:
    for index, group in enumerate(groups):
        if position in group:
            return index
    return None


def _gather(array: FloatArray, groups: Groups, *, axis: int, total: bool = False) -> FloatArray:
    """Pick (single positions) or combine (groups) along ``axis``: mean, or sum with total."""
    if all(len(group) == 1 for group in groups):
        return np.take(array, [group[0] for group in groups], axis=axis)
    combine = np.sum if total else np.mean
    parts = [combine(np.take(array, list(group), axis=axis), axis=axis) for group in groups]
    return np.stack(parts, axis=axis)


def no_layers() -> str:
    """What --layer where no layers are (the random mode, or files that hold one layer) says."""
    made = spelled(
        "--model … --export FILE",
        "attnviz.export_layers(attnviz.explain(…, model=…).layers, FILE)",
    )
    return (
        f"{option('layer')} needs {option('model')}, or a model's export ({made}) as "
        f"{option('weights')} or {option('embeddings')}: the random mode has one layer."
    )


def choose_layer(layers: Sequence[AttentionTrace], layer: int | None) -> AttentionTrace:
    """The model layer to show, numbered from 1 as a person types it; the last by default.
    (A layer read from a model's export is chosen as it is read: TraceOptions.export_layer.)"""
    if layer is None:
        return layers[-1]
    if not layers[0].provenance.weights.is_pretrained:
        raise AttnvizError(no_layers())
    if not 1 <= layer <= len(layers):
        raise AttnvizError(
            f"{option('layer', layer)} does not exist; layers are numbered 1 to {len(layers)}."
        )
    return layers[layer - 1]


def choose_heads(trace: AttentionTrace, head: int | str | None) -> tuple[int, ...]:
    """Heads to show, numbered from 0; ``head`` is numbered from 1 as a person types it, or
    "all"."""
    if head is None or head == ALL_HEADS:
        return tuple(range(trace.n_heads))
    if isinstance(head, str):
        raise AttnvizError(f"{option('head', head)}: give a head's number, from 1, or {ALL_HEADS}.")
    if not 1 <= head <= trace.n_heads:
        raise AttnvizError(
            f"{option('head', head)} does not exist; heads are numbered 1 to {trace.n_heads}."
        )
    return (head - 1,)


def select(trace: AttentionTrace, options: ViewOptions | None = None) -> Selection:
    """The Selection ``options`` describe for ``trace``: heads, focus, hidden and merged tokens.

    Raises AttnvizError with the fix when a head does not exist, a focus word is not in the
    sentence, --words is asked of tokens that are words already, or every token would hide.
    """
    options = options or ViewOptions()
    provenance = trace.provenance
    if options.words and not provenance.word_groups and provenance.weights.is_pretrained:
        raise AttnvizError(
            f"{option('words')} merges a model's word pieces into words; "
            f"{printable(provenance.weights.model or 'the model')}'s tokens are whole words "
            "already."
        )
    if options.words and not provenance.word_groups:
        raise AttnvizError(
            f"{option('words')} needs {option('model')}: the random mode's tokens are words "
            "already."
        )
    heads = choose_heads(trace, options.head)
    hidden = tuple(sorted(provenance.special)) if options.hide_special else ()
    if options.words:
        word_groups, words = sentence_words(provenance)
        row_groups = _visible(word_groups, hidden)
        row_words = tuple(
            word for word, group in zip(words, word_groups, strict=True) if group in row_groups
        )
    else:
        row_groups = _visible(tuple((i,) for i in range(trace.n_tokens)), hidden)
        row_words = tuple(trace.tokens[group[0]] for group in row_groups)
    if not row_groups:
        raise AttnvizError(f"{option('hide_special')} would hide every token.")
    if trace.is_cross:  # the source words: never special, never merged
        column_groups: Groups = tuple((i,) for i in range(len(trace.key_tokens)))
        column_words = trace.key_tokens
    else:
        column_groups, column_words = row_groups, row_words
    focus, notes = _focus(trace, options.focus, row_groups, row_words)
    return Selection(
        heads=heads,
        focus=focus,
        row_groups=row_groups,
        column_groups=column_groups,
        row_words=row_words,
        column_words=column_words,
        hidden=hidden,
        merged=options.words,
        notes=notes,
    )


def sentence_words(provenance: Provenance) -> tuple[Groups, tuple[str, ...]]:
    """The pieces grouped into the sentence's words, as --words shows them: the tokenizer's
    words (provenance.word_groups) that touch in the sentence, with no space between them, are
    one word. BERT's tokenizer cuts "didn't" into the words "didn", "'" and "t", GPT-2's into
    "didn" and "'t"; a reader counts one word, and so does --words. A special token stays a
    group of its own; a tokenizer word not found in the sentence as written keeps its group."""
    special = set(provenance.special)
    groups: list[tuple[int, ...]] = []
    words: list[str] = []
    spans: list[tuple[int, int] | None] = []  # where each merged word stands in the sentence
    cursor = 0
    for group, word in zip(provenance.word_groups, provenance.words, strict=True):
        start = (
            -1 if special.issuperset(group) or not word else provenance.sentence.find(word, cursor)
        )
        span = None if start < 0 else (start, start + len(word))
        previous = spans[-1] if spans else None
        if span is not None and previous is not None and previous[1] == span[0]:
            groups[-1] += group
            words[-1] += word
            spans[-1] = (previous[0], span[1])
            cursor = span[1]
            continue
        groups.append(group)
        words.append(word)
        spans.append(span)
        if span is not None:
            cursor = span[1]
    return tuple(groups), tuple(words)


def _visible(groups: Groups, hidden: Sequence[int]) -> Groups:
    """The groups not made only of hidden positions (a special token is a group of its own)."""
    left_out = set(hidden)
    return tuple(group for group in groups if not left_out.issuperset(group))


def _focus(
    trace: AttentionTrace, spec: str | None, row_groups: Groups, row_words: Sequence[str]
) -> tuple[Focus | None, tuple[str, ...]]:
    """The focus word among the shown rows, and a note when its word occurs more than once.

    With a model's tokenizer the focus is a word of the sentence (its punctuation aside),
    followed at its first piece: "it" is not the piece "it" inside "sit", and "tokenization" is
    found though the tokenizer split it. A piece that is no word ("[CLS]", "##ization") is found
    too.
    """
    starts = {group[0]: row for row, group in enumerate(row_groups)}
    words = [(starts[start], word) for start, word in _words(trace) if start in starts]
    shown: Focus | None
    if words:  # found among the words first, then among the pieces
        word_list = [word for _, word in words]
        try:
            found = default_focus(word_list) if spec is None else find_focus(word_list, spec)
            shown = None if found is None else replace(found, index=words[found.index][0])
        except AttnvizError:
            shown = find_focus(row_words, spec or "")  # a piece; else its error names them
    elif spec is None:
        # "it" by default in self-attention, the classic question; cross follows no word unless
        # asked to.
        shown = None if trace.is_cross else default_focus(row_words)
    else:
        shown = find_focus(row_words, spec)
    if shown is None:
        return None, ()
    focus = replace(shown, index=row_groups[shown.index][0])  # the trace's position, 1st piece
    notes: tuple[str, ...] = ()
    if spec is not None and ":" not in spec and focus.n_occurrences > 1:
        notes = (
            f"{focus.word!r} occurs {focus.n_occurrences} times; following the first. "
            f"Use {option('focus', f'{focus.word}:2')} for the second.",
        )
    return focus, notes


#: Punctuation a word of the sentence may carry that a --focus word does not: "it." is "it".
_PUNCTUATION = "\"'.,;:!?()[]{}«»“”‘’…—–-"


def _words(trace: AttentionTrace) -> list[tuple[int, str]]:
    """(first piece's position, word) for each word the tokenizer's groups spell, special tokens
    left out and the word's own punctuation stripped."""
    provenance = trace.provenance
    special = set(provenance.special)
    found = []
    for group, word in zip(provenance.word_groups, provenance.words, strict=True):
        bare = word.strip(_PUNCTUATION)
        if bare and not special.issuperset(group):
            found.append((group[0], bare))
    return found
