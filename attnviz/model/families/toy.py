"""attnviz's own toy transformer, as ``attnviz train`` saves it: config.json's model_type
"attnviz-toy", with weights.npz beside it (attnviz.train.saving writes both).

    X₀ = E[ids] + P[0..n)                                     token embeddings + learned positions
    for each layer l:
        X_l = X_{l−1} + Concat_i(softmax(Q_i·K_iᵀ / √d_k)·V_i)·W_O,   Q_i = X_{l−1}·W_Q[i], …

No biases, no LayerNorm, no feed-forward block: attention and the residual stream only, the
model attnviz.train.network trains. Its vocabulary is a list of whole words, so it needs neither
safetensors nor tokenizers: weights.npz is read without pickle (attnviz.files.load_npz), every
shape checked before it is decompressed and every number checked to be finite.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attnviz import layer_limits
from attnviz.arrays import FloatArray
from attnviz.attention import causal_mask
from attnviz.errors import AttnvizError, FileProblem, clipped, listed, option, shown_value
from attnviz.files import ArrayHeader, load_npz, npz_names, present
from attnviz.model.base import Family, ModelKind, ModelTrace, attend, finite, integer
from attnviz.model.sources.shipped import PUNCTUATION
from attnviz.model.sources.tokenizer import Encoding
from attnviz.provenance import READOUTS, Provenance
from attnviz.trace import frozen_array
from attnviz.weights import AttentionWeights

MODEL_TYPE = "attnviz-toy"  # as attnviz.train.saving writes it
WEIGHTS = "weights.npz"

FAMILY = Family(
    tokenizer="attnviz's toy tokenizer lowercases the sentence and splits it at spaces, "
    "dropping punctuation at either end of a word; each word is one token of the model's "
    "vocabulary, with no special tokens",
    word_order="Word order is already in X: before layer 1 the model adds a learned position "
    "vector (P, one row per position from 0) to each word's embedding (E), X₀ = E[word] + P",
    sublayer="In this model attention is the whole layer: no biases, no LayerNorm, no "
    "feed-forward block. Its output is added back to X, X_l = X_{l−1} + output (a residual "
    "connection), to give the next layer's X.",
    after_attention="In the model it is then added back to X, X_l = X_{l−1} + output, which "
    "is the next layer's X; this model has no LayerNorm and no feed-forward block.",
    layer_input=(
        "the model's embeddings, E[word] + P[position]",
        "the output of layer {previous}: its X plus its attention output",
    ),
    token_unit="word",
)


class Toy(ModelKind):
    """The registry's entry: attnviz.model.run reads its folders with this module's functions
    (its vocabulary and weights.npz need neither safetensors nor tokenizers)."""

    model_type = MODEL_TYPE
    description = "attnviz toy transformer (attention only)"
    family = FAMILY


ARCHITECTURE = Toy()


#: The most layers a toy model's config.json may give (attnviz train makes 1 or 2): as for
#: every model, attnviz.layer_limits.MAX_LAYERS.
MAX_LAYERS = layer_limits.MAX_LAYERS


@dataclass(frozen=True)
class ToyConfig:
    """What a toy model's config.json says, validated on construction."""

    task: str  # "coref", "reverse", …
    summary: str  # the task in one line
    readout: str  # "pointer", "word" or "token" (attnviz.train.tasks.Readout)
    vocabulary: tuple[str, ...]  # the words it knows; a word's index is its id
    classes: tuple[str, ...]  # the answers a word readout names (empty otherwise)
    d_model: int
    n_heads: int
    n_layers: int
    max_positions: int  # rows of P: the longest sentence it reads
    causal: bool  # each word attends only to itself and the words before it
    seed: int
    steps: int  # training steps of Adam
    train_examples: int
    held_out_examples: int
    held_out: str  # which examples were held out, in words
    held_out_accuracy: float  # the share of held-out examples it answers right, 0…1
    focus_words: tuple[str, ...] = ()  # the words whose row the task asks about ("it")
    # (fewest, most) words of the sentences it was trained on; None in a folder saved before
    # attnviz recorded them.
    trained_lengths: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name, value in (
            ("d_model", self.d_model),
            ("n_heads", self.n_heads),
            ("n_layers", self.n_layers),
            ("max_positions", self.max_positions),
        ):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        # Each layer is 4 arrays of weights.npz, listed before the file is read: a count far
        # beyond any toy model (attnviz train makes 1 or 2) would take minutes to list.
        if self.n_layers > MAX_LAYERS:
            raise ValueError(
                f"n_layers is {self.n_layers}; a toy model has at most {MAX_LAYERS} layers"
            )
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by {self.n_heads} heads")
        if self.readout not in READOUTS:
            raise ValueError(f"readout is {self.readout!r}, not one of {', '.join(READOUTS)}")
        if not self.vocabulary or len(set(self.vocabulary)) != len(self.vocabulary):
            raise ValueError("vocabulary must list distinct words")
        if any(not word or word != word.lower() or " " in word for word in self.vocabulary):
            raise ValueError("vocabulary must hold lowercase words without spaces")
        if self.readout == "word" and not self.classes:
            raise ValueError("a word readout needs its classes")
        if self.trained_lengths is not None:
            fewest, most = self.trained_lengths
            if not 1 <= fewest <= most <= self.max_positions:
                raise ValueError(
                    f"trained_lengths is [{fewest}, {most}], not 1 ≤ fewest ≤ most ≤ "
                    f"max_positions ({self.max_positions})"
                )
        if not 0.0 <= self.held_out_accuracy <= 1.0:
            raise ValueError(f"held_out_accuracy is {self.held_out_accuracy}, not within 0…1")

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def lengths_trained(self) -> str | None:
        """ "8 to 16" (words), "8" when every sentence had as many; None when not recorded."""
        if self.trained_lengths is None:
            return None
        fewest, most = self.trained_lengths
        return str(fewest) if fewest == most else f"{fewest} to {most}"

    @property
    def outputs(self) -> int:
        """The width of the output layer W_U: 0 for a pointer readout, which has none."""
        return {"pointer": 0, "word": len(self.classes)}.get(self.readout, len(self.vocabulary))


