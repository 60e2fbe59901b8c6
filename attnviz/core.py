"""From a sentence to traces: tokens, X, weights, every step; one random layer, or every layer
of a pretrained model, as ``TraceOptions`` (attnviz.options) ask.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from attnviz.arguments import instance, numbers, paths, sentences, token_list
from attnviz.attention import (
    causal_mask,
    multi_head_attention,
    padding_mask,
    sliding_window_mask,
)
from attnviz.attention_inputs import unread_padding
from attnviz.config import MAX_TOKENS, AttentionConfig, resolve_config
from attnviz.embeddings import Embeddings, OutOfVocabulary, random_embeddings
from attnviz.errors import AttnvizError, option, shown_value, spelled
from attnviz.latent import LatentWeights, check_latent_width, random_latent, rope_width
from attnviz.limits import BYTES_PER_NUMBER, check_result
from attnviz.options import Preset, TraceOptions
from attnviz.positions import Positions, Rope, sinusoidal_positions
from attnviz.provenance import EmbeddingsKind, EmbeddingsOrigin, Masking, Provenance
from attnviz.reuse import reuse_notes
from attnviz.selection import no_layers
from attnviz.serial import one_at_a_time
from attnviz.tokens import check_sentence_length, check_token_count, tokenize
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights, load_weights, random_weights

if TYPE_CHECKING:
    from attnviz.trace_files import Pieces

PAD = "[PAD]"


class Traced(NamedTuple):
    """A trace and what the person who asked for it should be told about how it was made."""

    trace: AttentionTrace
    notes: tuple[str, ...]


class TracedLayers(NamedTuple):
    """Every layer's trace (one for the random layer) and what the person should be told."""

    layers: tuple[AttentionTrace, ...]
    notes: tuple[str, ...]


