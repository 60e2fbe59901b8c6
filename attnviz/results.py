"""What the analyses found, as plain records: the data every view draws and the analyses of
attnviz/analysis/ fill in. Records only, with the few properties that read them (a link's
specificity is its weight minus its baseline); no analysis runs here, so the renderers, which
import no analysis, can name these types.

- blockwise: what one block of keys does to the online softmax (analysis/blockwise.py);
- contributions: ‖w_ij·f_h(x_j)‖ and its share of the row (analysis/contribution.py);
- head types: each head's scores over its whole matrix and its type (analysis/head_types.py);
- heads: where a focus word looks in every head, ranked (analysis/heads.py);
- compare: two sentences' words aligned, every head's change (analysis/compare.py);
- ablation: each head's effect when its weights are made uniform (analysis/ablation.py);
- scaling: the √d_k and divisor experiments' rows (analysis/scaling.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple, TypeVar

import numpy as np

from attnviz.arrays import FloatArray

if TYPE_CHECKING:
    from attnviz.selection import Selection
    from attnviz.trace import AttentionTrace

_T = TypeVar("_T")

# -- analysis/blockwise.py -----------------------------------------------------------


@dataclass(frozen=True)
class BlockUpdate:
    """What one block of keys does to the running m, ℓ and o. Arrays are read-only."""

    start: int  # the block's first key (from 0)
    stop: int  # one past its last key
    scores: FloatArray  # [b] s_j = q·k_j / √d_k, −∞ where masked
    m_old: float  # the largest score before the block (−∞ before the first)
    m_new: float  # after it
    factor: float  # exp(m_old − m_new): what ℓ_old and o_old are rescaled by
    exponentials: FloatArray  # [b] exp(s_j − m_new), 0 where masked
    l_old: float
    l_new: float
    o_old: FloatArray  # [d_v]
    o_new: FloatArray  # [d_v]
    contributions: FloatArray  # [d_v] Σ_j exp(s_j − m_new)·v_j, the block's own part of o_new


# -- analysis/contribution.py --------------------------------------------------------


class Contributions(NamedTuple):
    """Weights and contributions of every head of one trace, all float64."""

    weights: FloatArray  # [h, n_q, n_k] the trace's weights w_ij
    value_norms: FloatArray  # [h, n_k] ‖v_j^h‖, the value before W_O
    transformed_norms: FloatArray  # [h, n_k] ‖f_h(x_j)‖ = ‖v_j^h · W_O^h‖
    norms: FloatArray  # [h, n_q, n_k] ‖w_ij · f_h(x_j)‖
    shares: FloatArray  # [h, n_q, n_k] norms / each row's sum of norms


#: A key counts as overweighted when its weight is at least twice its share: then weight alone
#: overstates what the word adds by a factor of two or more, enough to reorder a row.
OVERWEIGHT_FACTOR = 2.0


# -- analysis/head_types.py ----------------------------------------------------------

#: A head is of a positional or sink type when it puts at least half its weight there on
#: average: more than on all other keys together, so the type says where most of it goes.
POSITION_THRESHOLD = 0.5


#: A head with no type is broad when its rows' entropy is at least 90% of uniform's: every row
#: spreads nearly evenly (for 10 keys, no key above about 0.3, far from a peak).
BROAD_THRESHOLD = 0.9


class HeadType(str, Enum):
    """What a head does in (nearly) every row."""

    previous = "previous-token"
    next = "next-token"
    self = "self"
    first = "first-token sink"
    cls = "[CLS] sink"
    last = "last-token sink"
    sep = "[SEP] sink"
    broad = "broad"
    mixed = "mixed"


class HeadScores(NamedTuple):
    """One head's scores from its whole matrix, each in [0, 1]; NaN where no row qualifies."""

    previous: float
    next: float
    self: float
    first: float
    last: float
    entropy: float  # mean row entropy / log(allowed keys)
    first_is_cls: bool  # position 0 is a special token ([CLS])
    last_is_sep: bool  # the last key scored is a special token ([SEP])


class TypedHead(NamedTuple):
    """A head's scores and type; layer and head from 1."""

    layer: int
    head: int
    scores: HeadScores
    type: HeadType


class OwnRows(NamedTuple):
    """Which rows of a trace's heads look most at their own word, of those that can say
    (analysis.head_types.counted_rows: a choice of keys, no tie at the top, no [PAD])."""

    own: np.ndarray  # [h, n] bool: the row's largest weight is on its own word
    counted: np.ndarray  # [h, n] bool: the row counts


# -- analysis/heads.py ---------------------------------------------------------------