def read_config(data: Mapping[str, Any]) -> ToyConfig:
    """config.json's object -> ToyConfig; KeyError, TypeError or ValueError naming the setting."""
    training = data["training"]
    if not isinstance(training, Mapping):
        raise TypeError("training is not an object")
    causal = data["causal"]
    if not isinstance(causal, bool):
        raise TypeError(f"causal is {causal!r}, not true or false")
    return ToyConfig(
        task=_text(data, "task"),
        summary=_text(data, "summary"),
        readout=_text(data, "readout"),
        vocabulary=_words(data, "vocabulary"),
        classes=_words(data, "classes"),
        d_model=integer(data, "d_model"),
        n_heads=integer(data, "n_heads"),
        n_layers=integer(data, "n_layers"),
        max_positions=integer(data, "max_positions"),
        causal=causal,
        seed=integer(training, "seed"),
        steps=integer(training, "steps"),
        train_examples=integer(training, "train_examples"),
        held_out_examples=integer(training, "held_out_examples"),
        held_out=_text(training, "held_out"),
        held_out_accuracy=_fraction(training, "held_out_accuracy"),
        focus_words=_focus_words(data.get("probes", [])),
        trained_lengths=_lengths(data.get("trained_lengths")),
    )


def _lengths(value: Any) -> tuple[int, int] | None:
    """trained_lengths, [fewest, most] words, or None when config.json does not say."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in value)
    ):
        raise TypeError(f"trained_lengths is {clipped(repr(value))}, not [fewest, most] words")
    return (value[0], value[1])


def _focus_words(probes: Any) -> tuple[str, ...]:
    """The words the probe sentences ask about, each once ("it" in coref)."""
    if not isinstance(probes, list):
        raise TypeError("probes is not a list")
    words = []
    for probe in probes:
        sentence = probe.get("words") if isinstance(probe, Mapping) else None
        focus = probe.get("focus") if isinstance(probe, Mapping) else None
        if not isinstance(sentence, list) or isinstance(focus, bool) or not isinstance(focus, int):
            raise TypeError("a probe lacks its words or focus")
        if not 0 <= focus < len(sentence):
            raise ValueError(f"a probe's focus {focus} is not one of its {len(sentence)} words")
        words.append(str(sentence[focus]))
    return tuple(dict.fromkeys(words))


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data[name]
    if not isinstance(value, str):
        raise TypeError(f"{name} is {shown_value(value)}, not text")
    return value


def _words(data: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = data[name]
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        raise TypeError(f"{name} is not a list of words")
    return tuple(value)


def _fraction(data: Mapping[str, Any], name: str) -> float:
    value = data[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"{name} is {shown_value(value)}, not a number")
    return float(value)


# -- the sentence -------------------------------------------------------------------------------


def encode(
    sentence: str, config: ToyConfig, *, name: str | None = None, config_path: Path | None = None
) -> Encoding:
    """The sentence as the toy model reads it: lowercased, split at spaces, punctuation at
    either end of a word dropped (a word of punctuation alone with it), each word one id.
    ``name`` and ``config_path``: the model as the person named it and where its vocabulary is
    listed, for a refusal."""
    model = f"the {config.task} model" if name is None else f"{name} ({option('model', name)})"
    tokens, offsets = [], []
    start = 0
    for piece in sentence.split():
        start = sentence.index(piece, start)
        word = piece.strip(PUNCTUATION)
        if word:
            first = start + piece.index(word)
            tokens.append(word.lower())
            offsets.append((first, first + len(word)))
        start += len(piece)
    if not tokens:
        raise AttnvizError('The sentence has no words; give some, e.g. "the animal was tired".')
    index = {word: i for i, word in enumerate(config.vocabulary)}
    unknown = list(dict.fromkeys(word for word in tokens if word not in index))
    if unknown:
        # The first few unknown words, each clipped: a line, not the whole of a long sentence.
        named = listed(unknown, form=repr)
        where = "its config.json" if config_path is None else str(config_path)
        raise AttnvizError(
            f"The sentence has words that {model} does not know: {named}. It knows only its "
            f"{len(config.vocabulary):,} words; use words such as "
            f"{listed(sample_of(config.vocabulary), ' ')} (all are listed in {where})."
        )
    if len(tokens) > config.max_positions:
        trained = (
            f"it was trained on sentences of {config.lengths_trained} words"
            if config.trained_lengths is not None
            else f"it has {config.max_positions} learned positions"
        )
        raise AttnvizError(
            f"The sentence has {len(tokens)} words; {model} reads at most "
            f"{config.max_positions} ({trained}). Shorten it."
        )
    return Encoding(
        ids=tuple(index[word] for word in tokens),
        tokens=tuple(tokens),
        offsets=tuple(offsets),
        sentence=sentence,
        word_ids=tuple(range(len(tokens))),
    )


#: How many of its words a refused sentence is told: a line, not the whole vocabulary.
SAMPLE_WORDS = 12


def sample_of(vocabulary: Sequence[str], count: int = SAMPLE_WORDS) -> list[str]:
    """``count`` words spread evenly over ``vocabulary`` (all of it when it has fewer): the
    function words and, further on, the nouns and adjectives of a toy task's vocabulary."""
    if len(vocabulary) <= count:
        return list(vocabulary)
    return [vocabulary[round(i * (len(vocabulary) - 1) / (count - 1))] for i in range(count)]


