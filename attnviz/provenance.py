"""Where a trace came from, as typed data: how X and the weights were made, which masks were
applied, which tokens are special and which pieces make one word.

Every view reads these fields (``provenance.weights.is_random``, ``provenance.masking.causal``,
``provenance.special``); none parses a display string. Exports write them (``to_dict``) and
reading an export back restores them (``from_dict``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, NamedTuple

import numpy as np

from attnviz.errors import AttnvizError, FileProblem, shown_value
from attnviz.positions import Positions


class EmbeddingsKind(str, Enum):
    """How the rows of X were made."""

    RANDOM = "random"  # seeded random word vectors
    FILE = "file"  # read from a word-vector file (with --oov random, some drawn at random)
    GIVEN = "given"  # an array passed to the Python API
    MODEL = "model"  # a pretrained model's input embeddings: the input of its first layer
    LAYER = "layer"  # a pretrained model's hidden state entering a later layer


class WeightsKind(str, Enum):
    """How W_Q, W_K, W_V and W_O were made."""

    RANDOM = "random"  # drawn from a seeded generator
    FILE = "file"  # read from an .npz/.json (an exported trace, say)
    GIVEN = "given"  # passed to the Python API
    PRETRAINED = "pretrained"  # one layer of a pretrained checkpoint


class EmbeddingsOrigin(NamedTuple):
    """How X was made. Fields other than ``kind`` are set where they apply."""

    kind: EmbeddingsKind
    seed: int | None = None  # RANDOM: the seed; FILE: the seed of words drawn with --oov random
    path: str | None = None  # FILE: the file, as the user named it
    # FILE: True when looked up word by word in a vocabulary, False for one row per token.
    vocabulary: bool | None = None
    architecture: str | None = None  # MODEL, LAYER: the model_type, e.g. "bert" or "gpt2"
    # MODEL, LAYER: the layer whose input X is, from 1; FILE: the layer of a model's export
    # whose input X was read (with --layer).
    layer: int | None = None
    # RANDOM, FILE, GIVEN: sinusoidal when X = E + PE (the trace keeps E and PE). A model's
    # learned positions are part of its embeddings (MODEL, LAYER) and are not recorded here.
    positions: Positions = Positions.none
    # MODEL, LAYER, and FILE with a layer: what the layer's X is, in the model family's words
    # (attnviz.model.base.Family.layer_input); None when the family is not known.
    input: str | None = None

    def describe(self) -> str:
        """X's origin in words, for the header of the views and the exports."""
        if self.positions is Positions.sinusoidal:
            return f"{self._describe_vectors()} + sinusoidal positional encoding"
        return self._describe_vectors()

    def _describe_vectors(self) -> str:
        if self.kind is EmbeddingsKind.RANDOM:
            return f"seeded random vectors (seed {self.seed})"
        if self.kind is EmbeddingsKind.FILE:
            if self.layer is not None:
                return f"rows of {self.path}, layer {self.layer}'s input: {self._layer_input()}"
            if self.vocabulary is False:
                return f"rows of {self.path}"
            return f"word vectors from {self.path}"
        if self.kind is EmbeddingsKind.GIVEN:
            return "given array"
        return self._layer_input()

    def _layer_input(self) -> str:
        return self.input or f"the input of the model's layer {self.layer or 1}"


#: How a toy model trained by attnviz gives its answer (attnviz.train.tasks.Readout's values).
READOUTS = ("pointer", "word", "token")


