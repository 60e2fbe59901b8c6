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

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.results import (
    Alignment as Alignment,
)
from attnviz.results import (
    Comparison as Comparison,
)
from attnviz.results import (
    HeadChange as HeadChange,
)
from attnviz.results import (
    places as _places,
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
