"""The one record of a lesson's options, ``Options``: how the traces are made
(``TraceOptions``) and what is shown of them (``ViewOptions``), each option validated where the
record is built, and how the command line spells it (``FLAGS``: attnviz.cli.options declares
each flag from it). The record travels from the command line, or the Python API's keyword
arguments (``options_from``), through attnviz.api to the core. Light on purpose: ``attnviz
--help`` imports it without the math.

Adding an option: a field here with its flag and its check, the Python keyword in
attnviz/api/explain.py, and its use (attnviz/core.py for a trace's, attnviz/selection.py for a
view's); docs/development.md, "Adding an option".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

from attnviz import arguments as check
from attnviz.arguments import choice, empty_path
from attnviz.embeddings import OutOfVocabulary
from attnviz.errors import AttnvizError, option, shown_value, spelled
from attnviz.positions import Positions


class Preset(str, Enum):
    """Named sizes."""

    paper = "paper"  # Vaswani et al. 2017, base model: d_model 512, 8 heads, d_k 64


class Dtype(str, Enum):
    """Floating-point precision of a model's forward pass."""

    float32 = "float32"
    float64 = "float64"


#: The options that are a choice of names, checked (and made members) in this order.
CHOICES: tuple[tuple[str, type[Enum]], ...] = (
    ("dtype", Dtype),
    ("preset", Preset),
    ("oov", OutOfVocabulary),
    ("positions", Positions),
)


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
    # A sliding window on the causal mask: word i reads words i − W + 1 … i only (the random
    # layer with --causal, or every layer of a decoder model); None: no window.
    window: int | None = None
    # sinusoidal: X = E + PE for the random layer; rope: q and k rotated in each head
    positions: Positions = Positions.none
    pad_to: int | None = None  # pad with [PAD] tokens to this length, masked as keys
    # The layer (from 1) to read from a model's export given as weights or embeddings. (The
    # model layer to show is ViewOptions.layer; one --layer sets one or the other.)
    export_layer: int | None = None
    # d_c: keys and values made from one latent c = X·W_DKV of this width (multi-head latent
    # attention, attnviz.latent); None: the paper's W_K, W_V
    latent: int | None = None

    def __post_init__(self) -> None:
        for name, kind in CHOICES:  # names as text (the Python API's) become the Enum's members
            value = getattr(self, name)
            if value is not None or name != "preset":  # no preset is the default sizes
                object.__setattr__(self, name, choice(kind, value, name))
        if self.model == "":  # an unset shell variable: not the working folder, silently
            raise empty_path("model")
        self._check_window()
        if self.model is None:
            seed = self.seed  # a model brings its weights: the seed seeds only the random layer
            if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
                raise AttnvizError(
                    f"{spelled('The seed (--seed)', 'seed')} must be a whole number >= 0, got "
                    f"{shown_value(seed)}."
                )
            self._check_latent()
            return
        if self.latent is not None:
            raise AttnvizError(
                f"{option('latent')} is random mode's: a model brings its own attention, whose "
                f"keys and values attnviz reads as stored. Drop {option('latent')}, or "
                f"{option('model')}."
            )
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

    def _check_latent(self) -> None:
        """--latent draws its own key and value matrices for every head: with none of a file's
        weights nor grouped heads (its width is checked against h·d_k where the sizes are known,
        attnviz.core). With --positions rope it draws DeepSeek's decoupled rotary query parts
        and shared key too, d_rope = d_k/2 wide rounded up to even (attnviz.latent.rope_width),
        which every d_k has: nothing more to check."""
        if self.latent is None:
            return
        latent = option("latent")
        clashing = [
            option(name, value)
            for name, value in (("weights", self.weights), ("kv_heads", self.kv_heads))
            if value is not None
        ]
        if clashing:
            raise AttnvizError(
                f"{latent} draws W_DKV, W_UK and W_UV from the seed for every head; drop "
                f"{' and '.join(clashing)}, or {latent}."
            )

    def _check_window(self) -> None:
        """A window is a whole number of tokens from 1, and needs a causal mask: --causal for
        the random layer, a decoder's own with --model (checked when the model is read)."""
        window = self.window
        if window is None:
            return
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise AttnvizError(
                f"{spelled('The window (--window)', 'window')} must be a whole number of tokens "
                f">= 1, got {shown_value(window)}."
            )
        if self.model is None and not self.causal:
            words = "word" if window == 1 else f"{window} words"
            raise AttnvizError(
                f"{option('window', window)} slides over a causal mask (each word reads the last "
                f"{words}, itself included); add {option('causal', True)}."
            )


class ViewOptions(NamedTuple):
    """What a person asked to see of the computed layers, as the command line names it."""

    # --layer, from 1: the model layer to show; None: the last layer. (A layer of a model's
    # export given as weights is TraceOptions.export_layer.)
    layer: int | None = None
    # --head, from 1: the head the lesson shows in full (the others give the focus word's
    # rows), the one head a picture draws; "all": every head (in full); None: every head.
    head: int | str | None = None
    focus: str | None = None  # --focus WORD or WORD:N; None: "it" when the sentence has it
    hide_special: bool = False  # --hide-special: leave [CLS], [SEP], [PAD] out of the views
    words: bool = False  # --words: merge a model's word pieces into words


@dataclass(frozen=True)
class Options:
    """A lesson's options, one record from the command line (or the keyword arguments) to the
    core: ``trace`` makes the traces, ``view`` chooses what is shown of them."""

    trace: TraceOptions = field(default_factory=TraceOptions)
    view: ViewOptions = ViewOptions()


# -- from the Python API's keyword arguments ----------------------------------------------------

