"""What every pretrained architecture provides, and the registry that picks one by the
``model_type`` of a checkpoint's config.json.

An architecture reads its sizes from config.json, maps the checkpoint's tensors to attnviz's
names (transposed so every product reads x·W, every shape checked), and runs the forward pass,
each layer's attention through ``attention.multi_head_attention``. Adding one is a module with
an ``ARCHITECTURE`` and a line in ``MODULES``.
"""

from __future__ import annotations

import importlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, FileProblem, option, shown_value
from attnviz.kernels import multi_head_attention
from attnviz.layer_limits import check_model_layers
from attnviz.provenance import EmbeddingsKind, Provenance
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights

if TYPE_CHECKING:
    from attnviz.model.sources.tensors import Tensors

#: model_type -> the module whose ARCHITECTURE runs it.
MODULES = {
    "bert": "attnviz.model.families.bert",
    "gpt2": "attnviz.model.families.gpt2",
    "llama": "attnviz.model.families.llama",
    "qwen2": "attnviz.model.families.qwen2",
    "attnviz-toy": "attnviz.model.families.toy",  # attnviz's own toy transformer (attnviz train)
}


#: The largest size (width, heads, layers, positions) a config may give: 2³¹, as llama.cpp
#: allows, far beyond any model (Llama 3.1 405B: 16,384 wide, 126 layers, 131,072 positions).
MAX_SIZE = 2**31


@dataclass(frozen=True)
class ModelConfig:
    """The sizes a checkpoint's config.json gives, validated on construction."""

    model_type: str
    d_model: int  # hidden size
    n_heads: int
    n_layers: int
    d_ff: int  # the feed-forward block's inner width
    max_positions: int
    layer_norm_eps: float
    pad_token_id: int | None = None  # the token --pad-to appends, if the model has one
    trained: bool = True  # False when config.json says "attnviz_untrained": true

    def __post_init__(self) -> None:
        for name, value in (
            ("the hidden size", self.d_model),
            ("the number of heads", self.n_heads),
            ("the number of layers", self.n_layers),
            ("the feed-forward width", self.d_ff),
            ("the number of positions", self.max_positions),
        ):
            if value <= 0:
                raise AttnvizError(f"{name} must be positive, got {value}")
            if value > MAX_SIZE:
                raise AttnvizError(
                    f"{name} is {value}, beyond any model's (at most {MAX_SIZE:,}); the "
                    "file is damaged"
                )
        check_model_layers(self.n_layers)
        if self.d_model % self.n_heads:
            raise AttnvizError(
                f"the hidden size {self.d_model} is not divisible by {self.n_heads} heads"
            )
        # LayerNorm divides by √(variance + ε): NaN, infinity or a negative ε makes every number
        # after the first LayerNorm NaN, and 0 divides a constant row by 0; an ε of 1 or more
        # drowns the variance of a row of small numbers, so every row comes out near 0.
        if not (math.isfinite(self.layer_norm_eps) and 0 < self.layer_norm_eps < 1):
            raise AttnvizError(
                "the LayerNorm epsilon must be a small positive number such as 1e-12, got "
                f"{self.layer_norm_eps}"
            )

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads


class Family(NamedTuple):
    """What the models of one family do around their attention, in words: each sentence true of
    every model of the family, and of no other, so that the lesson never borrows one family's
    sentence for another's model."""

    tokenizer: str  # how the sentence becomes the pieces the model reads
    word_order: str  # where word order enters: "Word order is already in X: ..."
    sublayer: str  # the attention sublayer in a layer of the model, and what follows it
    after_attention: str  # what the layer does with the attention's output
    layer_input: tuple[str, str]  # X of layer 1; X of a later layer ({previous}: its number)
    # The special tokens the tokenizer adds, and what trained models do with them; "" when the
    # family adds none.
    special_tokens: str = ""
    special_names: tuple[str, ...] = ()  # those tokens, as the tokenizer writes them
    # Where word order is in a later layer's X, when word_order is false there (a family that
    # adds no position vectors says so of the embeddings only); "" when word_order holds at
    # every layer, the lesson adding that the order reaches the layer through those before it.
    later_word_order: str = ""
    token_unit: str = "word piece"  # what one token of the model is called


