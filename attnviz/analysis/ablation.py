"""Does a head matter here: each head's weights replaced by uniform ones, the model run again
from that layer on, and the change measured at the focus word.

For head h of layer l, the ablated weights are uniform over the keys each row may attend to,
u_ij = 1/|allowed(i)| (every word for an encoder, words 0..i for a decoder, padding never), so
Z_h' = U·V_h and the layer's output becomes

    output' = Concat(Z_1 … Z_h' … Z_H)·W_O + b_O = output + (Z_h' − Z_h)·W_O^(h)

with W_O^(h) the rows h·d_k … (h+1)·d_k of W_O. Layers l+1 … L then run as usual on what layer
l now passes on. The effect at the focus word's position i is

    Δh = ‖h_L(i) − h_L'(i)‖ / ‖h_L(i)‖        (the last hidden state, relative change)
    TV = ½·Σ_w |p(w) − p'(w)|                 (the model's output distribution at i)

TV, the total variation distance, is 0 for the same distribution and 1 for two that share
nothing. A head with large weights can have a small effect and the reverse (Jain & Wallace
2019; Wiegreffe & Pinter 2019): the value vectors, W_O, the residual stream and later layers all
stand between a weight and the output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.analysis.head_types import trace_head_types
from attnviz.arrays import FloatArray
from attnviz.attention import softmax
from attnviz.errors import listed
from attnviz.model.base import ModelTrace
from attnviz.model.families.toy import ToyConfig, ToyWeights
from attnviz.model.run import LoadedModel
from attnviz.results import (
    SINKS,
)
from attnviz.results import (
    Ablation as Ablation,
)
from attnviz.results import (
    HeadEffect as HeadEffect,
)
from attnviz.selection import Selection
from attnviz.tokens import Focus, printable, word_key
from attnviz.trace import AttentionTrace

#: p at position i, from the run's last hidden states and last layer's trace -> [outputs].
Distribution = Callable[[ModelTrace, AttentionTrace, int], FloatArray]


@dataclass(frozen=True)
class Readout:
    """The model's output distribution at a position, and what it is, in words."""

    what: str  # "the next-token distribution (GPT-2's tied token embeddings as output layer)"
    distribution: Distribution
    note: str = ""  # what to know when reading its TV, if anything
    # (layer, head), from 1, whose scaled scores in the focus row the answer is read from (a
    # pointer readout), else None: what that makes true of the ablation is by construction.
    answer_head: tuple[int, int] | None = None
    built_in: str = ""  # those things, said as such


def uniform_weights(
    n_queries: int, n_keys: int, mask: np.ndarray | None, dtype: type
) -> FloatArray:
    """1/|allowed(i)| on the keys row i may attend to, 0 elsewhere.  -> [n_q, n_k]"""
    allowed = np.ones((n_queries, n_keys), dtype=bool) if mask is None else mask
    counts = allowed.sum(axis=-1, keepdims=True)
    uniform: FloatArray = (allowed / counts).astype(dtype)
    return uniform


def ablated_output(trace: AttentionTrace, head: int) -> FloatArray:
    """The layer's attention output with head ``head`` (from 0) given uniform weights:
    output + (U·V_h − Z_h)·W_O^(h), the same as Concat(…, U·V_h, …)·W_O + b_O.  -> [n, d_model]"""
    uniform = uniform_weights(trace.n_tokens, trace.V.shape[1], trace.mask, trace.V.dtype.type)
    d_k = trace.V.shape[-1]
    change = np.matmul(uniform, trace.V[trace.kv_head(head)]) - trace.Z[head]  # [n, d_k]
    result: FloatArray = trace.output + change @ trace.W_O[head * d_k : (head + 1) * d_k]
    return result


def relative_change(before: FloatArray, after: FloatArray) -> float:
    """‖before − after‖ / ‖before‖ (Euclidean), 0 for the same vector."""
    return float(np.linalg.norm(before - after) / np.linalg.norm(before))


def total_variation(p: FloatArray, q: FloatArray) -> float:
    """½·Σ_w |p(w) − q(w)|: 0 for the same distribution, 1 for disjoint ones."""
    return float(0.5 * np.abs(np.asarray(p, np.float64) - np.asarray(q, np.float64)).sum())


def measure_position(selection: Selection) -> int:
    """Where the focus word's effect is measured: its last piece (for a decoder, the first
    position that has read the whole word, and predicts the word after it)."""
    assert selection.focus is not None and selection.focus_row is not None
    return max(selection.row_groups[selection.focus_row])


