"""heads --ablate's report, drawn from hand-made ablations: every sentence against the numbers
beside it."""

from __future__ import annotations

import io

from rich.console import Console

from attnviz.analysis.ablation import Ablation, HeadEffect, weight_change_correlation
from attnviz.lesson.caveats import attention_caveat
from attnviz.render.terminal.ablation_report import (
    NEED_NOT_COINCIDE,
    SINK_ABLATION,
    render_ablation,
)
from attnviz.results import SINKS

WORDS = ("[CLS]", "the", "dog", "barked", "because", "it", "was", "hungry", "[SEP]")


def effect(layer: int, head: int, kind: str, target: int, weight: float, dh: float) -> HeadEffect:
    return HeadEffect(layer, head, kind, target, weight, dh, None)


def ablation(effects: tuple[HeadEffect, ...], **changes: object) -> Ablation:
    fields: dict[str, object] = {
        "model": "all-MiniLM-L6-v2",
        "focus": "it",
        "position": 5,
        "piece": "it",
        "words": WORDS,
        "effects": effects,
        "readout": "",
        "readout_note": "It has no output layer here: only the hidden state is measured.",
        "n_layers": 2,
        "n_heads": 2,
        "focus_keys": 9,
        "causal": False,
        "padding": 0,
        "trained": True,
        "correlation": weight_change_correlation(effects),
        "correlation_without_sinks": weight_change_correlation(
            [effect for effect in effects if effect.kind not in SINKS]
        ),
    }
    fields.update(changes)
    return Ablation(**fields)  # type: ignore[arg-type]


EFFECTS = (
    effect(2, 1, "mixed", 2, 0.40, 0.5),
    effect(1, 2, "[CLS] sink", 0, 0.95, 0.25),
    effect(1, 1, "previous-token", 4, 0.99, 0.125),
    effect(2, 2, "broad", 6, 0.20, 0.0625),
)


def draw(shown: Ablation, top: int = 20) -> str:
    out = io.StringIO()
    render_ablation(shown, Console(file=out, width=100, color_system=None), top=top)
    return out.getvalue()


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_report_states_the_method_with_this_runs_numbers() -> None:
    text = draw(ablation(EFFECTS))
    lines = text.splitlines()
    assert (
        lines[0]
        == "attnviz · does the head matter here? 'it' in all-MiniLM-L6-v2, 2 layers × 2 heads"
    )
    words = flat(text)
    assert "the row of 'it' puts 1/9 ≈ 0.111 on each of its 9 tokens" in words
    assert "(4 extra forward passes, one per head)" in words
    assert "Δh = ‖h − h′‖ / ‖h‖ for the last hidden state h of 'it'; h′ is after the" in words
    assert "It has no output layer here: only the hidden state is measured." in words
    assert "last piece" not in words
    pieces = flat(draw(ablation(EFFECTS, focus="unbelievably", piece="##bly")))
    assert "last hidden state h of 'unbelievably' (at its last piece, '##bly'); h′ is" in pieces
    assert "TV" not in text  # no readout, no column
    header = next(line for line in lines if line.startswith("head"))
    assert header.split() == ["head", "type", "looks", "most", "at", "w", "Δh"]
    rows = lines[lines.index(header) + 2 : lines.index(header) + 6]
    assert [row.split() for row in rows] == [
        ["L2", "H1", "mixed", "dog", "0.40", "0.500"],
        ["L1", "H2", "[CLS]", "sink", "[CLS]", "0.95", "0.250"],
        ["L1", "H1", "previous-token", "because", "0.99", "0.125"],
        ["L2", "H2", "broad", "was", "0.20", "0.062"],
    ]


def test_where_the_largest_weight_ranks_and_the_rank_correlation() -> None:
    words = flat(draw(ablation(EFFECTS)))
    assert (
        "Here the largest weight in the row of 'it' is in L1 H1 (0.99 on 'because'), which "
        "ranks 3rd of 4 by Δh (0.125); the largest Δh (0.500, L2 H1) comes from a head whose "
        "largest weight is 0.40, on 'dog'." in words
    )
    # Weights 0.40 0.95 0.99 0.20 rank 2 3 4 1; Δh ranks 4 3 2 1: ρ = 1 − 6·Σd²/(n(n²−1)) = 0.2.
    assert (
        "the rank correlation (Spearman's ρ) between a head's largest weight and its Δh is "
        "+0.20: weak." in words
    )
    assert flat(NEED_NOT_COINCIDE) in words
    assert flat(attention_caveat("'it'")) in words
    assert flat(SINK_ABLATION) in words  # a [CLS] sink is among the heads shown
    # Without the sink: weights 0.40 0.99 0.20 rank 2 3 1, Δh 0.5 0.125 0.0625 rank 3 2 1:
    # Σd² = 1 + 1 + 0 = 2, ρ = 1 − 6·2/(3·8) = 0.5.
    assert (
        "Leaving out the 1 sink head, the largest Δh is 0.500, L2 H1 (0.40 on 'dog'), and over "
        "the other 3 heads ρ is +0.50: moderate." in words
    )


def test_top_the_sink_sentence_and_the_untrained_note() -> None:
    text = draw(ablation(EFFECTS, trained=False), top=1)
    words = flat(text)
    assert "largest Δh first (top 1 of 4)" in words
    assert "L1 H2" not in text.split("Here the largest")[0]  # only the first row is listed
    assert flat(SINK_ABLATION) not in words  # the sink head is not among those shown
    assert "Note: these weights are random, not learned" in words


