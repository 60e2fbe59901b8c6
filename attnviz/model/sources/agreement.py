"""config.json against the tensors of the checkpoint beside it, before a tensor is read.

Every size config.json gives that a tensor's shape also holds is compared with that shape from
the header alone: the width, the number of layers, the vocabulary, the positions, the
feed-forward width, the key/value heads, the token types. A config that disagrees is refused by
its key, with both numbers and the fix, instead of failing deep inside a layer with a shape
that names no setting or, worse (fewer layers than the file holds, a vocabulary that differs),
running a model that is not the one in the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

from attnviz.errors import FileProblem, shown_value
from attnviz.model.base import MAX_SIZE

if TYPE_CHECKING:
    from attnviz.model.base import ModelConfig
    from attnviz.model.sources.tensors import Tensors


class Claim(NamedTuple):
    """One size config.json gives, and the axis of a tensor that holds the same size."""

    key: str  # config.json's key, as it is written there: "n_embd"
    value: int  # what config.json says, or the default it implies
    tensor: str  # the tensor whose shape holds the size, without the checkpoint's prefix
    axis: int  # which axis of that tensor
    counts: str  # what the axis counts, for the message: "rows: one per token"
    said: str = ""  # how config.json says it when not as "key is value": an unset key's default
    unit: int = 1  # the axis holds value × unit numbers (key/value heads of d_k each)


class Layers(NamedTuple):
    """The key that gives the number of layers, and where the file's layers are named."""

    key: str
    pattern: str  # the layer index in a tensor's name, without the prefix: r"h\.([0-9]{1,9})\."
    example: str  # what a layer's names start with, "{}" for its index: "h.{}"


def key_of(data: Mapping[str, Any], *names: str) -> str:
    """The first of ``names`` config.json sets (the one attnviz read), else the first."""
    return next((name for name in names if data.get(name) is not None), names[0])


def _gpt2(data: Mapping[str, Any], config: ModelConfig) -> tuple[Layers, list[Claim]]:
    d = config.d_model
    width = key_of(data, "n_embd", "hidden_size")
    inner = "n_inner"
    unset = data.get(inner) is None
    inner_said = f"n_inner is unset, so 4 × {width} = {4 * d}" if unset else ""
    return Layers(key_of(data, "n_layer", "num_hidden_layers"), r"h\.([0-9]{1,9})\.", "h.{}"), [
        Claim(width, d, "wte.weight", 1, "columns: the width of a token's vector"),
        Claim(
            key_of(data, "n_positions", "n_ctx", "max_position_embeddings"),
            config.max_positions,
            "wpe.weight",
            0,
            "rows: one per position",
        ),
        Claim(
            inner,
            config.d_ff,
            "h.0.mlp.c_fc.weight",
            1,
            "columns: the feed-forward width",
            said=inner_said,
        ),
        *_vocabulary(data, "wte.weight"),
    ]


def _bert(data: Mapping[str, Any], config: ModelConfig) -> tuple[Layers, list[Claim]]:
    types = data.get("type_vocab_size")
    type_claims = []
    if types is not None:
        if isinstance(types, bool) or not isinstance(types, int) or types < 1:
            raise ValueError(
                f"type_vocab_size is {types!r}; a BERT has at least one token type, the one "
                "every piece of a sentence has (type 0): set it to the rows of "
                "embeddings.token_type_embeddings.weight (2 in BERT)"
            )
        type_claims.append(
            Claim(
                "type_vocab_size",
                types,
                "embeddings.token_type_embeddings.weight",
                0,
                "rows: one per token type",
            )
        )
    layers = Layers("num_hidden_layers", r"encoder\.layer\.([0-9]{1,9})\.", "encoder.layer.{}")
    return layers, [
        Claim(
            "hidden_size",
            config.d_model,
            "embeddings.word_embeddings.weight",
            1,
            "columns: the width of a token's vector",
        ),
        Claim(
            "max_position_embeddings",
            config.max_positions,
            "embeddings.position_embeddings.weight",
            0,
            "rows: one per position",
        ),
        Claim(
            "intermediate_size",
            config.d_ff,
            "encoder.layer.0.intermediate.dense.weight",
            0,
            "rows: the feed-forward width",
        ),
        *_vocabulary(data, "embeddings.word_embeddings.weight"),
        *type_claims,
    ]


