"""The lesson a class can follow: each step explained once, one head in full and the focus
word's row of every other head, short enough to read, every number still reachable
(--head all, --full)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import attnviz
from attnviz.lesson.blocks import Heading, Matrix, Paragraph, Tables
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import step_number

from support import written_lesson as lesson

SEEDS = "The animal didn't cross the street because it was too tired"
QKV = step_number("qkv")


def text_of(sentence: str, **options: object) -> str:
    return attnviz.lesson(attnviz.explain(sentence, **options), width=100)  # type: ignore[arg-type]


def lines(sentence: str, **options: object) -> int:
    return len(text_of(sentence, **options).splitlines())


@pytest.mark.parametrize(
    ("sentence", "options", "most"),
    [
        ("I am good", {}, 140),
        (SEEDS, {}, 220),
        (SEEDS, {"model": "coref"}, 200),
        ("The cat sat because it was tired", {"heads": 4, "d_model": 16}, 250),
    ],
)
def test_the_lesson_is_short_enough_to_follow(
    sentence: str, options: dict[str, object], most: int
) -> None:
    assert lines(sentence, **options) <= most


def paragraphs_with(blocks: list[object], fragment: str) -> int:
    return sum(
        fragment in "".join(span.text for span in block.spans)
        for block in blocks
        if isinstance(block, Paragraph)
    )


@pytest.mark.parametrize(
    "fragment",
    [
        "score[i, j] = q_i · k_j",  # the raw scores
        "mean 0 and variance 1",  # the scaling
        "Each row of scaled scores s becomes",  # the softmax
        "A query asks what a word",  # the projections
    ],
)
def test_each_explanation_is_said_once_with_every_head_in_full(fragment: str) -> None:
    shown = attnviz.explain("I am good", heads=4, d_model=8, head="all")
    blocks = lesson(shown.trace, shown.selection, LessonOptions(every_head=True))
    assert paragraphs_with(blocks, fragment) == 1
    # Every head still has its own heading, tables and worked examples.
    headings = [b.text for b in blocks if isinstance(b, Heading) and b.level == "section"]
    assert [h for h in headings if h.startswith("Head")] == [f"Head {i} of 4" for i in range(1, 5)]
    full = lesson(shown.trace, shown.selection, LessonOptions(full=True))
    assert paragraphs_with(full, fragment) == 4  # --full: with every head, as the page has it


def row_tables(sentence: str, **options: object) -> tuple[attnviz.Explanation, list[Matrix]]:
    shown = attnviz.explain(sentence, **options)  # type: ignore[arg-type]
    blocks = lesson(shown.trace, shown.selection, LessonOptions())
    return shown, [b for b in blocks if isinstance(b, Matrix) and b.title.startswith("head ")]


def test_every_other_head_gives_the_focus_words_rows_of_its_tables() -> None:
    shown, tables = row_tables(SEEDS, heads=3, d_model=12)
    trace = shown.trace
    it = trace.tokens.index("it")
    vectors = [t for t in tables if "the rows of" in t.title]
    pairs = [t for t in tables if "scores, scaled scores and weights" in t.title]
    assert [t.title.split(":")[0] for t in vectors] == ["head 2", "head 3"]
    for head, (vector, pair) in enumerate(zip(vectors, pairs, strict=True), start=1):
        assert list(vector.row_labels) == ["q_it", "k_it", "v_it", "z_it"]
        expected = np.stack(
            [trace.Q[head, it], trace.K[head, it], trace.V[head, it], trace.Z[head, it]]
        )
        np.testing.assert_array_equal(vector.values, expected)  # the trace's own numbers
        assert list(pair.row_labels) == ["scores", "scaled", "weights"]
        np.testing.assert_array_equal(
            pair.values,
            np.stack([trace.scores[head, it], trace.scaled[head, it], trace.weights[head, it]]),
        )


def test_head_n_is_shown_in_full_and_the_others_by_their_rows() -> None:
    text = text_of("I am good", head=2)
    assert f"Step {QKV} · Queries, keys and values of head 2" in text
    assert f"Step {QKV} · Queries, keys and values of head 1" not in text
    assert "Head 1 of 2 · the row of 'I' (head=1 shows it in full)" in text
    # Head 2, in full, comes first: its explanations are the lesson's.
    assert text.index("of head 2") < text.index("Head 1 of 2")


def test_head_all_shows_every_head_in_full_and_full_gives_all_the_text() -> None:
    every = text_of("I am good", head="all")
    assert f"Step {QKV} · Queries, keys and values of head 1" in every
    assert f"Step {QKV} · Queries, keys and values of head 2" in every
    assert "the row of" not in every
    shown = attnviz.explain("I am good")
    full = attnviz.lesson(shown, full=True, width=100)
    assert full.count("Why: if the components of q and k were independent") == 2
    assert "Concat = [Z₁ | … | Z_h]  [3 × 8]" in full  # the Concat table, left out by default
    assert "Concat = [Z₁ | … | Z_h]  [3 × 8]" not in attnviz.lesson(shown, width=100)


def test_a_head_that_does_not_exist_or_a_word_for_it_is_refused() -> None:
    with pytest.raises(attnviz.AttnvizError, match=r"head=3 does not exist"):
        attnviz.explain("I am good", head=3)
    with pytest.raises(attnviz.AttnvizError, match=r"head=.some.: give a head's number"):
        attnviz.explain("I am good", head="some")


@pytest.mark.slow
def test_the_random_lesson_of_a_sentence_coref_knows_names_the_command() -> None:
    text = " ".join(text_of(SEEDS).split())
    said = re.findall(r"A model trained for this sentence: (.*?) shows coref", text)
    assert said == [f"attnviz.explain({SEEDS!r}, model='coref')"]  # the API's own words
    assert "A model trained for this sentence" not in text_of("I am good")  # not coref's words
    assert "A model trained for this sentence" not in text_of(SEEDS, model="coref")


def test_squeezed_tables_keep_their_rows_on_the_same_lines() -> None:
    text = text_of(SEEDS, model="coref").splitlines()
    titles = next(i for i, line in enumerate(text) if line.startswith("Q₁ = X·W_Q₁"))
    header = next(i for i in range(titles, titles + 6) if text[i].lstrip().startswith("1 "))
    assert "K₁" in text[titles] and "V₁" in text[titles]  # side by side
    assert text[header + 1].count("─") > 60 and "  " in text[header + 1]  # three rules, one line
    shown = attnviz.explain(SEEDS, model="coref")
    blocks = lesson(shown.trace, shown.selection, LessonOptions())
    (qkv,) = [b for b in blocks if isinstance(b, Tables)]
    assert qkv.squeeze and not lesson(shown.trace, shown.selection, LessonOptions(full=True))[0:0]