def test_the_largest_weight_in_the_most_effective_head_and_a_readout() -> None:
    effects = (
        HeadEffect(1, 1, "mixed", 2, 0.9, 0.3, 0.25),
        HeadEffect(1, 2, "mixed", 3, 0.5, 0.1, 0.0),
    )
    shown = ablation(
        effects,
        readout="the next-token distribution after 'it'",
        readout_note="",
        causal=True,
        focus_keys=6,
    )
    text = draw(shown)
    words = flat(text)
    assert (
        "(the tokens up to its own, a decoder's causal mask), so the row of 'it' puts 1/6" in words
    )
    assert "TV = ½·Σ_w |p(w) − p′(w)|" in words and "h′ and p′ are after the ablation" in words
    assert "which ranks 1st of 2 by Δh (0.300)." in words
    assert "Spearman" not in words  # two heads: no correlation worth a number
    row = next(line for line in text.splitlines() if line.startswith("L1 H1"))
    assert row.split() == ["L1", "H1", "mixed", "dog", "0.90", "0.300", "0.250"]


POINTER = {
    "model": "toy",
    "readout": "toy's answer at 'it': softmax of head 1's scaled scores in the row of 'it'",
    "readout_note": "",
    "answer_head": (3, 1),
    "built_in": "Built in, not measured: layer 3's head 1 IS toy's answer.",
}


def test_a_pointer_readouts_built_in_numbers_are_marked_and_not_compared() -> None:
    """Where the answer is a head's scores, the TV of that head's layer and that head's w hold
    by construction: marked, said as such, and left out of what is measured."""
    effects = (
        HeadEffect(3, 2, "mixed", 6, 0.70, 0.60, 0.0),
        HeadEffect(3, 1, "mixed", 2, 1.00, 0.50, 0.0),
        HeadEffect(1, 1, "previous-token", 4, 0.99, 0.30, 0.05),
        HeadEffect(2, 1, "mixed", 2, 0.40, 0.20, 0.75),
    )
    text = draw(ablation(effects, n_layers=3, **POINTER))
    lines = text.splitlines()
    words = flat(text)
    assert "Built in, not measured: layer 3's head 1 IS toy's answer." in words
    header = next(line for line in lines if line.startswith("head"))
    rows = lines[lines.index(header) + 2 : lines.index(header) + 6]
    assert [row.split() for row in rows] == [
        ["L3", "H2", "mixed", "was", "0.70", "0.600", "0.000*"],  # any head of layer 3: TV
        ["L3", "H1", "mixed", "dog", "1.00*", "0.500", "0.000*"],  # the answer's head: w too
        ["L1", "H1", "previous-token", "because", "0.99", "0.300", "0.050"],
        ["L2", "H1", "mixed", "dog", "0.40", "0.200", "0.750"],
    ]
    assert len({len(row) for row in rows}) == 1  # the marks keep the numbers aligned
    assert lines[lines.index(header) + 6] == "* built in, not measured (see above)."
    assert (
        "Measured: only the 2 heads before layer 3 can change the answer. Uniform weights in "
        "L2 H1 (0.40 on 'dog') change it most, by TV 0.750, and the last hidden state of 'it' "
        "by Δh 0.200; the largest weight among them, L1 H1's 0.99 on 'because', changes it by "
        "TV 0.050." in words
    )
    # The weight of the answer's head is not set against effects as if it were a finding.
    assert "Here the largest weight" not in words and "Spearman" not in words


def test_a_pointer_readout_with_one_head_before_it_or_none() -> None:
    one = (
        HeadEffect(1, 1, "mixed", 5, 0.84, 0.688, 0.933),
        HeadEffect(2, 1, "mixed", 2, 1, 0.5, 0),
    )
    words = flat(draw(ablation(one, **{**POINTER, "answer_head": (2, 1)})))
    assert (
        "Measured: only L1 H1, the one head before layer 2, can change the answer. Uniform "
        "weights there (0.84 on 'it') change it by TV 0.933, and the last hidden state of 'it' "
        "by Δh 0.688." in words
    )
    alone = (HeadEffect(1, 1, "mixed", 2, 1.0, 0.4, 0.0),)
    words = flat(draw(ablation(alone, n_layers=1, **{**POINTER, "answer_head": (1, 1)})))
    assert "Measured: no head comes before layer 1, so no ablation here can change the answer" in (
        words
    )
    # The marks' note only under a table that shows a mark.
    shown = draw(ablation(one, **{**POINTER, "answer_head": (2, 1)}), top=1)
    assert "*" not in shown and "(see above)" not in shown


def test_without_a_pointer_readout_nothing_is_marked_built_in() -> None:
    effects = (
        HeadEffect(1, 1, "mixed", 2, 1.0, 0.887, 1.0),
        HeadEffect(2, 1, "mixed", 6, 1.0, 0.514, 0.0),  # a measured 0, not a built-in one
    )
    text = draw(ablation(effects, readout="toy's answer at 'it': softmax of h_L·W_U"))
    assert "*" not in text and "Built in" not in text and "Measured:" not in text
    assert "Here the largest weight in the row of 'it' is in L1 H1" in flat(text)
