"""A GGUF file's metadata as a Llama-family model's sizes (``GgufSettings``, in the words of a
Hugging Face config.json), each checked against the tensors that hold it before anything is
dequantized: the head counts and the width against W_Q, W_K and W_V, the vocabulary against
token_embd, the feed-forward width against ffn_gate. A key that disagrees is named, with both
numbers; a feature attnviz does not compute (experts, sliding windows, scaled or partial RoPE,
per-layer head counts, biases its layer never reads) is refused by name.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnviz.errors import AttnvizError, FileProblem, clipped, shown_value
from attnviz.layer_limits import check_model_layers
from attnviz.model.sources.gguf_file import GgufFile
from attnviz.model.sources.gguf_keys import check_settings, setting
from attnviz.tokens import printable

#: The architectures attnviz runs, and the RoPE pairing their GGUF files store W_Q, W_K for.
STORED_PAIRING = {"llama": "adjacent", "qwen2": "half"}


@dataclass(frozen=True)
class GgufSettings:
    """The sizes a GGUF file's metadata gives, checked, in the words of Hugging Face's config."""

    architecture: str  # "llama" or "qwen2"
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_k: int  # the head size
    d_ff: int
    rope_base: float
    rms_eps: float
    vocab_size: int
    max_positions: int
    tied_embeddings: bool  # no output.weight: the output layer is the embedding table
    stored_pairing: str  # the RoPE pairing W_Q and W_K are stored for

    def config(self) -> dict[str, Any]:
        """What a Hugging Face config.json of this model would say."""
        return {
            "model_type": self.architecture,
            "num_hidden_layers": self.n_layers,
            "hidden_size": self.d_model,
            "num_attention_heads": self.n_heads,
            "num_key_value_heads": self.n_kv_heads,
            "head_dim": self.d_k,
            "intermediate_size": self.d_ff,
            "rope_theta": self.rope_base,
            "rms_norm_eps": self.rms_eps,
            "vocab_size": self.vocab_size,
            "max_position_embeddings": self.max_positions,
            "tie_word_embeddings": self.tied_embeddings,
            "hidden_act": "silu",
        }


def read_settings(file: GgufFile) -> GgufSettings:
    """The model's sizes, refusing in one line what attnviz does not run: other architectures,
    mixtures of experts, sliding windows, scaled or partial RoPE, per-layer head counts; and
    metadata that disagrees with the tensors' shapes, by its key, with both numbers."""
    check_settings(file)  # every key attnviz reads holds a value of its kind
    meta = file.metadata
    arch = setting(file, "general.architecture", None)
    if arch not in STORED_PAIRING:
        raise FileProblem(
            f"{file.path} holds a model of the {arch!r} architecture; attnviz runs GGUF files of "
            "the llama and qwen2 architectures."
        )
    _refuse_features(file, arch)
    d_model = _whole(file, f"{arch}.embedding_length")
    n_heads = _whole(file, f"{arch}.attention.head_count")
    if f"{arch}.attention.key_length" not in meta and d_model % n_heads:
        raise FileProblem(
            f"{file.path}: {arch}.attention.head_count {n_heads} does not divide "
            f"{arch}.embedding_length {d_model} into heads; the file's metadata is damaged."
        )
    d_k = _whole(file, f"{arch}.attention.key_length", d_model // n_heads)
    n_kv_heads = _whole(file, f"{arch}.attention.head_count_kv", n_heads)
    if n_heads % n_kv_heads:
        raise FileProblem(
            f"{file.path}: {n_heads} query heads cannot share {n_kv_heads} key/value heads evenly "
            f"({arch}.attention.head_count_kv does not divide {arch}.attention.head_count); the "
            "file's metadata is inconsistent."
        )
    _require_head_sizes(file, arch, d_model, (n_heads, n_kv_heads), d_k)
    settings = GgufSettings(
        architecture=arch,
        n_layers=_whole(file, f"{arch}.block_count"),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        d_k=d_k,
        d_ff=_whole(file, f"{arch}.feed_forward_length"),
        rope_base=_real(file, f"{arch}.rope.freq_base", 10000.0),
        rms_eps=_real(file, f"{arch}.attention.layer_norm_rms_epsilon"),
        vocab_size=_whole(
            file, f"{arch}.vocab_size", len(setting(file, "tokenizer.ggml.tokens", ()))
        ),
        max_positions=_whole(file, f"{arch}.context_length"),
        tied_embeddings="output.weight" not in file.tensors,
        stored_pairing=STORED_PAIRING[arch],
    )
    try:  # before any tensor is looked at: a file may claim 100,000 layers of a few bytes
        check_model_layers(settings.n_layers, f"{arch}.block_count")
    except AttnvizError as error:
        raise FileProblem(f"{file.path}: {error.message}.") from None
    if d_k % 2:
        raise FileProblem(
            f"{file.path}: the head size {d_k} is odd, and RoPE rotates pairs of coordinates; "
            "the file's metadata is inconsistent."
        )
    _require_sizes(file, settings)
    if not (math.isfinite(settings.rms_eps) and 0 < settings.rms_eps < 1):
        raise FileProblem(
            f"{file.path}: RMSNorm's ε {settings.rms_eps} ({arch}.attention.layer_norm_rms_"
            "epsilon) is not usable: its epsilon must be a small positive number such as 1e-5; "
            "the file's metadata is damaged."
        )
    if not (math.isfinite(settings.rope_base) and settings.rope_base > 1):
        raise FileProblem(
            f"{file.path}: RoPE's base {settings.rope_base} is not usable ({arch}.rope.freq_base "
            "must be a number above 1, such as 10000); the file's metadata is damaged."
        )
    return settings


def _require_sizes(file: GgufFile, settings: GgufSettings) -> None:
    """The vocabulary and the feed-forward width the metadata gives, against token_embd's rows
    and layer 1's ffn_gate rows."""
    arch = settings.architecture
    for tensor, size, key in (
        ("token_embd.weight", settings.vocab_size, f"{arch}.vocab_size, or tokenizer.ggml.tokens"),
        ("blk.0.ffn_gate.weight", settings.d_ff, f"{arch}.feed_forward_length"),
    ):
        info = file.tensors.get(tensor)
        if info is not None and info.shape[0] != size:
            what = (
                "a vocabulary of {} tokens"
                if tensor == "token_embd.weight"
                else "a feed-forward width of {}"
            )
            raise FileProblem(
                f"{file.path}: its metadata gives {what.format(size)} ({key}), but {tensor} has "
                f"{info.shape[0]} rows; the file's metadata is damaged."
            )


def _refuse_features(file: GgufFile, arch: str) -> None:
    experts = setting(file, f"{arch}.expert_count", 0)
    window = setting(file, f"{arch}.attention.sliding_window", 0)
    scaling = setting(file, f"{arch}.rope.scaling.type", "none")
    heads = [setting(file, f"{arch}.attention.head_count{kv}", 1) for kv in ("", "_kv")]
    if experts:
        feature = f"a mixture of {experts} experts"
    elif window:
        # Which layers slide is not in the file (Qwen2's max_window_layers is config.json's),
        # so the window is refused, never run as full attention.
        raise FileProblem(
            f"{file.path} uses sliding-window attention ({arch}.attention.sliding_window "
            f"{window} tokens), which attnviz does not run from a GGUF file, whose metadata does "
            "not say which layers slide; read the model's Hugging Face folder (its config.json "
            "says), or use a model without a window (SmolLM2, Llama 2, TinyLlama, Qwen2.5)."
        )
    elif scaling not in ("none", "") or setting(file, f"{arch}.rope.scaling.factor", 1.0) not in (
        0.0,
        1.0,
    ):
        named = setting(file, f"{arch}.rope.scaling.type", "scaled")
        feature = f"scaled RoPE ({printable(clipped(named))})"
    elif "rope_freqs.weight" in file.tensors:
        feature = "scaled RoPE (Llama 3.1's frequency factors, rope_freqs)"
    elif any(isinstance(count, np.ndarray) for count in heads):
        feature = "a different number of heads in each layer"
    elif bias := _unread_bias(file, arch):
        feature = f"biases the attnviz {arch} model does not have ({bias})"
    else:
        return
    _refuse(file, feature)


#: The biases a layer may hold that attnviz's Llama layer never reads, by architecture: Qwen2's
#: Q, K and V biases are read, and nothing else (attnviz.model.families.llama.load_layer).
UNREAD_BIASES = {
    "llama": ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"),
    "qwen2": ("attn_output", "ffn_gate", "ffn_up", "ffn_down"),
}


def _unread_bias(file: GgufFile, arch: str) -> str | None:
    """The first bias tensor in the file's layers that the forward pass would silently skip."""
    return next(
        (
            name
            for name in file.tensors
            if (match := re.fullmatch(r"blk\.[0-9]+\.(\w+)\.bias", name))
            and match.group(1) in UNREAD_BIASES[arch]
        ),
        None,
    )


def _refuse(file: GgufFile, feature: str) -> None:
    raise FileProblem(
        f"{file.path} uses {feature}, which attnviz does not compute; it runs llama and qwen2 "
        "models without it (SmolLM2, Llama 2, TinyLlama, Qwen2.5)."
    )


def _require_head_sizes(
    file: GgufFile, arch: str, d_model: int, heads: tuple[int, int], d_k: int
) -> None:
    """The head counts (query, key/value) and width the metadata gives, checked against W_Q's,
    W_K's and W_V's shapes (before they are taken for a feature the file does not have: partial
    RoPE, values of another size)."""
    n_heads, n_kv_heads = heads
    size_key = (
        f"{arch}.attention.key_length"
        if f"{arch}.attention.key_length" in file.metadata
        else f"{arch}.embedding_length / {arch}.attention.head_count"
    )
    for tensor, count, kind, key in (
        ("blk.0.attn_q.weight", n_heads, "query", f"{arch}.attention.head_count"),
        ("blk.0.attn_k.weight", n_kv_heads, "key/value", f"{arch}.attention.head_count_kv"),
        ("blk.0.attn_v.weight", n_kv_heads, "key/value", f"{arch}.attention.head_count_kv"),
    ):
        info = file.tensors.get(tensor)
        if info is not None and info.shape != (count * d_k, d_model):
            raise FileProblem(
                f"{file.path}: its metadata gives {count} {kind} head{'s' * (count != 1)} of "
                f"{d_k} numbers ({key}; each head {size_key}) over a width of {d_model} "
                f"({arch}.embedding_length), but {tensor} has shape {list(info.shape)}, not "
                f"[{count * d_k}, {d_model}]; the file's metadata is damaged."
            )
    rotated = setting(file, f"{arch}.rope.dimension_count", None)
    if rotated not in (None, d_k):
        raise FileProblem(
            f"{file.path}: {arch}.rope.dimension_count {rotated} is not the head size {d_k} "
            f"({arch}.embedding_length {d_model} / {arch}.attention.head_count {n_heads}): either "
            "the model uses RoPE on only part of each head, which attnviz does not compute, or "
            "the head count is wrong and the file's metadata is damaged."
        )
    if setting(file, f"{arch}.attention.value_length", None) not in (
        None,
        setting(file, f"{arch}.attention.key_length", None),
    ):
        _refuse(file, "values of another size than keys")


def _whole(file: GgufFile, key: str, default: int | None = None) -> int:
    """A whole number from 1 to 2³¹ (setting checks it), ``default`` when the file lacks it."""
    value = setting(file, key) if default is None else setting(file, key, default)
    if not isinstance(value, int) or not 0 < value <= 2**31:
        raise FileProblem(
            f"{file.path}: {key} is {shown_value(value)}; the file's metadata is damaged."
        )
    return value


def _real(file: GgufFile, key: str, default: float | None = None) -> float:
    return float(setting(file, key) if default is None else setting(file, key, default))