class RankBy(str, Enum):
    """What ``attnviz heads`` ranks (layer, head) pairs by."""

    specificity = "specificity"  # w − max(by key, by offset)
    selectivity = "selectivity"  # w − by key
    weight = "weight"  # w alone


class HeadLink(NamedTuple):
    """How much the focus word attends to one target in one head; layers and heads from 1."""

    layer: int
    head: int
    target: int  # shown column of the target word
    weight: float  # w, the focus word's weight on the target
    by_key: float  # the other rows' mean weight on the target; NaN without any
    by_offset: float  # their mean weight on the word as far from them; NaN without any

    @property
    def baseline(self) -> float:
        """max(by key, by offset), the one that exists if only one does (NaN if neither)."""
        return float(np.fmax(self.by_key, self.by_offset))

    @property
    def selectivity(self) -> float:
        return self.weight - self.by_key

    @property
    def specificity(self) -> float:
        return self.weight - self.baseline

    def measure(self, rank_by: RankBy) -> float:
        """The number ``rank_by`` ranks by."""
        if rank_by is RankBy.weight:
            return self.weight
        return self.selectivity if rank_by is RankBy.selectivity else self.specificity


class HeadWeights(NamedTuple):
    """The focus word's shown weights and both baselines, in every layer and head."""

    focus: np.ndarray  # [L, h, columns] the focus word's shown row of each head's weights
    by_key: np.ndarray  # [L, h, columns] the other rows' mean weight on each column
    by_offset: np.ndarray  # [L, h, columns] their mean weight as far from them

    @property
    def baseline(self) -> np.ndarray:
        """[L, h, columns] max(by key, by offset), NaN where neither exists."""
        with np.errstate(invalid="ignore"):
            result: np.ndarray = np.fmax(self.by_key, self.by_offset)
        return result

    @property
    def selectivity(self) -> np.ndarray:
        """[L, h, columns] w − by key."""
        result: np.ndarray = self.focus - self.by_key
        return result

    @property
    def specificity(self) -> np.ndarray:
        """[L, h, columns] w − max(by key, by offset)."""
        result: np.ndarray = self.focus - self.baseline
        return result

    def values(self, rank_by: RankBy) -> np.ndarray:
        """[L, h, columns] what ``rank_by`` ranks by."""
        if rank_by is RankBy.weight:
            return self.focus
        return self.selectivity if rank_by is RankBy.selectivity else self.specificity

    def key(self, rank_by: RankBy) -> np.ndarray:
        """[L, h, columns] what ``rank_by`` ranks by, NaN as −∞ so that it ranks last."""
        values = self.values(rank_by)
        return np.where(np.isnan(values), -np.inf, values)


class HeadRanking(NamedTuple):
    """Every (layer, head) ranked by where the focus word looks (``attnviz heads``)."""

    words: tuple[str, ...]  # the shown columns' words, as written
    focus: str  # the focus word's label ("it", or "the:2")
    rank_by: RankBy
    weights: HeadWeights  # [L, h, columns] the focus word's weights and both baselines
    per_word: dict[int, list[HeadLink]]  # each shown column's top heads, best first
    word_order: tuple[int, ...]  # the columns, by how high their best head ranks
    per_head: list[HeadLink]  # each head's top word, highest first
    types: tuple[TypedHead, ...] = ()  # every head's type (head_types.run_head_types)
    column_groups: tuple[tuple[int, ...], ...] = ()  # each shown column's trace positions
    focus_position: int = 0  # the trace position of the focus word (its first piece)
    # (rows whose largest weight is on their own word, rows counted) over every head, and the
    # same of the focus word's own row: (heads where it is, heads where that row counts)
    own_word_rows: tuple[int, int] = (0, 0)
    focus_own_word: tuple[int, int] = (0, 0)

    def type_of(self, link: HeadLink) -> TypedHead | None:
        """The type of the head ``link`` is in (None when the types were not scored)."""
        return next((t for t in self.types if (t.layer, t.head) == (link.layer, link.head)), None)


class FocusSurvey(NamedTuple):
    """Where the focus word's largest weight goes across every head of a run, and its heads for
    one target word (``attnviz demo``'s "it" and "animal")."""

    n_heads: int  # heads counted: layers × heads
    tops: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # each word some head's row
    # puts its largest weight on (labelled as in the trace, the:1 … the:2), with those heads
    # (layer, head from 1); most heads first, ties in the sentence's order
    target: str  # the target word
    offset: int  # how far the target is from the focus word (first pieces; −8: 8 before)
    target_heads: tuple[HeadLink, ...]  # the heads whose largest weight is on the target,
    # by weight, largest first
    strongest: HeadLink  # the head with the largest weight on the target
    specific: HeadLink  # the head with the highest specificity on the target


