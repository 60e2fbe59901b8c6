"""The report of ``attnviz heads``: each word's heads for the focus word, each head's type and
baselines, and how many rows look most at their own word (formulas: ``attnviz heads --help``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import isnan

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.text import Text

from attnviz.errors import option
from attnviz.labels import fit_label, format_number, occurrence_labels, plural
from attnviz.lesson.caveats import attention_caveat, readout_note
from attnviz.render.terminal.reports import paragraphs, plain_number, report_table, signed
from attnviz.results import POSITION_THRESHOLD, HeadLink, HeadRanking, HeadType, RankBy, TypedHead
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace


def _measure(rank_by: RankBy) -> tuple[str, Callable[[HeadLink], float]]:
    """The column beside w: sel when ranked by selectivity, else spec."""
    if rank_by is RankBy.selectivity:
        return "sel", lambda link: link.selectivity
    return "spec", lambda link: link.specificity


def render_heads(
    ranking: HeadRanking, layers: Sequence[AttentionTrace], console: Console, *, top: int = 20
) -> None:
    """Where the focus word's attention goes in every (layer, head): the heads for each target
    word, and each head's top target and type (analysis.heads.rank_heads), as tables."""
    first = layers[0]
    labels = occurrence_labels([printable(word) for word in ranking.words])
    source = printable(first.provenance.weights.describe(with_layer=False))
    parts = _heads_introduction(ranking, console, source, first)
    parts += paragraphs(console, *_types_summary(ranking, labels))
    parts.append(Text())
    parts += _per_word(ranking, labels, console)
    parts.append(Text())
    parts += _per_head(ranking, labels, console, top)
    parts += paragraphs(console, _own_word_rows(ranking, layers))
    focus = printable(ranking.focus)
    shown = [link for links in ranking.per_word.values() for link in links] + ranking.per_head
    if any(isnan(link.baseline) for link in shown):
        parts += paragraphs(
            console,
            Text(f"—: no baseline and no spec, because {_why_no_baseline(first, focus)}."),
        )
    weights = first.provenance.weights
    if not weights.is_random and weights.model is not None:
        # A trained model's heads are being read: what a toy model's answer is, then the caution.
        answered = readout_note(weights.readout, weights.answers_at or (ranking.focus,))
        if answered is not None:
            parts += [Text(), *paragraphs(console, Text(answered))]
        parts += [Text(), *paragraphs(console, Text(attention_caveat(repr(focus)), style="yellow"))]
    if weights.is_random:
        # A checkpoint given with --model can be untrained too: its config.json says so.
        advice = (
            "this checkpoint is untrained (its config.json says so); give a trained one"
            if weights.is_pretrained
            else f"use {option('model')} for a trained model"
        )
        parts += paragraphs(
            console,
            Text(f"Note: these weights are random, not learned; {advice}.", style="yellow"),
        )
    console.print(Group(*parts))


def _why_no_baseline(trace: AttentionTrace, focus: str) -> str:
    """Why a word has no baseline in this run: which mask hides it, or that no other row has a
    choice of keys to compare with."""
    reasons = []
    if trace.provenance.masking.causal:
        reasons.append(
            f"'{focus}' may not look at that word (the causal mask hides the words after it: "
            "a decoder reads only the words before)"
        )
    if trace.provenance.masking.padding:
        reasons.append(f"'{focus}' may not look at it (the padding mask hides every [PAD] key)")
    reasons.append(
        "no other row of the head has a choice of two keys or more to compare with"
        if not reasons
        else "no other row may look at it, to compare with"
    )
    return ", or ".join(reasons)


def _own_word_rows(ranking: HeadRanking, layers: Sequence[AttentionTrace]) -> Text:
    """How many rows give their largest weight to their own word, counted in this run (an
    introduction to attention may say that a word's highest weight goes to itself), and which
    heads are of the self type."""
    own, rows = ranking.own_word_rows
    meaning = (
        "with random weights that says nothing about trained attention."
        if layers[0].provenance.weights.is_random
        else "so in these heads a word's largest weight need not go to itself."
    )
    counted = (
        f"Rows that look most at their own word: {own:,} of the {rows:,} rows of these heads "
        "(every word's row in every head; padding, rows with one key to choose from and rows "
        f"with a tie for the largest weight left out) give their largest weight to the word "
        f"itself; {meaning}"
        if own < rows
        else f"Every one of the {rows:,} rows of these heads that counts gives its largest "
        "weight to the word itself."
    )
    counted += " " + _focus_own_word(ranking, layers)
    selves = [f"L{t.layer} H{t.head}" for t in ranking.types if t.type is HeadType.self]
    threshold = f"a mean weight of {POSITION_THRESHOLD} or more on the word itself"
    if not selves:
        heads = f"No head is a self head ({threshold})."
    elif len(selves) == 1:
        heads = f"One head is a self head ({threshold}): {selves[0]}."
    else:
        heads = f"{len(selves)} heads are self heads ({threshold}): {', '.join(selves)}."
    return Text(f"{counted} {heads}")


