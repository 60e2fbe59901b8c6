"""What a tokenizer's vocabulary says about turning ids back into text: its pieces, which are
special, and how the pieces spell text (GPT-2's byte alphabet, SentencePiece's ▁ and byte
pieces, or plain pieces)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from attnviz.model.sources.sandbox import IsolatedTokenizer, run_isolated

METASPACE = "▁"


def special_ids(tokenizer: Any) -> set[int]:
    return {int(i) for i, added in tokenizer.get_added_tokens_decoder().items() if added.special}


@cache
def byte_characters() -> dict[str, int]:
    """Byte-level BPE's alphabet, character -> byte: GPT-2 writes each byte as a printable
    character, the printable ASCII and Latin-1 ones as themselves and the others (space,
    control bytes, …) as the characters from U+0100 on, in byte order (so a space is "Ġ")."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    kept += range(ord("®"), ord("ÿ") + 1)
    characters = {chr(byte): byte for byte in kept}
    shifted = 0
    for byte in range(256):
        if byte not in kept:
            characters[chr(256 + shifted)] = byte
            shifted += 1
    return characters


def is_byte_level(tokenizer: Any) -> bool:
    """Whether the tokenizer works on bytes (GPT-2's BPE): its pieces are shown decoded."""
    from tokenizers import decoders

    return isinstance(getattr(tokenizer, "decoder", None), decoders.ByteLevel)


def is_metaspace(tokenizer: Any) -> bool:
    """Whether the tokenizer writes spaces as ▁ (SentencePiece's way: Llama 2, TinyLlama): its
    decoder is a Metaspace one, or a sequence that replaces ▁ by a space."""
    from tokenizers import decoders

    decoder = getattr(tokenizer, "decoder", None)
    if isinstance(decoder, decoders.Metaspace):
        return True
    if not isinstance(decoder, decoders.Sequence):
        return False
    # A Sequence does not list its parts in Python; its JSON does.
    try:
        steps = json.loads(decoder.__getstate__()).get("decoders", [])
    except (ValueError, AttributeError):
        return False
    return any(
        step.get("type") == "Metaspace"
        or (step.get("type") == "Replace" and step.get("pattern", {}).get("String") == METASPACE)
        for step in steps
        if isinstance(step, dict)
    )


@dataclass(frozen=True)
class Pieces:
    """What turns token ids back into text: every piece of the vocabulary as stored, which of
    them are special, and how the pieces spell text ("byte-level": GPT-2's byte alphabet;
    "metaspace": ▁ for a space and <0xNN> bytes; "plain": the pieces as they are)."""

    tokens: tuple[str, ...]  # by id
    special: frozenset[int]
    scheme: str


def pieces(tokenizer: Any) -> Pieces:
    """The vocabulary of ``tokenizer`` for decoding (an IsolatedTokenizer answers from one
    child process: the whole vocabulary at once, not a process per token)."""
    if isinstance(tokenizer, IsolatedTokenizer):
        fields = run_isolated(lambda: pieces_fields(pieces(tokenizer.build())), tokenizer.source)
        return pieces_from_fields(fields)
    vocabulary = tokenizer.get_vocab(with_added_tokens=True)
    tokens = [""] * (max(vocabulary.values(), default=-1) + 1)
    for token, token_id in vocabulary.items():
        tokens[token_id] = token
    scheme = "metaspace" if is_metaspace(tokenizer) else "plain"
    if is_byte_level(tokenizer):
        scheme = "byte-level"
    return Pieces(tuple(tokens), frozenset(special_ids(tokenizer)), scheme)


def pieces_fields(found: Pieces) -> dict[str, Any]:
    """``found`` as JSON can carry it from a child process (a list for the set)."""
    fields = asdict(found)
    fields["special"] = sorted(found.special)
    return fields


def pieces_from_fields(fields: dict[str, Any]) -> Pieces:
    """The Pieces a child process sent as pieces_fields made them."""
    return Pieces(
        tuple(str(token) for token in fields["tokens"]),
        frozenset(int(i) for i in fields["special"]),
        str(fields["scheme"]),
    )
