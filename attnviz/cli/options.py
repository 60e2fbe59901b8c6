"""Every command-line option, declared once, and the groups they make.

A group is a frozen options type of the library (TraceOptions, ViewOptions, LessonOptions); a
command takes one as a parameter, and ``command()`` (attnviz.cli.groups) turns that parameter
into the group's options on the command line, then hands the command the group built from
them. So --heads or --focus is declared here only, whichever commands take it; every other
option (page's --open-head, heatmap's --cmap, …) is declared here too.
"""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
from pathlib import Path
from typing import Annotated, Any

import typer

from attnviz.cli.values import file_path, head_choice, typed_text, whole_number
from attnviz.embeddings import OutOfVocabulary
from attnviz.lesson.options import LessonOptions
from attnviz.positions import Positions
from attnviz.render.options import Measure, Scale, Style
from attnviz.selection import ViewOptions
from attnviz.trace_options import Dtype, Preset, TraceOptions

# -- each option once ---------------------------------------------------------------------------


# The parsers of option values (attnviz.cli.values), as other modules import them from here.
__all__ = ["file_path", "head_choice", "typed_text", "whole_number"]


DECLARATIONS: dict[str, Any] = {
    # How the traces are made: TraceOptions.
    "heads": Annotated[
        int | None,
        typer.Option(
            "--heads",
            help="Number of heads h (default: 2, or the weights file's).",
            show_default=False,
        ),
    ],
    "kv_heads": Annotated[
        int | None,
        typer.Option(
            "--kv-heads",
            help="Key/value heads G, each shared by h/G query heads (grouped-query attention; "
            "1 is multi-query). G divides h; default h, the paper's.",
            show_default=False,
        ),
    ],
    "d_model": Annotated[
        int | None,
        typer.Option(
            "--d-model",
            help="Embedding width d_model (default: 8, or the files').",
            show_default=False,
        ),
    ],
    "seed": Annotated[
        int, typer.Option("--seed", help="Seed of the random embeddings and weights.")
    ],
    "preset": Annotated[
        Preset | None,
        typer.Option(
            "--preset",
            help="paper: d_model 512, 8 heads, d_k 64, as in the paper.",
            show_default=False,
        ),
    ],
    "embeddings": Annotated[
        Path | None,
        typer.Option(
            "--embeddings",
            "-e",
            help="Word vectors: GloVe/word2vec text, .npy/.npz (one row per token) or .json.",
            show_default=False,
            readable=False,  # attnviz checks readability itself, with a one-line message
        ),
    ],
    "oov": Annotated[
        OutOfVocabulary,
        typer.Option(
            "--oov", help="Words missing from --embeddings: error, or seeded random vectors."
        ),
    ],
    "weights": Annotated[
        Path | None,
        typer.Option(
            "--weights",
            "-w",
            help="An .npz/.json with W_Q, W_K, W_V, W_O (an exported trace works).",
            show_default=False,
            readable=False,
        ),
    ],
    "model": Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="A trained model: 'coref', 'coref-word' (attnviz's toy models), 'minilm', "
            "'smollm2' (attnviz[model] and each one's package), 'gpt2' (attnviz[model] and a "
            "copy in the local Hugging Face cache: attnviz never downloads), a model folder, a "
            ".gguf file or ollama:NAME.",
            show_default=False,
        ),
    ],
    "dtype": Annotated[
        Dtype,
        typer.Option("--dtype", help="With --model: compute in float32 (as stored) or float64."),
    ],
    "causal": Annotated[
        bool,
        typer.Option(
            "--causal", help="Decoder self-attention: each word sees itself and earlier words."
        ),
    ],
    "positions": Annotated[
        Positions,
        typer.Option(
            "--positions",
            help="Word order for the random layer: none (attention sees a set of words), "
            "sinusoidal (X = E + PE, the paper's positional encoding) or rope (q and k rotated "
            "in each head by their position, base 10000, coordinate i paired with i + d_k/2).",
        ),
    ],
    "pad_to": Annotated[
        int | None,
        typer.Option(
            "--pad-to", help="Pad with [PAD] tokens to N, masked as keys.", show_default=False
        ),
    ],
    # What is shown: ViewOptions.
    "layer": Annotated[
        int | None,
        typer.Option(
            "--layer",
            help="With --model: the layer to show, from 1 (default: the last). With a model's "
            "export as --weights/--embeddings: the layer to read from it.",
            show_default=False,
        ),
    ],
    "head": Annotated[
        str | None,
        typer.Option(
            "--head",
            parser=head_choice,
            help="Head N (from 1): the lesson shows it in full and the other heads' rows of the "
            "focus word; pictures draw it alone. all: every head in full.",
            show_default=False,
        ),
    ],
    "focus": Annotated[
        str | None,
        typer.Option(
            "--focus",
            "-f",
            callback=typed_text,
            help='Word to follow: it, or it:2 for its second occurrence (default: "it" if '
            "present).",
            show_default=False,
        ),
    ],
    "hide_special": Annotated[
        bool,
        typer.Option("--hide-special", help="Leave [CLS], [SEP] and [PAD] out of the views."),
    ],
    "words": Annotated[
        bool,
        typer.Option(
            "--words",
            help="With --model: merge the pieces of each word of the sentence, as spaces "
            "separate them (didn't, tired.), into one row (mean over rows, sum over columns).",
        ),
    ],
    # How the lesson is told: LessonOptions.
    "decimals": Annotated[
        int, typer.Option("--decimals", "-d", help="Digits after the point (0–8).")
    ],
    "show_weights": Annotated[
        bool, typer.Option("--show-weights", help="Also print W_Q, W_K, W_V and W_O.")
    ],
    "steps": Annotated[
        str | None,
        typer.Option(
            "--steps",
            help="Show only these steps, after the header, e.g. 4-6 or 1,3-5: 1 tokens and X; "
            "2–6 each head's Q K V, Q·Kᵀ, ÷√d_k, softmax and Z (for every head shown); "
            "7 Concat and W_O; 8 the focus view. Shown only when named: blockwise (6b), the "
            "softmax and Z a block of keys at a time, as FlashAttention computes them.",
            show_default=False,
        ),
    ],
    "full": Annotated[
        bool,
        typer.Option(
            "--full",
            help="All of the lesson's text: every head shown in full (or --head's alone) with "
            "every explanation, at full length.",
        ),
    ],
    "block": Annotated[
        int | None,
        typer.Option(
            "--block",
            help="Keys per block in the blockwise step (--steps blockwise). Default: so that the "
            "sentence makes 3 or 4 blocks.",
            show_default=False,
        ),
    ],
}

