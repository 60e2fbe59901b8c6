"""attnviz.model.sources.tokenizer: a sentence as the model sees it (ids, the pieces as shown, which
pieces make one word, which are special), from a BERT vocab.txt, GPT-2's byte-level BPE, or
the SentencePiece-style BPE of Llama 2 (▁ for spaces, byte fallback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.errors import AttnvizError
from model.checkpoints import GPT2, LLAMA, QWEN2, tiny_bert

from support import needs_model

pytestmark = needs_model


def test_a_vocab_txt_gives_wordpieces_between_cls_and_sep(tmp_path: Path) -> None:
    from attnviz.model.sources.tokenizer import encode, load_tokenizer

    encoding = encode(load_tokenizer(tiny_bert(tmp_path / "bert")), "I am good", 16)
    assert encoding.tokens == ("[CLS]", "i", "am", "good", "[SEP]")  # lowercased, as BERT's
    assert encoding.ids == (2, 5, 6, 7, 3) and encoding.special == (0, 4)
    groups, words = encoding.words()
    assert groups == ((0,), (1,), (2,), (3,), (4,))
    assert words == ("[CLS]", "I", "am", "good", "[SEP]")  # the words as written


def test_byte_level_pieces_are_shown_as_the_text_they_spell() -> None:
    from attnviz.model.sources.tokenizer import SPACE, encode, load_tokenizer, token_text

    tokenizer = load_tokenizer(GPT2)
    encoding = encode(tokenizer, "The animal didn't", 64)
    assert not any(token.startswith("Ġ") for token in encoding.tokens)
    assert "".join(encoding.tokens) == "Theanimaldidn't"  # the word-initial spaces left out
    groups, words = encoding.words()
    assert words == ("The", "animal", "didn", "'t")  # GPT-2 cuts "'t" off as a word
    assert [len(group) for group in groups] == [1, 4, 3, 1]  # a word and its pieces
    assert token_text(tokenizer, tokenizer.token_to_id("Ġ")) == SPACE  # only a space: visible


def test_padding_appends_special_tokens_and_a_long_sentence_is_refused() -> None:
    from attnviz.model.sources.tokenizer import encode, load_tokenizer

    tokenizer = load_tokenizer(GPT2)
    encoding = encode(tokenizer, "I am good", 64)
    padded = encoding.padded(len(encoding.ids) + 2, 0, "<|endoftext|>")
    assert padded.tokens[-2:] == ("<|endoftext|>",) * 2 and padded.ids[-2:] == (0, 0)
    assert padded.special == (len(encoding.ids), len(encoding.ids) + 1)
    with pytest.raises(AttnvizError, match="the model has 64 positions. Shorten it."):
        encode(tokenizer, "word " * 100, 64)  # refused, never truncated
    with pytest.raises(AttnvizError, match=r"not UTF-8 text \(\\xe9\)"):
        encode(tokenizer, "caf\udce9", 64)


def test_sentencepiece_pieces_are_shown_as_text_and_bytes_as_bytes() -> None:
    from attnviz.model.sources.tokenizer import SPACE, encode, load_tokenizer, token_text

    tokenizer = load_tokenizer(LLAMA)
    encoding = encode(tokenizer, "Zebras  jumped—über it", 64)
    assert tokenizer.id_to_token(encoding.ids[-1]) == "▁it"
    assert encoding.tokens[0] == "<s>" and encoding.special == (0,)  # the post-processor's
    assert encoding.tokens[-1] == "it" and not any("▁" in token for token in encoding.tokens)
    assert "Z" in encoding.tokens  # <0x5A>, a whole character: shown as one
    assert ("<e2>", "<80>", "<94>") == encoding.tokens[15:18]  # the dash's three bytes
    assert token_text(tokenizer, tokenizer.token_to_id("▁")) == SPACE
    groups, words = encoding.words()
    assert words == ("<s>", "Zebras", "jumped", "—", "über", "it")
    assert groups[3] == (15, 16, 17)  # one character's bytes, one word


def test_sentencepiece_words_split_at_spaces_and_around_punctuation() -> None:
    from attnviz.model.sources.tokenizer import encode, load_tokenizer

    tokenizer = load_tokenizer(LLAMA)
    encoding = encode(tokenizer, "it was tired! the cat; it (was) good", 64)
    # The tokenizers library puts every piece of a tokenizer without a pre-tokenizer in word 0.
    assert len(set(encoding.word_ids) - {None}) > 1
    words = ("<s>", "it", "was", "tired", "!", "the", "cat", ";", "it", "(", "was", ")", "good")
    assert encoding.words()[1] == words


def test_a_byte_level_tokenizer_with_a_template_puts_its_begin_token_first() -> None:
    from attnviz.model.sources.tokenizer import encode, load_tokenizer

    encoding = encode(load_tokenizer(QWEN2), "it was good", 64)
    assert encoding.tokens == ("<s>", "it", "was", "good") and encoding.special == (0,)
    assert encoding.words()[1] == ("<s>", "it", "was", "good")
