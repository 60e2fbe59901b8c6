"""The words every format of a worksheet shares."""

from __future__ import annotations

from attnviz.exercise.questions import Given
from attnviz.render.worksheet.sheet import (
    LABEL_CHARS,
    answer_prompt,
    clipped_label,
    given_text,
    key_answer,
    table_lines,
)
from render.worksheet.made import question, sheets


def test_a_table_of_givens_aligns_labels_over_values_and_wraps_within_the_width() -> None:
    given = Given("q", tuple(f"word{i}" for i in range(20)), tuple(i / 4 - 2 for i in range(20)), 2)
    lines = table_lines(given, 40)
    assert len(lines) > 2 and len(lines) % 2 == 0
    assert all(len(line) <= 40 for line in lines)
    labels = " ".join(lines[0::2]).split()
    values = " ".join(lines[1::2]).split()
    assert labels == list(given.labels)
    assert values == [f"{value:.2f}" for value in given.values]
    for label_line, value_line in zip(lines[0::2], lines[1::2], strict=True):
        assert len(label_line) == len(value_line)  # right-aligned columns of one width


def test_a_long_word_is_clipped_in_a_table_header_only() -> None:
    word = "Donaudampfschifffahrt"
    assert len(clipped_label(word)) == LABEL_CHARS and clipped_label(word).endswith("…")
    given = Given("k", (word,), (1.0,), 1)
    assert word not in table_lines(given, 80)[0] and word in given_text(given)


def test_the_prompt_and_the_key_say_the_decimals_and_tolerance() -> None:
    asked = question(0, answer=-0.004, tolerance=0.01)
    assert answer_prompt(asked) == "Answer (2 decimals, within 0.01):"
    assert key_answer(asked) == "0.00 (within 0.01)"  # no minus sign on a zero


def test_a_sheet_is_numbered_only_in_a_set_of_several() -> None:
    one = sheets(copies=1)[0]
    assert one.label == "Sheet 1" and one.heading(key=True).startswith("Answer key")
    assert sheets(copies=3)[2].label == "Sheet 3 of 3"
    assert "pencil and paper" in one.heading(key=False)
    assert "pencil" not in sheets(copies=1, hand=False)[0].heading(key=False)