# -- analysis/compare.py -------------------------------------------------------------


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
        place_a = places(self.only_a, 0, self)
        place_b = places(self.only_b, 1, self)
        return tuple(
            (
                place,
                tuple(i for i in self.only_a if place_a[i] == place),
                tuple(j for j in self.only_b if place_b[j] == place),
            )
            for place in sorted({*place_a.values(), *place_b.values()})
        )


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


def places(columns: Sequence[int], side: int, alignment: Alignment) -> dict[int, int]:
    """For each column a sentence alone has, its place: how many shared words come before it
    in that sentence (``side`` 0 for A's columns, 1 for B's)."""
    shared = [pair[side] for pair in alignment.pairs]
    return {column: sum(index < column for index in shared) for column in columns}


# -- analysis/ablation.py ------------------------------------------------------------


#: The sink types (analysis.head_types): a sink's Δh measures the sink, not the head's choice.
SINKS = frozenset({"first-token sink", "[CLS] sink", "last-token sink", "[SEP] sink"})


@dataclass(frozen=True)
class HeadEffect:
    """One head's weights in the focus row and what replacing them by uniform ones changes."""

    layer: int  # from 1
    head: int  # from 1
    kind: str  # its type, from its whole matrix (analysis.head_types): "[CLS] sink", "mixed"
    target: int  # the column (of the selection) the focus word gives its largest weight
    weight: float  # that weight
    hidden_change: float  # Δh = ‖h − h'‖ / ‖h‖ at the focus position, last hidden state
    output_change: float | None  # TV of the output distribution there; None without a readout


@dataclass(frozen=True)
class Ablation:
    """Every head's effect, largest Δh first."""

    model: str  # the model's name, as the provenance gives it
    focus: str  # the focus word's label: "it", "it:2"
    position: int  # the token whose hidden state (and output) is measured
    piece: str  # that token; the focus word's last piece when --words merged several
    words: tuple[str, ...]  # the selection's column words, which ``target`` indexes
    effects: tuple[HeadEffect, ...]
    readout: str  # what the output distribution is; "" without one
    readout_note: str  # why there is none, or what to know when reading its TV; may be ""
    n_layers: int
    n_heads: int
    focus_keys: int  # how many keys the focus row may attend to: 1/focus_keys each, ablated
    causal: bool  # a decoder's mask: each row attends to the words up to its own
    padding: int  # [PAD] tokens at the end, never attended to
    trained: bool  # False for a checkpoint whose config.json says it is untrained
    # Spearman's ρ between each head's largest weight in the focus row and its Δh, over every
    # head and over the heads that are not sinks; NaN for fewer than 3 heads or all equal.
    correlation: float
    correlation_without_sinks: float
    # (layer, head), from 1, whose scaled scores in the focus row ARE the answer (a pointer
    # readout), else None. Then by construction, not by measurement: every head of that layer
    # has TV 0 (the scores come before the layer's outputs), and that head's weight is the
    # answer's own probability (its weights are the softmax of those scores).
    answer_head: tuple[int, int] | None = None
    built_in: str = ""  # what holds by construction, said as such; "" without answer_head
    window: int | None = None  # a sliding window on the causal mask: the last W tokens only

    def __repr__(self) -> str:
        first = self.effects[0]
        return (
            f"<Ablation: {self.focus!r} in {len(self.effects)} heads of {self.model}; largest "
            f"change Δh = {first.hidden_change:.2f} (layer {first.layer}, head {first.head})>"
        )


# -- analysis/scaling.py -------------------------------------------------------------

#: A row whose ‖∂L/∂s‖ is below this has stalled: it passes back almost nothing (a flat row of
#: 16 weights passes back about 0.24 for the same upstream gradient).
STALLED = 0.01


class SoftmaxStats(NamedTuple):
    """Statistics of softmax over a batch of score rows."""

    score_variance: float  # Var(s) over every score
    max_weight: float  # mean over rows of the largest weight (1/n flat, 1 one-hot)
    entropy: float  # mean entropy of a row, in nats (log n flat, 0 one-hot)
    gradient: float  # mean Frobenius norm of ∂w/∂s = diag(w) - w·wᵀ (0 when one-hot)
    # For an upstream gradient g ~ N(0, 1) on the weights: the mean over rows of ‖∂L/∂s‖, with
    # ∂L/∂s_j = w_j·(g_j − Σ_k w_k·g_k), and the share of rows where it is below STALLED.
    # NaN when no upstream gradient was given.
    backward: float = float("nan")
    stalled: float = float("nan")


class ScalingRow(NamedTuple):
    d_k: int
    unscaled: SoftmaxStats
    scaled: SoftmaxStats  # scores ÷ √d_k


