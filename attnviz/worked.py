"""Worked examples as data: one number of each step, with the terms that make it, taken from
a trace. Every renderer (the terminal lesson, a notebook, a page) formats these records and
computes nothing itself. Each below under the key of the step that shows it (the table in
attnviz/lesson/steps.py numbers the steps):

    qkv     Q[h][i, c] = Σ_m X[i, m]·W_Q[h][m, c] (+ b_Q[h][c])
    rope    q_m'[a] = q_m[a]·cos(m·θ_i) − q_m[b]·sin(m·θ_i), q_m'[b] = q_m[a]·sin(m·θ_i) + …
    scores  scores[h][i, j] = q_i · k_j = Σ_c q_i[c]·k_j[c]  (q, k turned with rotary positions;
            [q | q_R]·[k | k_R] with a latent's decoupled rotary positions)
    latent  scores[h][i, j] = (q_i·W_UK[h]ᵀ)·c_j = Σ_r q̃_i[r]·c_j[r], the key never expanded
            (+ q_R,i·k_R,j, the decoupled rotary part, with rotary positions)
    scaled  scaled[h][i, j] = scores[h][i, j] / √d_k  (√(d_k + d_rope) with a latent's RoPE)
    weights w_ij = exp(s_ij) / Σ_k exp(s_ik) = exp(s_ij − m_i) / Σ_k exp(s_ik − m_i), m_i the
            row's largest allowed score (exp(−m_i) cancels); a masked key's score is −∞, and
            exp(−∞) = 0
    z       z_i = Σ_j w_ij·v_j
    blockwise  z_i again, a block of keys at a time (attnviz.analysis.blockwise): o/ℓ
    output  output[i, c] = Σ_m Concat[i, m]·W_O[m, c] (+ b_O[c])
                         = Σ_h Z_h[i]·W_O^(h)[:, c] (+ b_O[c]),  W_O^(h) = head h's rows of W_O

The result of each record is the trace's own number, never recomputed: the terms are there to
be added up by hand (and by the tests) to that result. Positions are the trace's own (word
pieces as computed, hidden tokens included); heads are numbered from 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from attnviz.analysis.contribution import row_contribution
from attnviz.arrays import FloatArray
from attnviz.attention import softmax_parts
from attnviz.positions import rope_frequencies, rope_pairs, rotate
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:  # the blockwise step is optional: explain does not import it
    from attnviz.analysis.blockwise import OnlineSoftmax


class ProjectionExample(NamedTuple):
    """The qkv step: one element of Q, K or V as a sum over X's row times a column of W."""

    matrix: str  # "Q", "K" or "V"
    head: int
    token: int  # the row of X (of X_source for K and V in cross-attention)
    column: int  # the column of W[head], from 0
    x: FloatArray  # [d_model] the token's row of X
    w: FloatArray  # [d_model] column ``column`` of W[head]
    bias: float | None  # b[head][column] in a pretrained layer
    result: float  # the trace's Q[head, token, column] (or K, V)


class DotProductExample(NamedTuple):
    """The scores step: one raw score as q·k, term by term."""

    head: int
    query: int
    key: int
    q: FloatArray  # [d_k]
    k: FloatArray  # [d_k]
    result: float  # the trace's scores[head, query, key]


class ScalingExample(NamedTuple):
    """The scaled step: one score divided by √d_k."""

    head: int
    query: int
    key: int
    score: float
    sqrt_d_k: float
    result: float  # the trace's scaled[head, query, key]


class SoftmaxExample(NamedTuple):
    """The weights step (the softmax): one weight as exp(shifted score) over the sum of its row's
    exponentials, and as exp(scaled score) over the sum of the row's unshifted exponentials (the
    same weight: the factor exp(−m_i) cancels)."""

    head: int
    query: int
    key: int
    shifted: FloatArray  # [n_keys] the row minus its largest allowed score; −∞ where masked
    exponentials: FloatArray  # [n_keys] exp(shifted), 0 where masked
    masked: np.ndarray  # [n_keys] bool, True where the pair was masked
    total: float  # Σ exponentials
    result: float  # the trace's weights[head, query, key]
    # The unshifted pieces, from the scaled table's own numbers: the row of scaled scores (−∞
    # where masked), its largest allowed score m_i, exp(scaled) (inf where it overflows) and
    # their sum.
    scaled: FloatArray | None = None  # [n_keys]
    maximum: float = 0.0
    unshifted_exponentials: FloatArray | None = None  # [n_keys]
    unshifted_total: float = 0.0


