"""The report of ``attnviz compare``: where the focus word looks in sentence A and in sentence B,
every head ranked by how much its row changed (analysis.compare), and a closing sentence made
from those numbers."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.text import Text

from attnviz.errors import option
from attnviz.labels import fit_label, format_number, occurrence_labels, plural
from attnviz.lesson.caveats import attention_caveat, readout_note
from attnviz.provenance import WeightsOrigin
from attnviz.render.terminal.reports import paragraphs, report_table
from attnviz.results import Comparison, HeadChange
from attnviz.tokens import printable

#: A change the closing sentence counts as small: a tenth of the row's weight moved.
SMALL = 0.1


def render_comparison(
    comparison: Comparison,
    sentences: tuple[str, str],
    weights: WeightsOrigin,
    console: Console,
    *,
    top: int = 20,
) -> None:
    """The comparison as ``attnviz compare`` prints it: what is compared and the formula, the
    heads ranked by TV, the rows of the head that changed most side by side, the heads in which
    the focus word moves, and what the numbers say."""
    labels_a = occurrence_labels([printable(word) for word in comparison.words_a])
    labels_b = occurrence_labels([printable(word) for word in comparison.words_b])
    parts = _introduction(comparison, sentences, weights, labels_a, labels_b, console)
    parts += [Text(), *_ranked(comparison, labels_a, labels_b, console, top)]
    parts += [Text(), *_side_by_side(comparison, comparison.heads[0], labels_a, labels_b, console)]
    if comparison.moved:
        parts += [Text(), *_moves(comparison, labels_a, labels_b, console, top)]
    parts += [Text(), *paragraphs(console, closing(comparison, weights, labels_a, labels_b))]
    # A toy model: what its last layer's row is, in the same breath as how it moved.
    answered = readout_note(weights.readout, weights.answers_at or (comparison.focus,))
    if answered is not None:
        parts += [Text(), *paragraphs(console, Text(answered))]
    if not weights.is_random:  # a trained model's rows are being read: the caution
        name = printable(comparison.focus)
        parts += [Text(), *paragraphs(console, Text(attention_caveat(repr(name))))]
    console.print(Group(*parts))


def _introduction(
    comparison: Comparison,
    sentences: tuple[str, str],
    weights: WeightsOrigin,
    labels_a: Sequence[str],
    labels_b: Sequence[str],
    console: Console,
) -> list[RenderableType]:
    """The two sentences, where the weights come from, the aligned words and the formula."""
    name = printable(comparison.focus)
    alignment = comparison.alignment
    only_a = " ".join(labels_a[i] for i in alignment.only_a) or "none"
    only_b = " ".join(labels_b[j] for j in alignment.only_b) or "none"
    heads = plural(comparison.n_heads, "head")
    return paragraphs(
        console,
        Text(f"attnviz · where does {name!r} look, in sentence A and in sentence B", style="bold"),
        Text(f"A: {printable(sentences[0])}"),
        Text(f"B: {printable(sentences[1])}"),
        Text(
            f"Weights: {printable(weights.describe(with_layer=False))}; "
            f"{plural(comparison.n_layers, 'layer')} × {heads}; both sentences traced alike."
        ),
        Text(
            f"The sentences share {plural(len(alignment.pairs), 'word')}, {alignment.how}; "
            f"only in A: {only_a}; only in B: {only_b}."
        ),
        *([Text(fixed_by_mask(comparison))] if comparison.fixed_by_mask else []),
        Text(
            f"In each head, TV is the total variation between the row of {name!r} in A and in "
            "B: TV = ½·(Σ_j |w_A(j) − w_B(j)| over the shared words j + |w_A(only in A) − "
            "w_B(only in B)|), the words only one sentence has counting together as one. "
            "It is the share of the weight that moves: 0, the same row; 1, no weight on the "
            f"same words. {name!r} moves in a head when the word it gives most weight in A is "
            "not the one it gives most weight in B (a changed word, one only A has where B "
            "has one of its own, counts as the same word)."
        ),
    )


def _ranked(
    comparison: Comparison,
    labels_a: Sequence[str],
    labels_b: Sequence[str],
    console: Console,
    top: int,
) -> list[RenderableType]:
    """The heads, highest TV first, the first ``top``."""
    shown = comparison.heads[:top]
    title = f"The heads ranked by how much the row of {printable(comparison.focus)!r} changed"
    if len(comparison.heads) > len(shown):
        title += f" (top {len(shown)} of {len(comparison.heads)})"
    table = report_table(
        ("head", "left"),
        ("TV", "right"),
        ("top in A", "left"),
        ("w_A", "right"),
        ("top in B", "left"),
        ("w_B", "right"),
        ("moves", "right"),
        narrow=True,
    )
    for change in shown:
        table.add_row(
            f"L{change.layer} H{change.head}",
            format_number(change.tv, 2),
            Text(fit_label(labels_a[change.top_a])),
            format_number(float(change.row_a[change.top_a]), 2),
            Text(fit_label(labels_b[change.top_b])),
            format_number(float(change.row_b[change.top_b]), 2),
            "yes" if change.moves else "no",
        )
    return [*paragraphs(console, Text(title, style="bold cyan")), table]


def _side_by_side(
    comparison: Comparison,
    change: HeadChange,
    labels_a: Sequence[str],
    labels_b: Sequence[str],
    console: Console,
) -> list[RenderableType]:
    """The two rows of one head over the aligned words, and its TV worked out."""
    alignment = comparison.alignment
    title = (
        f"The row of {printable(comparison.focus)!r} in L{change.layer} H{change.head}, "
        "side by side"
    )
    table = report_table(
        ("word", "left"), ("w_A", "right"), ("w_B", "right"), ("|w_A − w_B|", "right")
    )
    total = 0.0
    for i, j in alignment.pairs:
        w_a, w_b = float(change.row_a[i]), float(change.row_b[j])
        total += abs(w_a - w_b)
        table.add_row(
            Text(fit_label(labels_a[i])),
            format_number(w_a, 2),
            format_number(w_b, 2),
            format_number(abs(w_a - w_b), 2),
        )
    if alignment.only_a or alignment.only_b:
        w_a = float(change.row_a[list(alignment.only_a)].sum())
        w_b = float(change.row_b[list(alignment.only_b)].sum())
        total += abs(w_a - w_b)
        table.add_row(
            "(the others)",
            format_number(w_a, 2),
            format_number(w_b, 2),
            format_number(abs(w_a - w_b), 2),
        )
    others = (
        " (the others): the weight on the words only A has and on those only B has."
        if alignment.only_a or alignment.only_b
        else ""
    )
    worked = Text(
        f"TV = ½ × {format_number(total, 3)} = {format_number(change.tv, 3)}: half the sum of "
        f"the last column, from the unrounded weights.{others}"
    )
    return [
        *paragraphs(console, Text(title, style="bold cyan")),
        table,
        *paragraphs(console, worked),
    ]


def _moves(
    comparison: Comparison,
    labels_a: Sequence[str],
    labels_b: Sequence[str],
    console: Console,
    top: int,
) -> list[RenderableType]:
    """Each head in which the focus word's top word changes, highest TV first."""
    moved = comparison.moved
    name = printable(comparison.focus)
    title = f"Where {name!r} moves: {len(moved)} of {plural(len(comparison.heads), 'head')}"
    lines = [Text(title, style="bold cyan")]
    for change in moved[:top]:
        lines.append(
            Text(
                f"L{change.layer} H{change.head}: from {labels_a[change.top_a]!r} "
                f"({format_number(float(change.row_a[change.top_a]), 2)}) to "
                f"{labels_b[change.top_b]!r} "
                f"({format_number(float(change.row_b[change.top_b]), 2)}), TV "
                f"{format_number(change.tv, 2)}"
            )
        )
    if len(moved) > top:
        lines.append(
            Text(f"… and {len(moved) - top} more ({option('top', metavar='N')} shows more).")
        )
    return paragraphs(console, *lines)


