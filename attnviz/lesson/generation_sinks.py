"""What ``attnviz generate --sinks`` and ``--window`` say: the first token's weight, value size and
contribution share in every layer (an attention sink, with the numbers), and a held text read
with the whole cache and two sliding ones. Every sentence is read off the figures beside it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from attnviz.lesson.blocks import Blank, Block, Heading, Matrix, Paragraph, Span, Tables

if TYPE_CHECKING:
    from attnviz.generation.sinks import FirstToken, HeldText

#: A first token whose mean weight reaches SINK_WEIGHT while its value is less than SMALL_VALUE
#: of the others' size is what StreamingLLM calls a sink; the lesson says so only then.
SINK_WEIGHT = 0.3
SMALL_VALUE = 0.5


def sink_blocks(first: FirstToken, label: str) -> list[Block]:
    """The first token ``label``'s figures, layer by layer, and what they show."""
    layers, heads = first.weight.shape
    names = [f"layer {i + 1}" for i in range(layers)]
    weight, share = float(first.weight.mean()), float(first.share.mean())
    size = float(first.size.mean())
    heavy = np.flatnonzero(first.weight.mean(axis=1) >= SINK_WEIGHT)
    blocks: list[Block] = [
        Blank(),
        Heading(f"Attention sinks: what the first token, ‘{label}’, gets and gives", "step"),
        Paragraph(
            (
                Span(
                    f"Over the {first.tokens} tokens read, for each layer: weight, the mean "
                    f"weight the rows after ‘{label}’ put on it; size, its value's size as it "
                    "reaches the output, ‖f(x₀)‖ = ‖v₀·W_O^h‖, over the mean of the other "
                    "tokens'; and share, its mean share of ‖w·f‖, the sizes of what each token "
                    "adds to a row (as the focus "
                    f"view's contribution measures them). {_over_heads(heads)}"
                ),
            )
        ),
        Tables(
            (
                Matrix(
                    np.stack(
                        [
                            first.weight.mean(axis=1),
                            first.size.mean(axis=1),
                            first.share.mean(axis=1),
                        ],
                        axis=1,
                    ),
                    f"‘{label}’, layer by layer",
                    names,
                    ["weight", "size", "share"],
                ),
            )
        ),
        Paragraph((Span(_verdict((weight, size, share), len(heavy), layers, label)),)),
    ]
    if heads > 1:
        columns = [f"h{h + 1}" for h in range(heads)]
        title = "Weight on the first token, by layer and head"
        blocks.append(Matrix(first.weight, title, names, columns, shade=True))
    return blocks


def _over_heads(heads: int) -> str:
    if heads == 1:
        return "Each layer has one head."
    return (
        f"Each is the mean over the layer's {heads} heads; every head's weight is in the table "
        "after."
    )


def _verdict(figures: tuple[float, float, float], heavy: int, layers: int, label: str) -> str:
    weight, size, share = figures
    said = (
        f"Over all layers and heads, ‘{label}’ gets {weight:.0%} of the weight of the rows that "
        f"can see beyond it; its value is {size:.2f} times the others' size, and it makes "
        f"{share:.0%} of the sizes of what they add. Its mean weight reaches {SINK_WEIGHT:.0%} in "
        f"{heavy} of the {layers} layers."
    )
    if weight >= SINK_WEIGHT and size < SMALL_VALUE and share < weight:
        return (
            f"{said} Large weight, small value: what Xiao et al. (2023, StreamingLLM) "
            "call an attention sink. Their explanation: softmax makes every row's weights sum to "
            "1, so a head with nothing to add for a token must still put its weight somewhere. "
            "These numbers show where the weight goes and how little it carries, not why the "
            "model learned it."
        )
    return (
        f"{said} Not the pattern Xiao et al. (2023, StreamingLLM) call an attention sink (a "
        "large weight that adds little) in this model, on this text."
    )


def held_blocks(held: HeldText, labels: Sequence[str]) -> list[Block]:
    """The held text (the prompt) read with the whole cache, a window keeping the first tokens
    and one dropping them: log p of each next token and the TV from the whole cache."""
    n = len(labels)
    w, k = held.window, held.keep_first
    heading = Heading(f"A sliding cache of {w} tokens on the prompt, keeping and dropping", "step")
    if n <= w + 1:  # the last prediction is at position n − 2; a window hides from position w
        return [
            Blank(),
            heading,
            Paragraph(
                (
                    Span(
                        f"The prompt is {n} tokens: reading it, each prediction saw at most {w} "
                        f"tokens, so no token left a window of {w} and it changed nothing; give "
                        "a longer prompt to see what a sliding cache changes."
                    ),
                )
            ),
        ]
    later = slice(w, n - 1)  # the predictions from position w on, where a token is hidden
    count = n - 1 - w
    means = {name: float(values[later].mean()) for name, values in held.log_p.items()}
    tv = {name: float(values[later].mean()) for name, values in held.tv.items()}
    rows = np.stack(
        [
            held.log_p["whole"],
            held.log_p["keep"],
            held.log_p["drop"],
            held.tv["keep"],
            held.tv["drop"],
        ],
        axis=1,
    )[later]
    first = "the first token" if k == 1 else f"the first {k} tokens"
    return [
        Blank(),
        heading,
        Paragraph(
            (
                Span(
                    f"The prompt's {n} tokens read three ways, each predicting the next: with the "
                    f"whole cache; with a window of {w} tokens that keeps {first} ({w - k} recent "
                    f"and {k} first); and with a window of the {w} most recent alone. From "
                    f"position {w} on, the windows hide tokens; for the {count} predictions from "
                    "there, log p of the text's next token and the total variation TV = "
                    "½·Σ|p − p′| from the whole cache's next-token distribution:"
                ),
            )
        ),
        Matrix(
            rows,
            "log p of the next token with each cache, and TV from the whole cache's",
            [f"{labels[i]} → {labels[i + 1]}" for i in range(w, n - 1)],
            ["whole", "keep", "drop", "TV keep", "TV drop"],
        ),
        Paragraph((Span(_held_sentence(means, tv, count, first)),)),
    ]


def _held_sentence(means: dict[str, float], tv: dict[str, float], count: int, first: str) -> str:
    def perplexity(name: str) -> str:
        return f"{np.exp(-means[name]):.1f}"

    said = (
        f"Mean log p over the {count} predictions: {means['whole']:.3f} with the whole cache "
        f"(perplexity {perplexity('whole')}), {means['keep']:.3f} keeping {first} "
        f"({perplexity('keep')}), {means['drop']:.3f} dropping it ({perplexity('drop')}); mean TV "
        f"from the whole cache: {tv['keep']:.3f} keeping, {tv['drop']:.3f} dropping."
    )
    if means["keep"] > means["drop"] and tv["keep"] < tv["drop"]:
        return (
            f"{said} Keeping {first} keeps the model closer to itself with the whole text, as "
            "StreamingLLM found: the window alone takes away the token its heads park weight on."
        )
    return f"{said} Here keeping {first} does not bring the model closer to the whole cache."