#: The keyword arguments that are whole numbers, checked in this order.
WHOLE = ("layer", "head", "pad_to", "window", "seed", "kv_heads", "heads", "d_model", "latent")
BOOLEANS = ("words", "hide_special", "causal")


def options_from(*, one_head: bool = False, **given: Any) -> Options:
    """The record from the Python API's keyword arguments (``pad_to=16`` for ``--pad-to 16``):
    each checked once, here, in the API's words; names as strings, paths as str or Path; the
    contradictions refused by the record as the command line's are. ``one_head``: ``head`` is
    one head's number (compare), not also "all"."""
    if "head" in given and not one_head:
        check.head(given["head"])
    wholes = [name for name in WHOLE if name in given and (name != "head" or one_head)]
    check.whole(**{name: given[name] for name in wholes})
    check.flags(**{name: given[name] for name in BOOLEANS if name in given})
    check.text(**{name: given[name] for name in ("focus", "model") if name in given})
    check.paths(**{name: given[name] for name in ("embeddings", "weights") if name in given})
    for name in ("embeddings", "weights"):
        if given.get(name) is not None:
            given[name] = Path(given[name])
    view = ViewOptions(**{name: given.pop(name) for name in ViewOptions._fields if name in given})
    return Options(TraceOptions(**given), view)


# -- how the command line spells each option ---------------------------------------------------


class Flag(NamedTuple):
    """An option's flags and help, as attnviz.cli.options declares it to Typer."""

    names: tuple[str, ...]  # "--embeddings", "-e"
    help: str
    show_default: bool = True
    readable: bool = True  # False: a path attnviz checks itself, with a one-line message
    parser: str | None = None  # a parser of attnviz.cli.values, by name
    callback: str | None = None  # a callback of attnviz.cli.values, by name
    text: bool = False  # read as text (the field also takes a number: --head N or all)


FLAGS: dict[str, Flag] = {
    # How the traces are made: TraceOptions.
    "heads": Flag(("--heads",), "Number of heads h (default: 2, or the weights file's).", False),
    "kv_heads": Flag(
        ("--kv-heads",),
        "Key/value heads G, each shared by h/G query heads (grouped-query attention; "
        "1 is multi-query). G divides h; default h, the paper's.",
        False,
    ),
    "d_model": Flag(("--d-model",), "Embedding width d_model (default: 8, or the files').", False),
    "seed": Flag(("--seed",), "Seed of the random embeddings and weights."),
    "preset": Flag(("--preset",), "paper: d_model 512, 8 heads, d_k 64, as in the paper.", False),
    "embeddings": Flag(
        ("--embeddings", "-e"),
        "Word vectors: GloVe/word2vec text, .npy/.npz (one row per token) or .json.",
        False,
        readable=False,
    ),
    "oov": Flag(("--oov",), "Words missing from --embeddings: error, or seeded random vectors."),
    "weights": Flag(
        ("--weights", "-w"),
        "An .npz/.json with W_Q, W_K, W_V, W_O (an exported trace works).",
        False,
        readable=False,
    ),
    "model": Flag(
        ("--model", "-m"),
        "A trained model: 'coref', 'coref-word' (attnviz's toy models), 'minilm', "
        "'smollm2' (attnviz[model] and each one's package), 'gpt2' (attnviz[model] and a "
        "copy in the local Hugging Face cache: attnviz never downloads), a model folder, a "
        ".gguf file or ollama:NAME.",
        False,
    ),
    "dtype": Flag(("--dtype",), "With --model: compute in float32 (as stored) or float64."),
    "causal": Flag(
        ("--causal",), "Decoder self-attention: each word sees itself and earlier words."
    ),
    "window": Flag(
        ("--window",),
        "Sliding-window attention: each token reads only itself and the W − 1 tokens before "
        "it (Mistral's, Gemma's local layers'). Needs --causal for the random layer; with "
        "--model, a decoder (smollm2, gpt2) runs it in every layer, which it was not trained "
        "with.",
        False,
    ),
    "positions": Flag(
        ("--positions",),
        "Word order for the random layer: none (attention sees a set of words), "
        "sinusoidal (X = E + PE, the paper's positional encoding) or rope (q and k rotated "
        "in each head by their position, base 10000, coordinate i paired with i + d_k/2).",
    ),
    "pad_to": Flag(("--pad-to",), "Pad with [PAD] tokens to N, masked as keys.", False),
    "latent": Flag(
        ("--latent",),
        "Multi-head latent attention (DeepSeek-V2, V3): keys and values made from one "
        "latent of width D_C per token, c = X·W_DKV, K = c·W_UK, V = c·W_UV; 1 <= D_C < 2·h·d_k. "
        "Random mode; with --positions rope, DeepSeek's decoupled RoPE key too (d_k/2 wide).",
        False,
    ),
    # What is shown: ViewOptions.
    "layer": Flag(
        ("--layer",),
        "With --model: the layer to show, from 1 (default: the last). With a model's "
        "export as --weights/--embeddings: the layer to read from it.",
        False,
    ),
    "head": Flag(
        ("--head",),
        "Head N (from 1): the lesson shows it in full and the other heads' rows of the "
        "focus word; pictures draw it alone. all: every head in full.",
        False,
        parser="head_choice",
        text=True,
    ),
    "focus": Flag(
        ("--focus", "-f"),
        'Word to follow: it, or it:2 for its second occurrence (default: "it" if present).',
        False,
        callback="typed_text",
    ),
    "hide_special": Flag(("--hide-special",), "Leave [CLS], [SEP] and [PAD] out of the views."),
    "words": Flag(
        ("--words",),
        "With --model: merge the pieces of each word of the sentence, as spaces "
        "separate them (didn't, tired.), into one row (mean over rows, sum over columns).",
    ),
}