def ablate_heads(
    loaded: LoadedModel,
    run: ModelTrace,
    selection: Selection,
    readout: Readout | None,
    *,
    no_readout: str = "",
    layer: int | None = None,
) -> Ablation:
    """Every head of ``run`` (``loaded``'s forward pass) ablated in turn, as the module says, or
    only layer ``layer``'s (from 1); ``selection`` follows the focus word (its columns name the
    words); ranked by Δh."""
    assert selection.focus is not None  # the caller refuses a selection without one
    position = measure_position(selection)
    hidden = run.last_hidden_state[position]
    last = run.layers[-1]
    before = None if readout is None else readout.distribution(run, last, position)
    effects = []
    for number, trace in enumerate(run.layers, start=1):
        if layer is not None and number != layer:
            continue
        row = selection.focus_weights(trace.weights)  # [h, columns]
        kinds = [typed.type.value for typed in trace_head_types(trace, number)]
        for head in range(trace.n_heads):
            rerun = loaded.run_layers(
                run.hidden_states[number - 1],
                start=number,
                attention_output=ablated_output(trace, head),
                mask=trace.mask,
            )
            change = None
            if readout is not None and before is not None:
                # Ablating the last layer leaves its scores (a pointer readout's) as they were.
                after = readout.distribution(
                    rerun, rerun.layers[-1] if rerun.layers else last, position
                )
                change = total_variation(before, after)
            target = int(np.argmax(row[head]))
            effects.append(
                HeadEffect(
                    layer=number,
                    head=head + 1,
                    kind=kinds[head],
                    target=target,
                    weight=float(row[head, target]),
                    hidden_change=relative_change(hidden, rerun.last_hidden_state[position]),
                    output_change=change,
                )
            )
    effects.sort(key=lambda effect: -effect.hidden_change)
    return Ablation(
        model=loaded.name,
        focus=selection.focus.label,
        position=position,
        piece=run.tokens[position],
        words=selection.column_words,
        effects=tuple(effects),
        readout="" if readout is None else readout.what,
        readout_note=no_readout if readout is None else readout.note,
        trained=last.provenance.weights.trained,
        correlation=weight_change_correlation(effects),
        correlation_without_sinks=weight_change_correlation(
            [effect for effect in effects if effect.kind not in SINKS]
        ),
        n_layers=len(run.layers),
        n_heads=run.layers[0].n_heads,
        focus_keys=len(run.tokens) if last.mask is None else int(last.mask[position].sum()),
        causal=last.provenance.masking.causal,
        window=last.provenance.masking.window,
        padding=last.provenance.masking.padding,
        answer_head=None if readout is None else readout.answer_head,
        built_in="" if readout is None else readout.built_in,
    )


def softmax_readout(
    what: str,
    logits: Callable[[ModelTrace, AttentionTrace, int], FloatArray],
    note: str = "",
    *,
    answer_head: tuple[int, int] | None = None,
    built_in: str = "",
) -> Readout:
    """A readout whose distribution is softmax of ``logits`` (in float64, so that TV is not
    float32 rounding)."""

    def distribution(run: ModelTrace, last: AttentionTrace, position: int) -> FloatArray:
        return softmax(np.asarray(logits(run, last, position), np.float64))

    return Readout(what, distribution, note, answer_head, built_in)


def readout_of(loaded: LoadedModel, word: Focus) -> tuple[Readout | None, str]:
    """The model's output distribution at the focus word, when attnviz can read one: GPT-2's
    next-token distribution through its tied token embeddings, a toy model's answer where it
    was trained to answer; else None and why, in one sentence."""
    from attnviz.model.families.gpt2 import GPT2Weights

    focus = f"'{printable(word.label)}'"
    config = loaded.toy_config
    if config is not None:
        answers_everywhere = config.readout == "token"
        focus_words = {word_key(asked) for asked in config.focus_words}
        if not answers_everywhere and word_key(word.word) not in focus_words:
            asked = listed(map(printable, config.focus_words), " or ", form="'{}'".format)
            return None, (
                f"{loaded.name} was trained to answer at {asked or 'its focus word'} only, so at "
                f"{focus} only the hidden state is measured."
            )
        return _toy_readout(loaded.weights, config, loaded.name, focus), ""
    if isinstance(loaded.weights, GPT2Weights):
        table = tied_embeddings(loaded)
        if table is None:
            return None, (
                f"{loaded.name}'s config.json unties its output layer from the token "
                "embeddings, which attnviz does not read: only the hidden state is measured."
            )
        return softmax_readout(
            f"the next-token distribution after {focus} (softmax of h_L·W_teᵀ: GPT-2's token "
            "embeddings, tied, as its output layer)",
            lambda run, _last, position: run.last_hidden_state[position] @ table.T,
        ), ""
    from attnviz.model.families.bert import BertWeights

    if isinstance(loaded.weights, BertWeights):
        return None, (
            f"{loaded.name} is read as an encoder only (attnviz loads no output layer for the "
            "BERT family): only the hidden state is measured."
        )
    return None, (
        f"attnviz does not load the output layer of {loaded.name}, the matrix that turns the last "
        "hidden state into next-token scores, so only the hidden state is measured."
    )


