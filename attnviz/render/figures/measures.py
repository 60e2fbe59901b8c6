"""What a heatmap's colours show (``--measure``), one matrix per panel, with the words that
say so in the title and on the colour bar.

- weights: each head's softmax(Q·Kᵀ/√d_k), as attention computed it.
- contribution: each head's contribution shares, ‖w_ij·f_h(x_j)‖ / Σ_k ‖w_ik·f_h(x_k)‖ with
  f_h(x_j) = v_j·W_O^h (attnviz.analysis.contribution). Shares, not norms: they sum to 1 over a
  row like weights, so one colour scale (0–1) serves both pictures and they can be compared.
- rollout: R_l = Â_l·…·Â_1, Â = ½·mean_h A + ½·I rows renormalised, over every layer up to the
  one shown (attnviz.analysis.rollout), one matrix for all heads.

Each of the three has rows that sum to 1, so the figures' row-sum phrase holds for all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, option
from attnviz.lesson.caveats import short_attention_caveat
from attnviz.render.options import Measure
from attnviz.results import Analyses
from attnviz.trace import AttentionTrace


@dataclass(frozen=True)
class Drawn:
    """The matrices a heatmap draws and the words that name them."""

    matrices: FloatArray  # [panels, n_q, n_k] in the trace's positions, rows summing to 1
    titles: tuple[str, ...]  # above each panel: "Head 1", or "Rollout R_6"
    names: tuple[str, ...]  # the focus panel's row labels: "head 1", or "R_6"
    phrases: tuple[str, ...]  # the figure title's phrases saying what the colours are
    noun: str  # the colour bar's label: "attention weight", "contribution share", "rollout"
    short: str  # its short form, for a short colour bar: "weight", "share", "rollout"
    caption: tuple[str, ...] = ()  # sentences under the title: what it does not mean
    focus_title: str = 'Where "{word}" looks'  # the focus word's panel, {word} filled in


WEIGHTS_PHRASES = ("attention weights softmax(Q·Kᵀ/√d_k)",)
#: The formulas go in the caption, broken between words where a narrow picture needs it (a
#: title phrase longer than a line is cut).
CONTRIBUTION_CAPTION = (
    "Contribution share = ‖w_ij·f_h(x_j)‖ / Σ_k ‖w_ik·f_h(x_k)‖, with f_h(x_j) = v_j·W_O^h: "
    "the size of what word j adds to row i's output in head h, as a share of the row's "
    "(Kobayashi et al. 2020)."
)
ROLLOUT_CAPTION = (
    "Rollout follows the mixing down to the input words: R_l[i, j] is how much of word j "
    "reaches row i if mixing were all a layer did (Abnar & Zuidema 2020). It leaves out the "
    "values, W_O, the feed-forward blocks and layer norms, so it says where mixing could carry "
    "a word, not what the model uses."
)


#: What the layers × heads grid can draw: the title's name for it, the colour bar's names and
#: the caption's formula.
GRID_NAMES = {
    Measure.weights: ("attention weights", ("attention weight", "weight"), ()),
    Measure.contribution: (
        "contribution shares",
        ("contribution share", "share"),
        (CONTRIBUTION_CAPTION,),
    ),
}


def every_layer(measure: Measure, run: Analyses) -> FloatArray:
    """Every head of every layer of ``run`` as ``measure`` draws it: [L, h, n, n] (the
    contributions as ``run`` holds them). Rollout is one matrix per layer, not one per head:
    AttnvizError (the command line refuses it before any work)."""
    layers = run.layers
    if measure is Measure.rollout:
        raise AttnvizError(
            f"{option('all_layers')} draws every head; {option('measure', measure)} mixes "
            f"them into one matrix: drop {option('all_layers')} to draw it."
        )
    if measure is Measure.contribution:
        return np.stack([np.nan_to_num(run.contributions_of(layer).shares) for layer in layers])
    return np.stack([np.asarray(layer.weights) for layer in layers])


def is_trained(trace: AttentionTrace) -> bool:
    """A trained model's weights (pretrained, or trained by attnviz), here or read back."""
    origin = trace.provenance.weights
    return origin.model is not None and not origin.is_random


