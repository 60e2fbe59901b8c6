"""A Llama-family model in a GGUF file, handed over in Hugging Face's terms: the sizes as a
config.json would give them (``GgufSettings.config``), and the tensors by their Hugging Face
names and shapes (``GgufTensors``, read like ``attnviz.model.tensors.Tensors``), dequantized one
at a time when asked for. The output layer is never read: attention does not need it.

llama.cpp's converter permutes the rows of W_Q and W_K of a llama model inside each head, so that
RoPE rotates adjacent coordinates (2i, 2i+1) where Hugging Face's Llama rotates i with i + d_k/2
(``to_half`` undoes it, ``to_adjacent`` does it). Both layouts give the same attention scores
with their own pairing; mixing them still runs but gives other weights. Qwen2 files are stored
in Hugging Face's layout already (llama.cpp rotates them as "NEOX", the halves).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import FileProblem, option
from attnviz.model.gguf_file import SUPPORTED_TYPES, GgufFile, dequantize, read_gguf

if TYPE_CHECKING:
    from attnviz.model.llama import LlamaConfig, LlamaLayer, LlamaWeights

#: The architectures attnviz runs, and the RoPE pairing their GGUF files store W_Q, W_K for.
STORED_PAIRING = {"llama": "adjacent", "qwen2": "half"}
PAIRINGS = ("half", "adjacent")

#: GGUF tensor names -> Hugging Face's, per layer ("{i}") and for the whole model.
LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
MODEL_NAMES = {"token_embd.weight": "embed_tokens.weight", "output_norm.weight": "norm.weight"}
#: Hugging Face's Llama and Qwen2 put "model." before every name but lm_head's.
PREFIX = "model."


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
    meta = file.metadata
    arch = meta.get("general.architecture")
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
        vocab_size=_whole(file, f"{arch}.vocab_size", len(meta.get("tokenizer.ggml.tokens", ()))),
        max_positions=_whole(file, f"{arch}.context_length"),
        tied_embeddings="output.weight" not in file.tensors,
        stored_pairing=STORED_PAIRING[arch],
    )
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
    meta = file.metadata
    if meta.get(f"{arch}.expert_count", 0):
        feature = f"a mixture of {meta[f'{arch}.expert_count']} experts"
    elif meta.get(f"{arch}.attention.sliding_window", 0):
        feature = f"sliding-window attention ({meta[f'{arch}.attention.sliding_window']} tokens)"
    elif meta.get(f"{arch}.rope.scaling.type", "none") not in ("none", "") or meta.get(
        f"{arch}.rope.scaling.factor", 1.0
    ) not in (0.0, 1.0):
        feature = f"scaled RoPE ({meta.get(f'{arch}.rope.scaling.type', 'scaled')})"
    elif "rope_freqs.weight" in file.tensors:
        feature = "scaled RoPE (Llama 3.1's frequency factors, rope_freqs)"
    elif isinstance(meta.get(f"{arch}.attention.head_count"), np.ndarray):
        feature = "a different number of heads in each layer"
    else:
        return
    _refuse(file, feature)


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
    meta = file.metadata
    rotated = meta.get(f"{arch}.rope.dimension_count", None)
    if rotated not in (None, d_k):
        raise FileProblem(
            f"{file.path}: {arch}.rope.dimension_count {rotated} is not the head size {d_k} "
            f"({arch}.embedding_length {d_model} / {arch}.attention.head_count {n_heads}): either "
            "the model uses RoPE on only part of each head, which attnviz does not compute, or "
            "the head count is wrong and the file's metadata is damaged."
        )
    if meta.get(f"{arch}.attention.value_length", None) not in (
        None,
        meta.get(f"{arch}.attention.key_length", None),
    ):
        _refuse(file, "values of another size than keys")


def _whole(file: GgufFile, key: str, default: int | None = None) -> int:
    value = file.metadata.get(key, default)
    if isinstance(value, (bool, np.ndarray, str)) or not isinstance(value, (int, np.integer)):
        missing = "lacks" if value is None else f"has {value!r} for"
        raise FileProblem(f"{file.path} {missing} {key}; it is not a complete model file.")
    if not 0 < value <= 2**31:
        raise FileProblem(f"{file.path}: {key} is {value}; the file's metadata is damaged.")
    return int(value)


def _real(file: GgufFile, key: str, default: float | None = None) -> float:
    value = file.metadata.get(key, default)
    if isinstance(value, (bool, str, np.ndarray)) or not isinstance(value, (int, float)):
        missing = "lacks" if value is None else f"has {value!r} for"
        raise FileProblem(f"{file.path} {missing} {key}; it is not a complete model file.")
    return float(value)


def hf_name(gguf_name: str) -> str | None:
    """A GGUF tensor's Hugging Face name ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.
    q_proj.weight"), or None for one a forward pass does not read (output.weight among them)."""
    if gguf_name in MODEL_NAMES:
        return PREFIX + MODEL_NAMES[gguf_name]
    match = re.fullmatch(r"blk\.([0-9]+)\.(.+)", gguf_name)
    if match and match.group(2) in LAYER_NAMES:
        return f"{PREFIX}layers.{int(match.group(1))}.{LAYER_NAMES[match.group(2)]}"
    return None


