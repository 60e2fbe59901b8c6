"""Sentence -> every layer of a pretrained model: find the checkpoint, read its config, pick the
architecture, tokenize, load what the sentence needs, run."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import padding_mask, sliding_window_mask
from attnviz.attention_inputs import unread_padding
from attnviz.config import MAX_TOKENS
from attnviz.errors import AttnvizError, FileProblem, option, quoted
from attnviz.model.base import Architecture, ModelConfig, ModelTrace
from attnviz.model.families import toy, toy_about
from attnviz.model.memory import keep_freed_memory
from attnviz.model.sources.checkpoint import files_read
from attnviz.model.sources.source import Source, open_source
from attnviz.model.sources.tokenizer import Encoding, encode, token_text
from attnviz.model_limits import ModelSizes, Work, check_model_run
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Masking,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)

DTYPES = {"float32": np.float32, "float64": np.float64}


@dataclass(frozen=True, eq=False)
class ModelRun:
    """The model's trace and how the sentence was split for it."""

    trace: ModelTrace
    encoding: Encoding
    model_name: str
    # attnviz's toy transformer: its config.json, and (the focus word, its answer there) when the
    # sentence has the word its task asks about and the readout answers there.
    toy_config: toy.ToyConfig | None = None
    answered: tuple[str, str] | None = None


@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model's weights for one sentence, ready to run: what ``trace_model`` runs once, and
    what an ablation runs again from one layer on (``run_layers``)."""

    name: str  # as the provenance names it: "all-MiniLM-L6-v2", "coref", a folder's name
    folder: Path
    encoding: Encoding
    provenance: Provenance  # the first layer's
    mask: np.ndarray | None  # the padding mask, when --pad-to added padding
    weights: Any  # the architecture's (BertWeights, GPT2Weights), or ToyWeights
    architecture: Architecture | None  # None: attnviz's toy transformer
    toy_config: toy.ToyConfig | None = None  # the toy transformer's, else None
    n_layers: int = 1
    n_heads: int = 1  # in each layer

    def forward(self) -> ModelTrace:
        """Every layer on the sentence, each one's attention kept."""
        # A number that overflows is found and named by the architecture (the layer, or the
        # tensor as it was read), in one sentence: numpy's warnings would print lines of its
        # source code.
        keep_freed_memory()
        with np.errstate(all="ignore"):
            if self.toy_config is not None:
                return toy.forward(
                    self.weights, self.toy_config, self.encoding, provenance=self.provenance
                )
            assert self.architecture is not None  # every model but the toy one has one
            return self.architecture.forward(
                self.weights, self.encoding.tokens, provenance=self.provenance, mask=self.mask
            )

    def run_layers(
        self,
        hidden: FloatArray,
        *,
        start: int,
        attention_output: FloatArray | None,
        mask: np.ndarray | None,
    ) -> ModelTrace:
        """Layers ``start`` (from 1) to the last from ``hidden`` [n, d_model], what layer start
        reads, with ``attention_output`` [n, d_model] for its attention's output when given;
        ``mask`` as layer start's trace has it. hidden_states[0] is ``hidden``."""
        tokens = self.encoding.tokens
        keep_freed_memory()
        with np.errstate(all="ignore"):
            if self.toy_config is not None:
                return toy.run_layers(
                    self.weights,
                    self.toy_config,
                    tokens,
                    hidden,
                    provenance=self.provenance,
                    start=start,
                    attention_output=attention_output,
                )
            assert self.architecture is not None  # every model but the toy one has one
            return self.architecture.run_layers(
                self.weights,
                tokens,
                hidden,
                provenance=self.provenance,
                mask=mask,
                start=start,
                attention_output=attention_output,
            )


def trace_model(
    sentence: str,
    model: str,
    *,
    dtype: str = "float32",
    pad_to: int | None = None,
    window: int | None = None,
) -> ModelRun:
    """Run a trained model (BERT family, GPT-2 or attnviz's toy transformer) on ``sentence``;
    keep every layer's attention.

    model: a checkpoint folder, a toy model's folder (attnviz train --save), or a known model's
    name ("minilm", "gpt2", and attnviz's shipped toy models "coref" and "coref-word").
    dtype: "float32" (as checkpoints store it) or "float64". pad_to: append padding tokens up
    to this many positions and mask them as keys, as a batch of sentences of different lengths
    would be (refused for the toy model, which has no padding token). window: every layer of
    a decoder reads only the ``window`` tokens up to each token (refused for an encoder).
    """
    # One forward pass: a GGUF file's layers are dequantized as they are reached, not kept.
    loaded = load_model(
        sentence, model, dtype=dtype, pad_to=pad_to, keep_layers=False, window=window
    )
    trace = loaded.forward()
    if loaded.toy_config is not None:
        return _toy_run(loaded, loaded.toy_config, trace)
    return ModelRun(trace=trace, encoding=loaded.encoding, model_name=loaded.name)


