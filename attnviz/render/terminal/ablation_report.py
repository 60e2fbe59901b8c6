"""``attnviz heads --ablate``: every head's effect at the focus word when its weights are made
uniform (analysis.ablation), beside its largest weight in the focus word's row, as a Rich table
with the sentences that say what the numbers are and what they are not."""

from __future__ import annotations

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from attnviz.labels import fit_label, format_number, occurrence_labels, plural, reciprocal
from attnviz.lesson.caveats import attention_caveat
from attnviz.render.terminal.text import wrap
from attnviz.results import SINKS, Ablation, HeadEffect
from attnviz.tokens import printable, word_key

#: Why the two need not agree, said once beside the numbers.
NEED_NOT_COINCIDE = (
    "Large weights and large effects need not coincide (Jain & Wallace 2019; Wiegreffe & "
    "Pinter 2019): a weight says how much of a word's value vector a row mixes in, and the "
    "value vector can be small, W_O can turn it away, the residual stream carries the word's "
    "own vector past the head, and later layers can make up for it. Uniform weights are one "
    "ablation among several (zeroing the head, or its mean output over other sentences, give "
    "other numbers), and a head's effect in this sentence says little about another sentence."
)

#: Under the table, when a pointer readout makes some of its numbers true by construction.
BUILT_IN_MARK = "* built in, not measured (see above)."

#: Why a sink head can show a large effect though its attention is a "no-op".
SINK_ABLATION = (
    "For a sink head (its rows park their weight on one token, often one with a small value "
    'vector), uniform weights are not "no attention": they mix every word\'s value vector in '
    "where the head added little, so its Δh measures what that mixing does, not what the head "
    "contributed."
)


def render_ablation(ablation: Ablation, console: Console, *, top: int = 20) -> None:
    """The ablation's introduction, the first ``top`` heads by Δh, and what to make of it."""
    focus = printable(ablation.focus)
    labels = occurrence_labels([printable(word) for word in ablation.words])
    parts: list[RenderableType] = []
    parts += _paragraphs(
        console,
        Text(
            f"attnviz · does the head matter here? '{focus}' in {printable(ablation.model)}, "
            f"{plural(ablation.n_layers, 'layer')} × {plural(ablation.n_heads, 'head')}",
            style="bold",
        ),
    )
    parts += [Text(), *_paragraphs(console, Text(_method(ablation, focus))), Text()]
    if ablation.built_in:
        parts += [*_paragraphs(console, Text(ablation.built_in)), Text()]
    parts += _paragraphs(console, Text(_title(ablation, focus, top), style="bold cyan"))
    parts.append(_table(ablation, labels, top))
    if any(any(_built_in(ablation, effect)) for effect in ablation.effects[:top]):
        parts += _paragraphs(console, Text(BUILT_IN_MARK, style="dim"))
    parts.append(Text())
    closing = [
        Text(
            _comparison(ablation, labels, focus)
            if ablation.answer_head is None
            else _measured(ablation, labels, focus, ablation.answer_head[0])
        )
    ]
    if any(effect.kind in SINKS for effect in ablation.effects[:top]):
        closing.append(Text(SINK_ABLATION + _without_sinks(ablation, labels)))
    closing += [Text(NEED_NOT_COINCIDE), Text(attention_caveat(f"'{focus}'"), style="yellow")]
    if not ablation.trained:
        closing.append(
            Text(
                "Note: these weights are random, not learned (the checkpoint's config.json says "
                "it is untrained): give a trained model to see what a trained head does.",
                style="yellow",
            )
        )
    for index, text in enumerate(closing):
        parts += [Text()] * (index > 0) + _paragraphs(console, text)
    console.print(Group(*parts))


def _paragraphs(console: Console, *texts: Text) -> list[RenderableType]:
    return [line for text in texts for line in wrap(text, console.width)]


