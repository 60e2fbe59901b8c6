"""``attnviz lens``: the logit lens, each layer's residual stream at one position read through the
model's final norm and output layer; ``attnviz.lens`` returns the reading as data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnviz.errors import AttnvizError, option
from attnviz.serial import one_at_a_time

if TYPE_CHECKING:
    from attnviz.api.surface import Surface
    from attnviz.generation.lens import LensReading

DEFAULT_MODEL = "induction"
MOST_TOP = 20


@dataclass(frozen=True, eq=False)
class Lensed:
    """A logit lens reading, with the tokens' text."""

    reading: LensReading
    names: tuple[tuple[str, ...], ...]  # the text of reading.top_ids
    labels: tuple[str, ...]  # the prompt's tokens as shown
    model: str
    final_norm: str  # the norm before the output layer ("" for none)


def _position(labels: tuple[str, ...], focus: str | None) -> int:
    if focus is None:
        return len(labels) - 1
    found = [i for i, token in enumerate(labels) if token.lower() == focus.lower()]
    if not found:
        shown = ", ".join(repr(t) for t in labels[:12])
        raise AttnvizError(
            f"{option('focus', focus)} is not a token of the prompt; give one of its tokens "
            f"({shown}{', …' if len(labels) > 12 else ''})."
        )
    return found[-1]


def lensed(prompt: str, model: str, focus: str | None, top: int, dtype: str) -> Lensed:
    """Read ``prompt`` with the lens at ``focus`` (the last token by default)."""
    from attnviz import arguments as check
    from attnviz.api.generate import GenerateRequest, prompt_tokens
    from attnviz.generation.lens import logit_lens
    from attnviz.generation.loading import load_decoder
    from attnviz.generation.text import piece_text
    from attnviz.train.threads import one_blas_thread

    GenerateRequest(prompt, model, dtype=dtype)  # the prompt, model and dtype checked as there
    check.text(focus=focus)
    check.given(top=top)
    if not 1 <= top <= MOST_TOP:
        raise AttnvizError(f"{option('top', top)}: show 1 to {MOST_TOP} tokens a layer.")
    loaded = load_decoder(model, dtype)
    ids, labels, pieces, _ = prompt_tokens(prompt, loaded, new_tokens=0)
    position = _position(labels, focus)
    with np.errstate(all="ignore"), one_blas_thread():
        reading = logit_lens(loaded.decoder, ids, position, top)
    names = tuple(
        tuple(piece_text(pieces, int(i), loaded.separator) for i in row) for row in reading.top_ids
    )
    return Lensed(reading, names, labels, loaded.name, loaded.final_norm)


def run(
    prompt: str,
    surface: Surface,
    *,
    model: str,
    focus: str | None,
    top: int,
    dtype: str,
    output: Path | None,
) -> None:
    """``attnviz lens``: the reading printed, and drawn when ``output`` names a picture."""
    from attnviz.api.writing import check_outputs
    from attnviz.lesson.lens import lens_blocks
    from attnviz.lesson.options import LessonOptions
    from attnviz.render.terminal.lesson import print_blocks

    check_outputs(None, (output, "--output"))
    found = lensed(prompt, model, focus, top, dtype)
    blocks = lens_blocks(found.reading, found.names, found.model, found.labels, found.final_norm)
    print_blocks(blocks, surface.console(), LessonOptions(decimals=0))
    if output is not None:
        from attnviz.render.figures.lens import save_lens_picture

        reading = found.reading
        title = f"The logit lens: {found.model} at ‘{found.labels[reading.position]}’"
        save_lens_picture(
            reading.top_probabilities, found.names, reading.final_probability, title, output
        )
        surface.wrote(output)


@one_at_a_time
def lens(
    prompt: str,
    *,
    model: str = DEFAULT_MODEL,
    focus: str | None = None,
    top: int = 5,
    dtype: str = "float32",
) -> Any:
    """The logit lens, as ``attnviz lens`` prints it: the residual stream at ``focus`` (a token
    of the prompt as shown; the last by default) after each layer, read through the model's
    final norm and output layer: ``.reading.top_ids`` and ``.top_probabilities`` [layers + 1,
    top], ``.final_rank`` and ``.final_probability`` of the last layer's token; ``.names``.

    >>> import attnviz
    >>> found = attnviz.lens("j k l a b c d e a b")
    >>> found.names[-1][0], int(found.reading.final_rank[0])
    (' c', 14)
    """
    return lensed(prompt, model, focus, top, dtype)