class WeightsOrigin(NamedTuple):
    """How the attention matrices were made. Fields other than ``kind`` are set where they
    apply; a FILE exported by attnviz keeps the seed or model it was made from."""

    kind: WeightsKind
    seed: int | None = None  # RANDOM, or a FILE made from random weights
    path: str | None = None  # FILE
    model: str | None = None  # PRETRAINED, or a FILE exported from a model: its name
    architecture: str | None = None  # the model's model_type ("bert", "gpt2")
    layer: int | None = None  # the layer, from 1
    n_layers: int | None = None  # how many layers the model has
    # False for a checkpoint whose config.json says its weights are random, never trained
    # ("attnviz_untrained": true), such as the tiny GPT-2 the tests run.
    trained: bool = True
    # PRETRAINED, or a FILE exported from one: what the model is, in its own folder's words
    # (attnviz's toy models: size, task, readout, training); None when the folder says nothing.
    about: str | None = None
    # attnviz's toy models: how the model gives its answer, "pointer" (its last layer's row of
    # the word asked about IS the answer, trained so), "word" or "token" (an output layer names
    # it); None for every other model.
    readout: str | None = None
    answers_at: tuple[str, ...] = ()  # the words whose row or vector it answers at ("it")

    @property
    def is_random(self) -> bool:
        """Random numbers, not learned: drawn here, read back from a file that was, or an
        untrained checkpoint."""
        return (self.seed is not None and self.model is None) or not self.trained

    @property
    def is_drawn(self) -> bool:
        """Drawn by attnviz's random_weights (here, or in the file it was exported to)."""
        return self.seed is not None and self.model is None

    @property
    def is_pretrained(self) -> bool:
        """One layer of a pretrained model, as run here (not its weights read from a file)."""
        return self.kind is WeightsKind.PRETRAINED

    def describe(self, *, with_layer: bool = True) -> str:
        """The weights' origin in words: "random (seed 0)", "all-MiniLM-L6-v2 (pretrained),
        layer 6 of 6", "loaded from trace.npz"; ``with_layer=False`` leaves out the layer."""
        if self.kind is WeightsKind.RANDOM:
            return f"random (seed {self.seed})"
        if self.kind is WeightsKind.GIVEN:
            return "given"
        if not self.trained:
            kind = "random, untrained checkpoint"
        elif self.architecture == "attnviz-toy":
            kind = "trained by attnviz"
        else:
            kind = "pretrained"
        # A name that already ends in brackets, "SmolLM2 (GGUF, 4-bit Q4_1)", takes the kind
        # inside them: one pair of brackets, not two.
        name = self.model or ""
        text = f"{name[:-1]}, {kind})" if name.endswith(")") else f"{name} ({kind})"
        if with_layer and self.layer is not None and self.n_layers is not None:
            text += f", layer {self.layer} of {self.n_layers}"
        if self.kind is WeightsKind.FILE:
            # A model's layer read back from its export is still named, with its layer.
            return f"loaded from {self.path}" + (f": {text}" if self.model is not None else "")
        return text