class WeightedSumExample(NamedTuple):
    """The z step: one word's output z as the weighted sum of every value vector."""

    head: int
    query: int
    weights: FloatArray  # [n_keys] the query's row of weights
    order: tuple[int, ...]  # the keys by weight, largest first (ties: earlier first)
    values: FloatArray  # [n_keys, d_k] the value vectors v_j
    result: FloatArray  # [d_k] the trace's Z[head, query]


class OutputExample(NamedTuple):
    """The output step: one element of the output, as Concat's row times a column of W_O, and as
    the sum of each head's block Z_h[i]·W_O^(h)[:, c]."""

    token: int
    column: int
    concat_row: FloatArray  # [h·d_k]
    w_o_column: FloatArray  # [h·d_k]
    head_blocks: FloatArray  # [h] Z_h[token]·W_O^(h)[:, column], one number per head
    bias: float | None  # b_O[column] in a pretrained layer
    result: float  # the trace's output[token, column]


def projection(
    trace: AttentionTrace, head: int, token: int, column: int = 0, matrix: str = "Q"
) -> ProjectionExample:
    """The qkv step: Q[head][token, column] = Σ_m X[token, m]·W_Q[head][m, column] (+ bias)."""
    if matrix not in ("Q", "K", "V"):
        raise ValueError(f"matrix must be Q, K or V, not {matrix!r}")
    rows = trace.X if matrix == "Q" or trace.X_source is None else trace.X_source
    bias = getattr(trace, f"b_{matrix}")
    index = head if matrix == "Q" else trace.kv_head(head)  # K, V: the head's key/value head
    return ProjectionExample(
        matrix=matrix,
        head=head,
        token=token,
        column=column,
        x=rows[token],
        w=getattr(trace, f"W_{matrix}")[index][:, column],
        bias=None if bias is None else float(bias[index, column]),
        result=float(getattr(trace, matrix)[index, token, column]),
    )


def dot_product(trace: AttentionTrace, head: int, query: int, key: int) -> DotProductExample:
    """The scores step: scores[head][query, key] = q_query · k_key (q and k rotated with rotary
    positions; k from the head's key/value head)."""
    queries, keys = trace.scored_vectors(head)  # [q | q_R], [k | k_R] with a latent's RoPE
    return DotProductExample(
        head=head,
        query=query,
        key=key,
        q=queries[query],
        k=keys[key],
        result=float(trace.scores[head, query, key]),
    )


def scaling(trace: AttentionTrace, head: int, query: int, key: int) -> ScalingExample:
    """The scaled step: scaled[head][query, key] = scores[head][query, key] / √d_k
    (√(d_k + d_rope) with a latent's decoupled rotary positions)."""
    return ScalingExample(
        head=head,
        query=query,
        key=key,
        score=float(trace.scores[head, query, key]),
        sqrt_d_k=float(np.sqrt(trace.score_width)),
        result=float(trace.scaled[head, query, key]),
    )


def softmax_example(trace: AttentionTrace, head: int, query: int, key: int) -> SoftmaxExample:
    """The weights step: weights[head][query, key] from the pieces softmax() itself computes: the
    row of scaled scores (masked keys −∞), minus its maximum, exponentiated, and their sum."""
    masked = (
        trace.masked[query] if trace.mask is not None else np.zeros(len(trace.key_tokens), bool)
    )
    row = np.where(masked, -np.inf, trace.scaled[head, query])
    shifted, exponentials, total = softmax_parts(row)
    with np.errstate(over="ignore"):  # exp(800) is inf: such a row is shown shifted only
        unshifted = np.exp(row.astype(np.float64))
    return SoftmaxExample(
        head=head,
        query=query,
        key=key,
        shifted=shifted,
        exponentials=exponentials,
        masked=masked,
        total=float(total[0]),
        result=float(trace.weights[head, query, key]),
        scaled=row,
        maximum=float(row.max()),
        unshifted_exponentials=unshifted,
        unshifted_total=float(unshifted.sum()),
    )