def fixed_by_mask(comparison: Comparison) -> str:
    """Why every row is the same in A and B when a causal mask hides where they differ: said
    before the numbers, so that TV 0 is not read as the model ignoring the change."""
    name = printable(comparison.focus)
    return (
        f"Under the causal mask, the row of {name!r} in every layer reads only {name!r} and the "
        f"tokens before it, and those are the same in A and B (they first differ at "
        f"{comparison.fixed_by_mask!r}, after {name!r}): every head gives {name!r} the same row "
        "in both, TV 0 up to float rounding, whatever the model makes of the words that "
        f"differ. To see the change at work, follow a word after {name!r} with "
        f"{option('focus', metavar='WORD')}, or change a word before {name!r}."
    )


#: Below this largest TV, less than half of the focus word's row moves in every head.
LITTLE = 0.5


def closing(
    comparison: Comparison,
    weights: WeightsOrigin,
    labels_a: Sequence[str],
    labels_b: Sequence[str],
) -> Text:
    """What the numbers say: where the focus word moves (or that it does not), the largest
    change when that is another head, how much the heads change on average, and for random
    weights that none of it is learned."""
    name = printable(comparison.focus)
    heads, moved = comparison.heads, comparison.moved
    largest = heads[0]
    sentences = []
    if moved:
        first = moved[0]
        sentences.append(
            f"{name!r} moves from {labels_a[first.top_a]!r} to {labels_b[first.top_b]!r} in "
            f"layer {first.layer}, head {first.head} (TV {format_number(first.tv, 2)})"
            + (f"; it moves in {len(moved)} of {len(heads)} heads." if len(heads) > 1 else ".")
        )
    else:
        every = {1: "its one head", 2: "both heads"}.get(len(heads), f"all {len(heads)} heads")
        sentences.append(f"{name!r} keeps its top word in {every}.")
    if not moved or largest is not moved[0]:
        sentences.append(
            f"The largest change is TV {format_number(largest.tv, 2)}, in layer "
            f"{largest.layer}, head {largest.head}."
        )
    if len(heads) > 1:
        mean = sum(change.tv for change in heads) / len(heads)
        small = sum(change.tv < SMALL for change in heads)
        sentences.append(
            f"The mean TV over the {len(heads)} heads is {format_number(mean, 2)}, and TV is "
            f"below {SMALL:.2f} in {small} of them."
        )
    if comparison.fixed_by_mask:
        sentences.append(
            f"That is the causal mask, not the model: {name!r} reads only the tokens up to "
            "itself, which A and B share."
        )
    elif len(heads) > 1 and largest.tv < LITTLE:
        sentences.append(
            f"Little of the row moves: in no head does more than "
            f"{format_number(largest.tv, 2)} of the weight of {name!r} go to other words."
        )
    if weights.is_random:
        untrained = "" if weights.is_drawn else " (an untrained checkpoint)"
        fix = f"; use {option('model')} for a trained model" if weights.is_drawn else ""
        sentences.append(
            f"These weights are random, not learned{untrained}: any change or move comes from "
            f"the words' vectors and the random matrices, not from meaning{fix}."
        )
    return Text(" ".join(sentences))
