"""``attnviz generate``: thin, as in cli/commands.py: parse, one call to attnviz.api.generate.run,
the exit code."""

# No `from __future__ import annotations`: Typer reads every command's annotations on each run.
from pathlib import Path
from typing import Annotated, Optional

import typer

from attnviz.cli.console import surface

PromptOption = Annotated[
    str, typer.Argument(metavar="PROMPT", help="The text the model continues.", show_default=False)
]

ModelOption = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="The decoder: smollm2 (with attnviz[model]), a GGUF file, ollama:NAME, a Llama, "
        "Qwen2 or GPT-2 folder, or a toy decoder's folder; without it attnviz's own induction "
        "model, which finishes a repeated sequence of letters a–p.",
    ),
]

TokensOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--tokens",
        "-n",
        help="How many new tokens to write (1–512); default 8, or as many as the model's "
        "positions leave.",
    ),
]

TemperatureOption = Annotated[
    Optional[float],  # noqa: UP045 (Typer reads the annotation)
    typer.Option(
        "--temperature",
        help="Sample from softmax(logits / T) instead of taking the largest logit.",
    ),
]

TopKOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--top-k", help="Sample among the K most likely tokens only."),
]

TopPOption = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--top-p", help="Sample among the fewest most likely tokens whose p sum to P."),
]

SeedOption = Annotated[
    int, typer.Option("--seed", help="Seed of numpy's Generator that draws each sample.")
]

LayerOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--layer", help="The layer whose attention rows are shown (default: the last)."),
]

HeadOption = Annotated[int, typer.Option("--head", help="The head whose row is drawn as bars.")]

PaceOption = Annotated[
    float,
    typer.Option(
        "--pace",
        help="Seconds between tokens at a terminal, for a class to follow (0: full speed).",
    ),
]

DtypeOption = Annotated[
    str, typer.Option("--dtype", help="float32 (as the weights are stored) or float64.")
]

WindowOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--window",
        help="A sliding cache of W tokens a layer; also reads the prompt with windows that "
        "keep and drop its first token, against the whole cache.",
    ),
]

KeepFirstOption = Annotated[
    int,
    typer.Option("--keep-first", help="With --window: the first tokens the cache always keeps."),
]

SinksOption = Annotated[
    bool,
    typer.Option(
        "--sinks",
        help="Also the first token's weight, value size and contribution share, by layer.",
    ),
]

LensOption = Annotated[
    bool,
    typer.Option(
        "--lens",
        help="Also each token's logit lens: from which layer on it is the top reading.",
    ),
]

ExportOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--export", help="Save every step's numbers: a .npz file.", dir_okay=False),
]

PageOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--page",
        help="Also write the steps as a page with a slider: a .html file that works offline.",
        dir_okay=False,
    ),
]


def generate(
    prompt: PromptOption,
    model: ModelOption = "induction",
    tokens: TokensOption = None,
    temperature: TemperatureOption = None,
    top_k: TopKOption = None,
    top_p: TopPOption = None,
    seed: SeedOption = 0,
    layer: LayerOption = None,
    head: HeadOption = 1,
    pace: PaceOption = 0.5,
    dtype: DtypeOption = "float32",
    window: WindowOption = None,
    keep_first: KeepFirstOption = 0,
    sinks: SinksOption = False,
    lens: LensOption = False,
    export: ExportOption = None,
    page: PageOption = None,
) -> None:
    """Write text with a decoder, token by token: each new token's query against the K/V
    cache, the logits, the softmax at the temperature, the top-k and top-p cuts, the choice.

    The prompt is processed in one pass (prefill); then each new token computes only its own
    q, k and v, appends k and v to the cache and reads every cached key. At the end the whole
    text is recomputed in one pass without a cache, and the largest differences are shown.

    Example: attnviz generate -m smollm2 "The capital of France is" --tokens 12
    """
    from attnviz.api import generate as command

    request = command.GenerateRequest(
        prompt,
        model,
        tokens,
        temperature,
        top_k,
        top_p,
        seed,
        layer,
        head,
        dtype,
        window=window,
        keep_first=keep_first,
        sinks=sinks,
        lens=lens,
    )
    command.run(request, surface(), pace=pace, export=export, page=page)


def lens(
    prompt: Annotated[
        str,
        typer.Argument(
            metavar="PROMPT", help="The text whose last token is read.", show_default=False
        ),
    ],
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="A decoder, as generate's --model; without it attnviz's own induction model.",
        ),
    ] = "induction",
    focus: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--focus", help="The token to read at (its last occurrence); default: the last."
        ),
    ] = None,
    top: Annotated[int, typer.Option("--top", help="The most likely tokens shown a layer.")] = 5,
    dtype: Annotated[
        str, typer.Option("--dtype", help="float32 (as the weights are stored) or float64.")
    ] = "float32",
    output: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--output", "-o", help="Also draw it: .png, .svg or .pdf.", dir_okay=False),
    ] = None,
) -> None:
    """The logit lens: what each layer's residual stream at one token would predict, read
    through the model's final norm and output layer.

    Only the last layer was trained to be read this way; the middle layers' readings are a
    view, sometimes a misleading one, and the lesson says so.

    Example: attnviz lens -m smollm2 "The capital of France is" -o lens.png
    """
    from attnviz.api import lens as command

    command.run(prompt, surface(), model=model, focus=focus, top=top, dtype=dtype, output=output)