def weighted_sum(trace: AttentionTrace, head: int, query: int) -> WeightedSumExample:
    """The z step: Z[head][query] = Σ_j weights[head][query, j]·V[head][j]."""
    weights = trace.weights[head, query]
    return WeightedSumExample(
        head=head,
        query=query,
        weights=weights,
        order=tuple(int(j) for j in np.argsort(-weights, kind="stable")),
        values=trace.V[trace.kv_head(head)],
        result=trace.Z[head, query],
    )


def head_blocks(trace: AttentionTrace) -> FloatArray:
    """Concat·W_O split by head: Z_h·W_O^(h), where W_O^(h) are W_O's rows h·d_k … (h+1)·d_k − 1.

    [h, n, d_k], [h·d_k, d_model] -> [h, n, d_model]; summed over heads (plus b_O) it is the
    output, which is why Concat·W_O mixes the heads.
    """
    rows_per_head = trace.W_O.reshape(trace.n_heads, trace.d_k, trace.d_model)
    blocks: FloatArray = np.matmul(trace.Z, rows_per_head)
    return blocks


def output_element(trace: AttentionTrace, token: int, column: int = 0) -> OutputExample:
    """The output step: output[token, column] = Concat[token]·W_O[:, column] (+ b_O[column])."""
    rows_per_head = trace.W_O.reshape(trace.n_heads, trace.d_k, trace.d_model)
    blocks = np.einsum("hk,hk->h", trace.Z[:, token], rows_per_head[:, :, column])
    return OutputExample(
        token=token,
        column=column,
        concat_row=trace.concat[token],
        w_o_column=trace.W_O[:, column],
        head_blocks=blocks,
        bias=None if trace.b_O is None else float(trace.b_O[column]),
        result=float(trace.output[token, column]),
    )


class RotationExample(NamedTuple):
    """Rotary positions: one pair (a, b) of q's coordinates at position m turned by m·θ_i,
    a' = a·cos(m·θ_i) − b·sin(m·θ_i) and b' = a·sin(m·θ_i) + b·cos(m·θ_i)."""

    head: int
    token: int  # the position m, from 0
    pair: int  # i, from 0
    coordinates: tuple[int, int]  # the two coordinates (from 0) that turn together
    theta: float  # θ_i = base^(−2i/d_k), radians per position
    angle: float  # m·θ_i
    a: float  # q[first], before turning
    b: float  # q[second]
    result: tuple[float, float]  # the trace's Q_rotated[head, token] at the two coordinates


class RelativeExample(NamedTuple):
    """What makes rotary positions relative: the same q and k (as projected, unturned) placed at
    two pairs of positions the same distance apart score the same."""

    head: int
    query: int  # whose q, from 0
    key: int  # whose k
    positions: tuple[tuple[int, int], tuple[int, int]]  # (m, n) twice, n − m the same
    scores: tuple[float, float]  # turned q_m · turned k_n at each pair of positions
    own: float  # the trace's score at the words' own positions (query, key)


def rotation(trace: AttentionTrace, head: int, token: int, pair: int = 0) -> RotationExample:
    """Pair ``pair`` of q at position ``token`` in ``head`` as rotary positions turn it."""
    if trace.rope is None or trace.Q_rotated is None:
        raise ValueError("the trace has no rotary positions")
    first, second = (int(c[pair]) for c in rope_pairs(trace.d_k, trace.rope.pairing))
    theta = float(rope_frequencies(trace.d_k, trace.rope.base)[pair])
    q = trace.Q[head, token]
    return RotationExample(
        head=head,
        token=token,
        pair=pair,
        coordinates=(first, second),
        theta=theta,
        angle=token * theta,
        a=float(q[first]),
        b=float(q[second]),
        result=(
            float(trace.Q_rotated[head, token, first]),
            float(trace.Q_rotated[head, token, second]),
        ),
    )


#: The positions the relative-position example places one q and one k at: 3 apart, twice.
RELATIVE_POSITIONS = ((2, 5), (7, 10))