def load_model(
    sentence: str,
    model: str,
    *,
    dtype: str = "float32",
    pad_to: int | None = None,
    keep_layers: bool = True,
    work: Work | None = None,
    window: int | None = None,
) -> LoadedModel:
    """The weights ``trace_model`` runs on ``sentence`` (the same arguments), not yet run.
    keep_layers=False: a GGUF file's layers are dequantized each time a run reaches them (one
    forward pass holds one layer's feed-forward weights at a time); True keeps them once read,
    for runs that go through the layers again. ``work``: what the command will ask of the run
    (default: the command's model_limits.planned work), estimated once the sentence is tokenized and
    refused past attnviz's limits (model_limits.check_model_run) before any weight is read.

    Whatever the model's source: the source that claims the name is found, its config names the
    family, and the family's weights are built from the source (sources/source.py)."""
    if dtype not in DTYPES:
        raise AttnvizError(f"{option('dtype', metavar=quoted(dtype))}: use float32 or float64.")
    if not sentence.strip():
        raise AttnvizError('The sentence is empty; give some words, e.g. "I am good".')
    request = Request(sentence, dtype, pad_to, keep_layers, work, window)
    with files_read(model):
        source = open_source(model, DTYPES[dtype])
        config, kind = source.read_config()
        if isinstance(config, toy.ToyConfig):
            return _load_toy(source, config, request)
        assert isinstance(kind, Architecture)  # every family but the toy one is one
        return _load_pretrained(source, config, kind, request)


@dataclass(frozen=True)
class Request:
    """What ``load_model`` was asked for, beside the model."""

    sentence: str
    dtype: str  # "float32" or "float64"
    pad_to: int | None
    keep_layers: bool
    work: Work | None
    window: int | None = None  # a sliding window in every layer of a decoder


def _load_pretrained(
    source: Source, config: ModelConfig, architecture: Architecture, request: Request
) -> LoadedModel:
    """A pretrained family's weights for the sentence, from any source: tokenized, refused past
    the limits, then only the weights the sentence needs read."""
    sentence, dtype = request.sentence, DTYPES[request.dtype]
    refuse_window(
        request.window,
        architecture.causal,
        f"{source.name} is a {architecture.description}, which reads every token both ways",
    )
    tokenizer = source.tokenizer()
    unpadded = within_limit(encode(tokenizer, sentence, config.max_positions))
    with source.tensors(architecture) as tensors:
        source.check(config, tensors)
        n_ids = source.token_rows(architecture, tensors)
        encoding, mask = padded(
            unpadded, tokenizer, config, source.settings_name, request.pad_to, n_ids
        )
        within_budget(config, len(encoding.ids), request.dtype)
        pad = encoding.tokens[-1] if len(encoding.ids) > len(unpadded.ids) else ""
        unread_padding(len(unpadded.ids), len(encoding.ids), narrowest(config, request), pad)
        mask = windowed(mask, len(encoding.ids), request.window)
        name = source.name
        sizes = run_sizes(config, name, len(encoding.ids), dtype)
        keep = source.keeps_layers(request.keep_layers)
        check_model_run(replace(sizes, ffn_kept=keep), request.work)
        weights = source.weights(architecture, tensors, config, encoding.ids, request.keep_layers)
    provenance = model_provenance(
        sentence,
        encoding,
        config,
        architecture,
        name,
        padding=len(encoding.ids) - len(unpadded.ids),
        about=source.about(),
        window=request.window,
    )
    return LoadedModel(
        name, source.path, encoding, provenance, mask, weights, architecture, None, *_sizes(config)
    )


def refuse_window(window: int | None, causal: bool, why_not: str) -> None:
    """A sliding window runs on a decoder's causal mask: refused for an encoder (and attnviz's
    toy models, which run as trained), before anything is read; ``why_not`` says which."""
    if window is not None and not causal:
        raise AttnvizError(
            f"{option('window', window)} slides over a decoder's causal mask; {why_not}. Drop "
            f"{option('window')}, or use a decoder (smollm2, gpt2)."
        )


