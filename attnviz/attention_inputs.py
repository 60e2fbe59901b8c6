"""What multi_head_attention checks before it computes (attnviz.attention): X, the source of
cross-attention, a positional encoding, the provenance, the config and RoPE's settings, each
refused in one sentence naming the fix, the dtype the computation runs in, and the memory of the
trace (limits.check_trace), all before the first step runs: the steps themselves check nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple, NoReturn

import numpy as np

from attnviz import arguments as check
from attnviz.arrays import FloatArray
from attnviz.config import AttentionConfig
from attnviz.errors import AttnvizError, option, shown_value
from attnviz.latent import LatentWeights, check_latent_trace, effective_projection
from attnviz.limits import BYTES_PER_NUMBER, check_result, check_trace
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


def overflow(x: FloatArray, weights: AttentionWeights) -> NoReturn:
    """Finite inputs can still overflow float64 (about 1.8e308) in a dot product: said in one
    sentence, before the softmax would be given ∞."""
    largest = max(float(np.abs(x).max()), float(np.abs(weights.W_Q).max()))
    raise AttnvizError(
        f"The numbers overflow {x.dtype.name}: with values up to {largest:.3g} in X and the "
        "weights, Q·Kᵀ reaches infinity. Scale the embeddings or weights down."
    )


def latent_weights(
    latent: LatentWeights, weights: AttentionWeights, rope: Rope | None, cross: bool
) -> AttentionWeights:
    """The weights of a latent layer: W_K and W_V replaced by the products X is in effect
    multiplied by, W_DKV·W_UK[i] and W_DKV·W_UV[i] (attnviz.latent), after the latent's checks:
    self-attention without rotary positions, one key/value head per query head, sizes that
    fit."""
    check.instance("latent", latent, LatentWeights, "a LatentWeights (attnviz.latent), or None")
    if cross or rope is not None or weights.n_kv_heads != weights.n_heads:
        raise AttnvizError(
            "Latent attention here is self-attention with one latent for every head's keys and "
            "values, its rotary positions the latent's own decoupled W_QR and W_KR (a turn of "
            "all of q and k would sit inside W_UK); drop the latent, or the source, rope and "
            "grouped key/value heads."
        )
    if not latent.shapes_fit(*weights.W_Q.shape):
        rotary = ""
        if latent.W_QR is not None or latent.W_KR is not None or latent.rope is not None:
            rotary = (
                ", and W_QR [h, d_model, d_rope], W_KR [d_model, d_rope] (d_rope even) with "
                "their rope, all three or none"
            )
        raise AttnvizError(
            f"The latent's W_DKV {list(latent.W_DKV.shape)}, W_UK {list(latent.W_UK.shape)} and "
            f"W_UV {list(latent.W_UV.shape)} do not fit W_Q {list(weights.W_Q.shape)}: they "
            f"must be [d_model, d_c] and [h, d_c, d_k]{rotary}."
        )
    return replace(
        weights,
        W_K=effective_projection(latent.W_DKV, latent.W_UK),
        W_V=effective_projection(latent.W_DKV, latent.W_UV),
    )


class AttentionOptions(NamedTuple):
    """multi_head_attention's keyword arguments, as given (see its docstring)."""

    provenance: Provenance | None = None
    config: AttentionConfig | None = None
    mask: np.ndarray | None = None
    source_tokens: Sequence[str] | None = None
    source_x: FloatArray | None = None
    positional_encoding: FloatArray | None = None
    source_positional_encoding: FloatArray | None = None
    rope: Rope | None = None
    latent: LatentWeights | None = None


class Checked(NamedTuple):
    """multi_head_attention's inputs, checked: what the steps read and the trace keeps."""

    tokens: tuple[str, ...]  # [n]
    x: FloatArray  # [n, d_model]: X, = E + PE with a positional encoding
    weights: AttentionWeights
    config: AttentionConfig
    provenance: Provenance
    mask: np.ndarray | None  # [n, n] bool
    source_tokens: tuple[str, ...] | None  # [n_source] in cross-attention
    source: Source
    embeddings: FloatArray | None  # E, with a positional encoding
    positional_encoding: FloatArray | None  # PE
    rope: Rope | None
    latent: LatentWeights | None = None  # keys and values from a latent (attnviz.latent)


