"""Word order: the sinusoidal positional encoding of Vaswani et al. 2017, §3.5.

Attention alone ignores word order: permuting the rows of X permutes the rows of Q, K, V and of
every result, so a layer fed word vectors alone treats the sentence as a set of words. The paper
adds to each token embedding E a vector that depends only on the token's position, X = E + PE:

    PE[pos, 2i]   = sin(pos / 10000^(2i/d_model))
    PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))

with positions counted from 0. Columns 2i and 2i+1 are the sine and cosine of one frequency,
from 1 radian per position (i = 0) down to 1/10000; PE[pos + k] is a fixed rotation of each pair
of PE[pos], whatever pos, which the paper hoped would make relative positions easy to attend to.

Rotary positions (RoPE, Su et al. 2021) instead leave X alone and turn q and k inside every
head and layer: pair i of coordinates at position m by the angle m·θ_i, θ_i = base^(−2i/d_k),
so that q_m·k_n depends on m and n only through m − n. V is not rotated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError


class Positions(str, Enum):
    """How a word's position enters X (the random layer; a model brings its own)."""

    none = "none"  # X = E: nothing says where a word is
    sinusoidal = "sinusoidal"  # X = E + PE, the paper's encoding
    rope = "rope"  # X = E; q and k rotated by their position inside each head (Rope)


def sinusoidal_positions(n_positions: int, d_model: int) -> FloatArray:
    """PE for positions 0 … n_positions − 1.  -> [n_positions, d_model]

    An odd d_model ends with the sine of the last frequency, without its cosine.
    """
    positions = np.arange(n_positions, dtype=np.float64)[:, np.newaxis]  # [n_positions, 1]
    columns = np.arange(d_model)  # [d_model]
    two_i = columns - columns % 2  # 2i for columns 2i and 2i+1
    angles = positions / 10000.0 ** (two_i / d_model)  # [n_positions, d_model]
    return np.where(columns % 2 == 0, np.sin(angles), np.cos(angles))


@dataclass(frozen=True)
class Rope:
    """Rotary position embedding (Su et al. 2021) as a layer applies it to q and k inside each
    head: coordinates paired and each pair rotated by m·θ_i at position m, θ_i = base^(−2i/d_k).

    pairing: "half" pairs coordinate i with i + d_k/2 (Hugging Face Llama checkpoints);
    "adjacent" pairs 2i with 2i + 1 (GGUF files, whose converter permuted W_Q's and W_K's rows).
    """

    base: float = 10000.0
    pairing: str = "half"  # "half" or "adjacent"

    def __post_init__(self) -> None:
        if self.pairing not in PAIRINGS:
            raise AttnvizError(
                f"RoPE pairing {self.pairing!r} is not known; use 'half' (i with i + d_k/2) or "
                "'adjacent' (2i with 2i + 1)."
            )
        if not (isinstance(self.base, (int, float)) and math.isfinite(self.base) and self.base > 1):
            raise AttnvizError(f"The RoPE base must be a number above 1, got {self.base!r}.")

    def to_dict(self) -> dict[str, object]:
        """As an export's config records it."""
        return {"base": float(self.base), "pairing": self.pairing}

    @property
    def pairs_described(self) -> str:
        """Which coordinates are paired, in words."""
        return PAIRINGS[self.pairing]


#: Each pairing in words: which coordinates turn together, and whose layout it is.
PAIRINGS = {
    "half": "coordinate i with i + d_k/2 (as in Hugging Face Llama checkpoints)",
    "adjacent": "coordinates 2i and 2i + 1 side by side (as in GGUF files)",
}


def rope_frequencies(d_k: int, base: float) -> FloatArray:
    """θ_i = base^(−2i/d_k) for i = 0 … d_k/2 − 1: pair i turns by m·θ_i radians at position m,
    from 1 radian per position (i = 0) down to nearly base⁻¹.  -> [d_k/2]"""
    return base ** (-2.0 * np.arange(d_k // 2) / d_k)


def rope_angles(positions: FloatArray, d_k: int, base: float) -> FloatArray:
    """m·θ_i for each position m and pair i.  [n], d_k -> [n, d_k/2]"""
    angles: FloatArray = np.multiply.outer(
        np.asarray(positions, dtype=np.float64), rope_frequencies(d_k, base)
    )
    return angles


def rope_pairs(d_k: int, pairing: str) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates that turn together, pair i being (first[i], second[i]): "half" pairs i
    with i + d_k/2 (Hugging Face's rotate_half), "adjacent" 2i with 2i + 1 (GGUF, llama.cpp).

    -> ([d_k/2], [d_k/2]) integer indices
    """
    i = np.arange(d_k // 2)
    if pairing == "half":
        return i, i + d_k // 2
    return 2 * i, 2 * i + 1


def rotate(x: FloatArray, positions: FloatArray, rope: Rope) -> FloatArray:
    """Rotary position embedding: each pair (a, b) of a row at position m turned by m·θ_i,

        a' = a·cos(m·θ_i) − b·sin(m·θ_i),   b' = a·sin(m·θ_i) + b·cos(m·θ_i)

    so that q_m'·k_n' = Σ_i Re[(q_m)_i · conj((k_n)_i) · e^{i(m−n)θ_i}] depends on the positions
    only through m − n (Su et al. 2021, "RoFormer"). Lengths are unchanged.

    x: [..., n, d_k] (d_k even), positions: [n] -> [..., n, d_k]
    """
    d_k = x.shape[-1]
    angles = rope_angles(positions, d_k, rope.base).astype(x.dtype, copy=False)  # [n, d_k/2]
    cos, sin = np.cos(angles), np.sin(angles)
    first, second = rope_pairs(d_k, rope.pairing)
    a, b = x[..., first], x[..., second]
    rotated = np.empty_like(x)
    rotated[..., first] = a * cos - b * sin
    rotated[..., second] = a * sin + b * cos
    return rotated
