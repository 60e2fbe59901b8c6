"""What multi_head_attention checks before it computes (attnviz.attention): X, the source of
cross-attention, a positional encoding, the provenance, the config and RoPE's settings, each
refused in one sentence naming the fix, and the dtype the computation runs in."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnviz import arguments as check
from attnviz.arrays import FloatArray
from attnviz.config import AttentionConfig
from attnviz.errors import AttnvizError, option, shown_value
from attnviz.limits import BYTES_PER_NUMBER, check_result
from attnviz.positions import Positions, Rope
from attnviz.provenance import EmbeddingsKind, EmbeddingsOrigin, Provenance
from attnviz.trace import frozen_array, provenance_seed
from attnviz.weights import AttentionWeights


def check_rope(rope: Rope | None, d_k: int, cross: bool) -> None:
    """Rotary positions turn pairs of coordinates, within one sentence's positions."""
    if rope is None:
        return
    if d_k % 2:
        raise AttnvizError(
            f"Rotary positions turn pairs of coordinates, but d_k = {d_k} is odd; choose "
            f"{option('d_model')} and {option('heads')} so that d_model / heads is even."
        )
    if cross:
        raise AttnvizError(
            "Rotary positions are for self-attention, where queries and keys count positions in "
            f"one sentence; use {option('positions', 'sinusoidal')} with cross-attention."
        )


def checked_provenance(
    provenance: Provenance | None, weights: AttentionWeights, positioned: bool, rope: Rope | None
) -> Provenance:
    """The provenance given (by default X "given", the weights' own origin), which must say
    whether a positional encoding was added."""
    check.instance("weights", weights, AttentionWeights, "an AttentionWeights: random_weights(…)")
    if provenance is None:
        positions = Positions.sinusoidal if positioned else Positions.none
        if rope is not None:
            positions = Positions.rope
        given = EmbeddingsOrigin(EmbeddingsKind.GIVEN, positions=positions)
        provenance = Provenance(given, weights.origin)
    if positioned != (provenance.embeddings.positions is Positions.sinusoidal):
        raise AttnvizError(
            "A positional encoding goes with provenance.embeddings.positions saying which; "
            "give both or neither."
        )
    return provenance


def checked_x(x: FloatArray, n_tokens: int, d_model: int, dtype: type) -> FloatArray:
    """X as an array of ``dtype``, one row per token, as wide as the weights.  -> [n, d_model]"""
    x = np.asarray(x, dtype=dtype)
    if x.ndim != 2 or x.shape[0] != n_tokens:
        raise AttnvizError(
            f"X has shape {list(x.shape)} but there are {n_tokens} tokens; X needs one row per "
            "token."
        )
    if x.shape[1] != d_model:
        raise AttnvizError(
            f"The embeddings have {x.shape[1]} columns but the weights expect d_model = "
            f"{d_model}; use embeddings and weights of the same width."
        )
    return x


def checked_config(
    config: AttentionConfig | None, weights: AttentionWeights, provenance: Provenance
) -> AttentionConfig:
    """The sizes given, checked against the weights; by default taken from them."""
    if config is None:
        config = AttentionConfig(
            d_model=weights.d_model,
            n_heads=weights.n_heads,
            seed=provenance_seed(provenance),
            n_kv_heads=weights.n_kv_heads,
        )
    if (weights.n_heads, weights.d_model) != (config.n_heads, config.d_model):
        raise AttnvizError(
            f"The weights are for {weights.n_heads} heads and d_model {weights.d_model}, but the "
            f"configuration asks for {config.n_heads} heads and d_model {config.d_model}."
        )
    if weights.n_kv_heads != config.kv_heads:
        raise AttnvizError(
            f"The weights have {weights.n_kv_heads} key/value heads, but the configuration asks "
            f"for {config.kv_heads}."
        )
    return config


class Source(NamedTuple):
    """Cross-attention's source: S = E_source (+ PE_source), the keys' and values' X."""

    x: FloatArray | None  # [n_source, d_model]
    embeddings: FloatArray | None  # E_source, with a positional encoding
    positional_encoding: FloatArray | None  # PE_source


def checked_source(
    source_x: FloatArray,
    n_source: int,
    d_model: int,
    dtype: type,
    mask: np.ndarray | None,
    positional_encoding: FloatArray | None,
) -> Source:
    """The source's X, checked, with its positional encoding added when there is one."""
    source_x = np.asarray(source_x, dtype=dtype)
    if source_x.shape != (n_source, d_model):
        raise AttnvizError(
            f"The source embeddings have shape {list(source_x.shape)}; they must be "
            f"[{n_source}, {d_model}]."
        )
    if mask is not None:
        raise AttnvizError("Masks apply to self-attention, not to cross-attention.")
    if positional_encoding is None:
        return Source(source_x, None, None)
    encoding = checked_encoding(positional_encoding, source_x, dtype)
    return Source(source_x + encoding, source_x, encoding)