def narrowest(config: ModelConfig, request: Request) -> int | None:
    """The narrowest window of the run: the one it was given, or the model's own (Qwen2's
    sliding layers), whichever is narrower; None without either."""
    own = getattr(config, "sliding_window", None) if getattr(config, "window_layers", ()) else None
    windows = [w for w in (own, request.window) if w is not None]
    return min(windows) if windows else None


def windowed(mask: np.ndarray | None, n_tokens: int, window: int | None) -> np.ndarray | None:
    """The padding ``mask`` (or none) with a sliding window of ``window`` tokens on it: the
    family's causal mask is combined with it in every layer.  -> [n, n] bool or None"""
    if window is None:
        return mask
    sliding = sliding_window_mask(n_tokens, window)
    return sliding if mask is None else sliding & mask


def _sizes(config: ModelConfig | toy.ToyConfig) -> tuple[int, int]:
    return config.n_layers, config.n_heads


def within_budget(config: ModelConfig | toy.ToyConfig, n_tokens: int, dtype: str) -> None:
    """Refuse, before its weights are read, a run whose every layer's trace would take more
    memory than attnviz allows, or whose outputs would be too large (attnviz.limits.
    check_model_run)."""
    from attnviz.layer_limits import check_model_run

    check_model_run(
        config.n_layers,
        n_tokens,
        config.d_model,
        config.n_heads,
        bytes_per_number=np.dtype(DTYPES[dtype]).itemsize,
    )


def run_sizes(config: ModelConfig, name: str, n_tokens: int, dtype: type) -> ModelSizes:
    """What a run of ``config``'s model on ``n_tokens`` tokens costs, for check_model_run:
    a Llama-family model's G key/value heads and gated feed-forward block (three matrices)."""
    gated = hasattr(config, "n_kv_heads")  # LlamaConfig: Llama and Qwen2
    n_kv_heads = getattr(config, "n_kv_heads", 0) or config.n_heads
    return ModelSizes(
        name=name,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        n_kv_heads=n_kv_heads,
        d_model=config.d_model,
        d_ff=config.d_ff,
        n_tokens=n_tokens,
        ffn_matrices=3 if gated else 2,
        number_bytes=np.dtype(dtype).itemsize,
    )


def within_limit(encoding: Encoding) -> Encoding:
    """``encoding``, refused when it has more tokens than attnviz takes (MAX_TOKENS): a model
    with more positions (GPT-2's 1024, a Llama's thousands) would keep layers × heads × n²
    weights of a longer one."""
    if len(encoding.ids) > MAX_TOKENS:
        raise AttnvizError(
            f"The sentence is {len(encoding.ids)} tokens as the model splits it (special tokens "
            f"included); attnviz takes at most {MAX_TOKENS}, whatever the model's positions. "
            "Shorten it."
        )
    return encoding


def padded(
    encoding: Encoding,
    tokenizer: Any,
    config: ModelConfig,
    source: str,
    pad_to: int | None,
    n_ids: int,
) -> tuple[Encoding, np.ndarray | None]:
    """``encoding`` with padding tokens up to ``pad_to`` positions and the mask that hides them
    as keys (``source``: what names the model's padding token, for the message; ``n_ids``: the
    rows of the model's token table); unchanged and None without ``pad_to``."""
    if pad_to is None:
        return encoding, None
    n_real = len(encoding.ids)
    if config.pad_token_id is None:
        raise AttnvizError(f"{option('pad_to')}: {source} names no padding (or end-of-text) token.")
    longest = min(config.max_positions, MAX_TOKENS)
    if not n_real <= pad_to <= longest:
        limit = "the model's positions" if longest == config.max_positions else "attnviz's limit"
        raise AttnvizError(
            f"{option('pad_to', pad_to)}: the model sees {n_real} tokens (special tokens "
            f"included); pad to between {n_real} and {longest} ({limit})."
        )
    pad_id = config.pad_token_id
    # The token table's rows, and the tokenizer's tokens when it is here to ask (one run in a
    # child process answers only token_text).
    if hasattr(tokenizer, "get_vocab_size"):
        n_ids = min(n_ids, int(tokenizer.get_vocab_size(with_added_tokens=True)))
    if not 0 <= pad_id < n_ids:
        raise FileProblem(
            f"{option('pad_to', pad_to)}: {source} gives the padding token as id {pad_id}, "
            f"outside the model's {n_ids} tokens (ids 0 to {n_ids - 1}); correct pad_token_id "
            f"there, or drop {option('pad_to')}."
        )
    pad = token_text(tokenizer, pad_id)
    return encoding.padded(pad_to, pad_id, pad), padding_mask(n_real, pad_to)