class DivisorRow(NamedTuple):
    """One sentence length n of the divisor experiment: scores divided by √d_k (the paper's
    divisor, fixed by the model) and by √n (the number of keys, which grows with the sentence)."""

    d_k: int
    n_keys: int
    # The pair followed: query 1 of the run with its keys 1 and 2, which every length keeps.
    pair_by_d_k: tuple[float, float]  # (s₁, s₂) = q·k / √d_k
    pair_by_n: tuple[float, float]  # q·k / √n
    weights_by_d_k: tuple[float, float]  # (w₁, w₂) in the row of n keys
    weights_by_n: tuple[float, float]
    # w₁ / w₂ = exp(s₁ − s₂): how the query ranks the two keys, whatever else the row holds.
    ratio_by_d_k: float
    ratio_by_n: float
    # Over every query: the mean of a row's entropy / ln n (1 for a flat row, 0 one-hot).
    flatness_by_d_k: float
    flatness_by_n: float


# -- every analysis of one run, for the surfaces that show them ----------------------------------


class Analysis(str, Enum):
    """An analysis the surfaces show of a run's layers (attnviz.analysis.analyses.analyze)."""

    contributions = "contributions"  # each layer's Contributions (the page, --measure)
    rollout = "rollout"  # R_1 … R_L (the page, --measure rollout)
    head_types = "head types"  # each layer's heads typed (the page, the layers × heads grid)
    own_rows = "own-word rows"  # which rows look most at their own word (the focus view)
    focus_rows = "focus rows"  # the focus word's shown row in every layer and head


@dataclass(frozen=True)
class Analyses:
    """What the analyses found of one run's layers, computed once (analysis.analyses.analyze)
    and handed to every surface that shows them, which looks them up and computes nothing.
    A field is None when it was not asked for, or cannot be had of these layers (rollout and
    head types of cross-attention, focus rows without a focus word); a layer's entry is None
    when only another layer's were asked for (a lesson's, of the layer it shows)."""

    layers: tuple[AttentionTrace, ...]  # the run's layers, first first
    selection: Selection | None = None  # the view the focus rows are of
    contributions: tuple[Contributions | None, ...] | None = None  # one per layer
    rollout: FloatArray | None = None  # [L, n, n] R_l = Â_l·R_{l−1}, of every layer
    head_types: tuple[tuple[TypedHead, ...] | None, ...] | None = None  # each layer's heads
    own_rows: tuple[OwnRows | None, ...] | None = None  # each layer's
    focus_rows: np.ndarray | None = None  # [L, h, columns] the focus word's shown rows

    def index(self, trace: AttentionTrace) -> int | None:
        """Where ``trace`` is among the layers (the very object, or one with its very weights,
        as a notebook's layers may hold it), or None."""
        for index, layer in enumerate(self.layers):
            if layer is trace or layer.weights is trace.weights:
                return index
        return None

    def contributions_of(self, trace: AttentionTrace) -> Contributions:
        """The contributions of ``trace``, one of the layers."""
        return _of(self, self.contributions, trace, "contributions")

    def head_types_of(self, trace: AttentionTrace) -> tuple[TypedHead, ...]:
        """The types of ``trace``'s heads, one of the layers (self-attention)."""
        return _of(self, self.head_types, trace, "head types")

    def own_rows_of(self, trace: AttentionTrace) -> OwnRows:
        """Which rows of ``trace``'s heads look most at their own word (self-attention)."""
        return _of(self, self.own_rows, trace, "own-word rows")

    def rollout_through(self, trace: AttentionTrace) -> FloatArray:
        """R_l of the layer ``trace`` is, the rollout of every layer up to it.  -> [n, n]"""
        index = self.index(trace)
        if self.rollout is None or index is None:
            raise ValueError("the rollout through this trace was not computed")
        result: FloatArray = self.rollout[index]
        return result

    def every_head_type(self) -> tuple[TypedHead, ...]:
        """Every head of every layer, typed, layer 1 head 1 first (self-attention)."""
        return tuple(typed for layer in self.layers for typed in self.head_types_of(layer))

    def every_focus_row(self) -> np.ndarray:
        """The focus word's shown row in every layer and head.  -> [L, h, columns]"""
        if self.focus_rows is None:
            raise ValueError("the focus rows were not computed")
        return self.focus_rows


def _of(found: Analyses, each: Sequence[_T | None] | None, trace: AttentionTrace, name: str) -> _T:
    """What ``each`` (one entry a layer) holds of ``trace``, one of the layers."""
    index = found.index(trace)
    entry = None if each is None or index is None else each[index]
    if entry is None:
        raise ValueError(f"the {name} of this trace were not computed")
    return entry
