"""AttentionTrace: every intermediate of one multi-head attention run, as a plain record.

Arrays and provenance only: no view state, no rendering. Every view (terminal tables, heatmaps,
files) is a function of a trace; none recomputes math. Where the trace came from is typed data
(``trace.provenance``, see attnviz.provenance), written into every export by
attnviz.trace_files and restored by its ``load_trace``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.config import AttentionConfig
from attnviz.positions import Rope
from attnviz.provenance import Provenance

#: The arrays of a trace, in the order of the computation; also the keys of an exported file.
ARRAY_KEYS = (
    "X",
    "W_Q",
    "W_K",
    "W_V",
    "W_O",
    "Q",
    "K",
    "V",
    "scores",
    "scaled",
    "weights",
    "Z",
    "concat",
    "output",
)

BIAS_KEYS = ("b_Q", "b_K", "b_V", "b_O")

#: X = E + PE with --positions sinusoidal: the token embeddings and the positional encoding,
#: of the target and of the source in cross-attention.
POSITION_KEYS = ("E", "PE", "E_source", "PE_source")

#: With rotary positions: Q and K with each pair of coordinates turned by its position's angle.
ROPE_KEYS = ("Q_rotated", "K_rotated")

#: With latent attention (attnviz.latent): its matrices, the latent, and the scores and output
#: computed by absorption, without expanding K and V.
LATENT_KEYS = ("W_DKV", "W_UK", "W_UV", "c", "scores_absorbed", "output_absorbed")

#: With latent attention and decoupled rotary positions (attnviz.latent): the matrices of each
#: head's rotated query part and of the one rotated key the heads share, and both, turned.
LATENT_ROPE_KEYS = ("W_QR", "W_KR", "Q_R", "K_R")


def frozen_mask(mask: np.ndarray) -> np.ndarray:
    """A read-only boolean copy of a mask."""
    result = np.array(mask, dtype=bool)
    result.setflags(write=False)
    return result


def frozen_array(array: FloatArray, *, copy: bool = True) -> FloatArray:
    """A read-only array, so a trace cannot be changed after the fact.

    float32 stays float32 (the model's default precision); any other type becomes float64.
    copy=True copies an array that can still be written to, through itself or through the
    array it views (a caller may hold and change it); one read-only all the way down is taken as
    it is. copy=False gives a read-only view, for arrays made for the trace that nobody else
    holds: no time or memory spent copying.
    """
    array = np.asarray(array)
    dtype = np.float32 if array.dtype == np.float32 else np.float64
    if copy and (_writable(array) or array.dtype != dtype):
        result = np.array(array, dtype=dtype)
    else:
        result = np.asarray(array, dtype=dtype).view()
    result.setflags(write=False)
    return result


def _writable(array: np.ndarray) -> bool:
    """Whether ``array``'s numbers can change: it, or an array it is a view of, is writable."""
    current: object = array
    while isinstance(current, np.ndarray):
        if current.flags.writeable:
            return True
        current = current.base
    return False


@dataclass(frozen=True, eq=False)
class AttentionTrace:
    """Every step of softmax(Q·Kᵀ/√d_k)·V for each head, then Concat·W_O.

    Shapes: n tokens, h heads, d_k = d_model / h.
    """

    tokens: tuple[str, ...]  # [n] the words as they appear in the sentence
    X: FloatArray  # [n, d_model] embeddings, one row per token
    W_Q: FloatArray  # [h, d_model, d_k] query projection of each head
    W_K: FloatArray  # [G, d_model, d_k] key projection of each key/value head (G = h but in GQA)
    W_V: FloatArray  # [G, d_model, d_k] value projection of each key/value head
    W_O: FloatArray  # [h·d_k, d_model] output projection, mixing the heads
    Q: FloatArray  # [h, n, d_k] Q_i = X·W_Q[i]
    K: FloatArray  # [G, n, d_k] K_g = X·W_K[g]; query head i reads K[kv_head(i)]
    V: FloatArray  # [G, n, d_k] V_g = X·W_V[g]
    scores: FloatArray  # [h, n, n] Q_i·K_iᵀ, before scaling
    scaled: FloatArray  # [h, n, n] scores / √d_k
    weights: FloatArray  # [h, n, n] the attention matrix: softmax of each row of scaled
    Z: FloatArray  # [h, n, d_k] each head's output (not the attention matrix): weights·V_i
    concat: FloatArray  # [n, h·d_k] [Z_1 | … | Z_h]
    output: FloatArray  # [n, d_model] concat·W_O
    config: AttentionConfig
    provenance: Provenance  # how X and the weights were made, masks, special tokens, words
    # Biases, which pretrained layers have and the random layer has not: Q = X·W_Q + b_Q, …
    b_Q: FloatArray | None = None  # [h, d_k]
    b_K: FloatArray | None = None  # [G, d_k]
    b_V: FloatArray | None = None  # [G, d_k]
    b_O: FloatArray | None = None  # [d_model]
    # [n, n] bool, True where query i may attend to key j; None when every pair may (no mask).
    mask: np.ndarray | None = None
    # Cross-attention (encoder–decoder): the source words give the keys and values, ``tokens``
    # (the target words) the queries; X_source [n_source, d_model] are their embeddings. Then
    # K, V are [h, n_source, d_k] and scores, scaled, weights [h, n_target, n_source].
    source_tokens: tuple[str, ...] | None = None
    X_source: FloatArray | None = None
    # With a positional encoding (provenance.embeddings.positions), X = E + PE: E [n, d_model]
    # the token embeddings, PE [n, d_model] the encoding of positions 0 … n−1; and in
    # cross-attention X_source = E_source + PE_source, the source counting from 0 as well.
    # None when X holds no positions of attnviz's making (a model's are inside its X).
    E: FloatArray | None = None
    PE: FloatArray | None = None
    E_source: FloatArray | None = None
    PE_source: FloatArray | None = None
    # Rotary positions (rope not None): Q_rotated, K_rotated [h or G, n, d_k] are Q and K with
    # each pair of coordinates rotated by its position's angle; the scores are
    # Q_rotated·K_rotatedᵀ, and V is not rotated. None without rotary positions.
    rope: Rope | None = None
    Q_rotated: FloatArray | None = None
    K_rotated: FloatArray | None = None
    # Multi-head latent attention (DeepSeek-V2): c = X·W_DKV [n, d_c] the latent each token
    # caches, K_i = c·W_UK[i] and V_i = c·W_UV[i] (W_UK, W_UV [h, d_c, d_k]); W_K and W_V above
    # are then W_DKV·W_UK and W_DKV·W_UV. scores_absorbed [h, n, n] = (q·W_UK[i]ᵀ)·cᵀ and
    # output_absorbed [n, d_model] = Σ_i weights_i·c·(W_UV[i]·W_O^(i)): the same numbers within
    # float error, with K and V never expanded. None without a latent.
    W_DKV: FloatArray | None = None
    W_UK: FloatArray | None = None
    W_UV: FloatArray | None = None
    c: FloatArray | None = None
    scores_absorbed: FloatArray | None = None
    output_absorbed: FloatArray | None = None
    # A latent with decoupled rotary positions (DeepSeek-V2 §2.1.3): Q_R [h, n, d_rope] =
    # RoPE(X·W_QR[i]) each head's rotated query part, K_R [n, d_rope] = RoPE(X·W_KR) the one
    # rotated key every head shares (W_QR [h, d_model, d_rope], W_KR [d_model, d_rope]); then
    # scores = Q·Kᵀ + Q_R·K_Rᵀ, scaled = scores / √(d_k + d_rope), and scores_absorbed holds
    # the content part absorbed plus the same RoPE part. None otherwise (``rope`` stays None:
    # the turn is the latent's, not the whole q's and k's).
    W_QR: FloatArray | None = None
    W_KR: FloatArray | None = None
    Q_R: FloatArray | None = None
    K_R: FloatArray | None = None

    def __repr__(self) -> str:
        kind = "cross-attention" if self.is_cross else "self-attention"
        return (
            f"<AttentionTrace {kind}: {self.n_tokens} tokens, {self.n_heads} heads, "
            f"d_model {self.d_model}; weights {self.provenance.weights.describe()}>"
        )

    @property
    def key_tokens(self) -> tuple[str, ...]:
        """The words along the columns of scores and weights: the source words, or tokens."""
        return self.source_tokens if self.source_tokens is not None else self.tokens

    @property
    def is_cross(self) -> bool:
        return self.source_tokens is not None

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def n_heads(self) -> int:
        return self.config.n_heads

    @property
    def d_model(self) -> int:
        return self.config.d_model

    @property
    def d_k(self) -> int:
        return self.config.d_k

    @property
    def d_c(self) -> int | None:
        """The latent's width with latent attention, else None."""
        return None if self.c is None else int(self.c.shape[-1])

    @property
    def d_rope(self) -> int:
        """The width of a latent's decoupled rotated query and key parts; 0 without them."""
        return 0 if self.K_R is None else int(self.K_R.shape[-1])

    @property
    def score_width(self) -> int:
        """The number of products in each score, whose root divides it: d_k, or d_k + d_rope
        with a latent's decoupled rotary positions."""
        return self.d_k + self.d_rope

    def scored_vectors(self, head: int) -> tuple[FloatArray, FloatArray]:
        """The queries and keys whose dot products are head ``head``'s scores: q and k (turned
        with rotary positions); with decoupled rotary positions the concatenations [q | q_R]
        and [k | k_R].  -> [n_q, score_width], [n_k, score_width]"""
        queries = (self.Q if self.Q_rotated is None else self.Q_rotated)[head]
        keys = (self.K if self.K_rotated is None else self.K_rotated)[self.kv_head(head)]
        if self.Q_R is None or self.K_R is None:
            return queries, keys
        return (
            np.concatenate([queries, self.Q_R[head]], axis=-1),
            np.concatenate([keys, self.K_R], axis=-1),
        )

    @property
    def n_kv_heads(self) -> int:
        """G, the key/value heads: h in the paper's attention; fewer in grouped-query attention,
        where W_K, W_V, K, V (and b_K, b_V) are [G, …] and h/G query heads share each."""
        return int(self.W_K.shape[0])

    def kv_head(self, head: int) -> int:
        """The key/value head that query head ``head`` (from 0) reads: head // (h/G)."""
        return head // (self.n_heads // self.n_kv_heads)

    def sharing(self, head: int) -> tuple[int, ...]:
        """The query heads (from 0) that read the same keys and values as ``head``, itself too."""
        group = self.n_heads // self.n_kv_heads
        first = self.kv_head(head) * group
        return tuple(range(first, first + group))

    @property
    def is_grouped(self) -> bool:
        """Grouped-query attention: fewer key/value heads than query heads."""
        return self.n_kv_heads != self.n_heads

    def arrays(self) -> dict[str, FloatArray]:
        """The trace's arrays by export key, in the order of the computation; biases if any."""
        arrays = {key: getattr(self, key) for key in ARRAY_KEYS}
        if self.has_biases:
            arrays.update({key: getattr(self, key) for key in BIAS_KEYS})
        if self.mask is not None:
            arrays["mask"] = self.mask
        if self.X_source is not None:
            arrays["X_source"] = self.X_source
        for key in (*POSITION_KEYS, *ROPE_KEYS, *LATENT_KEYS, *LATENT_ROPE_KEYS):
            if getattr(self, key) is not None:
                arrays[key] = getattr(self, key)
        return arrays

    @property
    def masked(self) -> np.ndarray:
        """[n, n] bool, True where a pair was masked out (−∞ before the softmax)."""
        if self.mask is None:
            return np.zeros((self.n_tokens, len(self.key_tokens)), dtype=bool)
        return ~self.mask

    @property
    def window(self) -> int | None:
        """W of a sliding window on the causal mask (word i reads words i − W + 1 … i), as the
        provenance records it; None without one."""
        return self.provenance.masking.window

    @property
    def has_biases(self) -> bool:
        return self.b_Q is not None

    def config_dict(self) -> dict[str, Any]:
        """The sizes and provenance of the trace, as stored in an export's ``config``; with
        grouped-query attention the key/value heads and which each query head reads (from 0),
        with rotary positions their base and pairing."""
        sizes: dict[str, Any] = {"d_model": self.d_model, "n_heads": self.n_heads}
        if self.is_grouped:
            sizes["n_kv_heads"] = self.n_kv_heads
            sizes["kv_head_of_each_head"] = [self.kv_head(i) for i in range(self.n_heads)]
        sizes["d_k"] = self.d_k
        if self.rope is not None:
            sizes["rope"] = self.rope.to_dict()
        if self.c is not None:
            sizes["d_c"] = self.d_c
        if self.d_rope:
            sizes["d_rope"] = self.d_rope
        if self.window is not None:
            sizes["window"] = self.window  # as the provenance's masking records it
        return {
            **sizes,
            "seed": self.config.seed,
            "embeddings": self.provenance.embeddings.describe(),
            "weights": self.provenance.weights.describe(),
            "provenance": self.provenance.to_dict(),
        }


def provenance_seed(provenance: Provenance) -> int:
    """The seed a trace's config records: that of its random weights or embeddings, else 0."""
    for seed in (provenance.weights.seed, provenance.embeddings.seed):
        if seed is not None:
            return seed
    return 0