def relative_position(trace: AttentionTrace, head: int, query: int, key: int) -> RelativeExample:
    """The q of ``query`` and the k of ``key`` in ``head`` turned as if at RELATIVE_POSITIONS:
    one score per pair of positions (attnviz.positions.rotate, as the layer turns them)."""
    if trace.rope is None:
        raise ValueError("the trace has no rotary positions")
    q = np.asarray(trace.Q[head, query], dtype=np.float64)[np.newaxis]  # [1, d_k]
    k = np.asarray(trace.K[trace.kv_head(head), key], dtype=np.float64)[np.newaxis]
    scores = tuple(
        float(rotate(q, np.array([m]), trace.rope)[0] @ rotate(k, np.array([n]), trace.rope)[0])
        for m, n in RELATIVE_POSITIONS
    )
    return RelativeExample(
        head=head,
        query=query,
        key=key,
        positions=RELATIVE_POSITIONS,
        scores=(scores[0], scores[1]),
        own=float(trace.scores[head, query, key]),
    )


class AbsorptionExample(NamedTuple):
    """The latent step: one raw score by absorption, (q·W_UK[h]ᵀ)·c_jᵀ, beside q·k."""

    head: int
    query: int
    key: int
    q_absorbed: FloatArray  # [d_c] q_query · W_UK[head]ᵀ, the query in the latent's coordinates
    c: FloatArray  # [d_c] the key's row of the latent
    result: float  # the trace's scores_absorbed[head, query, key]
    expanded: float  # the trace's scores[head, query, key]: q·k with k = c_key·W_UK[head]
    score_difference: float  # the largest |scores − scores_absorbed|, every head and pair
    output_difference: float  # the largest |output − output_absorbed|
    # With decoupled rotary positions: the query's q_R and the key's k_R [d_rope], whose product
    # result adds to q_absorbed·c; and that product had neither been turned, (x·W_QR)·(x·W_KR).
    q_rope: FloatArray | None = None
    k_rope: FloatArray | None = None
    unturned: float = 0.0


def absorption(trace: AttentionTrace, head: int, query: int, key: int) -> AbsorptionExample | None:
    """The latent step's example, or None without a latent."""
    if trace.c is None or trace.W_UK is None:
        return None
    assert trace.scores_absorbed is not None and trace.output_absorbed is not None
    rope: dict[str, Any] = {}
    if trace.Q_R is not None and trace.K_R is not None:
        assert trace.W_QR is not None and trace.W_KR is not None
        unturned = (trace.X[query] @ trace.W_QR[head]) @ (trace.X[key] @ trace.W_KR)
        rope = {"q_rope": trace.Q_R[head, query], "k_rope": trace.K_R[key]}
        rope["unturned"] = float(unturned)
    return AbsorptionExample(
        head=head,
        query=query,
        key=key,
        q_absorbed=trace.Q[head, query] @ trace.W_UK[head].T,
        c=trace.c[key],
        result=float(trace.scores_absorbed[head, query, key]),
        expanded=float(trace.scores[head, query, key]),
        score_difference=float(np.abs(trace.scores - trace.scores_absorbed).max()),
        output_difference=float(np.abs(trace.output - trace.output_absorbed).max()),
        **rope,
    )


class HeadExamples(NamedTuple):
    """The worked examples of a head's steps (qkv to z) for one head, about one query word and the
    key it attends to most."""

    projection: ProjectionExample
    dot_product: DotProductExample
    scaling: ScalingExample
    softmax: SoftmaxExample
    weighted_sum: WeightedSumExample
    # With rotary positions: one pair turned, and the score two positions apart twice.
    rotation: RotationExample | None = None
    relative_position: RelativeExample | None = None
    # With latent attention: a score by absorption.
    absorption: AbsorptionExample | None = None


def example_query(trace: AttentionTrace, selection: Selection) -> int:
    """The query position the worked examples follow: the focus word's, else the first shown
    row's first piece."""
    if selection.focus is not None:
        return selection.focus.index
    return selection.row_groups[0][0]


def example_key(trace: AttentionTrace, selection: Selection, head: int, query: int) -> int:
    """The key position the worked examples use: the shown key that ``query`` attends to most
    (the earliest of equals)."""
    shown = np.asarray(selection.shown_columns)
    weights = np.asarray(trace.weights[head, query])[shown]
    return int(shown[int(np.argmax(weights))])


def runner_up_key(trace: AttentionTrace, selection: Selection, head: int, query: int) -> int | None:
    """The shown, allowed key with the largest weight below the row's largest (the earliest of
    equals): a softmax example whose shifted score s_ij − m_i is not 0. None when every such
    key has the row's largest weight (one key allowed, or a flat row)."""
    shown = np.asarray(selection.shown_columns)
    if trace.mask is not None:
        shown = shown[~trace.masked[query][shown]]
    scaled = np.asarray(trace.scaled[head, query])[shown]
    below = scaled < scaled.max()
    if not below.any():
        return None
    candidates = shown[below]
    return int(candidates[int(np.argmax(scaled[below]))])


def last_word(trace: AttentionTrace) -> int:
    """The position of the sentence's last word: not padding, not a special token."""
    real = range(trace.n_tokens - trace.provenance.masking.padding)
    words = [p for p in real if p not in trace.provenance.special]
    return words[-1] if words else trace.n_tokens - 1


def head_examples(trace: AttentionTrace, selection: Selection, head: int) -> HeadExamples:
    """Every worked example of one head, for the selection's example query and key."""
    query = example_query(trace, selection)
    key = example_key(trace, selection, head, query)
    turned = None
    if trace.rope is not None:
        # At position 0 nothing turns: the example follows the sentence's last word then.
        turned = rotation(trace, head, query if query > 0 else last_word(trace))
    return HeadExamples(
        projection=projection(trace, head, query),
        dot_product=dot_product(trace, head, query, key),
        scaling=scaling(trace, head, query, key),
        softmax=softmax_example(trace, head, query, key),
        weighted_sum=weighted_sum(trace, head, query),
        rotation=turned,
        relative_position=None if turned is None else relative_position(trace, head, query, key),
        absorption=absorption(trace, head, query, key),
    )


class ContributionExample(NamedTuple):
    """What one key adds to one query's output in one head (Kobayashi et al. 2020):
    ‖w_ij·f_h(x_j)‖ = w_ij·‖f_h(x_j)‖, f_h(x_j) = v_j·W_O^(h), and its share of the row's total
    Σ_k ‖w_ik·f_h(x_k)‖. The numbers are attnviz.analysis.contribution's, never recomputed."""

    head: int
    query: int
    key: int
    weight: float  # w_ij, the trace's weights[head, query, key]
    transformed_norm: float  # ‖f_h(x_j)‖ = ‖v_j·W_O^(h)‖
    norm: float  # ‖w_ij·f_h(x_j)‖
    total: float  # Σ_k ‖w_ik·f_h(x_k)‖ over every key as computed
    share: float  # norm / total


def contribution(trace: AttentionTrace, head: int, query: int, key: int) -> ContributionExample:
    """Weight against contribution: key ``key``'s size in the output of ``query`` in ``head``."""
    row = row_contribution(trace, head, query)
    entry = row.keys[key]
    return ContributionExample(
        head=head,
        query=query,
        key=key,
        weight=entry.weight,
        transformed_norm=entry.transformed_norm,
        norm=entry.norm,
        total=row.total,
        share=entry.share,
    )


class BlockwiseExample(NamedTuple):
    """The blockwise step: one query's row in one head computed a block of keys at a time, as
    FlashAttention does (attnviz.analysis.blockwise), beside the trace's own weights and z that it
    equals."""

    head: int
    query: int
    online: OnlineSoftmax  # every block's m, ℓ, o and factor
    weights: FloatArray  # [n_keys] the trace's weights[head, query]
    z: FloatArray  # [d_v] the trace's Z[head, query]


def blockwise(
    trace: AttentionTrace, head: int, query: int, block: int | None = None
) -> BlockwiseExample:
    """Query ``query``'s row of head ``head``, ``block`` keys at a time (None: so that the keys
    make 3 or 4 blocks), from its q and the key/value head's K and V (rotated where the trace
    has RoPE), as the scaled step scores them."""
    q = trace.Q if trace.Q_rotated is None else trace.Q_rotated
    keys = trace.K if trace.K_rotated is None else trace.K_rotated
    kv_head = trace.kv_head(head)
    n_keys = keys.shape[1]
    from attnviz.analysis.blockwise import default_block, online_softmax

    online = online_softmax(
        q[head, query],
        keys[kv_head],
        trace.V[kv_head],
        block=default_block(n_keys) if block is None else block,
        allowed=None if trace.mask is None else trace.mask[query],
    )
    return BlockwiseExample(head, query, online, trace.weights[head, query], trace.Z[head, query])
