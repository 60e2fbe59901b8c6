"""How a focus word's attention changes between two sentences: each head's row in A and in B,
and how far apart they are.

The two sentences' words are aligned first: the longest run of words both have, in order (a
longest common subsequence, so "The animal … too tired" and "The animal … too wide" share ten
words and differ in one; repeated words pair in order); then the words both have in another
order pair by their text ("animal" and "street" swapped are still shared words). The focus
word's row in one head is a distribution over its sentence's words; over the aligned words plus
one slot for the words only one sentence has ("other"), both rows are distributions over the
same outcomes, and their total variation distance is

    TV = ½ · ( Σ_shared j |w_A(j) − w_B(j)|  +  |w_A(only in A) − w_B(only in B)| ),

the weight that has to move to turn one row into the other: 0 when the rows agree on every
shared word, 1 when they put their weight on different words. The weight on the words that
differ counts once, as a whole, so TV stays in [0, 1] whatever the sentences' lengths.

The focus word "moves" in a head when its top word in A and its top word in B are not the same
shared word (from "animal" to "street"), unless both are words only their own sentence has, in
the same place between the same shared words ("tired" in A, "wide" in B: it stays on the word
that was changed).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from attnviz.arrays import FloatArray


class Alignment(NamedTuple):
    """The words two sentences share, in order, and those only one of them has."""

    pairs: tuple[tuple[int, int], ...]  # (column in A, column in B) of each shared word
    only_a: tuple[int, ...]  # columns of A's words with no partner in B
    only_b: tuple[int, ...]  # columns of B's words with no partner in A

    @property
    def how(self) -> str:
        """How the shared words were paired, in words, for every surface that says it."""
        b_columns = [b for _, b in self.pairs]
        if b_columns == sorted(b_columns):
            return "aligned in order"
        return "aligned in order where the order allows, the others by their text"

    @property
    def changed(self) -> tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...]:
        """The words only one sentence has, place by place: (place, A's columns there, B's),
        in order of place, where a place counts the shared words before it in its own sentence
        ("tired" in A and "wide" in B, both after "too", are one place: the word changed)."""
        place_a = _places(self.only_a, 0, self)
        place_b = _places(self.only_b, 1, self)
        return tuple(
            (
                place,
                tuple(i for i in self.only_a if place_a[i] == place),
                tuple(j for j in self.only_b if place_b[j] == place),
            )
            for place in sorted({*place_a.values(), *place_b.values()})
        )


def align_words(words_a: Sequence[str], words_b: Sequence[str]) -> Alignment:
    """The longest common subsequence of two word lists (exact matches), as pairs of columns,
    then each word left in A paired with the first word left in B that is the same word.

    Dynamic programming: ``common[i, j]`` is the length of the longest common subsequence of
    ``words_a[i:]`` and ``words_b[j:]``; walking from (0, 0), equal words pair up, otherwise the
    walk skips the word whose skipping keeps the longer rest (A's on a tie), so that the result
    is the same for the same input. Words are compared in Unicode NFC form, so a model's
    pieces of a sentence typed with combining accents pair with the other's composed ones.
    """
    words_a = [unicodedata.normalize("NFC", word) for word in words_a]
    words_b = [unicodedata.normalize("NFC", word) for word in words_b]
    n_a, n_b = len(words_a), len(words_b)
    common = np.zeros((n_a + 1, n_b + 1), dtype=np.int64)
    for i in range(n_a - 1, -1, -1):
        for j in range(n_b - 1, -1, -1):
            if words_a[i] == words_b[j]:
                common[i, j] = common[i + 1, j + 1] + 1
            else:
                common[i, j] = max(common[i + 1, j], common[i, j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n_a and j < n_b:
        if words_a[i] == words_b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif common[i + 1, j] >= common[i, j + 1]:
            i += 1
        else:
            j += 1
    # Words both sentences have in another order ("the animal … the street" against "the
    # street … the animal") pair by their text, in order, so that they count as shared words.
    paired_a = {a for a, _ in pairs}
    paired_b = {b for _, b in pairs}
    for i in range(n_a):
        if i in paired_a:
            continue
        same = [j for j in range(n_b) if j not in paired_b and words_b[j] == words_a[i]]
        if same:
            pairs.append((i, same[0]))
            paired_a.add(i)
            paired_b.add(same[0])
    pairs.sort()
    return Alignment(
        pairs=tuple(pairs),
        only_a=tuple(i for i in range(n_a) if i not in paired_a),
        only_b=tuple(j for j in range(n_b) if j not in paired_b),
    )


def total_variation(row_a: FloatArray, row_b: FloatArray, alignment: Alignment) -> float:
    """½·(Σ over shared words |w_A − w_B| + |w_A(only A) − w_B(only B)|).  [n_a], [n_b] -> ()"""
    a = [pair[0] for pair in alignment.pairs]
    b = [pair[1] for pair in alignment.pairs]
    shared = float(np.abs(row_a[a] - row_b[b]).sum())
    other = abs(
        float(row_a[list(alignment.only_a)].sum()) - float(row_b[list(alignment.only_b)].sum())
    )
    return 0.5 * (shared + other)


class HeadChange(NamedTuple):
    """The focus word's row in one head for both sentences; layers and heads from 1."""

    layer: int
    head: int
    row_a: FloatArray  # [columns of A] the focus word's weights in sentence A
    row_b: FloatArray  # [columns of B] the same in sentence B
    tv: float  # total variation between the rows (module docstring), in [0, 1]
    top_a: int  # A's column with the largest weight (the first on a tie)
    top_b: int  # B's column with the largest weight
    moves: bool  # the top words are neither one shared word nor one changed word (docstring)


class Comparison(NamedTuple):
    """A focus word's attention in two sentences, every head ranked by how much its row
    changed (``attnviz compare``)."""

    words_a: tuple[str, ...]  # A's shown columns, as written
    words_b: tuple[str, ...]
    focus: str  # the focus word's label ("it", or "the:2")
    alignment: Alignment
    heads: tuple[HeadChange, ...]  # highest TV first (ties: the earlier head)
    n_layers: int  # layers of the run (the heads may be of one of them, with a layer chosen)
    n_heads: int  # heads per layer
    # Under a causal mask, A and B equal up to the focus word: its row reads only those tokens,
    # so every head's two rows are equal by construction (up to float rounding), not by the
    # model's choice. The first token at which they differ, after the focus word, as shown.
    fixed_by_mask: str = ""

    @property
    def moved(self) -> tuple[HeadChange, ...]:
        """The heads in which the focus word's top word changes, highest TV first."""
        return tuple(change for change in self.heads if change.moves)


def _places(columns: Sequence[int], side: int, alignment: Alignment) -> dict[int, int]:
    """For each column a sentence alone has, its place: how many shared words come before it
    in that sentence (``side`` 0 for A's columns, 1 for B's)."""
    shared = [pair[side] for pair in alignment.pairs]
    return {column: sum(index < column for index in shared) for column in columns}


def compare_rows(
    rows_a: FloatArray,
    rows_b: FloatArray,
    words_a: Sequence[str],
    words_b: Sequence[str],
    *,
    focus: str,
    layers: Sequence[int],
    heads: Sequence[int],
    n_layers: int,
) -> Comparison:
    """Every chosen head's change, ranked by TV.

    rows_a: [layers, h, columns of A] and rows_b: [layers, h, columns of B], the focus word's
    rows of each layer named in ``layers`` (numbered from 1); ``heads``: the heads to compare,
    numbered from 0.
    """
    alignment = align_words(words_a, words_b)
    partner = dict(alignment.pairs)
    place_a, place_b = (
        _places(alignment.only_a, 0, alignment),
        _places(alignment.only_b, 1, alignment),
    )
    changes = []
    for index, layer in enumerate(layers):
        for head in heads:
            row_a, row_b = rows_a[index, head], rows_b[index, head]
            top_a, top_b = int(np.argmax(row_a)), int(np.argmax(row_b))
            changes.append(
                HeadChange(
                    layer=layer,
                    head=head + 1,
                    row_a=row_a,
                    row_b=row_b,
                    tv=total_variation(row_a, row_b, alignment),
                    top_a=top_a,
                    top_b=top_b,
                    moves=partner.get(top_a) != top_b
                    and not (top_a in place_a and place_a[top_a] == place_b.get(top_b)),
                )
            )
    ranked = sorted(changes, key=lambda change: -change.tv)  # stable: ties keep head order
    return Comparison(
        words_a=tuple(words_a),
        words_b=tuple(words_b),
        focus=focus,
        alignment=alignment,
        heads=tuple(ranked),
        n_layers=n_layers,
        n_heads=rows_a.shape[1],
    )