@dataclass(frozen=True, eq=False)
class ModelTrace:
    """Every layer's attention trace, and the hidden states between layers."""

    tokens: tuple[str, ...]  # [n] the tokens as shown, special tokens included
    layers: tuple[AttentionTrace, ...]  # layer l's X is what its attention reads
    # [L + 1, n, d_model], as Hugging Face's output_hidden_states: the embeddings, then each
    # layer's output (a decoder's last one after its final LayerNorm).
    hidden_states: FloatArray

    @property
    def last_hidden_state(self) -> FloatArray:
        return self.hidden_states[-1]


class ModelKind:
    """What every model_type in the registry has: its name, what it is, and its family's
    sentences for the lesson."""

    model_type: ClassVar[str]  # config.json's model_type
    description: ClassVar[str]  # what it is, for messages: "BERT-family encoder"
    family: ClassVar[Family]  # what the family does around attention, in words


class Architecture(ModelKind, ABC):
    """One family of pretrained transformers in Hugging Face's layout (config.json,
    model.safetensors, a tokenizer), as attnviz runs it in numpy."""

    causal: ClassVar[bool]  # a decoder: each word attends to itself and the words before it
    prefixes: ClassVar[tuple[str, ...]]  # what a task model puts before every tensor's name
    token_table: ClassVar[str]  # the token embeddings' tensor, [vocabulary, d_model]

    @abstractmethod
    def read_config(self, data: Mapping[str, Any]) -> ModelConfig:
        """The sizes from config.json's object; KeyError, TypeError or ValueError (or an
        AttnvizError naming the setting) when they are missing or unusable."""

    @abstractmethod
    def load(self, tensors: Tensors, config: ModelConfig, ids: Sequence[int]) -> Any:
        """The weights a sentence of ``ids`` needs (only those rows of the token table)."""

    @abstractmethod
    def forward(
        self,
        weights: Any,
        tokens: Sequence[str],
        *,
        provenance: Provenance,
        mask: np.ndarray | None,
    ) -> ModelTrace:
        """Run every layer; ``provenance`` is the first layer's, ``mask`` the padding mask."""

    @abstractmethod
    def run_layers(
        self,
        weights: Any,
        tokens: Sequence[str],
        hidden: FloatArray,
        *,
        provenance: Provenance,
        mask: np.ndarray | None,
        start: int = 1,
        attention_output: FloatArray | None = None,
    ) -> ModelTrace:
        """Layers ``start`` (from 1) on, from ``hidden``, what layer start reads; ``mask`` the
        padding mask or, as a layer's trace has it, that mask with the architecture's own
        (causal) mask in it; ``attention_output`` replaces layer start's attention output when
        given. ``forward`` is the embeddings and then this from layer 1."""


def architecture_for(model_type: object, path: Path) -> ModelKind:
    """The registry's entry for ``model_type`` (an Architecture for a Hugging Face checkpoint);
    FileProblem naming the supported ones otherwise."""
    module = MODULES.get(model_type) if isinstance(model_type, str) else None
    if module is None:
        supported = ", ".join(f"'{name}'" for name in MODULES)
        said = (
            f"is a {model_type!r} model"
            if isinstance(model_type, str)
            else (f"gives model_type {shown_value(model_type)}, not a name")
        )
        raise FileProblem(
            f"{path} {said}; attnviz runs model_type {supported} "
            "(BERT-family encoders such as all-MiniLM-L6-v2, GPT-2, Llama-family and Qwen2 "
            "decoders, and the toy models attnviz trains)."
        )
    kind: ModelKind = importlib.import_module(module).ARCHITECTURE
    return kind


