"""A generation as steps a slider moves over (the page and the notebook): the prefill pass, then
one step a new token, each with the blocks the terminal prints for it, the text as it stood and
the cache as that pass left it; then what is said once at the end (the text, the proof, and what
--sinks and --window add). The same blocks as ``attnviz generate`` prints, made from the run's
records after it, not while it was written."""

from __future__ import annotations

from dataclasses import dataclass

from attnviz.generation.cache import CacheSize
from attnviz.generation.result import Generation
from attnviz.generation.text import label
from attnviz.lesson.blocks import Blank, Block, Heading
from attnviz.lesson.generation import Telling, closing, opening, token_blocks
from attnviz.lesson.generation_sinks import held_blocks, sink_blocks


@dataclass(frozen=True)
class WrittenStep:
    """One position of the slider: the prefill pass (``new`` None) or the pass that chose token
    ``new`` (from 1)."""

    title: str  # "Prefill", "Token 3: ' Paris'"
    blocks: tuple[Block, ...]  # what the terminal prints for it
    tokens: tuple[str, ...]  # every token as shown after this step, the prompt's first
    new: int | None  # the index in ``tokens`` of the token this step chose; None for prefill
    cache_tokens: int  # t, the tokens each layer's cache holds after this pass
    cache_shape: tuple[int, int, int, int]  # [layers, key/value heads, t, d_k], K and V each
    cache_bytes: int  # K and V together
    weights: tuple[float, ...]  # the shown layer and head's row over ``read``; () for prefill
    read: tuple[int, ...]  # the positions of the keys that row read


@dataclass(frozen=True)
class WrittenSteps:
    """A whole generation for the slider: the steps, and what is said once after them."""

    title: str  # the lesson's title line
    prompt: str  # the prompt as typed
    introduction: tuple[Block, ...]  # the model, how it chooses, the prompt's tokens
    steps: tuple[WrittenStep, ...]
    ending: tuple[Block, ...]  # the text, the proof, --sinks and --window
    legend: str  # what the shading of the tokens says


def written_steps(telling: Telling, result: Generation, prompt: str) -> WrittenSteps:
    """The run ``result`` (``telling`` what its lesson needs) as the slider's steps; ``result``
    has one new token at least (GenerateRequest asks for one or more)."""
    labels = [*result.prompt_tokens]
    first = result.tokens[0].cache  # the prefill pass chose token 1: its cache is the prefill's
    opened = [b for b in opening(telling, len(result.tokens), first) if not isinstance(b, Blank)]
    at = next(i for i, b in enumerate(opened) if isinstance(b, Heading) and b.level == "step")
    steps = [
        WrittenStep(
            title="Prefill",
            blocks=tuple(opened[at:]),
            tokens=tuple(labels),
            new=None,
            cache_tokens=first.tokens,
            cache_shape=_shape(first),
            cache_bytes=first.bytes,
            weights=(),
            read=(),
        )
    ]
    for token, text, names in zip(result.tokens, result.texts, result.shown_texts, strict=True):
        blocks = token_blocks(telling, token, labels, text, names)
        labels.append(label(text))
        row = token.attention[telling.layer - 1][telling.head - 1]
        cache = token.cache
        steps.append(
            WrittenStep(
                title=f"Token {token.number}: {text!r}",
                blocks=tuple(block for block in blocks if not isinstance(block, Blank)),
                tokens=tuple(labels),
                new=len(labels) - 1,
                cache_tokens=cache.tokens,
                cache_shape=_shape(cache),
                cache_bytes=cache.bytes,
                weights=tuple(float(w) for w in row),
                read=tuple(int(k) for k in token.key_positions),
            )
        )
    return WrittenSteps(
        title=opened[0].text if isinstance(opened[0], Heading) else "",
        introduction=tuple(opened[1:at]),
        prompt=prompt,
        steps=tuple(steps),
        ending=tuple(b for b in ending(telling, result, prompt) if not isinstance(b, Blank)),
        legend=(
            f"Shaded: the weight layer {telling.layer}, head {telling.head} gives each token the "
            "cache holds, as the query of the token before the new one (dashed) reads them; the "
            "new token is framed, and a token the cache no longer holds is struck through. The "
            "prefill pass reads every prompt token at once and shades none."
        ),
    )


def ending(telling: Telling, result: Generation, prompt: str) -> list[Block]:
    """What is said once after the last token: the text, how it stopped, the proof, and what
    --window (the prompt read with windows keeping and dropping its first tokens) and --sinks
    (the first token's figures) found."""
    blocks = closing(
        telling,
        prompt,
        "".join(result.texts),
        result.proof,
        ended=result.ended,
        total=len(result.prompt_ids) + len(result.tokens) - 1,
    )
    if result.held is not None:
        blocks += held_blocks(result.held, result.prompt_tokens)
    if result.first_token is not None:
        blocks += sink_blocks(result.first_token, result.prompt_tokens[0])
    return blocks


def _shape(cache: CacheSize) -> tuple[int, int, int, int]:
    """[layers, key/value heads, t, d_k]: the shape of K, and of V."""
    return (cache.layers, cache.key_value_heads, cache.tokens, cache.d_k)
