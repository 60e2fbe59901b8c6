"""The phrases of a figure's title: the sentence, the rows' sums, packed into lines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import attnviz
from attnviz.render.figures.titles import pack_phrases, pieces_text, row_sums_phrase, sentence_text


def test_sentence_text_glues_punctuation_and_escapes_control_characters() -> None:
    assert sentence_text(["I", "am", "good", "."]) == "I am good."
    assert sentence_text(["Hi", ",", "you", "!"]) == "Hi, you!"
    assert sentence_text(["a\x1b", "b"]) == "a\\x1b b"


def test_pack_phrases_breaks_only_between_phrases() -> None:
    assert pack_phrases(["d_model 8", "2 heads", "d_k 4"], 20) == ["d_model 8; 2 heads", "d_k 4"]
    assert pack_phrases(["d_model 8", "2 heads"], 100) == ["d_model 8; 2 heads"]
    # A phrase longer than a line breaks after a comma, else between words, never inside one.
    assert pack_phrases(["a very long phrase indeed"], 10) == ["a very", "long", "phrase", "indeed"]
    assert pack_phrases(["random weights (seed 0), not a trained model"], 40) == [
        "random weights (seed 0),",
        "not a trained model",
    ]
    assert pack_phrases(["a " + "w" * 30 + " b"], 10) == ["a", "wwwwwwwww…", "b"]  # one word


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


@pytest.mark.parametrize("width", [3.5, 4.0, 5.0, 6.5, 9.0])
def test_a_title_keeps_every_word_and_the_caveat_whole_at_any_width(width: float) -> None:
    """Title lines of a heatmap, a cross-attention heatmap and a layers grid break between
    words: the words of every line after the sentence are the phrases' words, none cut, and
    "not a trained model" is on one line."""
    from attnviz.render.figures.fonts import CHAR_WIDTH
    from attnviz.render.grid import layers_title_lines
    from attnviz.render.heatmap import MARGIN, title_lines

    from support import shown

    long = "the animal that nobody had ever seen before did not cross the busy street"
    self_trace = attnviz.explain(long).trace
    cross_trace = attnviz.cross("I am very good", "Je vais bien", heads=2).trace
    for trace in (self_trace, cross_trace):
        lines = title_lines(trace, shown(trace), width)
        max_chars = int((width - 2 * MARGIN) * 72 / (CHAR_WIDTH * 12.0))
        assert all(len(line) <= max(max_chars, 1) for line in lines[1:]), lines
        assert any("not a trained model" in line for line in lines), lines
        assert not any(line.endswith("…") for line in lines[1:] if "“" not in line), lines
    grid = layers_title_lines([self_trace], shown(self_trace), width)
    assert any("not a trained model" in line for line in grid), grid
    assert not any(line.endswith("…") for line in grid[1:]), grid
