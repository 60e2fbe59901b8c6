"""Sentence -> the encoder's trace: find the checkpoint, tokenize, load, run."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from attnviz.attention import padding_mask
from attnviz.errors import AttnvizError
from attnviz.model.checkpoint import (
    Encoding,
    checkpoint_name,
    find_model,
    load_encoder,
    read_config,
)
from attnviz.model.checkpoint import tokenize_for_model as tokenize_for_model
from attnviz.model.encoder import EncoderTrace, run_encoder
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
    """The encoder's trace and how the sentence was split for it."""

    trace: EncoderTrace
    encoding: Encoding
    model_name: str


def trace_model(
    sentence: str, model: str, *, dtype: str = "float32", pad_to: int | None = None
) -> ModelRun:
    """Run a pretrained BERT-family encoder on ``sentence`` and keep every layer's attention.

    model: a checkpoint folder, or "minilm" for all-MiniLM-L6-v2. dtype: "float32" (as the
    checkpoint stores it) or "float64". pad_to: append [PAD] pieces up to this many positions
    and mask them as keys, as a batch of sentences of different lengths would be.
    """
    if dtype not in DTYPES:
        raise AttnvizError(f"--dtype {dtype!r}: use float32 or float64.")
    if not sentence.strip():
        raise AttnvizError('The sentence is empty; give some words, e.g. "I am good".')
    folder = find_model(model)
    config = read_config(folder)
    encoding = tokenize_for_model(folder, sentence, config.max_positions)
    n_real = len(encoding.ids)
    mask = None
    if pad_to is not None:
        if not n_real <= pad_to <= config.max_positions:
            raise AttnvizError(
                f"--pad-to {pad_to}: the model sees {n_real} word pieces with [CLS] and [SEP]; "
                f"pad to between {n_real} and {config.max_positions}."
            )
        extra = pad_to - n_real
        encoding = replace(
            encoding,
            ids=encoding.ids + (config.pad_token_id,) * extra,
            tokens=encoding.tokens + ("[PAD]",) * extra,
            word_ids=encoding.word_ids + (None,) * extra,
            offsets=encoding.offsets + ((0, 0),) * extra,
            special=encoding.special + tuple(range(n_real, pad_to)),
        )
        mask = padding_mask(n_real, pad_to)
    weights = load_encoder(folder, config, encoding.ids, DTYPES[dtype])
    name = checkpoint_name(model, folder)
    groups, words = encoding.words()
    provenance = Provenance(
        embeddings=EmbeddingsOrigin(EmbeddingsKind.MODEL, architecture=config.model_type, layer=1),
        weights=WeightsOrigin(
            WeightsKind.PRETRAINED,
            model=name,
            architecture=config.model_type,
            layer=1,
            n_layers=config.n_layers,
        ),
        masking=Masking(padding=len(encoding.ids) - n_real),
        special=encoding.special,
        word_groups=tuple(tuple(group) for group in groups),
        words=tuple(words),
    )
    return ModelRun(
        trace=run_encoder(encoding.tokens, weights, provenance=provenance, mask=mask),
        encoding=encoding,
        model_name=name,
    )