def _llama(data: Mapping[str, Any], config: ModelConfig) -> tuple[Layers, list[Claim]]:
    kv_heads = getattr(config, "n_kv_heads", config.n_heads)
    kv_said = (
        ""
        if data.get("num_key_value_heads") is not None
        else f"num_key_value_heads is unset, so one per query head ({config.n_heads})"
    )
    layers = Layers("num_hidden_layers", r"layers\.([0-9]{1,9})\.", "layers.{}")
    return layers, [
        Claim(
            "hidden_size",
            config.d_model,
            "embed_tokens.weight",
            1,
            "columns: the width of a token's vector",
        ),
        Claim(
            "intermediate_size",
            config.d_ff,
            "layers.0.mlp.gate_proj.weight",
            0,
            "rows: the feed-forward width",
        ),
        Claim(
            "num_key_value_heads",
            kv_heads,
            "layers.0.self_attn.k_proj.weight",
            0,
            f"key/value heads of d_k {config.d_k}",
            said=kv_said,
            unit=config.d_k,
        ),
        *_vocabulary(data, "embed_tokens.weight"),
    ]


def _vocabulary(data: Mapping[str, Any], table: str) -> list[Claim]:
    """vocab_size against the token table's rows, when config.json gives it."""
    value = data.get("vocab_size")
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"vocab_size is {shown_value(value)}, not a whole number; set it to the rows of {table}"
        )
    return [Claim("vocab_size", value, table, 0, "rows: one per token")]


#: model_type -> the sizes its config.json gives, in words, each with the names it may be given
#: by, first to last (what attnviz.model's read_config reads).
SIZE_KEYS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "gpt2": (
        ("the hidden size", ("n_embd", "hidden_size")),
        ("the number of heads", ("n_head", "num_attention_heads")),
        ("the number of layers", ("n_layer", "num_hidden_layers")),
        ("the feed-forward width", ("n_inner",)),
        ("the number of positions", ("n_positions", "n_ctx", "max_position_embeddings")),
    ),
    **dict.fromkeys(
        ("bert", "llama", "qwen2"),
        (
            ("the hidden size", ("hidden_size",)),
            ("the number of heads", ("num_attention_heads",)),
            ("the number of layers", ("num_hidden_layers",)),
            ("the feed-forward width", ("intermediate_size",)),
            ("the number of positions", ("max_position_embeddings",)),
        ),
    ),
}


def check_sizes(data: Mapping[str, Any], config_path: Path) -> None:
    """FileProblem, by its key, for a size config.json gives as 0 or less, and when its number
    of heads does not divide its width: d_k = width / heads must be whole, every head the same
    size. (A size that is not a whole number is refused, by its name, as it is read.)"""
    sizes = SIZE_KEYS.get(str(data.get("model_type")))
    if sizes is None:
        return
    keys = [key_of(data, *names) for _, names in sizes]
    for (words, _), key in zip(sizes, keys, strict=True):
        value = data.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if value <= 0:
            raise FileProblem(
                f"{config_path}: {words} must be positive, got {value} ({key}); set {key} as "
                "the model's own config.json does."
            )
        if value > MAX_SIZE:
            raise FileProblem(
                f"{config_path}: {words} is {value}, beyond any model's (at most {MAX_SIZE:,}) "
                f"({key}); the file is damaged: get the model's own config.json."
            )
    width_key, heads_key = keys[0], keys[1]
    width, heads = data.get(width_key), data.get(heads_key)
    if not (_positive(width) and _positive(heads)) or width % heads == 0:
        return
    raise FileProblem(
        f"{config_path}: {width_key} {width} is not divisible by {heads} heads ({heads_key}), "
        f"so the heads cannot share it equally (d_k = {width_key} / {heads_key}); set "
        f"{heads_key} to a number of heads that divides {width}, as the model's own "
        "config.json does."
    )


