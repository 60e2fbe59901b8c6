"""A Llama-family model in a GGUF file, handed over in Hugging Face's terms: the sizes as a
config.json would give them (``GgufSettings.config``), and the tensors by their Hugging Face
names and shapes (``GgufTensors``, read like ``sources.tensors.Tensors``), dequantized one
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
from attnviz.errors import FileProblem, option, shown_value
from attnviz.model.sources.gguf_file import SUPPORTED_TYPES, GgufFile, dequantize, read_gguf
from attnviz.model.sources.gguf_settings import GgufSettings, read_settings

if TYPE_CHECKING:
    from attnviz.model.families.llama import LlamaConfig, LlamaLayer, LlamaWeights

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
            raise ValueError(f"pairing must be one of {PAIRINGS}, got {shown_value(pairing)}")
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

    def stacked(self, parts: Sequence[tuple[str, tuple[int, int]]]) -> FloatArray:
        """Tensors ``parts`` (name, shape) one above the other, [Σ rows, columns]: what
        np.concatenate of ``get`` gives, number for number, each dequantized straight into its
        rows of one array (a layer's W_Q, W_K, W_V: no second copy of 2.6 MB; SmolLM2's
        gate and up projections: 7 MB a layer)."""
        names = [self._stored(name) for name, _ in parts]
        for (name, shape), gguf_name in zip(parts, names, strict=True):
            stored_shape = self.file.tensors[gguf_name].shape
            if stored_shape != shape:
                raise FileProblem(
                    f"{self.path}: {gguf_name} ({self.prefix}{name}) has shape "
                    f"{list(stored_shape)}, the file's metadata implies {list(shape)}."
                )
        rows = [shape[0] for _, shape in parts]
        columns = {shape[1] for _, shape in parts}
        if len(columns) != 1:
            raise ValueError(f"parts of {sorted(columns)} columns cannot be stacked")
        for gguf_name, count in zip(names, rows, strict=True):  # each, as get checks it
            self._require_memory(gguf_name, count * parts[0][1][1])
        together = np.empty((sum(rows), parts[0][1][1]), np.float32)
        at = 0
        for (name, _), gguf_name, count in zip(parts, names, rows, strict=True):
            # W_Q's and W_K's rows rearranged as stored bytes, before dequantizing: the same
            # numbers as _arranged moves afterwards (the arrangement only reorders rows).
            order = self._arranged(name, np.arange(count))
            moved = None if np.array_equal(order, np.arange(count)) else order
            dequantize(self.file, gguf_name, moved, together[at : at + count])
            at += count
        with np.errstate(invalid="ignore"):  # a signalling NaN: found just below
            result: FloatArray = together.astype(self.dtype, copy=False)
        if not np.isfinite(result).all():  # the part that holds it named, as get names it
            for gguf_name, end, count in zip(names, np.cumsum(rows), rows, strict=True):
                self._frozen(gguf_name, together[end - count : end])
        result.setflags(write=False)
        return result

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
        from attnviz.model.sources.tensors import memory_available

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
    tokenizer: Any  # an IsolatedTokenizer, as attnviz.model.sources.tokenizer.encode takes it
    settings: GgufSettings  # settings.config(): what a config.json would say
    attention_type: str  # how W_Q, W_K, W_V, W_O are stored, commonest first: "Q4_1"
    attention_tensor: str  # a GGUF tensor of that type (W_V if it is), for the worked example

    @property
    def quantization(self) -> str:
        """ "4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum"."""
        from attnviz.model.sources.gguf_quant import describe_type

        return describe_type(self.attention_type)


def load_gguf(path: Path, dtype: type = np.float32, pairing: str = "half") -> GgufModel:
    """A GGUF model file, checked: its tensors (none dequantized yet), tokenizer and sizes."""
    from attnviz.model.sources.tokenizer_gguf import isolated_gguf_tokenizer

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
        from attnviz.model.families.llama import load_layer

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
    from attnviz.model.families.llama import LlamaWeights
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