def _method(ablation: Ablation, focus: str) -> str:
    """What was done and measured, with this run's numbers."""
    keys = ablation.focus_keys
    where = []
    if ablation.causal and ablation.window is not None:
        where.append(f"the last {ablation.window} tokens up to its own, a sliding window")
    elif ablation.causal:
        where.append("the tokens up to its own, a decoder's causal mask")
    if ablation.padding:
        where.append(f"the {plural(ablation.padding, '[PAD] token')} left out")
    scope = f" ({'; '.join(where)})" if where else ""
    measured = f"Δh = ‖h − h′‖ / ‖h‖ for the last hidden state h of '{focus}'"
    if word_key(ablation.piece) != word_key(ablation.focus.split(":")[0]):
        measured += f" (at its last piece, '{printable(ablation.piece)}')"
    if ablation.readout:
        measured += (
            f", and TV = ½·Σ_w |p(w) − p′(w)| (total variation: 0 the same, 1 nothing shared) "
            f"for {ablation.readout}"
        )
    ablated_layers = {effect.layer for effect in ablation.effects}
    which = "Each head"
    if len(ablated_layers) == 1 and ablation.n_layers > 1:
        which = f"Each head of layer {next(iter(ablated_layers))} (the layer asked for)"
    text = (
        f"{which} in turn gets uniform weights: each row spreads its weight evenly over the "
        f"tokens it may attend to{scope}, so the row of '{focus}' puts {reciprocal(keys, 3)} "
        f"on each of its {keys} tokens. The model then runs again "
        f"from that head's layer on ({len(ablation.effects)} extra forward passes, one per "
        f"head), and the change at '{focus}' is measured: {measured}; "
        f"{'h′ and p′ are' if ablation.readout else 'h′ is'} after the ablation."
    )
    return text + (f" {ablation.readout_note}" if ablation.readout_note else "")


def _title(ablation: Ablation, focus: str, top: int) -> str:
    title = f"Heads by their effect on '{focus}', largest Δh first"
    if len(ablation.effects) > top:
        title += f" (top {top} of {len(ablation.effects)})"
    return title


def _built_in(ablation: Ablation, effect: HeadEffect) -> tuple[bool, bool]:
    """Whether ``effect``'s w and its TV hold by construction (a pointer readout): the w of the
    head whose scores are the answer, the TV of every head of that layer."""
    if ablation.answer_head is None:
        return False, False
    layer, head = ablation.answer_head
    return (effect.layer, effect.head) == (layer, head), effect.layer >= layer


def _table(ablation: Ablation, labels: list[str], top: int) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, header_style="bold")
    columns = [
        ("head", "left"),
        ("type", "left"),
        ("looks most at", "left"),
        ("w", "right"),
        ("Δh", "right"),
    ]
    if ablation.readout:
        columns.append(("TV", "right"))
    for header, justify in columns:
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    shown = ablation.effects[:top]
    marks = [_built_in(ablation, effect) for effect in shown]
    # A marked column keeps its numbers aligned: a space where another row has the mark.
    weight_pad = " " if any(weight for weight, _ in marks) else ""
    output_pad = " " if any(output for _, output in marks) else ""
    for effect, (weight_built_in, output_built_in) in zip(shown, marks, strict=True):
        cells: list[str | Text] = [
            _head(effect),
            effect.kind,
            Text(fit_label(labels[effect.target])),
            format_number(effect.weight, 2) + ("*" if weight_built_in else weight_pad),
            format_number(effect.hidden_change, 3),
        ]
        if effect.output_change is not None:
            cells.append(
                format_number(effect.output_change, 3) + ("*" if output_built_in else output_pad)
            )
        table.add_row(*cells)
    return table


def _head(effect: HeadEffect) -> str:
    return f"L{effect.layer} H{effect.head}"