def check_measure(
    measure: Measure, trace: AttentionTrace, layers: Sequence[AttentionTrace]
) -> None:
    """AttnvizError for what ``measure`` cannot draw of ``trace``: rollout of cross-attention, or
    of a layer whose layers below are not in ``layers``."""
    if measure is not Measure.rollout:
        return
    if trace.is_cross:
        raise AttnvizError(
            f"{option('measure', Measure.rollout)} follows self-attention through the layers; "
            "cross-attention's rows mix another sentence's words: draw "
            f"{option('measure', Measure.weights)} or {option('measure', Measure.contribution)}."
        )
    layer = trace.provenance.weights.layer
    if layer is not None and len(layers_up_to(trace, layers)) != layer:
        raise AttnvizError(
            f"{option('measure', Measure.rollout)} needs every layer from 1 to {layer}, and "
            f"only layer {layer} was computed; run the model with "
            f"{option('model', metavar='NAME')} {option('layer', layer)} instead of reading one "
            "layer back."
        )


def layers_up_to(trace: AttentionTrace, layers: Sequence[AttentionTrace]) -> list[AttentionTrace]:
    """The layers from the first to ``trace`` (itself alone when it is not among them)."""
    for index, layer in enumerate(layers):
        if layer is trace:
            return list(layers[: index + 1])
    return [trace]


def head_title(trace: AttentionTrace, head: int) -> str:
    """ "Head 3", or with grouped-query attention "Head 3 (K/V 2)": the key/value head (from 1)
    it shares with the other heads of its group."""
    title = f"Head {head + 1}"
    return f"{title} (K/V {trace.kv_head(head) + 1})" if trace.is_grouped else title


def drawn_measure(
    measure: Measure,
    trace: AttentionTrace,
    heads: Sequence[int],
    run: Analyses | None = None,
) -> Drawn:
    """The panels ``measure`` draws of ``trace``'s ``heads`` (rollout: one, through the
    layers of ``run`` up to ``trace``), with their titles and the title's and colour bar's
    words; contributions and rollout as ``run`` holds them (``trace`` one of its layers). A
    caution joins the caption for a trained model's weights."""
    layers = (trace,) if run is None else run.layers
    check_measure(measure, trace, layers)
    caveat = (short_attention_caveat(),) if is_trained(trace) else ()
    head_titles = tuple(head_title(trace, head) for head in heads)
    head_names = tuple(f"head {head + 1}" for head in heads)
    if measure is Measure.contribution:
        shares = np.nan_to_num(
            _found(run, measure).contributions_of(trace).shares[list(heads)]
        )  # 0s: 0
        return Drawn(
            shares, head_titles, head_names, ("contribution shares",), "contribution share",
            "share", (CONTRIBUTION_CAPTION, *caveat), 'What each word adds to "{word}" (shares)',
        )  # fmt: skip
    if measure is Measure.rollout:
        below = layers_up_to(trace, layers)
        last = len(below)
        rolled = _found(run, measure).rollout_through(trace)[None]  # [1, n, n]: R_last
        product = f"R_{last} = Â_{last}·…·Â_1" if last > 1 else "R_1 = Â_1"
        layers_text = f"{last} layer{'s' if last > 1 else ''}"
        formula = (
            f"Attention rollout {product}, Â_l = ½·mean over heads of A_l + ½·I with rows "
            f"renormalised, over every head of {layers_text}."
        )
        return Drawn(
            rolled, (f"Rollout R_{last}",), (f"R_{last}",), (f"attention rollout R_{last}",),
            "rollout", "rollout", (formula, ROLLOUT_CAPTION, *caveat),
            'How much of each word reaches "{word}" (rollout)',
        )  # fmt: skip
    weights = np.asarray(trace.weights)[list(heads)]
    return Drawn(
        weights, head_titles, head_names, WEIGHTS_PHRASES, "attention weight", "weight", caveat
    )


def _found(run: Analyses | None, measure: Measure) -> Analyses:
    """``run``, which a measure other than the weights needs: what the analyses found."""
    if run is None:
        raise ValueError(f"--measure {measure.value} draws what the analyses of the run found")
    return run