@one_at_a_time
def trace_layers(
    sentence: str,
    options: TraceOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> TracedLayers:
    """Every layer the options describe: the random (or loaded) layer alone, or each layer of a
    pretrained model, run on ``sentence`` (a model runs every layer; the view picks one).
    ``progress`` is called while a word-vector text file is streamed."""
    options = options or TraceOptions()
    if options.model is not None:
        from attnviz.model.run import trace_model

        check_sentence_length(sentence)  # before the model's tokenizer sees it
        run = trace_model(
            sentence,
            options.model,
            dtype=options.dtype.value,
            pad_to=options.pad_to,
            window=options.window,
        )
        return TracedLayers(run.trace.layers, _window_notes(run.trace.layers, options.window))
    trace, notes = trace_with_options(sentence, options, progress=progress)
    return TracedLayers((trace,), notes)


def _window_notes(layers: Sequence[AttentionTrace], window: int | None) -> tuple[str, ...]:
    """What a window given to a pretrained decoder means: an experiment on a model trained to
    read every earlier token, not what the model computes."""
    if window is None or not layers:
        return ()
    model = layers[0].provenance.weights.model or "the model"
    hidden = window < layers[0].n_tokens
    return (
        f"{option('window', window)}: every layer of {model} read only the {window} tokens up "
        "to each token (itself included), a window it was not trained with: an experiment, "
        "not what the model computes."
        + ("" if hidden else f" This sentence has {layers[0].n_tokens} tokens, so it hides none."),
    )


@one_at_a_time
def cross_layers(
    source: str,
    target: str,
    options: TraceOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> TracedLayers:
    """Cross-attention from the options: queries from ``target``, keys and values from
    ``source``. A model, a causal mask and padding are refused: they belong to self-attention
    (and attnviz's models are an encoder or a decoder alone)."""
    options = options or TraceOptions()
    if options.causal:
        raise AttnvizError(
            f"{option('causal')} does not apply to cross: each target word may look at the whole "
            "source sentence, which is already written; masks belong to self-attention."
        )
    if options.model is not None or options.pad_to is not None:
        raise AttnvizError(
            f"cross runs the random (or loaded) layer; drop {option('model')} and "
            f"{option('pad_to')}, which belong to self-attention (explain, heatmap)."
        )
    if options.export_layer is not None and options.weights is None and options.embeddings is None:
        made = spelled(
            "attnviz explain --model … --export FILE",
            "attnviz.export_layers(attnviz.explain(…, model=…).layers, FILE)",
        )
        raise AttnvizError(
            f"{option('layer')} with cross reads that layer of a model's export ({made}), given "
            f"as {option('weights')} or {option('embeddings')}; without one, cross runs its one "
            "random layer."
        )
    trace, notes = trace_cross(source, target, options, progress=progress)
    origin = trace.provenance.weights
    if origin.layer is not None and origin.model:
        # A model's layer is self-attention: run as cross-attention its numbers are not the
        # model's, and what surrounds it in the model (residual, LayerNorm) does not follow.
        notes = (
            *notes,
            f"{options.weights} holds layer {origin.layer} of {origin.model}, a self-attention "
            "layer; here its weights run as cross-attention on other X, to show the steps, "
            "not what the model computes.",
        )
    return TracedLayers((trace,), notes)


@one_at_a_time
def trace_attention(
    sentence: str | Sequence[str],
    *,
    config: AttentionConfig | None = None,
    embeddings: Embeddings | np.ndarray | str | Path | None = None,
    weights: AttentionWeights | str | Path | None = None,
    oov: OutOfVocabulary | str = OutOfVocabulary.error,
    positions: Positions | str = Positions.none,
) -> AttentionTrace:
    """Compute multi-head self-attention on ``sentence`` and return every intermediate.

    sentence:   a string (split into words and punctuation) or a list of tokens.
    config:     sizes and seed; by default d_model 8, 2 heads, seed 0, or the sizes the
                embeddings/weights imply. Given explicitly, it must agree with them.
    embeddings: None for seeded random vectors, an [n, d_model] array, or a word-vector file
                (GloVe/word2vec text, .npy, .npz, .json).
    weights:    None for seeded random W_Q, W_K, W_V, W_O, an AttentionWeights, or an .npz/.json
                file with those keys (an exported trace works).
    oov:        "error" (default) or "random": what to do with words a vocabulary file lacks.
    positions:  "none" (default), "sinusoidal": X = E + PE, the paper's positional encoding, or
                "rope": q and k rotated by their positions in each head (X left alone).

    >>> trace = trace_attention("I am good")
    >>> trace.weights.shape   # [heads, n_tokens, n_tokens]
    (2, 3, 3)
    """
    _check_arguments(sentence, config, embeddings, weights)
    try:
        oov = OutOfVocabulary(oov)
    except ValueError:
        raise AttnvizError(f"oov must be 'error' or 'random', got {shown_value(oov)}.") from None
    options = TraceOptions(oov=oov, positions=_positions(positions))
    if config is not None:
        options = replace(
            options,
            d_model=config.d_model,
            heads=config.n_heads,
            kv_heads=config.n_kv_heads,
            seed=config.seed,
        )
    return trace_with_options(sentence, options, embeddings=embeddings, weights=weights).trace


def _check_arguments(sentence: object, config: object, embeddings: object, weights: object) -> None:
    """trace_attention's arguments are of the kinds it takes, or AttnvizError."""
    if isinstance(sentence, str):
        sentences(sentence=sentence)
    else:
        token_list("sentence", sentence)
    if config is not None:
        instance(
            "config", config, AttentionConfig, "an AttentionConfig, e.g. AttentionConfig(8, 2)"
        )
    if isinstance(embeddings, np.ndarray):
        shape = numbers("embeddings", embeddings, ndim=2).shape
        check_result("embeddings", shape, BYTES_PER_NUMBER)  # a broadcast view, copied
    elif not isinstance(embeddings, Embeddings):
        paths(embeddings=embeddings)
    if not isinstance(weights, AttentionWeights):
        paths(weights=weights)


class LayerInputs(NamedTuple):
    """What one attention layer is run on: X, the weights, the sizes, and notes for the user."""

    embeddings: Embeddings
    weights: AttentionWeights
    config: AttentionConfig
    notes: tuple[str, ...]
    latent: LatentWeights | None = None  # with options.latent: drawn after the weights


def layer_inputs(
    tokens: Sequence[str],
    options: TraceOptions,
    *,
    embeddings: Embeddings | np.ndarray | str | Path | None = None,
    weights: AttentionWeights | str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LayerInputs:
    """X for ``tokens`` and the weights, from the options: sizes may be left to the files.

    ``embeddings`` and ``weights`` given as objects (or files) stand for the options' files.
    ``options.export_layer`` (from 1) picks one layer of a model's export given as weights or
    embeddings; it is refused when no file given holds a model's layers. ``kv_heads``: G
    key/value heads for random weights (grouped-query attention); a weights file brings its own.
    """
    embeddings = options.embeddings if embeddings is None else embeddings
    weights = options.weights if weights is None else weights
    seed, oov = options.seed, options.oov  # checked by TraceOptions, where they were given
    layer = options.export_layer
    layered = False  # whether a file given held a model's layers, of which ``layer`` was read
    if isinstance(weights, (str, Path)):
        weights = load_weights(Path(weights), layer=layer)
        layered = layer is not None  # load_weights refuses a layer of a one-layer file
    if isinstance(embeddings, (str, Path)):
        from attnviz.embeddings import load_embeddings  # the file readers: not at start-up

        embeddings = load_embeddings(
            Path(embeddings), tokens, oov=oov, seed=seed, progress=progress, layer=layer
        )
        layered = layered or embeddings.origin.layer is not None
    elif isinstance(embeddings, np.ndarray):
        given = EmbeddingsOrigin(EmbeddingsKind.GIVEN)
        embeddings = Embeddings(X=np.asarray(embeddings, dtype=np.float64), origin=given)
    if layer is not None and not layered:
        raise AttnvizError(no_layers())
    if embeddings is not None and not np.isfinite(embeddings.X).all():
        raise AttnvizError("The embeddings hold NaN or infinity; give finite numbers.")
    config = resolve_config(
        d_model=options.d_model,
        n_heads=options.heads,
        seed=seed,
        paper=options.preset is Preset.paper,
        embedding_width=embeddings.X.shape[-1] if embeddings is not None else None,
        weights_shape=(weights.n_heads, weights.d_model) if weights is not None else None,
        n_kv_heads=options.kv_heads,
        weights_kv_heads=weights.n_kv_heads if weights is not None else None,
    )
    if embeddings is None:
        embeddings = Embeddings(
            X=random_embeddings(tokens, config.d_model, config.seed),
            origin=EmbeddingsOrigin(EmbeddingsKind.RANDOM, seed=config.seed),
        )
    if embeddings.X.shape != (len(tokens), config.d_model):
        raise AttnvizError(
            f"The embeddings have shape {list(embeddings.X.shape)}; with {len(tokens)} tokens "
            f"and d_model {config.d_model} they must be [{len(tokens)}, {config.d_model}]."
        )
    latent = None
    if weights is None:
        rng = np.random.default_rng(config.seed)
        weights = random_weights(config, rng)
        if options.latent is not None:  # after the weights: W_Q and W_O as without a latent
            d_c = check_latent_width(options.latent, config.n_heads, config.d_k)
            # DeepSeek's decoupled RoPE key with rotary positions, d_k/2 wide (rope_width)
            d_rope = rope_width(config.d_k) if options.positions is Positions.rope else 0
            latent = random_latent(config.n_heads, config.d_model, config.d_k, d_c, rng, d_rope)
    elif options.latent is not None:
        raise AttnvizError(
            f"{option('latent')} draws its own W_DKV, W_UK and W_UV from the seed; drop the "
            f"weights given, or {option('latent')}."
        )
    return LayerInputs(embeddings, weights, config, embeddings.notes, latent)


def trace_with_options(
    sentence: str | Sequence[str],
    options: TraceOptions | None = None,
    *,
    embeddings: Embeddings | np.ndarray | str | Path | None = None,
    weights: AttentionWeights | str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Traced:
    """The trace from the command line's options: sizes may be left to the files to decide.

    options.causal: decoder self-attention, each word sees only itself and the words before it.
    options.positions: sinusoidal adds the paper's positional encoding, X = E + PE (the [PAD]
    tokens too: they have positions like any token); rope rotates q and k in each head by their
    positions (base 10000, pairs i and i + d_k/2) and leaves X alone.
    options.kv_heads: G key/value heads, each shared by h/G query heads (grouped-query
    attention). options.latent: keys and values from one latent of that width per token
    (multi-head latent attention, attnviz.latent). options.pad_to: append [PAD] tokens (zero
    embeddings) up to this length and mask them as keys. ``embeddings`` and ``weights`` given
    as objects stand for the options' files. progress: called with (bytes_read, file_size)
    while a word-vector text file is streamed. Returns the trace and notes for the user
    (words given random vectors, and so on).
    """
    options = options or TraceOptions()
    positions, causal, pad_to = options.positions, options.causal, options.pad_to
    embeddings = options.embeddings if embeddings is None else embeddings
    pieces = _model_pieces(sentence, embeddings)
    if pieces is not None:
        tokens = list(pieces.tokens)
    elif isinstance(sentence, str):
        tokens = tokenize(sentence)
    else:
        tokens = check_token_count(sentence)
    inputs = layer_inputs(
        tokens, options, embeddings=embeddings, weights=weights, progress=progress
    )
    x, n_real = inputs.embeddings.X, len(tokens)
    if pad_to is not None:
        if not n_real <= pad_to <= MAX_TOKENS:
            raise AttnvizError(
                f"{option('pad_to', pad_to)}: the sentence has {n_real} tokens; pad to between "
                f"{n_real} and {MAX_TOKENS}."
            )
        # [PAD] rows are zeros, as a padding embedding usually is; they are masked as keys.
        tokens = [*tokens, *([PAD] * (pad_to - n_real))]
        x = np.vstack([x, np.zeros((pad_to - n_real, x.shape[1]))])
    window = options.window
    unread_padding(n_real, len(tokens), window if causal else None)
    mask = _mask(causal, n_real, len(tokens), window) if causal or pad_to is not None else None
    provenance = Provenance(
        embeddings=inputs.embeddings.origin._replace(positions=positions),
        weights=inputs.weights.origin,
        masking=Masking(causal=causal, padding=len(tokens) - n_real, window=window),
        special=(*(pieces.special if pieces else ()), *range(n_real, len(tokens))),
        sentence=sentence if pieces is not None and isinstance(sentence, str) else "",
    )
    trace = multi_head_attention(
        tokens,
        x,
        inputs.weights,
        config=inputs.config,
        provenance=provenance,
        mask=mask,
        positional_encoding=_encoding(positions, len(tokens), inputs.config.d_model),
        # with a latent, its own decoupled rotary part turns (attnviz.latent), not all of q, k
        rope=Rope() if positions is Positions.rope and inputs.latent is None else None,
        latent=inputs.latent,
    )
    return Traced(trace, inputs.notes + reuse_notes(trace, inputs.weights))


def _mask(causal: bool, n_real: int, n_tokens: int, window: int | None = None) -> np.ndarray:
    """Decoder self-attention (causal, within a sliding ``window`` when given) and/or padding
    after ``n_real`` tokens.  -> [n, n] bool"""
    mask = np.ones((n_tokens, n_tokens), dtype=bool)
    if causal:
        mask &= causal_mask(n_tokens) if window is None else sliding_window_mask(n_tokens, window)
    if n_tokens > n_real:
        mask &= padding_mask(n_real, n_tokens)
    return mask


def _model_pieces(
    sentence: str | Sequence[str], embeddings: Embeddings | np.ndarray | str | Path | None
) -> Pieces | None:
    """When the embeddings are a model's export of this very sentence, the pieces its
    tokenizer cut it into ("[CLS] i am good [SEP]"): the rows of X belong to those, not to
    the words attnviz's own tokenizer would make. None otherwise."""
    if isinstance(sentence, str) and isinstance(embeddings, (str, Path)):
        from attnviz.trace_files import recorded_pieces

        pieces = recorded_pieces(Path(embeddings), sentence)
        if pieces is not None:
            check_token_count(pieces.tokens)
        return pieces
    return None


def _positions(positions: Positions | str) -> Positions:
    try:
        return Positions(positions)
    except ValueError:
        raise AttnvizError(
            f"positions must be 'none' or 'sinusoidal' (added to X) or 'rope' (q and k rotated), "
            f"got {shown_value(positions)}."
        ) from None


def _encoding(positions: Positions, n_tokens: int, d_model: int) -> np.ndarray | None:
    """PE for positions 0 … n_tokens − 1, or None when no positions are added."""
    if positions is Positions.sinusoidal:
        return sinusoidal_positions(n_tokens, d_model)
    return None


def trace_cross(
    source: str | Sequence[str],
    target: str | Sequence[str],
    options: TraceOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Traced:
    """Cross-attention (encoder–decoder), as when translating "I am good" into "Je vais bien":
    queries from the target words, keys and values from the source words.

    positions: sinusoidal adds the paper's positional encoding to each sentence's embeddings,
    each counting from 0, as the paper does at the bottom of the encoder and of the decoder.
    """
    options = options or TraceOptions()
    positions = options.positions
    if positions is Positions.rope:
        raise AttnvizError(
            f"{option('positions', positions)} rotates queries and keys by their positions in one "
            f"sentence; cross-attention has two. Use {option('positions', 'sinusoidal')} there."
        )
    source_tokens = _side(source, "source")
    target_tokens = _side(target, "target")
    # One lookup for both sentences: a word-vector file is read once, and a row-per-token
    # file holds the target's rows, then the source's.
    inputs = layer_inputs(
        check_token_count(
            [*target_tokens, *source_tokens],
            f"The two sentences have {len(target_tokens)} + {len(source_tokens)} =",
            "Shorten one or both: the source and the target are counted together.",
        ),
        options,
        progress=progress,
    )
    n_target, d_model = len(target_tokens), inputs.config.d_model
    trace = multi_head_attention(
        target_tokens,
        inputs.embeddings.X[:n_target],
        inputs.weights,
        config=inputs.config,
        provenance=Provenance(
            inputs.embeddings.origin._replace(positions=positions), inputs.weights.origin
        ),
        source_tokens=source_tokens,
        source_x=inputs.embeddings.X[n_target:],
        positional_encoding=_encoding(positions, n_target, d_model),
        source_positional_encoding=_encoding(positions, len(source_tokens), d_model),
    )
    return Traced(trace, inputs.notes)


def _side(words: str | Sequence[str], name: str) -> list[str]:
    if isinstance(words, str):
        if not words.strip():
            raise AttnvizError(
                f"The {name} sentence is empty; cross needs both, e.g. "
                'attnviz cross "I am good" "Je vais bien".'
            )
        return tokenize(words)
    return check_token_count(words)
