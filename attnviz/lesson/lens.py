"""What ``attnviz lens`` says: each layer's residual stream at one position read through the final
norm and the output layer, the most likely tokens layer by layer, the last layer's token's rank
and probability, and plainly that only the last layer was trained to be read so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnviz.lesson.blocks import Blank, Block, Heading, Matrix, Paragraph, Span

if TYPE_CHECKING:
    from attnviz.generation.lens import LensReading


def lens_blocks(
    reading: LensReading,
    names: Sequence[Sequence[str]],
    model: str,
    labels: Sequence[str],
    norm: str,
) -> list[Block]:
    """``names``: the text of ``reading.top_ids``; ``labels``: the prompt's tokens as shown;
    ``norm``: how the model's final norm is named ("the final RMSNorm", "" for none)."""
    layers = len(reading.top_ids) - 1
    position = reading.position
    row_names = ["embedding", *(f"layer {i}" for i in range(1, layers + 1))]
    through = f"{norm} and the output layer" if norm else "the output layer"
    blocks: list[Block] = [
        Heading(f"attnviz lens: {model}, the residual stream at ‘{labels[position]}’", "title"),
        Paragraph(
            (
                Span(
                    f"The residual stream h at position {position} (‘{labels[position]}’) "
                    f"after each of the {layers} layers, and before the first (the embedding), "
                    f"read as if it were the last: p = softmax of h put through {through}. "
                    "The last layer's reading is the model's next-token distribution."
                ),
            )
        ),
        Paragraph(
            (
                Span(
                    "The middle layers were not trained to be read this way: only the last "
                    "layer's h goes through the output layer in training. Their readings are a "
                    "view, sometimes a misleading one (nostalgebraist 2020, who named the logit "
                    "lens; the tuned lens, Belrose et al. 2023, trains a map for each layer "
                    "because of it).",
                    "note",
                ),
            )
        ),
        Blank(),
    ]
    for row, name in enumerate(row_names):
        tops = " · ".join(
            f"{repr(names[row][i])} {float(reading.top_probabilities[row, i]):.3f}"
            for i in range(len(names[row]))
        )
        blocks.append(Paragraph((Span(f"{name}: ", "bold"), Span(tops))))
    final = repr(names[-1][0])
    blocks += [
        Blank(),
        Matrix(
            reading.final_rank[:, None].astype(float),
            f"The last layer's token, {final}: its rank at each layer",
            row_names,
            ["rank"],
        ),
        Paragraph((Span(_emerges(reading, final, row_names)),)),
    ]
    return blocks


def _emerges(reading: LensReading, final: str, row_names: Sequence[str]) -> str:
    """From which layer on the last layer's token is the top reading, and where it enters the
    top 10."""
    ranks = [int(r) for r in reading.final_rank]
    first_top = next(i for i in range(len(ranks)) if all(r == 1 for r in ranks[i:]))
    in_ten = next(i for i in range(len(ranks)) if all(r <= 10 for r in ranks[i:]))
    return (
        f"{final} is the top reading from {row_names[first_top]} on, and among the ten most "
        f"likely from {row_names[in_ten]} on; at the last layer its probability is "
        f"{float(reading.final_probability[-1]):.3f}."
    )