def _comparison(ablation: Ablation, labels: list[str], focus: str) -> str:
    """Where the head with the largest weight ranks by effect, what the most effective head's
    weight is, and the rank correlation over every head: this run's numbers."""
    effects = ablation.effects
    strongest = max(effects, key=lambda effect: effect.weight)  # the first of equal weights
    rank = effects.index(strongest) + 1
    first = effects[0]
    text = (
        f"Here the largest weight in the row of '{focus}' is in {_head(strongest)} "
        f"({format_number(strongest.weight, 2)} on '{labels[strongest.target]}'), which ranks "
        f"{_ordinal(rank)} of {len(effects)} by Δh ({format_number(strongest.hidden_change, 3)})"
    )
    if first is not strongest:
        text += (
            f"; the largest Δh ({format_number(first.hidden_change, 3)}, {_head(first)}) comes "
            f"from a head whose largest weight is {format_number(first.weight, 2)}, on "
            f"'{labels[first.target]}'"
        )
    text += "."
    if len(effects) >= 3:
        rho = ablation.correlation
        if rho == rho:  # NaN when every weight (or every Δh) is the same
            text += (
                f" Over the {len(effects)} heads, the rank correlation (Spearman's ρ) between a "
                f"head's largest weight and its Δh is {_signed(rho)}"
                f"{_strength(rho)}."
            )
    return text


def _measured(ablation: Ablation, labels: list[str], focus: str, answer_layer: int) -> str:
    """What the ablation measures of a pointer readout's answer: the change that uniform weights
    in a head before the answer's layer make to it, with this run's numbers."""
    before = [effect for effect in ablation.effects if effect.layer < answer_layer]
    if not before:
        return (
            f"Measured: no head comes before layer {answer_layer}, so no ablation here can change "
            f"the answer; what is measured is Δh, the change of the last hidden state of '{focus}'."
        )
    moved = max(before, key=lambda effect: effect.output_change or 0.0)  # the first of equals
    change = (
        f"by TV {format_number(moved.output_change or 0.0, 3)}, and the last hidden state of "
        f"'{focus}' by Δh {format_number(moved.hidden_change, 3)}"
    )
    looked = f"{format_number(moved.weight, 2)} on '{labels[moved.target]}'"
    if len(before) == 1:
        return (
            f"Measured: only {_head(moved)}, the one head before layer {answer_layer}, can change "
            f"the answer. Uniform weights there ({looked}) change it {change}."
        )
    text = (
        f"Measured: only the {len(before)} heads before layer {answer_layer} can change the "
        f"answer. Uniform weights in {_head(moved)} ({looked}) change it most, {change}"
    )
    strongest = max(before, key=lambda effect: effect.weight)
    if strongest is not moved:
        text += (
            f"; the largest weight among them, {_head(strongest)}'s "
            f"{format_number(strongest.weight, 2)} on '{labels[strongest.target]}', changes it "
            f"by TV {format_number(strongest.output_change or 0.0, 3)}"
        )
    return text + "."


def _without_sinks(ablation: Ablation, labels: list[str]) -> str:
    """The ranking and ρ again over the heads that are not sinks, whose Δh measures the head."""
    others = [effect for effect in ablation.effects if effect.kind not in SINKS]
    sinks = len(ablation.effects) - len(others)
    if not others:
        return ""
    first = others[0]
    text = (
        f" Leaving out the {plural(sinks, 'sink head')}, the largest Δh is "
        f"{format_number(first.hidden_change, 3)}, {_head(first)} "
        f"({format_number(first.weight, 2)} on '{labels[first.target]}')"
    )
    if len(others) >= 3:
        rho = ablation.correlation_without_sinks
        if rho == rho:
            text += f", and over the other {len(others)} heads ρ is {_signed(rho)}{_strength(rho)}"
    return text + "."


def _strength(rho: float) -> str:
    """A plain word for |ρ|, after the number."""
    size = abs(rho)
    if size < 0.1:
        return ": none to speak of"
    if size < 0.3:
        return ": weak"
    if size < 0.6:
        return ": moderate"
    return ": strong"


def _signed(value: float) -> str:
    text = format_number(value, 2)
    return text.replace("-", "−") if text.startswith("-") else "+" + text


def _ordinal(number: int) -> str:
    suffix = (
        "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    )
    return f"{number}{suffix}"
