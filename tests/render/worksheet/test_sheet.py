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
    value_text,
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
    assert one.subtitle is not None and "pencil and paper" in one.subtitle
    assert sheets(copies=1, hand=False)[0].subtitle is None


def test_a_given_is_written_to_the_fewest_decimals_that_show_all_its_values() -> None:
    def shown(values: tuple[float, ...], decimals: int = 2) -> list[str]:
        given = Given("g", tuple("1" * len(values)), values, decimals)
        return [value_text(given, value) for value in values]

    assert shown((0.0, 1.0, -1.0)) == ["0", "1", "-1"]  # a hand sheet's row of X
    assert shown((1.0, -0.5)) == ["1.0", "-0.5"]  # a hand sheet's column of W_Q
    assert shown((0.43, 0.5)) == ["0.43", "0.50"]  # one decimals for the whole given
    assert shown((1.71, 2.0), 3) == ["1.71", "2.00"]
    assert shown((-0.0001,), 3) == ["0"]  # no minus sign on a zero


def test_a_wrapped_table_shares_its_columns_out_evenly() -> None:
    given = Given(
        "scores", tuple(f"w{i:02d}" for i in range(11)), tuple(-10.5 for _ in range(11)), 2
    )
    lines = table_lines(given, 50)  # 11 columns of 8 characters: 6 fit on a line
    assert [len(line.split()) for line in lines] == [6, 6, 5, 5]