GROUPS = (TraceOptions, ViewOptions, LessonOptions)

# Arguments and options that are not part of a group, shared by several commands.
Sentence = Annotated[
    str,
    typer.Argument(
        help="The sentence, in quotes.",
        show_default=False,
        metavar="SENTENCE",
        callback=typed_text,
    ),
]
Export = Annotated[
    Path | None,
    typer.Option(
        "--export",
        help="Save every intermediate to FILE.npz or FILE.json.",
        show_default=False,
        parser=file_path,
    ),
]
# The lesson's pacing and its recordings, for explain and cross.
Step = Annotated[bool, typer.Option("--step", help="Pause after each step until a key (q quits).")]
Svg = Annotated[
    Path | None,
    typer.Option(
        "--svg", help="Also save the rendering, colours included, as SVG.", parser=file_path
    ),
]
Html = Annotated[
    Path | None,
    typer.Option(
        "--html", help="Also save the rendering, colours included, as HTML.", parser=file_path
    ),
]
Slides = Annotated[
    Path | None,
    typer.Option(
        "--slides",
        help="Also save each step as a 16:9 slide in this folder: NN-step.svg and NN-step.png "
        "(1920×1080), in the terminal's colours.",
        show_default=False,
        readable=False,
    ),
]

# heatmap's picture options (attnviz.render.options.ImageOptions).
PerHead = Annotated[
    Path | None,
    typer.Option(
        "--per-head",
        help="Also write one image per head into this folder.",
        show_default=False,
        readable=False,
    ),
]
AllLayers = Annotated[
    bool,
    typer.Option(
        "--all-layers",
        help="Every layer and head of a --model run in one grid (refused without "
        "--model: random weights are one layer), each panel headed by its "
        "head's type from its whole matrix A: the mean weight on the previous word, the "
        "next, itself, the first ([CLS]) or the last ([SEP]) (a type at 0.5 or more), else "
        "broad when the rows' entropy is at least 0.9 of a uniform row's, else mixed.",
    ),
]
ImageStyle = Annotated[
    Style,
    typer.Option("--style", help="grid: heatmaps; lines: the focus word's lines to every word."),
]
ImageScale = Annotated[
    Scale | None,
    typer.Option(
        "--scale",
        help="Colours span 0–1 (fixed), each row's largest weight (row), or the largest "
        "weight shown (auto). Default: fixed up to 16 words, else auto.",
        show_default=False,
    ),
]
ImageMeasure = Annotated[
    Measure,
    typer.Option(
        "--measure",
        help="weights: softmax(Q·Kᵀ/√d_k) per head. contribution: each head's shares "
        "‖w_ij·f_h(x_j)‖ / Σ_k ‖w_ik·f_h(x_k)‖, f_h(x_j) = v_j·W_O^h (what word j adds, "
        "not only its weight). rollout: R_l = Â_l·…·Â_1, Â = ½·mean_h A + ½·I, over the "
        "layers up to the one shown (where mixing could carry each input word).",
    ),
]


Colormap = Annotated[str, typer.Option("--cmap", help="A matplotlib colormap name.")]

# page's own options.
PageOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="The page to write: .html (one file; opens offline).",
        show_default=False,
        parser=file_path,
    ),
]
OpenHead = Annotated[
    int | None,
    typer.Option(
        "--open-head",
        help="Open the page on head N (from 1), every head kept in its menu (--head N "
        "keeps head N alone).",
        show_default=False,
    ),
]
CompareWith = Annotated[
    str | None,
    typer.Option(
        "--compare",
        help="A second sentence, in quotes: the page also draws its picture beside the "
        "first's and shows the focus word's row (\"it\" by default) in both, each head's two "
        "rows side by side and the heads ranked by how much the row changed, as attnviz "
        "compare.",
        metavar="SENTENCE_B",
        callback=typed_text,
        show_default=False,
    ),
]
#: --steps on the page: the lesson's steps but the focus view, which is the page's picture.
PAGE_STEPS_HELP = (
    "Only these steps on the page, e.g. 4-6 or 1,3-5 (default: every step): 1 tokens and X; "
    "2–6 each head's Q K V, Q·Kᵀ, ÷√d_k, softmax and Z; 7 Concat and W_O (the focus view is the "
    "page's picture). Shown only when named: blockwise (6b), the softmax and Z a block of keys "
    "at a time, as FlashAttention computes them, in each head."
)


def image_option(help_text: str, *, required: bool = False) -> Any:
    """``--output/-o``: an image file (.png, .svg or .pdf)."""
    option = typer.Option("--output", "-o", help=help_text, show_default=False, parser=file_path)
    return Annotated[Path if required else Path | None, option]