# -- the weights --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToyWeights:
    """Every matrix of a toy model, as attnviz.train.network names them."""

    E: FloatArray  # [vocabulary, d_model] token embeddings
    P: FloatArray  # [max_positions, d_model] learned positions
    layers: tuple[AttentionWeights, ...]  # W_Q, W_K, W_V [h, d_model, d_k], W_O [h·d_k, d_model]
    W_U: FloatArray | None  # [d_model, outputs] the output layer; None for a pointer readout


def expected_shapes(config: ToyConfig) -> dict[str, tuple[int, ...]]:
    """Every array weights.npz must hold, and its shape."""
    d, h, d_k = config.d_model, config.n_heads, config.d_k
    shapes: dict[str, tuple[int, ...]] = {
        "E": (len(config.vocabulary), d),
        "P": (config.max_positions, d),
    }
    for layer in range(1, config.n_layers + 1):
        for name in ("W_Q", "W_K", "W_V"):
            shapes[f"{name}.{layer}"] = (h, d, d_k)
        shapes[f"W_O.{layer}"] = (h * d_k, d)
    if config.outputs:
        shapes["W_U"] = (d, config.outputs)
    return shapes


def _require_layers(path: Path, n_layers: int) -> None:
    """FileProblem, before an array is read, when weights.npz holds another number of layers
    (W_Q.1 … W_Q.L) than config.json's n_layers: fewer are refused by name when read; more
    would silently run part of the model."""
    held = [
        int(match.group(1))
        for name in npz_names(path, "Model weights")
        if (match := re.fullmatch(r"W_Q\.([0-9]{1,6})", name))
    ]
    if held and max(held) > n_layers:
        raise FileProblem(
            f"{path.parent / 'config.json'}: n_layers is {n_layers}, but {path.name} holds "
            f"{max(held)} layers (W_Q.1 … W_Q.{max(held)}); set n_layers to {max(held)} if these "
            "are the model's own weights, or save the model again with attnviz train --save."
        )