def _focus_own_word(ranking: HeadRanking, layers: Sequence[AttentionTrace]) -> str:
    """In how many heads the focus word's own row (its first piece's) looks most at itself."""
    position = ranking.focus_position
    heads, total = ranking.focus_own_word
    groups = layers[0].provenance.word_groups
    pieces = next((len(g) for g in groups if position in g), 1)
    row = f"the first piece of '{ranking.focus}'" if pieces > 1 else f"'{ranking.focus}'"
    every = sum(t.n_heads for t in layers)
    if total == 0:
        return (
            f"The row of {row} counts in none of the heads: it has one key to choose from or a "
            "tie for its largest weight in each."
        )
    counts = f"the {total:,} heads" if total == every else f"the {total:,} heads in which it counts"
    return f"The row of {row} does so in {heads} of {counts}."


def _heads_introduction(
    ranking: HeadRanking, console: Console, source: str, trace: AttentionTrace
) -> list[RenderableType]:
    """What w, key, offset and spec are (``source``: where the weights come from), and what the
    tables are ranked by."""
    name = printable(ranking.focus)
    n_layers, n_heads = ranking.weights.focus.shape[:2]
    ranked = {
        RankBy.specificity: f"Ranked by spec; {option('rank_by', RankBy.selectivity)} ranks "
        f"by sel (w − key), {option('rank_by', RankBy.weight)} by w alone.",
        RankBy.selectivity: "Ranked by sel (w − key), which leaves a positional head's offset "
        f"in; {option('rank_by', RankBy.specificity)}, the default, ranks by spec.",
        RankBy.weight: f"Ranked by w alone; {option('rank_by', RankBy.specificity)}, the "
        "default, ranks by spec.",
    }[ranking.rank_by]
    rows = f"The other rows are every row of the head but those of {name!r}"
    if trace.provenance.special:
        rows += "; [CLS] and [SEP] count whether shown or not"
    if trace.provenance.masking.padding:
        rows += ", [PAD] rows do not"
    if trace.provenance.masking.causal:
        rows += "; the first row, which may look only at itself, has no choice and does not count"
    markers = list(dict.fromkeys(printable(trace.tokens[p]) for p in trace.provenance.special))
    if markers and len(ranking.per_word) < len(ranking.words):
        many = len(markers) > 1
        ranked += (
            f" {' and '.join(markers)} {'are' if many else 'is'} not ranked as "
            f"{'targets: markers' if many else 'a target: a marker'} the tokenizer added, not "
            f"{'words' if many else 'a word'} of the sentence; a head that parks most of its "
            "weight there is typed as a sink."
        )
    return paragraphs(
        console,
        Text(f"attnviz · where does {name!r} look, in every head", style="bold"),
        Text(
            f"Weights: {source}; {plural(n_layers, 'layer')} × "
            f"{plural(n_heads, 'head')}. w is the weight {name!r} gives a word in one head (row "
            f"{name!r} of that head's softmax weights; L = layer, H = head, from 1)."
        ),
        Text(
            f"A large w can be what the head does in every row, not something about {name!r}. "
            "key is the mean weight the head's other rows give that word, high in a sink, a "
            "word every row looks at; offset, the mean weight they give the word as far from "
            f"them as that word is from {name!r}, high in a positional head such as a "
            "previous-token head. spec, the specificity, is w − max(key, offset): near 0, the head "
            f"does this for every row, so even a large w says nothing specific to {name!r}; "
            f"high, {name!r} looks there and the other rows do not; below 0, less than they do. "
            f"{rows}. Each number is rounded on its own, so spec may differ in its last digit "
            f"from w minus the larger baseline. {ranked}"
        ),
    )


def offset_words(offset: int) -> str:
    if offset == 0:
        return "themselves"
    where = "before" if offset < 0 else "after"
    return f"the word {where} them" if abs(offset) == 1 else f"the word {abs(offset)} {where} them"


def _types_summary(ranking: HeadRanking, labels: Sequence[str]) -> list[Text]:
    """How many heads of each type, naming the heads of the rare types, and, when one exists,
    a typed head whose large w is mostly its baseline."""
    if not ranking.types:
        return []
    by_type: dict[HeadType, list[str]] = {}
    for typed in ranking.types:
        by_type.setdefault(typed.type, []).append(f"L{typed.layer} H{typed.head}")
    counts = []
    for kind in sorted(by_type, key=lambda kind: (-len(by_type[kind]), list(HeadType).index(kind))):
        heads = by_type[kind]
        named = (
            f" ({', '.join(heads)})" if len(heads) <= 3 and len(heads) < len(ranking.types) else ""
        )
        counts.append(f"{len(heads)} {kind.value}{named}")
    summary = Text(
        "Head types, each scored on the head's whole matrix by the formulas attnviz heads "
        f"--help states: {', '.join(counts)}. mixed: no score reaches its threshold."
    )
    example = _typed_example(ranking, labels)
    return [summary] if example is None else [summary, example]