class Masking(NamedTuple):
    """Which masks were applied before the softmax (the trace's ``mask`` holds the result)."""

    causal: bool = False  # word i may attend to words 0..i only (decoder self-attention)
    padding: int = 0  # this many padding tokens at the end, masked as keys
    # A sliding window on the causal mask: word i reads words i − W + 1 … i only; None: none.
    window: int | None = None

    @property
    def any(self) -> bool:
        return self.causal or self.padding > 0 or self.window is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain data; the window only when there is one (an export without --window reads as
        it did before the option existed)."""
        data: dict[str, Any] = {"causal": self.causal, "padding": self.padding}
        if self.window is not None:
            data["window"] = self.window
        return data


class Provenance(NamedTuple):
    """Everything a view needs to know about how a trace was made, as data."""

    embeddings: EmbeddingsOrigin
    weights: WeightsOrigin
    masking: Masking = Masking()
    # Positions of the tokenizer's special tokens ([CLS], [SEP], [PAD]); a view may hide them.
    special: tuple[int, ...] = ()
    # The tokenizer's pieces of each word, in order, every position in exactly one group; empty
    # when every token is a word of its own (attnviz's own tokenizer).
    word_groups: tuple[tuple[int, ...], ...] = ()
    words: tuple[str, ...] = ()  # the word each group spells, for labels
    sentence: str = ""  # the sentence as written, when a tokenizer cut it into pieces

    def groups(self, n_tokens: int) -> tuple[tuple[int, ...], ...]:
        """The word groups, or every token its own group."""
        return self.word_groups or tuple((i,) for i in range(n_tokens))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``Provenance.from_dict`` reads it back."""
        return {
            "embeddings": _fields(self.embeddings),
            "weights": _fields(self.weights),
            "masking": self.masking.to_dict(),
            "special": list(self.special),
            "word_groups": [list(group) for group in self.word_groups],
            "words": list(self.words),
            "sentence": self.sentence,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Provenance:
        """The inverse of ``to_dict``; AttnvizError naming the field when ``data`` is not one."""
        try:
            mapping = _mapping(data, "provenance")
            embeddings = _mapping(mapping["embeddings"], "embeddings")
            weights = _mapping(mapping["weights"], "weights")
            masking = _mapping(mapping.get("masking", {}), "masking")
            provenance = cls(
                embeddings=EmbeddingsOrigin(
                    kind=EmbeddingsKind(embeddings["kind"]),
                    seed=_optional(embeddings.get("seed"), int),
                    path=_optional(embeddings.get("path"), str),
                    vocabulary=_optional(embeddings.get("vocabulary"), bool),
                    architecture=_optional(embeddings.get("architecture"), str),
                    layer=_optional(embeddings.get("layer"), int),
                    positions=Positions(_exact(embeddings.get("positions", "none"), str)),
                    input=_optional(embeddings.get("input"), str),
                ),
                weights=WeightsOrigin(
                    kind=WeightsKind(weights["kind"]),
                    seed=_optional(weights.get("seed"), int),
                    path=_optional(weights.get("path"), str),
                    model=_optional(weights.get("model"), str),
                    architecture=_optional(weights.get("architecture"), str),
                    layer=_optional(weights.get("layer"), int),
                    n_layers=_optional(weights.get("n_layers"), int),
                    trained=_exact(weights.get("trained", True), bool),
                    about=_optional(weights.get("about"), str),
                    readout=_optional(weights.get("readout"), str),
                    answers_at=_words(weights.get("answers_at")),
                ),
                masking=Masking(
                    causal=_exact(masking.get("causal", False), bool),
                    padding=_exact(masking.get("padding", 0), int),
                    window=_window(masking.get("window")),
                ),
                special=_integers(mapping.get("special", [])),
                word_groups=tuple(_integers(group) for group in _list(mapping.get("word_groups"))),
                words=_words(mapping.get("words")),
                sentence=_exact(mapping.get("sentence", ""), str),
            )
            if provenance.weights.readout not in (None, *READOUTS):
                raise ValueError(f"readout is not one of {', '.join(READOUTS)}")
            if len(provenance.words) != len(provenance.word_groups):
                raise ValueError("words and word_groups differ in length")
            counts = [provenance.masking.padding, *provenance.special]
            counts += [p for group in provenance.word_groups for p in group]
            if any(count < 0 for count in counts):
                raise ValueError("a count or token position is negative")
            if not _layer_in(provenance.embeddings.layer, None) or not _layer_in(
                provenance.weights.layer, provenance.weights.n_layers
            ):
                raise ValueError("a layer is not one of the model's layers, counted from 1")
            return provenance
        except (KeyError, ValueError, TypeError) as error:
            raise AttnvizError(f"its provenance is not one attnviz wrote ({error}).") from None


# -- checked against the file that records it ---------------------------------------------------


def require_positions(file: str, provenance: Provenance, n_tokens: int) -> None:
    """FileProblem (``file`` names the file) unless every position the provenance names
    (special tokens, word groups) is one of ``n_tokens`` and the word groups hold each position
    once."""
    positions = [*provenance.special, *(p for group in provenance.word_groups for p in group)]
    grouped = sorted(p for group in provenance.word_groups for p in group)
    if any(not 0 <= p < n_tokens for p in positions) or (
        provenance.word_groups and grouped != list(range(n_tokens))
    ):
        raise FileProblem(
            f"{file}: its provenance names token positions it does not have (it holds "
            f"{n_tokens} tokens); export it anew with --export."
        )


def require_masking(
    file: str, masking: Masking, mask: np.ndarray | None, n_queries: int, n_keys: int
) -> None:
    """The provenance's masks (padding, a sliding window) as the file's mask holds them."""
    require_padding(file, masking.padding, mask, n_queries, n_keys)
    require_window(file, masking, mask, n_queries, n_keys)


def require_padding(
    file: str, padding: int, mask: np.ndarray | None, n_queries: int, n_keys: int
) -> None:
    """The provenance's count of padding tokens: fewer than the tokens, and hidden as keys by
    the mask, as --pad-to makes them."""
    if padding == 0:
        return
    if not 0 < padding < min(n_queries, n_keys):
        raise FileProblem(
            f"{file}: its provenance says {padding} of its {n_queries} tokens are "
            "padding; export it anew with --export."
        )
    if mask is None or mask[:, n_keys - padding :].any():
        raise FileProblem(
            f"{file}: its provenance says the last {padding} tokens are padding, but "
            "its mask does not hide them; export it anew with --export."
        )


def _window(value: Any) -> int | None:
    """A recorded sliding window: None, or a whole number of tokens from 1."""
    if value is None:
        return None
    window: int = _exact(value, int)
    if window < 1:
        raise ValueError(f"the window is {window}, not a number of tokens from 1")
    return window


def require_window(
    file: str, masking: Masking, mask: np.ndarray | None, n_queries: int, n_keys: int
) -> None:
    """The provenance's sliding window: on a causal mask of self-attention, and the mask hides
    every key it puts outside the window, as --window makes it."""
    if masking.window is None:
        return
    positions = np.arange(n_queries)
    behind = positions[:, np.newaxis] - positions[np.newaxis, :]  # i − j
    outside = (behind < 0) | (behind >= min(masking.window, n_queries))
    if not masking.causal or n_queries != n_keys or mask is None or mask[outside].any():
        raise FileProblem(
            f"{file}: its provenance says each token reads the {masking.window} tokens up to "
            "itself, but its mask does not hide the others; export it anew with --export."
        )


def _layer_in(layer: int | None, n_layers: int | None) -> bool:
    """Whether ``layer`` (from 1) is unset or one of ``n_layers`` (any number from 1 if unset)."""
    if n_layers is not None and n_layers < 1:
        return False
    return layer is None or 1 <= layer <= (n_layers or layer)


def _fields(origin: EmbeddingsOrigin | WeightsOrigin) -> dict[str, Any]:
    """An origin's fields, enums by name, unset ones (left at their defaults) left out: an
    export made without --positions reads as it did before the option existed."""
    data: dict[str, Any] = {"kind": origin.kind.value}
    defaults = origin._field_defaults
    for name, value in origin._asdict().items():
        if name != "kind" and value is not None and value != defaults.get(name):
            data[name] = value.value if isinstance(value, Enum) else value
    return data


def _mapping(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} is not an object")
    return value


def _list(value: Any) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TypeError("expected a list")
    return value


def _exact(value: Any, kind: type) -> Any:
    """``value`` if it is of ``kind`` (an int is not a bool, nor a bool an int)."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{shown_value(value)} is not a {kind.__name__}")
    return value


def _optional(value: Any, kind: type) -> Any:
    return None if value is None else _exact(value, kind)


def _words(values: Any) -> tuple[str, ...]:
    return tuple(_exact(value, str) for value in _list(values))


def _integers(values: Any) -> tuple[int, ...]:
    return tuple(_exact(value, int) for value in _list(values))
