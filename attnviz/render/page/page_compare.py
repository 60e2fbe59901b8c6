"""What the page shows of a second sentence (``attnviz page A --compare B``): the comparison of
attnviz.analysis.compare as JSON-ready data. For every head compared, the focus word's row in A
and in B over the aligned words, their total variation worked out, and where the focus word
moves; the heads ranked by how much the row changed; the sentences ``attnviz compare`` closes
with; and how B's picture, drawn beside A's, follows the word chosen in A. Where the sentences
differ, a row names both words ("tired / wide"); when their positions do not line up (a word
added, or words reordered), the page says so. Every number is formatted and every sentence
written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from attnviz.labels import format_number, occurrence_labels
from attnviz.provenance import WeightsOrigin
from attnviz.render.terminal.compare_report import closing, fixed_by_mask
from attnviz.results import Alignment, Comparison, HeadChange
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace


class ComparedWith(NamedTuple):
    """The second sentence of a page and the comparison of the focus word's rows (A is the
    page's own sentence)."""

    sentence: str  # sentence B, as written
    comparison: Comparison  # attnviz.analysis.compare, every head of every layer compared
    weights: WeightsOrigin  # where both traces' weights come from
    layers: Sequence[AttentionTrace]  # B's every layer, as many as A's: its picture
    selection: Selection  # what B's picture shows of each: the same heads as A's


#: What the comparison section says around its numbers; {name}s are filled by the script.
COMPARE_TEXT = {
    "compareTitle": "Sentence B: {sentence}",
    "compareRowTitle": "The row of “{focus}” in {where}{head}, A beside B",
    "compareColumns": ["word", "w_A", "w_B", "|w_A − w_B|"],
    "compareRankedTitle": "The heads ranked by how much the row of “{focus}” changed{top}",
    "compareTop": " (top {shown} of {total}; click one to show it)",
    "compareRankedColumns": ["head", "type", "TV", "top in A", "w_A", "top in B", "w_B", "moves"],
    "compareChooseHead": "Choose a head to see the row of “{focus}” in A beside B.",
    "compareHeadName": "L{layer} H{head}",
    "pictureA": "Sentence A",
    "pictureB": "Sentence B",
    "pictureNotInB": "Sentence B has no word in the place of “{word}”.",
    "onlyInB": "Only sentence B has this word: choose a word of A.",
    "legendChanged": " Tinted: a word the other sentence does not have.",
}

#: The last row of A beside B when several places differ: their weights together, as TV counts
#: them.
TOGETHER = "(the changed words together)"
#: A place where one sentence has no word, in a row's name ("— / very").
NOTHING = "—"

#: The ranked list shows this many heads (all when there are fewer), as `compare --top`'s 20.
RANKED = 20


def compare_data(compared: ComparedWith, selection: Selection, decimals: int) -> dict[str, Any]:
    """The comparison as the page shows it, A's picture shown as ``selection`` shows it. The
    heads are the page's (selection.heads, from 0), so that a head of the ranking can be shown
    by its place in the page's menu."""
    comparison = compared.comparison
    labels_a = occurrence_labels([printable(word) for word in comparison.words_a])
    labels_b = occurrence_labels([printable(word) for word in comparison.words_b])
    alignment = comparison.alignment
    focus = printable(comparison.focus)
    only_a = " ".join(labels_a[i] for i in alignment.only_a) or "none"
    only_b = " ".join(labels_b[j] for j in alignment.only_b) or "none"
    about = (
        f"The sentences share {len(alignment.pairs)} words, {alignment.how}; only in A: "
        f"{only_a}; only in B: {only_b}.{_positions(comparison, labels_a, labels_b)} "
        f"{fixed_by_mask(comparison) + ' ' if comparison.fixed_by_mask else ''}In each "
        f"head, TV is the total variation between the row of “{focus}” in A and in B: TV = "
        "½·(Σ_j |w_A(j) − w_B(j)| over the shared words j + |w_A(only in A) − w_B(only in B)|), "
        "the share of the weight that moves: 0, the same row; 1, no weight on the same words. "
        f"“{focus}” moves in a head when the word it gives most weight in A is not the one it "
        "gives most weight in B (a changed word, one only A has where B has one of its own, "
        "counts as the same word)."
    )
    changes = [
        _change(change, labels_a, labels_b, comparison, selection.heads, decimals)
        for change in comparison.heads
    ]
    return {
        "sentence": printable(compared.sentence),
        "focus": focus,
        "about": about,
        "summary": closing(comparison, compared.weights, labels_a, labels_b).plain,
        "ranked": RANKED,
        "changes": changes,
        "links": links(alignment, selection, compared.selection),
    }


def changed_label(a: Sequence[str], b: Sequence[str]) -> str:
    """What A and what B have in one place: "tired / wide", "— / very"."""
    return f"{' '.join(a) or NOTHING} / {' '.join(b) or NOTHING}"


def _positions(comparison: Comparison, labels_a: Sequence[str], labels_b: Sequence[str]) -> str:
    """Whether the sentences' positions line up, and what the changed rows' names mean: at the
    same position, or in the same place between shared words when the positions do not."""
    alignment = comparison.alignment
    names = [
        f"“{changed_label([labels_a[i] for i in a], [labels_b[j] for j in b])}”"
        for _, a, b in alignment.changed
    ]
    listed = ", ".join(names)
    n_a, n_b = len(comparison.words_a), len(comparison.words_b)
    if n_a == n_b and all(i == j for i, j in alignment.pairs):
        return f" {listed}: what A and B have at the same position." if names else ""
    counts = f"A has {n_a} words and B {n_b}" if n_a != n_b else f"A and B have {n_a} words each"
    said = (
        f" {counts}, and their positions do not line up: each shared word is paired with its "
        "partner by the alignment, not by its position"
    )
    if not names:
        return said + "."
    return (
        f"{said}, and {listed} {'names' if len(names) == 1 else 'name'} what A and B have in "
        f"one place between shared words ({NOTHING}: nothing)."
    )