def to_half(rows: np.ndarray, n_heads: int) -> np.ndarray:
    """W_Q or W_K (or its bias) stored for adjacent pairs, rearranged for pairs (i, i + d_k/2):
    row 2i + j of each head becomes row j·d_k/2 + i (the inverse of llama.cpp's permute).
    [n_heads·d_k, …] -> [n_heads·d_k, …]"""
    d_k = rows.shape[0] // n_heads
    split = rows.reshape(n_heads, d_k // 2, 2, *rows.shape[1:])
    return split.swapaxes(1, 2).reshape(rows.shape)


def to_adjacent(rows: np.ndarray, n_heads: int) -> np.ndarray:
    """W_Q or W_K (or its bias) in Hugging Face's layout, rearranged for adjacent pairs, as
    llama.cpp's converter does. [n_heads·d_k, …] -> [n_heads·d_k, …]"""
    d_k = rows.shape[0] // n_heads
    split = rows.reshape(n_heads, 2, d_k // 2, *rows.shape[1:])
    return split.swapaxes(1, 2).reshape(rows.shape)


class GgufTensors:
    """A GGUF file's tensors by their Hugging Face names (without "model."), as
    ``Tensors`` hands a safetensors checkpoint's: dequantized when asked for, in one dtype,
    read-only, checked finite. ``pairing`` is the RoPE pairing W_Q and W_K are returned for:
    "half" (Hugging Face's layout, the default) or "adjacent" (the file's, for llama)."""

    def __init__(self, file: GgufFile, dtype: type, pairing: str = "half") -> None:
        if pairing not in PAIRINGS:
            raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
        self.file = file
        self.path = file.path
        self.dtype = dtype
        self.pairing = pairing
        self.prefix = PREFIX
        self.settings = read_settings(file)
        self.stored = {
            name: gguf_name
            for gguf_name in file.tensors
            if (name := hf_name(gguf_name)) is not None
        }
        self.names = frozenset(self.stored)

    def __contains__(self, name: str) -> bool:
        return self.prefix + name in self.names

    def get(self, name: str, shape: tuple[int, ...]) -> FloatArray:
        """Tensor ``name`` (without "model."), which must have ``shape``, dequantized."""
        gguf_name = self._stored(name)
        stored_shape = self.file.tensors[gguf_name].shape
        if stored_shape != shape:
            raise FileProblem(
                f"{self.path}: {gguf_name} ({self.prefix}{name}) has shape {list(stored_shape)}, "
                f"the file's metadata implies {list(shape)}."
            )
        self._require_memory(gguf_name, math.prod(stored_shape))
        return self._frozen(gguf_name, self._arranged(name, dequantize(self.file, gguf_name)))

    def linear(self, name: str, n_in: int, n_out: int) -> tuple[FloatArray, FloatArray | None]:
        """A Linear layer ``name``: W [in, out] (stored [out, in], transposed so that the product
        reads x·W) and b [out], or None where the model has no bias (Llama has none)."""
        weight = self.get(f"{name}.weight", (n_out, n_in)).T
        bias = self.get(f"{name}.bias", (n_out,)) if f"{name}.bias" in self else None
        return weight, bias

    def rows(
        self, name: str, ids: Sequence[int], width: int, *, rows_are: str = "vocabulary"
    ) -> FloatArray:
        """Rows ``ids`` of an embedding table [rows_are, width], only those dequantized."""
        gguf_name = self._stored(name)
        shape = self.file.tensors[gguf_name].shape
        if len(shape) != 2 or shape[1] != width:
            raise FileProblem(
                f"{self.path}: {gguf_name} has shape {list(shape)}, expected [{rows_are}, {width}]."
            )
        outside = [i for i in ids if not 0 <= i < shape[0]]
        if outside:
            raise FileProblem(
                f"{self.path}: the tokenizer gave id {outside[0]}, outside {gguf_name}'s "
                f"{shape[0]} rows; the file's vocabulary and weights disagree."
            )
        numbers = dequantize(self.file, gguf_name, np.asarray(ids, dtype=np.int64))
        return self._frozen(gguf_name, numbers)

    def _require_memory(self, gguf_name: str, count: int) -> None:
        """FileProblem, before it is dequantized, when tensor ``gguf_name`` of ``count`` numbers
        (float32, then the dtype asked for) would not fit in the memory left."""
        from attnviz.files import human_size
        from attnviz.model.tensors import memory_available

        needed = count * (4 + np.dtype(self.dtype).itemsize)
        available = memory_available()
        if available is not None and needed > available:
            raise FileProblem(
                f"{self.path}: {gguf_name} needs {human_size(needed)} of memory to dequantize, "
                f"and only {human_size(available)} is free (available memory and swap, or the "
                "process's memory limit); free some memory, or use a smaller model."
            )

    def type_of(self, name: str) -> str:
        """How tensor ``name`` is stored in the file ("Q4_1")."""
        return self.file.tensors[self._stored(name)].type_name

    def _stored(self, name: str) -> str:
        full = self.prefix + name
        if full not in self.stored:
            raise FileProblem(f"{self.path} lacks {full}; it is not a complete model file.")
        gguf_name = self.stored[full]
        type_name = self.file.tensors[gguf_name].type_name
        if type_name not in SUPPORTED_TYPES:
            raise FileProblem(
                f"{self.path}: {gguf_name} is stored as {type_name}, which attnviz does not "
                f"dequantize; it reads {', '.join(SUPPORTED_TYPES)}: use a file quantized to one."
            )
        return gguf_name

    def _arranged(self, name: str, numbers: np.ndarray) -> np.ndarray:
        """W_Q, W_K and their biases rearranged from the file's pairing to the one asked for."""
        stored = self.settings.stored_pairing
        kind = re.search(r"self_attn\.([qk])_proj\.", name)
        if kind is None or stored == self.pairing:
            return numbers
        heads = self.settings.n_heads if kind.group(1) == "q" else self.settings.n_kv_heads
        return to_half(numbers, heads) if self.pairing == "half" else to_adjacent(numbers, heads)

    def _frozen(self, gguf_name: str, numbers: np.ndarray) -> FloatArray:
        # Dequantized numbers are a fresh array (or a read-only view of an F32 tensor in the
        # mapped file): no copy is needed when they are already in the dtype asked for.
        # A signalling NaN raises numpy's "invalid" flag when cast: found just below instead.
        with np.errstate(invalid="ignore"):
            result: FloatArray = np.asarray(numbers).astype(self.dtype, copy=False)
        if not np.isfinite(result).all():
            first = [int(i) for i in np.argwhere(~np.isfinite(result))[0]]
            raise FileProblem(
                f"{self.path}: {gguf_name} holds a number that is not finite (first at index "
                f"{first}); the file is damaged: get a fresh copy of it."
            )
        result.setflags(write=False)
        return result


def open_gguf_model(path: Path, dtype: type = np.float32, pairing: str = "half") -> GgufTensors:
    """A GGUF model file, checked, its tensors ready to be read by Hugging Face names."""
    if pairing not in PAIRINGS:
        raise FileProblem(f"{option('pairing', pairing)}: give 'half' or 'adjacent'.")
    return GgufTensors(read_gguf(path), dtype, pairing)


@dataclass(frozen=True)
class GgufModel:
    """Everything a forward pass needs from a GGUF file, and what the lesson says of it."""

    tensors: GgufTensors  # by Hugging Face name; W_Q, W_K for ``tensors.pairing``
    tokenizer: Any  # an IsolatedTokenizer, as attnviz.model.tokenizer.encode takes it
    settings: GgufSettings  # settings.config(): what a config.json would say
    attention_type: str  # how W_Q, W_K, W_V, W_O are stored, commonest first: "Q4_1"
    attention_tensor: str  # a GGUF tensor of that type (W_V if it is), for the worked example

    @property
    def quantization(self) -> str:
        """ "4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum"."""
        from attnviz.model.gguf_quant import describe_type

        return describe_type(self.attention_type)


def load_gguf(path: Path, dtype: type = np.float32, pairing: str = "half") -> GgufModel:
    """A GGUF model file, checked: its tensors (none dequantized yet), tokenizer and sizes."""
    from attnviz.model.tokenizer_gguf import isolated_gguf_tokenizer

    tensors = open_gguf_model(path, dtype, pairing)
    projections = [
        info
        for name, info in tensors.file.tensors.items()
        if re.fullmatch(r"blk\.[0-9]+\.attn_(q|k|v|output)\.weight", name)
    ]
    if not projections:
        raise FileProblem(
            f"{path} holds no attention weights (blk.N.attn_q.weight); it is not a "
            "complete model file."
        )
    commonest = Counter(info.type_name for info in projections).most_common(1)[0][0]
    # W_V's rows are stored as Hugging Face stores them (W_Q's and W_K's are permuted), so a
    # weight of it is found at the same row and column in both layouts.
    of_type = [info.name for info in projections if info.type_name == commonest]
    example = min(of_type, key=lambda name: (".attn_v." not in name, name))
    tokenizer = isolated_gguf_tokenizer(tensors.file)
    return GgufModel(tensors, tokenizer, tensors.settings, commonest, example)


class GgufLayers(Sequence["LlamaLayer"]):
    """A GGUF model's layers, each dequantized when the forward pass reaches it: a forward pass
    holds one layer's feed-forward weights at a time (the trace keeps each layer's attention
    weights). ``keep``: keep every layer once read, for runs that go through the layers again
    (an ablation reruns them once per head)."""

    def __init__(self, tensors: GgufTensors, config: LlamaConfig, *, keep: bool) -> None:
        self.tensors = tensors
        self.config = config
        self.keep = keep
        self._kept: dict[int, LlamaLayer] = {}

    def __len__(self) -> int:
        return self.config.n_layers

    @overload
    def __getitem__(self, index: int) -> LlamaLayer: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[LlamaLayer]: ...

    def __getitem__(self, index: int | slice) -> LlamaLayer | Sequence[LlamaLayer]:
        from attnviz.model.llama import load_layer

        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        layer = self._kept.get(index)
        if layer is None:
            layer = load_layer(self.tensors, self.config, index)
            if self.keep:
                self._kept[index] = layer
        return layer


def _require_layers(tensors: GgufTensors, n_layers: int) -> None:
    """FileProblem, before any layer is read, unless the file holds a layer's attention weights
    for each of the ``n_layers`` its metadata claims (block_count) and for no more."""
    held = {
        int(match.group(1))
        for name in tensors.file.tensors
        if (match := re.fullmatch(r"blk\.(\d+)\.attn_q\.weight", name))
    }
    if len(held) != n_layers or not all(0 <= i < n_layers for i in held):
        # The first layer from 0 up that is not held (a gap, or n_layers past the last).
        missing = next((i for i, layer in enumerate(sorted(held)) if i != layer), len(held))
        which = (
            f"no weights for layer {missing + 1}"
            if missing < n_layers
            else f"more layers, {max(held) + 1} (blk.0 … blk.{max(held)})"
        )
        raise FileProblem(
            f"{tensors.path}: its metadata says {n_layers} layers "
            f"({tensors.settings.architecture}.block_count), but it holds {which}; the file is "
            "damaged: get a fresh copy of it."
        )


def gguf_weights(
    model: GgufModel, config: LlamaConfig, ids: Sequence[int], *, keep: bool
) -> LlamaWeights:
    """What the Llama forward pass runs from a GGUF file: the token embeddings of ``ids`` only
    (rows dequantized one by one), the layers as they are reached, the final norm, RoPE with
    the pairing the tensors were arranged for. The output layer is never read."""
    from attnviz.model.llama import LlamaWeights
    from attnviz.positions import Rope

    tensors = model.tensors
    _require_layers(tensors, config.n_layers)
    return LlamaWeights(
        token_embeddings=tensors.rows("embed_tokens.weight", ids, config.d_model),
        layers=GgufLayers(tensors, config, keep=keep),
        final_norm=tensors.get("norm.weight", (config.d_model,)),
        eps=config.layer_norm_eps,
        rope=Rope(base=config.rope_theta, pairing=tensors.pairing),
    )
