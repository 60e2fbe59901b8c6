"""Token ids back into text, piece by piece as they are generated: a piece's bytes may be only
part of a character (byte-level BPE splits "é" over two tokens), so the text is decoded as bytes
arrive and a character is shown once it is whole."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

from attnviz.model.sources.tokenizer_pieces import Pieces, byte_characters

METASPACE = "▁"


def piece_bytes(pieces: Pieces, token_id: int) -> bytes:
    """The bytes token ``token_id`` stands for (a special token: its name, as text)."""
    token = pieces.tokens[token_id] if 0 <= token_id < len(pieces.tokens) else ""
    if token_id in pieces.special:
        return token.encode()
    if pieces.scheme == "byte-level":
        alphabet = byte_characters()
        if all(character in alphabet for character in token):
            return bytes(alphabet[character] for character in token)
        return token.encode()
    if pieces.scheme == "metaspace":
        match = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", token)
        if match:
            return bytes([int(match.group(1), 16)])
        return token.replace(METASPACE, " ").encode()
    return token.encode()


@dataclass
class TextStream:
    """The generated text so far: ``add`` a token, get the text it completes (maybe "")."""

    pieces: Pieces
    separator: str = ""  # put before every piece: " " for a vocabulary of whole words
    _decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )

    def add(self, token_id: int) -> str:
        data = piece_bytes(self.pieces, token_id)
        return self.separator * bool(self.separator) + self._decoder.decode(data)

    def finish(self) -> str:
        """What is left of a character cut short when generation stopped (as U+FFFD)."""
        return self._decoder.decode(b"", final=True)


def words_pieces(vocabulary: tuple[str, ...]) -> Pieces:
    """A toy model's vocabulary of whole words as pieces (shown with a space before each)."""
    return Pieces(tuple(vocabulary), frozenset(), "plain")


def piece_text(pieces: Pieces, token_id: int, separator: str = "") -> str:
    """Token ``token_id`` alone as text (bytes that are only part of a character as U+FFFD)."""
    return separator + piece_bytes(pieces, token_id).decode("utf-8", errors="replace")


def label(text: str) -> str:
    """A generated token as a key's label: its text without the space before a word; one that
    is only whitespace with it made visible (a line break as \\n, a space as ␣)."""
    visible = text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return visible.strip() or visible.replace(" ", "␣")
