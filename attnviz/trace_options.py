"""What the command line (and the Python API) asks of the traces: ``TraceOptions``, refused on
construction when its options contradict each other. Light on purpose: ``attnviz --help``
imports it without the math."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from attnviz.arguments import choice, empty_path
from attnviz.embeddings import OutOfVocabulary
from attnviz.errors import AttnvizError, option
from attnviz.positions import Positions


class Preset(str, Enum):
    """Named sizes."""

    paper = "paper"  # Vaswani et al. 2017, base model: d_model 512, 8 heads, d_k 64


class Dtype(str, Enum):
    """Floating-point precision of a model's forward pass."""

    float32 = "float32"
    float64 = "float64"


@dataclass(frozen=True)
class TraceOptions:
    """How the traces are made: a random (or loaded) layer, or a pretrained model's layers.

    The option combinations that contradict each other are refused on construction, with the
    sentence that says which to drop.
    """

    heads: int | None = None  # h; default 2, or the weights file's
    kv_heads: int | None = None  # G key/value heads shared by h/G query heads; default h
    d_model: int | None = None  # default 8, or the embeddings' width
    seed: int = 0  # seeds the random embeddings and weights
    preset: Preset | None = None  # paper: d_model 512, 8 heads
    embeddings: Path | None = None  # a word-vector file
    oov: OutOfVocabulary = OutOfVocabulary.error  # words missing from the embeddings file
    weights: Path | None = None  # W_Q, W_K, W_V, W_O from an .npz/.json
    model: str | None = None  # a trained model: a folder, "coref", "minilm", …
    dtype: Dtype = Dtype.float32  # the model's precision
    causal: bool = False  # decoder self-attention for the random layer
    # sinusoidal: X = E + PE for the random layer; rope: q and k rotated in each head
    positions: Positions = Positions.none
    pad_to: int | None = None  # pad with [PAD] tokens to this length, masked as keys
    # The layer (from 1) to read from a model's export given as weights or embeddings. (The
    # model layer to show is ViewOptions.layer; one --layer sets one or the other.)
    export_layer: int | None = None

    def __post_init__(self) -> None:
        if self.model == "":  # an unset shell variable: not the working folder, silently
            raise empty_path("model")
        if self.model is None:
            return
        given = [
            option(name)
            for name in ("heads", "kv_heads", "d_model", "preset", "embeddings", "weights")
            if getattr(self, name) is not None
        ]
        model = option("model")
        if given:
            raise AttnvizError(
                f"{model} brings its own sizes, embeddings and weights; drop {', '.join(given)}."
            )
        if self.causal:
            raise AttnvizError(
                f"{option('causal')} applies to the random layer: a model brings its own mask (a "
                "BERT-family encoder attends both ways by design, GPT-2 is causal already). "
                f"Drop {option('causal')}, or {model}."
            )
        if Positions(self.positions) is not Positions.none:
            raise AttnvizError(
                f"{option('positions')} applies to the random layer: a model adds its own learned "
                f"position embeddings before layer 1. Drop {option('positions')}, or {model}."
            )

    def layer_arguments(self) -> dict[str, Any]:
        """The options that make one random (or loaded) layer, as layer_inputs() names them."""
        return {
            "d_model": self.d_model,
            "n_heads": self.heads,
            "n_kv_heads": self.kv_heads,
            "seed": self.seed,
            "paper": self.preset is Preset.paper,
            "embeddings": self.embeddings,
            "weights": self.weights,
            "oov": self.oov,
            "export_layer": self.export_layer,
        }


def trace_options_from(
    *,
    heads: int | None,
    d_model: int | None,
    seed: int,
    preset: str | None,
    embeddings: str | Path | None,
    oov: str,
    weights: str | Path | None,
    positions: str,
    kv_heads: int | None = None,
    **model_options: Any,
) -> TraceOptions:
    """TraceOptions from the Python API's keyword arguments: names as strings, paths as str or
    Path; a name that is no choice, and the contradictions, refused as the command line does."""
    return TraceOptions(
        heads=heads,
        kv_heads=kv_heads,
        d_model=d_model,
        seed=seed,
        preset=choice(Preset, preset, "preset") if preset is not None else None,
        embeddings=Path(embeddings) if embeddings is not None else None,
        oov=choice(OutOfVocabulary, oov, "oov"),
        weights=Path(weights) if weights is not None else None,
        positions=choice(Positions, positions, "positions"),
        **model_options,
    )