def model_provenance(
    sentence: str,
    encoding: Encoding,
    config: ModelConfig,
    architecture: Architecture,
    name: str,
    *,
    padding: int,
    about: str | None,
    window: int | None = None,
) -> Provenance:
    """How a pretrained model's trace was made: its first layer's provenance."""
    groups, words = encoding.words()
    return Provenance(
        embeddings=EmbeddingsOrigin(EmbeddingsKind.MODEL, architecture=config.model_type, layer=1),
        weights=WeightsOrigin(
            WeightsKind.PRETRAINED,
            model=name,
            architecture=config.model_type,
            layer=1,
            n_layers=config.n_layers,
            trained=config.trained,
            about=about,
        ),
        masking=Masking(causal=architecture.causal, padding=padding, window=window),
        special=encoding.special,
        word_groups=groups,
        words=words,
        sentence=sentence,
    )


def _load_toy(source: Source, config: toy.ToyConfig, request: Request) -> LoadedModel:
    """attnviz's toy transformer for the sentence: words of its own vocabulary, weights.npz."""
    name = source.name
    refuse_window(request.window, False, f"{name}, attnviz's toy model, runs as it was trained")
    if request.pad_to is not None:
        raise AttnvizError(
            f"{option('pad_to')}: {name} has no padding token (it reads one sentence at a "
            f"time, of at most {config.max_positions} words); drop it."
        )
    # The weights first: a config.json that disagrees with them is named as such, not as a
    # sentence too long for positions it misstates.
    with source.tensors(toy.ARCHITECTURE) as tensors:
        weights = source.weights(toy.ARCHITECTURE, tensors, config, (), keep=True)
    encoding = source.tokenizer()(request.sentence, config)
    within_budget(config, len(encoding.ids), request.dtype)
    sizes = ModelSizes(
        name=name,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        n_kv_heads=config.n_heads,
        d_model=config.d_model,
        d_ff=0,  # no feed-forward block
        n_tokens=len(encoding.ids),
        number_bytes=np.dtype(DTYPES[request.dtype]).itemsize,
    )
    check_model_run(sizes, request.work)
    provenance = Provenance(
        embeddings=EmbeddingsOrigin(EmbeddingsKind.MODEL, architecture=toy.MODEL_TYPE, layer=1),
        weights=WeightsOrigin(
            WeightsKind.PRETRAINED,
            model=name,
            architecture=toy.MODEL_TYPE,
            layer=1,
            n_layers=config.n_layers,
            readout=config.readout,
            answers_at=config.focus_words,
        ),
        masking=Masking(causal=config.causal),
        sentence=request.sentence,  # no word groups: every token is a whole word
    )
    return LoadedModel(
        name, source.path, encoding, provenance, None, weights, None, config, *_sizes(config)
    )


def _toy_run(loaded: LoadedModel, config: toy.ToyConfig, trace: ModelTrace) -> ModelRun:
    """The toy model's run, every layer's provenance saying what the model is and, when the
    sentence has its focus word, its answer there."""
    tokens = loaded.encoding.tokens
    focus = next((w for w in config.focus_words if w in tokens), None)
    answered = None
    if focus is not None and config.readout != "token":
        # The model answers at the first occurrence, named as the tables name it ("it:1").
        label = focus if tokens.count(focus) == 1 else f"{focus}:1"
        answered = (label, toy.answer(loaded.weights, config, trace, tokens.index(focus)))
    about = toy_about.about(config, loaded.name, answered, words=len(tokens))
    # Every layer's provenance says what the model is, for the lesson's header.
    layers = tuple(
        replace(
            layer,
            provenance=layer.provenance._replace(
                weights=layer.provenance.weights._replace(about=about)
            ),
        )
        for layer in trace.layers
    )
    return ModelRun(
        trace=replace(trace, layers=layers),
        encoding=loaded.encoding,
        model_name=loaded.name,
        toy_config=config,
        answered=answered,
    )