def tied_embeddings(loaded: LoadedModel) -> FloatArray | None:
    """GPT-2's whole token table W_te [vocabulary, d_model], its output layer when tied (the
    default); None when config.json unties them."""
    from attnviz.model.sources.checkpoint import config_data
    from attnviz.model.sources.tensors import open_tensors

    data = config_data(loaded.folder)
    if data.get("tie_word_embeddings", True) is False:
        return None
    assert loaded.architecture is not None  # GPT-2 is an architecture
    rows = loaded.weights.token_embeddings
    with open_tensors(loaded.folder, rows.dtype.type, loaded.architecture.prefixes) as tensors:
        # The table's own row count: config.json's vocab_size may be missing or wrong.
        n_rows = tensors.row_count("wte.weight")
        table: FloatArray = tensors.get("wte.weight", (n_rows, rows.shape[1]))
    return table


def _toy_readout(weights: ToyWeights, config: ToyConfig, name: str, focus: str) -> Readout:
    """A toy model's answer as it was trained to give it (attnviz.train.network's logits)."""
    if config.readout == "pointer":
        return softmax_readout(
            f"{name}'s answer at {focus}: softmax of head 1's scaled scores in the row of "
            f"{focus} in the last layer, the row it was trained to point with",
            lambda _run, last, position: last.scaled[0, position],
            answer_head=(config.n_layers, 1),
            built_in=_pointer_built_in(config.n_layers, name, focus),
        )
    assert weights.W_U is not None  # a word or token readout has an output layer
    output = weights.W_U
    over = "its answer words" if config.readout == "word" else "its vocabulary"
    return softmax_readout(
        f"{name}'s answer at {focus}: softmax of h_L·W_U over {over}",
        lambda run, _last, position: run.last_hidden_state[position] @ output,
    )


def _pointer_built_in(layer: int, name: str, focus: str) -> str:
    """What a pointer readout makes true of the ablation, whatever the numbers: said as built
    in, so that it is not read as a finding about attention."""
    return (
        f"Built in, not measured: layer {layer}'s head 1 IS {name}'s answer. The answer is read "
        f"from its scaled scores in the row of {focus}, before its softmax and before any output "
        f"of layer {layer}, so changing or removing an output of layer {layer} cannot change "
        f"the answer: the TV of 0 there holds by construction. That head's row of weights is "
        f"the softmax of those same scores, the answer's own distribution, which {name} was "
        f"trained to put on the answer: its w is the answer itself, not a finding about "
        f"attention. Nor does the answer read the last hidden state h: Δh is not the answer's "
        f"change, TV is. None of these built-in numbers says whether attention explains the "
        "answer."
    )


def weight_change_correlation(effects: Sequence[HeadEffect]) -> float:
    """Spearman's ρ between each head's largest weight in the focus row and its Δh; NaN for
    fewer than 3 heads (no correlation worth a number) or when every weight or Δh is equal."""
    if len(effects) < 3:
        return float("nan")
    weights = np.array([effect.weight for effect in effects])
    changes = np.array([effect.hidden_change for effect in effects])
    return rank_correlation(weights, changes)


def rank_correlation(x: FloatArray, y: FloatArray) -> float:
    """Spearman's ρ: the Pearson correlation of the ranks (ties share their mean rank); NaN
    when either is constant."""
    ranks = [_ranks(np.asarray(values, np.float64)) for values in (x, y)]
    if any(np.ptp(r) == 0 for r in ranks):
        return float("nan")
    return float(np.corrcoef(ranks[0], ranks[1])[0, 1])


def _ranks(values: FloatArray) -> FloatArray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values), dtype=np.float64)
    for value in np.unique(values):  # ties: their mean rank
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks
