"""Sentences the lesson says in several places, each true of the numbers beside it: why √d_k
(with this head's variances), what the special tokens receive, what follows the attention
sublayer, why some scores are −∞, and what the tokenizer did to the case of a word.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from attnviz.errors import option
from attnviz.labels import reciprocal
from attnviz.lesson.writer import LessonWriter
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace


def amount(value: float) -> str:
    """A measured amount in prose: 2 decimals, or 2 significant digits below 0.1, so that a
    small variance does not read as 0.00 (0.0132 -> "0.013")."""
    value = float(value)
    if value == 0 or abs(value) >= 0.1:
        return f"{value:.2f}"
    decimals = 1 - int(np.floor(np.log10(abs(value))))
    return f"{value:.{decimals}f}"


def folded(word: str) -> str:
    """A word as an uncased BERT tokenizer sees it: lowercased, accents stripped."""
    decomposed = unicodedata.normalize("NFD", word.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def expected_variances(trace: AttentionTrace, head: int) -> tuple[float, float, float]:
    """For x, y with independent components of mean 0 and variance 1: the mean variance of the
    components of q = x·W_Q and k = y·W_K (a column's Σ_d W[d, c]²), and of the scaled score
    q·k / √d_k, whose variance is ‖W_Q·W_Kᵀ‖²_F / d_k (x·W_Q·W_Kᵀ·yᵀ summed over d × d
    independent products)."""
    w_q = trace.W_Q[head].astype(np.float64)
    w_k = trace.W_K[trace.kv_head(head)].astype(np.float64)
    q_variance = float((w_q**2).sum(axis=0).mean())
    k_variance = float((w_k**2).sum(axis=0).mean())
    scaled_variance = float(((w_q @ w_k.T) ** 2).sum()) / trace.d_k
    return q_variance, k_variance, scaled_variance


def scale_names(trace: AttentionTrace) -> tuple[str, str, str, str]:
    """How the lesson names a score's width, its root, the vectors it is the width of and
    their dot product: d_k, √d_k, "q and k", q·k; with a latent's decoupled rotary positions
    d_k + d_rope, √(d_k + d_rope), "[q | q_R] and [k | k_R]" and their product (DeepSeek-V2's
    divisor, attnviz.latent)."""
    if trace.d_rope:
        return "d_k + d_rope", "√(d_k + d_rope)", "[q | q_R] and [k | k_R]", "[q | q_R]·[k | k_R]"
    return "d_k", "√d_k", "q and k", "q·k"


def scaling_brief(lesson: LessonWriter, head: int) -> str:
    """Why ÷√d_k in a few lines: the paper's argument, that the divisor is the width of q and
    k and not the sentence's length, and this head's variances before and after (what
    scaling_sentence says at length with --full)."""
    trace = lesson.trace
    width, (name, root, vectors, product) = trace.score_width, scale_names(trace)
    score_variance, scaled_variance = _variances(trace, head)
    assumption = ""
    if lesson.pretrained:
        assumption = " (this model's q and k need not meet the paper's assumption)"
    return (
        f"Why: the paper assumes that {vectors} have {name} = {width} independent components "
        f"of mean 0 and variance 1; then {product} has variance {width}, and the larger {name}, "
        f"the closer the softmax to one-hot, with vanishing gradients; ÷{root} brings it back "
        f"to 1. It is the width of {vectors}, not the sentence's length. This head's scores "
        "have variance "
        f"{amount(score_variance)}, the scaled ones {amount(scaled_variance)}{assumption}; "
        f"{option('full', True)} says more, and attnviz scaling runs the experiment."
    )


def _variances(trace: AttentionTrace, head: int) -> tuple[float, float]:
    """The variance of a head's scores and of its scaled scores, padding rows and columns and
    masked pairs left out (as scaling_sentence measures them)."""
    padding = trace.provenance.masking.padding
    n_queries = len(trace.tokens) - padding
    n_keys = len(trace.key_tokens) - (0 if trace.is_cross else padding)
    allowed = ~trace.masked if trace.mask is not None else np.ones(trace.scores.shape[1:], bool)
    allowed = allowed[:n_queries, :n_keys]
    with np.errstate(over="ignore", invalid="ignore"):
        scores = trace.scores[head][:n_queries, :n_keys][allowed]
        scaled = trace.scaled[head][:n_queries, :n_keys][allowed]
        return float(scores.var()), float(scaled.var())


def scaling_sentence(lesson: LessonWriter, head: int) -> str:
    """Why ÷√d_k, and what this head's numbers show: the paper's argument holds under its
    assumption (q, k components independent, mean 0, variance 1), which the numbers on
    screen need not meet. Padding rows (filler) and masked pairs are left out of the
    measured variances; hidden [CLS] and [SEP] are not, and the sentence says so."""
    trace = lesson.trace
    padding = trace.provenance.masking.padding
    n_queries = len(trace.tokens) - padding
    n_keys = len(trace.key_tokens) - (0 if trace.is_cross else padding)
    allowed = ~trace.masked if trace.mask is not None else np.ones(trace.scores.shape[1:], bool)
    allowed = allowed[:n_queries, :n_keys]
    scores = trace.scores[head][:n_queries, :n_keys][allowed]
    scaled = trace.scaled[head][:n_queries, :n_keys][allowed]
    # Finite numbers beyond 1e154 square to infinity: such a variance reads "inf", unwarned.
    queries, keys = (trace.Q[head], trace.K[trace.kv_head(head)])
    if trace.d_rope:  # the vectors the scores are dot products of, [q | q_R] and [k | k_R]
        queries, keys = trace.scored_vectors(head)
    width, (name, root, vectors, product) = trace.score_width, scale_names(trace)
    with np.errstate(over="ignore", invalid="ignore"):
        q_variance = float(np.var(queries[:n_queries]))
        k_variance = float(np.var(keys[:n_keys]))
        score_variance, scaled_variance = float(scores.var()), float(scaled.var())
    notes = []
    if trace.mask is not None and not allowed.all():
        notes.append("masked pairs left out")
    if padding:
        # Rows of filler, and the masked [PAD] keys: n_real² of the n² scores are kept.
        notes.append(f"the {printable(trace.tokens[-1])} rows and columns left out")
    hidden = [p for p in lesson.selection.hidden if p < n_queries]
    if hidden:
        names = list(dict.fromkeys(printable(trace.tokens[p]) for p in hidden))
        notes.append(" and ".join(names) + " included")
    if lesson.selection.merged:
        notes.append("word pieces as computed")
    counted = f"{scores.size} scores" + (f" ({'; '.join(notes)})" if notes else "")
    why = (
        f"Why: if the components of {vectors} were independent with mean 0 and variance 1 "
        f"(the paper's assumption), {product}, a sum of {name} = {width} products, would have "
        f"variance {name} = {width}; the larger {name}, the larger the scores, pushing the "
        f"softmax towards one-hot rows with vanishing gradients. Dividing by {root} brings "
        "that variance back to 1. "
    )
    before = " (before turning)" if trace.rope is not None else ""  # the qkv step's tables
    shown = (
        f"Here {vectors}{before} have components of variance {amount(q_variance)} and "
        f"{amount(k_variance)}, and this head's {counted} have variance "
        f"{amount(score_variance)}, the scaled ones {amount(scaled_variance)} "
        f"(= {amount(score_variance)} / {width}; a variance here is the mean squared "
        "distance from the mean, ÷N)"
    )
    shown += _assumption_met(lesson, head, before)
    spread = [
        np.ptp(trace.scaled[head][i, :n_keys][allowed[i]])
        for i in range(n_queries)
        if allowed[i].any()
    ]
    if spread and max(spread) < 0.1:
        shown += (
            " Every row's scaled scores lie within 0.1 of each other, so the softmax rows "
            "come out nearly flat, every weight near 1 / (the row's number of keys)."
        )
    return why + shown


def _assumption_met(lesson: LessonWriter, head: int, before: str) -> str:
    """What the weights give against the paper's assumption: attnviz's random draw in
    expectation (with this head's own W_Q and W_K when no turn makes it depend on the
    distance), or that a model's need not meet it."""
    trace = lesson.trace
    if trace.provenance.weights.is_drawn and trace.d_rope:
        # Turning q_R and k_R makes a pair's expected score depend on how far apart they stand:
        # no one figure per head, so only what the draw gives in expectation is said.
        return (
            ". attnviz's random W_Q, W_UK, W_QR and W_KR break the assumption on purpose: in "
            "expectation over its random weights, embeddings of variance 1 (such as its random "
            "ones) give components of variance 2 and scaled scores of variance 4, so that the "
            "softmax rows come out neither flat nor one-hot; the few scores of one sentence can "
            "be far from that."
        )
    elif trace.provenance.weights.is_drawn:
        expected_q, expected_k, expected_scaled = expected_variances(trace, head)
        return (
            ". attnviz's random W_Q and W_K break the assumption on purpose: in expectation "
            "over its random weights, embeddings of variance 1 (such as its random ones) give "
            "q and k components of variance 2 and scaled scores of variance 4, so that the "
            "softmax rows come out neither flat nor one-hot. This head's own W_Q and W_K, for "
            f"independent embeddings of variance 1, give q components of variance "
            f"{amount(expected_q)}, k {amount(expected_k)} and scaled scores of two words"
            f"{before} {amount(expected_scaled)}; the few scores of one sentence can be far "
            "from that."
        )
    elif lesson.pretrained and not trace.provenance.weights.trained:
        return ": this checkpoint's untrained weights need not meet the assumption."
    elif lesson.pretrained:
        return ": this model's q and k need not meet the assumption."
    return "."


def special_tokens_sentence(lesson: LessonWriter, head: int) -> str:
    """What the model family's special tokens are ([CLS] and [SEP] in BERT's), and how much of
    this head's attention each receives: trained BERT models park attention on them (Clark et
    al. 2019, "What does BERT look at?"), on [CLS] or on [SEP] depending on the head. "" for a
    family that adds none, or a sentence without them."""
    trace, family = lesson.trace, lesson.family
    if not lesson.pretrained or family is None or not family.special_tokens:
        return ""
    masked = set(range(len(trace.tokens) - trace.provenance.masking.padding, len(trace.tokens)))
    special = [p for p in trace.provenance.special if p not in masked]
    if not set(family.special_names) <= {trace.tokens[p] for p in special}:
        return ""
    # The mean over the rows shown for the sentence's words (a merged word's row is the
    # mean of its pieces' rows), so that it can be checked against the table.
    groups = [g for g in lesson.selection.row_groups if g[0] not in trace.provenance.special]
    if not groups:  # no row of a word of the sentence (only [UNK] and the markers)
        return family.special_tokens
    # Each row's sum over the token's columns once, then each group's mean of those rows: the
    # same numbers as summing each group's rows anew, without n Python-level copies of [n, n].
    row_sums = {
        name: trace.weights[head][:, [p for p in special if trace.tokens[p] == name]].sum(axis=1)
        for name in family.special_names
    }
    single = all(len(group) == 1 for group in groups)  # each row its own: its mean is itself
    shares = {
        name: float(
            np.mean(
                sums[[group[0] for group in groups]]
                if single
                else [sums[list(group)].mean() for group in groups]
            )
        )
        for name, sums in row_sums.items()
    }
    given = ", ".join(f"{name} {lesson.number(share)}" for name, share in shares.items())
    return (
        f"{family.special_tokens} In this head the rows shown for the sentence's words give "
        f"them {lesson.number(sum(shares.values()))} of their weight on average ({given})"
        f"{parked(shares)}."
    )


def parked(shares: dict[str, float]) -> str:
    """Which special token the attention parked on them goes to, from the shares: one when it
    receives at least twice as much as each other and a tenth of the weight at least; ""
    when none does."""
    name, most = max(shares.items(), key=lambda item: item[1])
    others = [share for other, share in shares.items() if other != name]
    if most < 0.1 or any(most < 2 * share for share in others):
        return ""
    rest = " or ".join(other for other in shares if other != name)
    return f": what this head parks on them goes to {name}, not {rest}"


def after_attention(lesson: LessonWriter) -> str:
    """What a transformer layer does with the attention's output: in this trace's model, as its
    family says; in general for attnviz's own layer (and a model's layer run on other X)."""
    # A model's layer, or its weights read back from an export (the header names its family's
    # sublayer then too, as header.py does).
    from_model = lesson.trace.provenance.weights.model is not None
    if (
        lesson.family is not None
        and not lesson.trace.is_cross
        and (lesson.pretrained or from_model)
    ):
        # The short lesson says the family's sublayer here, not at the top (header.py).
        return lesson.family.sublayer if lesson.brief else lesson.family.after_attention
    if lesson.pretrained:
        return "In the model the rest of the layer follows; attnviz shows this sublayer."
    into = "the decoder's X" if lesson.trace.is_cross else "X, this layer's input"
    if lesson.brief:
        return (
            f"In a full transformer it is then added back to {into.split(',')[0]} and "
            "normalised, and a feed-forward block follows."
        )
    return (
        f"In a full transformer layer it is then added back to {into} (a residual "
        "connection) and normalised, LayerNorm(X + output), and a feed-forward block "
        "follows; attnviz shows the attention sublayer."
    )


def lowercased(lesson: LessonWriter) -> str:
    """ "'The' is 'the'" when the tokenizer changed the case (or accents) of a word: in
    the tables, or with --words (which shows words as written) in the worked examples."""
    provenance = lesson.trace.provenance
    for word, group in zip(provenance.words, provenance.word_groups, strict=False):
        if group[0] in provenance.special:
            continue
        pieces = "".join(lesson.trace.tokens[p].removeprefix("##") for p in group)
        if pieces != word and pieces == folded(word):
            where = "the worked examples" if lesson.selection.merged else "the tables"
            return f"{printable(word)!r} is {printable(pieces)!r} in {where}"
    return ""


def padding_rows_sentence(lesson: LessonWriter, head: int) -> str:
    """What the padding rows are, when the table shows them: only [PAD] as a key is masked, so
    a [PAD] query still looks at the real words; its row and its output are computed, and
    nothing reads them. Uniform rows are said to be uniform only when they are, from q."""
    trace = lesson.trace
    padding = trace.provenance.masking.padding
    n_real = len(trace.tokens) - padding
    shown = [p for p in range(n_real, len(trace.tokens)) if p not in lesson.selection.hidden]
    if not padding or trace.is_cross or not shown:
        return ""
    pad = printable(trace.tokens[-1])
    rows = trace.weights[head][n_real:, :n_real]
    text = (
        f"The {pad} rows: only {pad} as a key is masked, so a {pad} query still looks at the "
        f"{n_real} tokens before the padding{_specials_among(trace, n_real)}. "
    )
    zero_x = np.allclose(trace.X[n_real:], 0.0) and not trace.has_biases
    if zero_x and np.allclose(rows, 1.0 / n_real):
        text += (
            f"Here its X is zero, so its query is zero, every score is 0 and each weight "
            f"{reciprocal(n_real, 2)}. "
        )
    return text + (
        "These rows, and the outputs at the padding, are computed because the batch is one "
        "array, but nothing reads them: they are filler, and a model ignores them."
    )


def _specials_among(trace: AttentionTrace, n_real: int) -> str:
    """' ([CLS] and [SEP] among them)' when the model's special tokens are among the first
    n_real tokens, which are then not all words of the sentence; else ""."""
    among = list(dict.fromkeys(trace.tokens[p] for p in trace.provenance.special if p < n_real))
    if not among:
        return ""
    return f" ({' and '.join(printable(t) for t in among)} among them)"


def mask_sentence(trace: AttentionTrace) -> str:
    """Why some scores are −∞: the causal mask, the padding mask, or both."""
    masking = trace.provenance.masking
    parts = []
    if masking.causal:
        parts.append(
            "Causal mask (decoder self-attention): word i may look only at itself and the "
            "words before it, so every later word is masked. Why: a decoder is trained to "
            "predict each next word, so it must not see the words it is predicting; the mask "
            "also lets training predict every position of a sentence at once."
        )
    if masking.padding:
        pad = printable(trace.tokens[-1])
        parts.append(
            f"Padding mask: the {pad} tokens at the end only make the sentence a fixed "
            "length, so no word may look at them; their columns are masked and get zero "
            "weight. Why padding: sentences of different lengths are computed together in "
            "one batch, as one array, so the shorter ones are filled up to the longest."
        )
    return " ".join(parts) + " A masked score is set to −∞ before the softmax, and exp(−∞) = 0."
