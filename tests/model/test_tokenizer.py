"""attnviz.model.tokenizer: a sentence as the model sees it (ids, the pieces as shown, which
pieces make one word, which are special), from a BERT vocab.txt or GPT-2's byte-level BPE."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.errors import AttnvizError
from model.checkpoints import GPT2, tiny_bert

from support import needs_model

pytestmark = needs_model


def test_a_vocab_txt_gives_wordpieces_between_cls_and_sep(tmp_path: Path) -> None:
    from attnviz.model.tokenizer import encode, load_tokenizer

    encoding = encode(load_tokenizer(tiny_bert(tmp_path / "bert")), "I am good", 16)
    assert encoding.tokens == ("[CLS]", "i", "am", "good", "[SEP]")  # lowercased, as BERT's
    assert encoding.ids == (2, 5, 6, 7, 3) and encoding.special == (0, 4)
    groups, words = encoding.words()
    assert groups == ((0,), (1,), (2,), (3,), (4,))
    assert words == ("[CLS]", "I", "am", "good", "[SEP]")  # the words as written


def test_byte_level_pieces_are_shown_as_the_text_they_spell() -> None:
    from attnviz.model.tokenizer import SPACE, encode, load_tokenizer, token_text

    tokenizer = load_tokenizer(GPT2)
    encoding = encode(tokenizer, "The animal didn't", 64)
    assert not any(token.startswith("Ġ") for token in encoding.tokens)
    assert "".join(encoding.tokens) == "Theanimaldidn't"  # the word-initial spaces left out
    groups, words = encoding.words()
    assert words == ("The", "animal", "didn", "'t")  # GPT-2 cuts "'t" off as a word
    assert [len(group) for group in groups] == [1, 4, 3, 1]  # a word and its pieces
    assert token_text(tokenizer, tokenizer.token_to_id("Ġ")) == SPACE  # only a space: visible


def test_padding_appends_special_tokens_and_a_long_sentence_is_refused() -> None:
    from attnviz.model.tokenizer import encode, load_tokenizer

    tokenizer = load_tokenizer(GPT2)
    encoding = encode(tokenizer, "I am good", 64)
    padded = encoding.padded(len(encoding.ids) + 2, 0, "<|endoftext|>")
    assert padded.tokens[-2:] == ("<|endoftext|>",) * 2 and padded.ids[-2:] == (0, 0)
    assert padded.special == (len(encoding.ids), len(encoding.ids) + 1)
    with pytest.raises(AttnvizError, match="the model has 64 positions. Shorten it."):
        encode(tokenizer, "word " * 100, 64)  # refused, never truncated
    with pytest.raises(AttnvizError, match=r"not UTF-8 text \(\\xe9\)"):
        encode(tokenizer, "caf\udce9", 64)
