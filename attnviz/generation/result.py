"""A whole generation as ``attnviz.generate`` returns it: the prompt, each new token worked out,
the proof, and what --sinks and --window add."""

from __future__ import annotations

from dataclasses import dataclass

from attnviz.generation.run import CacheProof, GeneratedToken, Window
from attnviz.generation.sampling import Sampling
from attnviz.generation.sinks import FirstToken, HeldText


@dataclass(frozen=True, eq=False)
class Generation:
    """A whole generation: the prompt, each new token worked out, and the proof."""

    model: str
    prompt_ids: tuple[int, ...]
    prompt_tokens: tuple[str, ...]  # as shown
    tokens: tuple[GeneratedToken, ...]
    texts: tuple[str, ...]  # the text each new token adds
    sampling: Sampling
    seed: int | None
    proof: CacheProof | None
    ended: bool  # the last token is the model's end of text
    window: Window | None = None  # the sliding cache it ran with, if any
    first_token: FirstToken | None = None  # the first token's figures (--sinks)
    held: HeldText | None = None  # the prompt read with windows keeping and dropping (--window)
    # The text of each token's shown candidates (its choice's ``shown`` ids), token by token.
    shown_texts: tuple[tuple[str, ...], ...] = ()
