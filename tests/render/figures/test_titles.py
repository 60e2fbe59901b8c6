"""The phrases of a figure's title: the sentence, the rows' sums, packed into lines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import attnviz
from attnviz.render.figures.titles import pack_phrases, pieces_text, row_sums_phrase, sentence_text
from render.analysed import for_grid


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


@pytest.mark.slow
@pytest.mark.parametrize("width", [3.5, 4.0, 5.0, 6.5, 9.0])
def test_a_title_keeps_two_lines_and_the_caption_every_word_at_any_width(width: float) -> None:
    """The title of a heatmap, a cross-attention heatmap and a layers grid is two lines at
    most, each as FreeType measures it within the width; a phrase of the second line that does
    not fit goes whole to the caption, whose lines fit too and cut no word (…); and "not a
    trained model" is said."""
    from attnviz.render.figures.fonts import text_width
    from attnviz.render.figures.grid import layers_text
    from attnviz.render.figures.heatmap_text import heatmap_text

    from support import shown

    long = "the animal that nobody had ever seen before did not cross the busy street"
    self_trace = attnviz.explain(long).trace
    cross_trace = attnviz.cross("I am very good", "Je vais bien", heads=2).trace
    texts = [heatmap_text(trace, shown(trace)) for trace in (self_trace, cross_trace)]
    for text in [*texts, layers_text(for_grid([self_trace]), shown(self_trace))]:
        title = text.title(width, 12.0)
        caption = text.caption((width, 12.0), width, 10.0)
        assert 1 <= len(title) <= 2, title
        assert all(text_width(line, 12.0) <= width for line in title), title
        assert all(text_width(line, 10.0) <= width for line in caption), caption
        assert not any("…" in line for line in caption), caption
        said = " ".join(" ".join([*title[1:], *caption]).split()).casefold()
        assert all(phrase.casefold() in said for phrase in text.about), (text.about, said)
        assert "not a trained model" in said


def test_phrases_the_second_line_cannot_hold_open_the_caption_in_their_order() -> None:
    from attnviz.render.figures.titles import FigureText, quoted_sentence

    text = FigureText(
        quoted_sentence("I am good"),
        about=("attention weights", "random weights (seed 0), not a trained model", "d_k 4"),
        facts=("each row sums to 1",),
        notes=("A note.",),
    )
    title = text.title(3.0, 12.0)
    assert title == ["“I am good”", "attention weights; d_k 4"]
    caption = " ".join(text.caption((3.0, 12.0), 3.0, 10.0))
    assert caption.startswith("Random weights (seed 0), not a trained model; each row sums")
    assert caption.endswith("to 1.  A note.")  # a paragraph is an empty line apart