def links(alignment: Alignment, a: Selection, b: Selection) -> dict[str, Any]:
    """How B's picture follows A's: for each of A's rows B's row of the same word (its partner,
    or the word changed in its place: "wide" for "tired"), None when B has none there; for each
    of B's rows A's row, the same way; and which rows and columns of each picture are words the
    other sentence does not have. The alignment is of the pictures' columns."""
    partner = dict(alignment.pairs)
    for _, only_a, only_b in alignment.changed:
        if len(only_a) == 1 and len(only_b) == 1:  # one word changed for one word
            partner[only_a[0]] = only_b[0]
    back = {column_b: column_a for column_a, column_b in partner.items()}

    def rows(side: Selection, other: Selection, columns: dict[int, int]) -> list[int | None]:
        linked = []
        for group in side.row_groups:
            column = side.column_of(group[0])
            to = None if column is None else columns.get(column)
            linked.append(None if to is None else other.row_of(other.column_groups[to][0]))
        return linked

    def changed(side: Selection, only: Sequence[int]) -> dict[str, list[bool]]:
        return {
            "rows": [side.column_of(group[0]) in only for group in side.row_groups],
            "columns": [column in only for column in range(side.n_columns)],
        }

    return {
        "rowInB": rows(a, b, partner),
        "rowInA": rows(b, a, back),
        "changedA": changed(a, alignment.only_a),
        "changedB": changed(b, alignment.only_b),
    }


def _change(
    change: HeadChange,
    labels_a: Sequence[str],
    labels_b: Sequence[str],
    comparison: Comparison,
    heads: Sequence[int],
    decimals: int,
) -> dict[str, Any]:
    """One head: its place in the page, its ranking row, both rows side by side, TV worked out
    and one sentence on where the focus word looks in A and in B."""
    alignment = comparison.alignment

    def number(value: float) -> str:
        return format_number(float(value), decimals)

    # A's order, each changed place where it stands ("tired / wide" after "too"). TV counts the
    # words only one sentence has as one: with one such place its row is that term; with more,
    # their rows give their weights and a last row the term, so that the last column still
    # sums to 2·TV.
    places = {place: (a, b) for place, a, b in alignment.changed}
    together = len(places) > 1
    rows, total = [], 0.0
    for place in range(len(alignment.pairs) + 1):
        if place in places:
            only_a, only_b = places[place]
            w_a, w_b = (
                float(change.row_a[list(only_a)].sum()),
                float(change.row_b[list(only_b)].sum()),
            )
            label = changed_label([labels_a[i] for i in only_a], [labels_b[j] for j in only_b])
            difference = "" if together else number(abs(w_a - w_b))
            rows.append([label, number(w_a), number(w_b), difference])
        if place < len(alignment.pairs):
            i, j = alignment.pairs[place]
            w_a, w_b = float(change.row_a[i]), float(change.row_b[j])
            total += abs(w_a - w_b)
            rows.append([labels_a[i], number(w_a), number(w_b), number(abs(w_a - w_b))])
    if places:
        w_a = float(change.row_a[list(alignment.only_a)].sum())
        w_b = float(change.row_b[list(alignment.only_b)].sum())
        total += abs(w_a - w_b)
        if together:
            rows.append([TOGETHER, number(w_a), number(w_b), number(abs(w_a - w_b))])
    top_a, top_b = labels_a[change.top_a], labels_b[change.top_b]
    w_top_a, w_top_b = number(change.row_a[change.top_a]), number(change.row_b[change.top_b])
    return {
        "layer": change.layer - 1,
        "head": heads.index(change.head - 1),
        "tv": number(change.tv),
        "topA": top_a,
        "wA": w_top_a,
        "topB": top_b,
        "wB": w_top_b,
        "moves": "yes" if change.moves else "no",
        "rows": rows,
        "worked": (
            f"TV = ½ × {format_number(total, 3)} = {format_number(change.tv, 3)}: half the sum of "
            "the last column, from the unrounded weights."
        ),
        "said": _said(
            change,
            dict(alignment.pairs).get(change.top_a) == change.top_b,
            comparison.focus,
            top_a,
            top_b,
            w_top_a,
            w_top_b,
        ),
    }


def _said(
    change: HeadChange, shared: bool, focus: str, top_a: str, top_b: str, w_a: str, w_b: str
) -> str:
    """Where the focus word looks most in A and in B, in this head."""
    name = printable(focus)
    if change.moves:
        return (
            f"In this head “{name}” moves: its top word is “{top_a}” in A ({w_a}) and “{top_b}” "
            f"in B ({w_b})."
        )
    if shared:
        return (
            f"In this head “{name}” does not move: its top word is “{top_a}” in both ({w_a} "
            f"in A, {w_b} in B)."
        )
    return (
        f"In this head “{name}” stays on the word that was changed: “{top_a}” in A ({w_a}), "
        f"“{top_b}” in B ({w_b})."
    )
