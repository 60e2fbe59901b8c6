"""``attnviz generate``: thin, as in cli/commands.py: parse, one call to attnviz.api.generate.run,
the exit code."""

# No `from __future__ import annotations`: Typer reads every command's annotations on each run.
from pathlib import Path
from typing import Annotated, Optional

import typer

from attnviz.cli.console import surface


def generate(
    prompt: Annotated[
        str, typer.Argument(help="The text the model continues.", show_default=False)
    ],
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="The decoder: smollm2 (with attnviz[model]), a GGUF file, ollama:NAME, a Llama, "
            "Qwen2 or GPT-2 folder, or a toy decoder's folder; without it attnviz's own induction "
            "model, which finishes a repeated sequence of letters a–p.",
        ),
    ] = "induction",
    tokens: Annotated[
        int, typer.Option("--tokens", "-n", help="How many new tokens to write (1–512).")
    ] = 8,
    temperature: Annotated[
        Optional[float],  # noqa: UP045 (Typer reads the annotation)
        typer.Option(
            "--temperature",
            help="Sample from softmax(logits / T) instead of taking the largest logit.",
        ),
    ] = None,
    top_k: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--top-k", help="Sample among the K most likely tokens only."),
    ] = None,
    top_p: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--top-p", help="Sample among the fewest most likely tokens whose p sum to P."
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of numpy's Generator that draws each sample.")
    ] = 0,
    layer: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--layer", help="The layer whose attention rows are shown (default: the last)."
        ),
    ] = None,
    head: Annotated[int, typer.Option("--head", help="The head whose row is drawn as bars.")] = 1,
    pace: Annotated[
        float,
        typer.Option(
            "--pace",
            help="Seconds between tokens at a terminal, for a class to follow (0: full speed).",
        ),
    ] = 0.5,
    dtype: Annotated[
        str, typer.Option("--dtype", help="float32 (as the weights are stored) or float64.")
    ] = "float32",
    window: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--window",
            help="A sliding cache of W tokens a layer; also reads the prompt with windows that "
            "keep and drop its first token, against the whole cache.",
        ),
    ] = None,
    keep_first: Annotated[
        int,
        typer.Option(
            "--keep-first", help="With --window: the first tokens the cache always keeps."
        ),
    ] = 0,
    sinks: Annotated[
        bool,
        typer.Option(
            "--sinks",
            help="Also the first token's weight, value size and contribution share, by layer.",
        ),
    ] = False,
    export: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--export", help="Save every step's numbers: a .npz file.", dir_okay=False),
    ] = None,
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
    )
    command.run(request, surface(), pace=pace, export=export)