def checked_inputs(
    tokens: Sequence[str],
    x: FloatArray,
    weights: AttentionWeights,
    options: AttentionOptions,
    *,
    budgeted: bool = False,
) -> Checked:
    """Every input of multi_head_attention checked, each refused in one sentence naming the fix,
    and the trace's memory estimated (limits.check_trace) before any step runs, unless
    ``budgeted``: the layer of a model's run, whose every layer's trace was estimated at once in
    the run's own dtype (model_limits.check_model_run), so that no layer of a run it accepted is
    refused here."""
    given = options
    encodings = (given.positional_encoding, given.source_positional_encoding)
    cross = (given.source_tokens, given.source_x)
    check_kinds(given.provenance, given.config, given.rope, given.mask, cross, encodings)
    positioned = given.positional_encoding is not None
    provenance = checked_provenance(given.provenance, weights, positioned, given.rope)
    if (given.source_positional_encoding is not None) != (
        positioned and given.source_x is not None
    ):
        raise AttnvizError(
            "Cross-attention with positions needs the encoding of both sentences; give "
            "source_positional_encoding too (or neither)."
        )
    dtype = common_dtype(x, weights)
    x = checked_x(x, len(check.token_list("tokens", tokens)), weights.d_model, dtype)
    embeddings = encoding = None
    if given.positional_encoding is not None:
        embeddings, encoding = x, checked_encoding(given.positional_encoding, x, dtype)
        x = embeddings + encoding  # X = E + PE
    config = checked_config(given.config, weights, provenance)
    source = Source(None, None, None)
    if given.source_x is not None and given.source_tokens is not None:
        source = checked_source(
            given.source_x,
            len(given.source_tokens),
            weights.d_model,
            dtype,
            given.mask,
            given.source_positional_encoding,
        )
    mask = given.mask
    if mask is not None and (mask.shape != (len(tokens), len(tokens)) or not mask.any(-1).all()):
        raise AttnvizError("The mask must be [n, n] and let every word attend to something.")
    check_rope(given.rope, config.d_k, source.x is not None)
    if given.latent is not None:
        weights = latent_weights(given.latent, weights, given.rope, source.x is not None)
    n_keys = len(x if source.x is None else source.x)
    fixed = not weights.origin.is_random  # a model's or a file's heads: no option changes them
    if not budgeted:
        check_trace(len(x), n_keys, weights.d_model, weights.n_heads, heads_fixed=fixed)
        if given.latent is not None:
            d_c, d_rope = given.latent.d_c, given.latent.d_rope
            check_latent_trace(len(x), n_keys, weights.n_heads, weights.d_model, d_c, d_rope)
    source_tokens = None if given.source_tokens is None else tuple(given.source_tokens)
    return Checked(
        tuple(tokens),
        x,
        weights,
        config,
        provenance,
        mask,
        source_tokens,
        source,
        embeddings,
        encoding,
        given.rope,
        given.latent,
    )


def unread_padding(n_real: int, n_tokens: int, window: int | None, pad: str = "[PAD]") -> None:
    """AttnvizError when a sliding window leaves a padding row no key: row i reads only
    i − W + 1 … i, so the rows from n_real + W − 1 on (from 0) would read only the padding,
    which is masked as keys, and a row of −∞ has no softmax."""
    if window is None or n_tokens - n_real < window:
        return
    raise AttnvizError(
        f"{option('pad_to', n_tokens)} with {option('window', window)}: the {pad} rows from "
        f"position {n_real + window} on would read only {pad} keys, which are masked; pad to "
        f"at most {n_real + window - 1}, or widen the window."
    )