def _typed_example(ranking: HeadRanking, labels: Sequence[str]) -> Text | None:
    """The positional or sink head in which the focus word gives one word the largest weight,
    at least 0.5, when most of that weight (three quarters or more) is the head's baseline; the
    offset is read between first pieces (a word of several pieces is the first piece's offset
    summed over its pieces, so no example is drawn from one)."""
    name = printable(ranking.focus)
    weights = ranking.weights
    best: tuple[float, TypedHead, int] | None = None
    for typed in ranking.types:
        if typed.type in (HeadType.broad, HeadType.mixed):
            continue
        row = weights.focus[typed.layer - 1, typed.head - 1]
        target = int(np.argmax(row))
        if row[target] >= 0.5 and (best is None or row[target] > best[0]):
            best = (float(row[target]), typed, target)
    if best is None:
        return None
    _, typed, target = best
    link = HeadLink(
        typed.layer,
        typed.head,
        target,
        float(weights.focus[typed.layer - 1, typed.head - 1, target]),
        float(weights.by_key[typed.layer - 1, typed.head - 1, target]),
        float(weights.by_offset[typed.layer - 1, typed.head - 1, target]),
    )
    merged = len(ranking.column_groups[target]) > 1
    if merged or isnan(link.baseline) or link.baseline < 0.75 * link.weight:
        return None
    word = fit_label(labels[target])
    if link.by_offset >= link.by_key:
        offset = ranking.column_groups[target][0] - ranking.focus_position
        baseline = f"give {offset_words(offset)} {plain_number(link.by_offset)}"
    else:
        baseline = f"give {word!r} {plain_number(link.by_key)}"
    return Text(
        f"For example, L{link.layer} H{link.head} is a {typed.type.value} head: {name!r} gives "
        f"{word!r} {plain_number(link.weight)} there, and the head's other rows {baseline} on "
        f"average, so spec is only {signed(link.specificity)}: most of that weight is what the "
        f"head does in every row, not something about {name!r}."
    )


def _per_word(
    ranking: HeadRanking, labels: Sequence[str], console: Console
) -> list[RenderableType]:
    """For each word, its top heads: a head, its w and its spec (or sel) per rank."""
    name = printable(ranking.focus)
    header, measure = _measure(ranking.rank_by)
    heading = {
        RankBy.specificity: f"For each word, the heads in which {name!r} looks at it most "
        "beyond what the head does in every row",
        RankBy.selectivity: f"For each word, the heads in which {name!r} looks at it most "
        "beyond what the other rows give it",
        RankBy.weight: f"The heads in which {name!r} looks most at each word",
    }[ranking.rank_by]
    ranks = len(next(iter(ranking.per_word.values())))
    ordinals = ("1st", "2nd", "3rd", *(f"{k}th" for k in range(4, ranks + 1)))
    # Each rank is a head, its w and its spec; the last column is right-aligned, so that no
    # line ends in spaces. Narrow: 3 ranks of "L12 H12" (GPT-2's 12 layers) fit in 80 columns.
    columns = [(title, justify) for k in range(ranks) for title, justify in
               ((ordinals[k], "left"), ("w", "right"), (header, "right"))]  # fmt: skip
    table = report_table(("word", "left"), *columns, narrow=True)
    for target in ranking.word_order:
        cells = [
            cell
            for link in ranking.per_word[target]
            for cell in (
                f"L{link.layer} H{link.head}",
                format_number(link.weight, 2),
                signed(measure(link)),
            )
        ]
        table.add_row(Text(fit_label(labels[target])), *cells)
    return [*paragraphs(console, Text(heading, style="bold cyan")), table]


def _per_head(
    ranking: HeadRanking, labels: Sequence[str], console: Console, top: int
) -> list[RenderableType]:
    """Each head's top word, best first, the first ``top``, with the head's type and the
    baselines its spec (or sel) is measured against."""
    name = printable(ranking.focus)
    header, measure = _measure(ranking.rank_by)
    links = ranking.per_head
    shown = links[:top]
    title = {
        RankBy.specificity: f"Each head's most specific word for {name!r}, most specific first",
        RankBy.selectivity: f"Each head's most selective word for {name!r}, most selective first",
        RankBy.weight: f"Each head's favourite word for {name!r}, strongest first",
    }[ranking.rank_by]
    if len(links) > len(shown):
        title += f" (top {len(shown)} of {len(links)})"
    table = report_table(
        ("head", "left"),
        ("type", "left"),
        ("word", "left"),
        ("w", "right"),
        ("key", "right"),
        ("offset", "right"),
        (header, "right"),
        narrow=True,
    )
    for link in shown:
        typed = ranking.type_of(link)
        table.add_row(
            f"L{link.layer} H{link.head}",
            "" if typed is None else typed.type.value,
            Text(fit_label(labels[link.target])),
            format_number(link.weight, 2),
            plain_number(link.by_key),
            plain_number(link.by_offset),
            signed(measure(link)),
        )
    return [*paragraphs(console, Text(title, style="bold cyan")), table]
