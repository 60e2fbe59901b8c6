"""A decoder for ``attnviz generate``: the model found by any source, every layer held (each is
run once per token), the whole token table (a new token can be any id) and the output layer
that turns the last hidden state into logits, h·W_unembᵀ."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, FileProblem, option
from attnviz.generation.decoder import Decoder, GPT2Decoder, LlamaDecoder, ToyDecoder
from attnviz.generation.text import words_pieces
from attnviz.model.sources.tokenizer_pieces import Pieces

DTYPES = {"float32": np.float32, "float64": np.float64}


@dataclass(frozen=True, eq=False)
class LoadedDecoder:
    """A decoder ready to generate, and what names it and reads its prompts."""

    decoder: Decoder
    name: str  # as the lesson names it: "smollm2 (GGUF, Q4_1)", "induction"
    family: str  # "Llama-family decoder", "attnviz toy decoder"
    tokenizer: Any  # what attnviz.model.sources.tokenizer.encode takes, or the toy's encoder
    pieces: Pieces | None  # the vocabulary, to write ids back as text (None: the tokenizer's,
    # read with the prompt: attnviz.model.sources.tokenizer.encode_with_pieces)
    separator: str  # between pieces: " " for a vocabulary of whole words
    toy_config: Any = None  # families.toy.ToyConfig for a toy decoder
    end_ids: frozenset[int] = frozenset()  # the model's end-of-text tokens: generation stops
    final_norm: str = ""  # the norm before the output layer, as a sentence names it


#: Told (the tokenizer, the model's positions) once both are known and before any layer is
#: read: attnviz generate starts splitting the prompt then, in a child process, while the
#: layers are dequantized.
Early = Callable[[Any, int], None]


def load_decoder(model: str, dtype: str = "float32", early: Early | None = None) -> LoadedDecoder:
    """The decoder ``model`` names (a GGUF file, ``ollama:NAME``, a Llama or Qwen2 folder, a toy
    decoder's folder or a shipped name such as "smollm2" or "induction"), every layer read;
    ``early`` told of its tokenizer first (not a toy decoder's: it splits in no time)."""
    from attnviz.model.families import gpt2, toy
    from attnviz.model.families.llama import LlamaConfig
    from attnviz.model.sources.checkpoint import files_read
    from attnviz.model.sources.source import open_source

    if dtype not in DTYPES:
        raise AttnvizError(f"{option('dtype', dtype)}: use float32 or float64.")
    with files_read(model):
        source = open_source(model, DTYPES[dtype])
        config, kind = source.read_config()
        if isinstance(config, toy.ToyConfig):
            return _toy_decoder(source, config)
        if kind is gpt2.ARCHITECTURE:
            return _gpt2_decoder(source, config, kind, DTYPES[dtype], early)
        if not isinstance(config, LlamaConfig):
            raise AttnvizError(
                f"{source.name} is a {getattr(kind, 'description', 'model')}, which attnviz "
                "does not generate with: it generates with decoders, Llama-family (Llama, Qwen2, "
                "SmolLM2; -m smollm2), GPT-2 and its own toy decoders (-m induction)."
            )
        if config.sliding_window is not None and config.window_layers:
            # The cache and the lesson's sentences are those of a causal mask in every layer.
            raise AttnvizError(
                f"{source.name} uses a sliding window of {config.sliding_window} tokens in "
                f"{len(config.window_layers)} of its {config.n_layers} layers (use_sliding_window "
                "in its config.json), which attnviz generate does not run; read it with attnviz "
                "explain, which runs the window, or generate with a model without one."
            )
        return _llama_decoder(source, config, kind, DTYPES[dtype], early)


def _toy_decoder(source: Any, config: Any) -> LoadedDecoder:
    from attnviz.model.families import toy

    if not config.causal or config.readout != "token":
        raise AttnvizError(
            f"{source.name} is not a decoder: it reads a whole sentence and answers for one "
            "word; generate with a model that predicts the next token at every position "
            "(-m induction, or attnviz train previous/induction --save FOLDER)."
        )
    with source.tensors(toy.ARCHITECTURE) as tensors:
        weights = source.weights(toy.ARCHITECTURE, tensors, config, (), keep=True)
    decoder = ToyDecoder(
        weights,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        n_kv_heads=config.n_heads,
        d_k=config.d_k,
        max_positions=config.max_positions,
        dtype=source.dtype,
    )
    return LoadedDecoder(
        decoder,
        source.name,
        "attnviz's own toy decoder (attention layers only, no feed-forward block)",
        source.tokenizer(),
        words_pieces(config.vocabulary),
        " ",
        config,
    )


def _llama_decoder(
    source: Any, config: Any, kind: Any, dtype: type, early: Early | None
) -> LoadedDecoder:
    tokenizer = source.tokenizer()
    if early is not None:
        early(tokenizer, config.max_positions)
    with source.tensors(kind) as tensors:
        source.check(config, tensors)
        rows = source.token_rows(kind, tensors)
        weights = source.weights(kind, tensors, config, [0], True)
        table, unembedding = _output_tables(source, tensors, config, rows, dtype)
        layers = tuple(weights.layers[i] for i in range(config.n_layers))  # all read now
    decoder = LlamaDecoder(
        weights=_with_layers(weights, layers),
        token_table=table,
        unembedding=unembedding,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        n_kv_heads=config.n_kv_heads,
        d_k=config.d_k,
        max_positions=config.max_positions,
        dtype=dtype,
    )
    return LoadedDecoder(
        decoder,
        source.name,
        _family(kind, config),
        tokenizer,
        None,
        "",
        end_ids=_end_ids(source, config),
        final_norm="the final RMSNorm",
    )


def _family(kind: Any, config: Any) -> str:
    """ "a Llama-family decoder", and when its config.json says so, that its weights are random."""
    untrained = "" if config.trained else " whose weights are random, untrained (a test model)"
    return f"a {kind.description}{untrained}"


def _end_ids(source: Any, config: Any) -> frozenset[int]:
    """The end-of-text tokens the model's settings name (eos_token_id: one id or a list; a GGUF
    file's tokenizer.ggml.eos_token_id), at which generation stops, as transformers' does."""
    if hasattr(source, "gguf"):
        from attnviz.model.sources.gguf_keys import setting

        found: Any = setting(source.gguf.tensors.file, "tokenizer.ggml.eos_token_id", None)
    else:
        found = source.found.settings.get("eos_token_id")
    ids = found if isinstance(found, list) else [found]
    return frozenset(i for i in ids if isinstance(i, int) and not isinstance(i, bool))


def _gpt2_decoder(
    source: Any, config: Any, kind: Any, dtype: type, early: Early | None
) -> LoadedDecoder:
    tokenizer = source.tokenizer()
    if early is not None:
        early(tokenizer, config.max_positions)
    with source.tensors(kind) as tensors:
        source.check(config, tensors)
        rows = source.token_rows(kind, tensors)
        weights = source.weights(kind, tensors, config, [0], True)
        table, unembedding = _output_tables(source, tensors, config, rows, dtype)
        positions = tensors.get("wpe.weight", (config.max_positions, config.d_model))
    if unembedding is not table:
        raise FileProblem(
            f"{source.path}: attnviz generates with GPT-2 models whose output layer is their "
            "token table (tie_word_embeddings), as GPT-2's own are."
        )
    decoder = GPT2Decoder(
        weights,
        token_table=table,
        position_table=positions,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        n_kv_heads=config.n_heads,
        d_k=config.d_k,
        max_positions=config.max_positions,
        dtype=dtype,
    )
    return LoadedDecoder(
        decoder,
        source.name,
        _family(kind, config),
        tokenizer,
        None,
        "",
        end_ids=_end_ids(source, config),
        final_norm="the final LayerNorm (ln_f)",
    )


def _with_layers(weights: Any, layers: tuple[Any, ...]) -> Any:
    from dataclasses import replace

    return replace(weights, layers=layers)


def _output_tables(
    source: Any, tensors: Any, config: Any, rows: int, dtype: type
) -> tuple[FloatArray, FloatArray]:
    """(the token table [V, d_model], the output layer [V, d_model]): the same array when the
    model ties them (SmolLM2 does), else lm_head (a folder) or output.weight (a GGUF file)."""
    shape = (rows, config.d_model)
    if hasattr(source, "gguf"):
        gguf = source.gguf
        table = gguf.tensors.get("embed_tokens.weight", shape)
        if "output.weight" not in gguf.tensors.file.tensors:
            return table, table
        from attnviz.model.sources.gguf_file import dequantize

        info = gguf.tensors.file.tensors["output.weight"]
        if tuple(info.shape) != shape:
            raise FileProblem(
                f"{source.path}: output.weight has shape {list(info.shape)}, the file's "
                f"token table implies {list(shape)}."
            )
        output: FloatArray = np.asarray(dequantize(gguf.tensors.file, "output.weight"), dtype)
        return table, _finite(output, source.path, "output.weight")
    table = tensors.get(getattr(source_kind(source), "token_table", "embed_tokens.weight"), shape)
    # transformers ties GPT-2's by default, a Llama's only when its config.json says so.
    tied_by_default = getattr(source_kind(source), "model_type", "") == "gpt2"
    if source.found.settings.get("tie_word_embeddings", tied_by_default) is True:
        return table, table
    # lm_head.weight is stored outside the "model." prefix every other tensor has.
    outside = copy.copy(tensors)
    outside.prefix = ""
    if "lm_head.weight" not in outside:
        raise FileProblem(
            f"{source.path}: the model's config.json does not tie its output layer to the token "
            "table (tie_word_embeddings), and model.safetensors lacks lm_head.weight."
        )
    return table, outside.get("lm_head.weight", shape)


def source_kind(source: Any) -> Any:
    """The family ``source``'s config names (an Architecture)."""
    return source.read_config()[1]


def _finite(array: FloatArray, path: Any, name: str) -> FloatArray:
    if not np.isfinite(array).all():
        raise FileProblem(f"{path}: {name} holds a number that is not finite; the file is damaged.")
    array.setflags(write=False)
    return array