def checked_encoding(encoding: FloatArray, embeddings: FloatArray, dtype: type) -> FloatArray:
    """A positional encoding checked against the embeddings it is added to.  -> [n, d_model]"""
    encoding = np.asarray(encoding, dtype=dtype)
    if encoding.shape != embeddings.shape or not np.isfinite(encoding).all():
        raise AttnvizError(
            f"The positional encoding has shape {list(encoding.shape)}; it must be finite and "
            f"[n, d_model] = {list(embeddings.shape)}, like the embeddings it is added to."
        )
    return encoding


def frozen_or_none(array: FloatArray | None) -> FloatArray | None:
    return None if array is None else frozen_array(array)


def common_dtype(x: FloatArray, weights: AttentionWeights) -> type:
    """float32 when X and the weights are float32 (a checkpoint's precision), else float64."""
    check_result("x", check.numbers("x", x).shape, BYTES_PER_NUMBER)  # copied to float64
    arrays = (x, weights.W_Q, weights.W_K, weights.W_V, weights.W_O)
    return np.float32 if all(np.asarray(a).dtype == np.float32 for a in arrays) else np.float64


# -- the steps' own checks -------------------------------------------------------------------


def check_kinds(
    provenance: object,
    config: object,
    rope: object,
    mask: object,
    source: tuple[object, object],
    encodings: tuple[object, object],
) -> None:
    """multi_head_attention's records, each of its kind or None; the mask an [n, n] array of
    true/false (1.0 or "no" would mean "may attend" to numpy); cross-attention's source, its
    tokens (a list of strings) and its X, both or neither; the positional encodings of the
    sentence and of the source real numbers, when given."""
    for name, value, kind, example in (
        ("provenance", provenance, Provenance, "a Provenance, or None for the default"),
        ("config", config, AttentionConfig, "an AttentionConfig, or None for the weights' own"),
        ("rope", rope, Rope, 'a Rope, e.g. Rope(10000.0, "half"), or None'),
    ):
        if value is not None:
            check.instance(name, value, kind, example)
    if mask is not None and (
        not isinstance(mask, np.ndarray) or mask.dtype != bool or mask.ndim != 2
    ):
        raise AttnvizError(
            f"mask={shown_value(mask)}: give an [n, n] numpy array of True/False (True: query "
            "i may attend to key j), e.g. causal_mask(n)."
        )
    source_tokens, source_x = source
    if (source_x is None) != (source_tokens is None):
        raise AttnvizError("Cross-attention needs both the source tokens and their embeddings.")
    if source_tokens is not None:
        check.token_list("source_tokens", source_tokens)
    names = ("source_x", "positional_encoding", "source_positional_encoding")
    for name, array in zip(names, (source_x, *encodings), strict=True):
        if array is not None:
            check_result(name, check.numbers(name, array).shape, BYTES_PER_NUMBER)


def refuse_scores(scores: FloatArray) -> None:
    """AttnvizError naming what in ``scores`` has no softmax, and in which row."""
    if np.isnan(scores).any():
        what, at = "NaN (not a number)", np.argwhere(np.isnan(scores))[0][:-1]
    elif np.isposinf(scores).any():
        what, at = "+∞ (exp(∞) / exp(∞) has no value)", np.argwhere(np.isposinf(scores))[0][:-1]
    else:
        what = "a row of −∞ only (every key masked out)"
        at = np.argwhere(np.isneginf(scores).all(axis=-1))[0]
    raise AttnvizError(
        f"softmax: the scores hold {what}, first in row {at.tolist()}; give finite scores, "
        "each row with at least one above −∞ (−∞ masks a pair out)."
    )


def product_shape(
    step: str, a: tuple[str, FloatArray], b: tuple[str, FloatArray]
) -> tuple[int, ...]:
    """The shape of a · b (np.matmul's: leading axes broadcast), refused when they do not
    broadcast or the result would be too large, before numpy allocates it."""
    (a_name, a_array), (b_name, b_array) = a, b
    if a_array.ndim == 1:
        shape = (*b_array.shape[:-2], b_array.shape[-1])
    else:
        leading = check.broadcast(step, (a_name, a_array.shape[:-2]), (b_name, b_array.shape[:-2]))
        shape = (*leading, a_array.shape[-2], b_array.shape[-1])
    check_result(step, shape, np.result_type(a_array, b_array, np.float16).itemsize)
    return shape


def overflow(x: FloatArray, weights: AttentionWeights) -> None:
    """Finite inputs can still overflow float64 (about 1.8e308) in a dot product: said in one
    sentence, before the softmax would be given ∞."""
    largest = max(float(np.abs(x).max()), float(np.abs(weights.W_Q).max()))
    raise AttnvizError(
        f"The numbers overflow {x.dtype.name}: with values up to {largest:.3g} in X and the "
        "weights, Q·Kᵀ reaches infinity. Scale the embeddings or weights down."
    )