def family_of(model_type: str | None) -> Family | None:
    """The family of ``model_type`` in the registry; None for attnviz's own layer (None) and for
    a model_type attnviz does not run, which gets no other family's sentences."""
    module = MODULES.get(model_type or "")
    if module is None:
        return None
    kind: ModelKind = importlib.import_module(module).ARCHITECTURE
    return kind.family


def layer_input(family: Family, layer: int) -> str:
    """What layer ``layer``'s (from 1) X is, in the family's words."""
    first, later = family.layer_input
    return first if layer == 1 else later.format(previous=layer - 1)


def for_layer(provenance: Provenance, layer: int) -> Provenance:
    """The provenance of layer ``layer`` (from 1): its number in both origins; X comes from the
    model's embeddings in layer 1 and from the layer before after that, as its family says."""
    kind = EmbeddingsKind.MODEL if layer == 1 else EmbeddingsKind.LAYER
    family = family_of(provenance.embeddings.architecture)
    described = None if family is None else layer_input(family, layer)
    return provenance._replace(
        embeddings=provenance.embeddings._replace(kind=kind, layer=layer, input=described),
        weights=provenance.weights._replace(layer=layer),
    )


def attend(
    tokens: Sequence[str],
    x: FloatArray,
    weights: AttentionWeights,
    *,
    provenance: Provenance,
    layer: int,
    mask: np.ndarray | None,
) -> AttentionTrace:
    """Layer ``layer``'s (from 1) attention sublayer on ``x`` [n, d_model]; a failure (its
    numbers overflowing) is the checkpoint's, named with the layer."""
    try:
        return multi_head_attention(
            tokens, x, weights, provenance=for_layer(provenance, layer), mask=mask
        )
    except AttnvizError as error:
        message = error.message[:1].lower() + error.message[1:]
        raise FileProblem(f"Layer {layer} of the model: {message}") from None


def kept(
    traces: list[AttentionTrace],
    tokens: Sequence[str],
    weights: AttentionWeights,
    *,
    provenance: Provenance,
    layer: int,
    mask: np.ndarray | None,
) -> Callable[[FloatArray], FloatArray]:
    """Layer ``layer``'s (from 1) attention as a function, x [n, d_model] -> [n, d_model], its
    trace appended to ``traces`` for the views: what a family's layer is handed to run."""

    def attention(x: FloatArray) -> FloatArray:
        trace = attend(tokens, x, weights, provenance=provenance, layer=layer, mask=mask)
        traces.append(trace)
        return trace.output

    return attention


def stand_in(output: FloatArray) -> Callable[[FloatArray], FloatArray]:
    """An attention that returns ``output`` [n, d_model] whatever it reads: what an ablation
    hands a layer in place of its own attention, which then does not run."""
    return lambda _x: output


def finite(hidden: FloatArray, where: str) -> FloatArray:
    """``hidden`` [n, d_model], the output of ``where`` ("layer 3", "the embeddings"), refused
    unless every number is finite. The weights were checked as they were read and ε is
    positive, so only numbers beyond the dtype's range get here: weights no training makes."""
    if not np.isfinite(hidden).all():
        dtype = hidden.dtype.name
        raise FileProblem(
            f"The model's numbers overflow {dtype} in {where} (they pass "
            f"{float(np.finfo(hidden.dtype).max):.3g}); its weights are far larger than a "
            "trained model's: check the checkpoint"
            + (f", or use {option('dtype', 'float64')}." if dtype == "float32" else ".")
        )
    return hidden


def integer(data: Mapping[str, Any], *names: str, default: int | None = None) -> int:
    """The first of ``names`` config.json sets, as a whole number (a bool is not one)."""
    for name in names:
        value = data.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} is {shown_value(value)}, not a whole number")
            return value
    if default is not None:
        return default
    raise KeyError(names[0])


def number(data: Mapping[str, Any], name: str, default: float) -> float:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} is {shown_value(value)}, not a number")
    return float(value)