def load_weights(folder: Path, config: ToyConfig, dtype: type = np.float32) -> ToyWeights:
    """weights.npz, every array's shape checked (from its header, before it is read) and every
    number checked to be finite; FileProblem in one line naming what is wrong."""
    path = folder / WEIGHTS
    if not present(path):
        raise FileProblem(
            f"{folder} has config.json but no {WEIGHTS}; a toy model's folder holds both, as "
            "attnviz train --save writes them."
        )
    shapes = expected_shapes(config)
    _require_layers(path, config.n_layers)

    def check(name: str, header: ArrayHeader) -> None:
        if header.shape != shapes[name] or header.dtype.kind != "f":
            raise FileProblem(
                f"{path}: {name} is a {header.dtype} array {list(header.shape)}; config.json "
                f"says it is a float array {list(shapes[name])}."
            )

    arrays = load_npz(path, "Model weights", shapes, check=check)
    missing = [name for name in shapes if name not in arrays]
    if missing:
        raise FileProblem(
            f"{path} lacks {', '.join(missing)}; it is not this model's {WEIGHTS} (save it "
            "again with attnviz train --save)."
        )
    for name, array in arrays.items():
        if not np.isfinite(array).all():
            raise FileProblem(f"{path}: {name} holds NaN or infinity; the file is damaged.")
    cast: dict[str, FloatArray] = {name: array.astype(dtype) for name, array in arrays.items()}
    layers = tuple(
        AttentionWeights(
            W_Q=cast[f"W_Q.{layer}"],
            W_K=cast[f"W_K.{layer}"],
            W_V=cast[f"W_V.{layer}"],
            W_O=cast[f"W_O.{layer}"],
        )
        for layer in range(1, config.n_layers + 1)
    )
    return ToyWeights(E=cast["E"], P=cast["P"], layers=layers, W_U=cast.get("W_U"))


# -- the forward pass ---------------------------------------------------------------------------


def forward(
    weights: ToyWeights,
    config: ToyConfig,
    encoding: Encoding,
    *,
    provenance: Provenance,
) -> ModelTrace:
    """Every layer on one sentence, each through attention.multi_head_attention (with the
    causal mask when the model is causal), so that every view has the real trace.
    The same numbers as attnviz.train.network.forward on a batch of this one sentence."""
    n = len(encoding.ids)
    hidden = finite(weights.E[list(encoding.ids)] + weights.P[:n], "the embeddings")
    return run_layers(weights, config, encoding.tokens, hidden, provenance=provenance)


def run_layers(
    weights: ToyWeights,
    config: ToyConfig,
    tokens: Sequence[str],
    hidden: FloatArray,
    *,
    provenance: Provenance,
    start: int = 1,
    attention_output: FloatArray | None = None,
) -> ModelTrace:
    """Layers ``start`` (from 1) to the last on ``hidden`` [n, d_model], layer start's input.
    ``attention_output`` [n, d_model], when given, stands in for layer start's attention output,
    whose trace is then left out (an ablation re-runs the model from there)."""
    mask = causal_mask(len(tokens)) if config.causal else None
    hidden_states = [hidden]
    traces = []
    for index in range(start - 1, len(weights.layers)):
        if attention_output is not None and index == start - 1:
            output = attention_output
        else:
            trace = attend(
                tokens, hidden, weights.layers[index], provenance=provenance, layer=index + 1,
                mask=mask,
            )  # fmt: skip
            traces.append(trace)
            output = trace.output
        hidden = finite(hidden + output, f"layer {index + 1}")
        hidden_states.append(hidden)
    return ModelTrace(
        tokens=tuple(tokens),
        layers=tuple(traces),
        hidden_states=frozen_array(np.stack(hidden_states), copy=False),
    )


def answer(weights: ToyWeights, config: ToyConfig, trace: ModelTrace, focus: int) -> str:
    """The model's answer at position ``focus``, read as it was trained to read it: the word
    with the highest scaled score in head 1's row of the last layer (pointer), or W_U's choice
    from X_L at the focus word (word: among the classes; token: among the vocabulary)."""
    if config.readout == "pointer":
        return trace.tokens[int(np.argmax(trace.layers[-1].scaled[0, focus]))]
    assert weights.W_U is not None  # config.outputs > 0: load_weights read it
    logits = trace.last_hidden_state[focus] @ weights.W_U
    choices: Sequence[str] = config.classes if config.readout == "word" else config.vocabulary
    return choices[int(np.argmax(logits))]
