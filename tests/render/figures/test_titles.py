"""The phrases of a figure's title: the sentence, the rows' sums, packed into lines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import attnviz
from attnviz.render.figures.titles import pack_phrases, pieces_text, row_sums_phrase, sentence_text


def test_sentence_text_glues_punctuation_and_escapes_control_characters() -> None:
    assert sentence_text(["I", "am", "good", "."]) == "I am good."
    assert sentence_text(["Hi", ",", "you", "!"]) == "Hi, you!"
    assert sentence_text(["a\x1b", "b"]) == "a\\x1b b"


def test_pack_phrases_breaks_only_between_phrases() -> None:
    assert pack_phrases(["d_model 8", "2 heads", "d_k 4"], 20) == ["d_model 8; 2 heads", "d_k 4"]
    assert pack_phrases(["d_model 8", "2 heads"], 100) == ["d_model 8; 2 heads"]
    assert pack_phrases(["a very long phrase indeed"], 10) == ["a very lo…"]


def test_row_sums_phrase_names_the_hidden_tokens_once() -> None:
    assert row_sums_phrase(np.array([[1.0, 1 - 1e-7]]), ["[PAD]"]) == "each row sums to 1"
    assert (
        row_sums_phrase(np.array([0.9, 0.5]), ["[CLS]", "[SEP]", "[SEP]"])
        == "[CLS]/[SEP] hidden: rows sum to less than 1"
    )


def test_pieces_text_joins_the_tokenizers_words_and_leaves_out_special_tokens() -> None:
    tokens = ["[CLS]", "token", "##ization", "didn", "'", "t", "work", ".", "[SEP]"]
    pieces = attnviz.trace_attention(tokens)
    words = ("[CLS]", "tokenization", "didn't", "work.", "[SEP]")
    groups = ((0,), (1, 2), (3, 4, 5), (6, 7), (8,))
    provenance = pieces.provenance._replace(special=(0, 8), word_groups=groups, words=words)
    assert pieces_text(replace(pieces, provenance=provenance)) == "tokenization didn't work."
    own = attnviz.trace_attention(["rock", "'", "n", "roll", "."])
    assert pieces_text(own) == "rock ' n roll."  # attnviz's own tokens: punctuation glued
    padded = attnviz.trace_attention(["[CLS]", "[SEP]"])
    assert pieces_text(padded) == "[CLS] [SEP]"  # no word of its own: the tokens as they are