def _positive(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


#: model_type -> the sizes its config.json gives that its tensors hold.
CLAIMS: dict[str, Callable[[Mapping[str, Any], ModelConfig], tuple[Layers, list[Claim]]]] = {
    "gpt2": _gpt2,
    "bert": _bert,
    "llama": _llama,
    "qwen2": _llama,
}


def check_agreement(
    config: ModelConfig, data: Mapping[str, Any], tensors: Tensors, config_path: Path
) -> None:
    """FileProblem naming the first key of config.json (``data``, read as ``config``) that
    disagrees with the shapes in ``tensors``' header, both numbers and the fix; nothing for a
    model_type without a table (CLAIMS) or a tensor the file lacks (refused when it is read)."""
    claims = CLAIMS.get(config.model_type)
    if claims is None:
        return
    try:
        layers, sizes = claims(data, config)
    except ValueError as error:
        raise FileProblem(f"{config_path}: {error}.") from None
    width, *others = sizes
    _check(width, tensors, config_path)  # first: every other shape is read across it
    _check_layers(layers, config.n_layers, tensors, config_path)
    for claim in others:
        _check(claim, tensors, config_path)
    _check_biases(config, data, tensors, config_path)


def _check_biases(
    config: ModelConfig, data: Mapping[str, Any], tensors: Tensors, config_path: Path
) -> None:
    """A Llama-family checkpoint's biases that config.json says it has not: never read, they
    would leave a different model than the file's."""
    if config.model_type not in ("llama", "qwen2"):
        return
    said = {True: "true", False: "false", None: "unset"}
    for tensor, key, used in (
        ("layers.0.self_attn.q_proj.bias", "attention_bias", getattr(config, "qkv_bias", False)),
        ("layers.0.self_attn.o_proj.bias", "attention_bias", getattr(config, "output_bias", False)),
        ("layers.0.mlp.gate_proj.bias", "mlp_bias", False),
    ):
        full = tensors.prefix + tensor
        if used or full not in tensors.names:
            continue
        value = data.get(key)
        shown = said.get(value, repr(value)) if isinstance(value, bool | None) else repr(value)
        if key == "mlp_bias" or config.model_type == "qwen2":
            fix = "attnviz runs models without it; use one that has none"
        else:
            fix = f"set {key} to true if these are the model's own weights"
        raise FileProblem(
            f"{config_path}: {key} is {shown}, but {tensors.path.name} holds {full}, a bias the "
            f"{config.model_type} model it describes does not have; {fix}, or give the "
            "config.json that came with them."
        )


def _check(claim: Claim, tensors: Tensors, config_path: Path) -> None:
    full = tensors.prefix + claim.tensor
    stored = tensors.header.get(full)
    if stored is None or len(stored.shape) != 2:  # every claim is on a table or a matrix
        return  # refused, by its shape, when it is read
    shape = list(stored.shape)
    size = shape[claim.axis]
    if size in (0, claim.value * claim.unit):  # an empty table is refused as such when read
        return
    implied = [
        claim.value * claim.unit if axis == claim.axis else n for axis, n in enumerate(shape)
    ]
    held = size // claim.unit if size % claim.unit == 0 and size > 0 else None
    if claim.unit == 1:
        counts = claim.counts
    elif held is not None:
        counts = f"{held} {claim.counts}"
    else:
        counts = f"not a whole number of {claim.counts}"
    fix = f"set {claim.key} to {held}" if held is not None else f"correct {claim.key}"
    raise FileProblem(
        f"{config_path}: {claim.said or f'{claim.key} is {claim.value}'}, but "
        f"{tensors.path.name}'s {full} has shape {shape}, config.json implies {implied} "
        f"({counts}); {fix} if these are the model's own weights, or give the config.json that "
        "came with them."
    )


def _check_layers(layers: Layers, n_layers: int, tensors: Tensors, config_path: Path) -> None:
    pattern = re.compile(re.escape(tensors.prefix) + layers.pattern)
    held = sorted({int(match.group(1)) for name in tensors.names if (match := pattern.match(name))})
    # No layers at all, or a gap below the count config.json gives: the first layer missing is
    # named when it is read.
    if not held or held[-1] + 1 == n_layers:
        return
    first, last = (tensors.prefix + layers.example.format(i) for i in (0, held[-1]))
    if held != list(range(len(held))):
        missing = next(i for i, layer in enumerate(held) if i != layer)
        raise FileProblem(
            f"{config_path}: {layers.key} is {n_layers}, but {tensors.path.name} holds layers "
            f"numbered up to {last} without {tensors.prefix + layers.example.format(missing)}; "
            "the checkpoint is damaged: get a fresh copy of it."
        )
    raise FileProblem(
        f"{config_path}: {layers.key} is {n_layers}, but {tensors.path.name} holds {len(held)} "
        f"layers ({first} … {last}); set {layers.key} to {len(held)} if these are the model's "
        "own weights, or give the config.json that came with them."
    )
