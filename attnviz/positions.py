"""Word order: the sinusoidal positional encoding of Vaswani et al. 2017, §3.5.

Attention alone ignores word order: permuting the rows of X permutes the rows of Q, K, V and of
every result, so a layer fed word vectors alone treats the sentence as a set of words. The paper
adds to each token embedding E a vector that depends only on the token's position, X = E + PE:

    PE[pos, 2i]   = sin(pos / 10000^(2i/d_model))
    PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))

with positions counted from 0. Columns 2i and 2i+1 are the sine and cosine of one frequency,
from 1 radian per position (i = 0) down to 1/10000; PE[pos + k] is a fixed rotation of each pair
of PE[pos], whatever pos, which the paper hoped would make relative positions easy to attend to.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from attnviz.arrays import FloatArray


class Positions(str, Enum):
    """How a word's position enters X (the random layer; a model brings its own)."""

    none = "none"  # X = E: nothing says where a word is
    sinusoidal = "sinusoidal"  # X = E + PE, the paper's encoding


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
