"""Tokenizing and choosing the focus word."""

from __future__ import annotations

import time

import pytest

import attnviz
from attnviz.cli import run
from attnviz.config import MAX_TOKENS
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.tokens import MAX_SENTENCE_CHARS, default_focus, find_focus, printable, tokenize


@pytest.mark.parametrize(
    ("sentence", "tokens"),
    [
        ("I am good", ["I", "am", "good"]),
        ("The animal didn't cross.", ["The", "animal", "didn't", "cross", "."]),
        (
            "it\u2019s well-known, isn't it?",
            ["it\u2019s", "well", "-", "known", ",", "isn't", "it", "?"],
        ),
        ("  Thinking   Machines\n", ["Thinking", "Machines"]),
        ("e\u0301te\u0301 東京 \U0001f44d\U0001f3fd", ["été", "東京", "\U0001f44d\U0001f3fd"]),
        # Flags are two regional indicators; a third starts the next flag.
        ("🇫🇷🇩🇪 🇫", ["🇫🇷", "🇩🇪", "🇫"]),
        ("👨\u200d👩\u200d👧 1\ufe0f\u20e3", ["👨\u200d👩\u200d👧", "1\ufe0f\u20e3"]),
    ],
)
def test_tokenize(sentence: str, tokens: list[str]) -> None:
    assert tokenize(sentence) == tokens


@pytest.mark.parametrize("sentence", ["", "   ", "\n\t"])
def test_empty_sentence_is_refused(sentence: str) -> None:
    with pytest.raises(AttnvizError, match="empty"):
        tokenize(sentence)


def test_too_many_tokens_is_refused_and_the_limit_is_accepted() -> None:
    assert len(tokenize("a " * MAX_TOKENS)) == MAX_TOKENS
    with pytest.raises(AttnvizError, match=f"{MAX_TOKENS + 1} tokens.*at most {MAX_TOKENS}"):
        tokenize("a " * (MAX_TOKENS + 1))


def test_focus_first_and_second_occurrence() -> None:
    tokens = tokenize("it rained and it poured")
    first = find_focus(tokens, "it")
    second = find_focus(tokens, "IT:2")
    assert (first.index, first.occurrence, first.n_occurrences, first.label) == (0, 1, 2, "it:1")
    assert (second.index, second.label) == (3, "it:2")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cat", "not in the sentence"),
        ("it:3", "occurs 2 time"),
        ("it:0", "numbered from 1"),
        ("", "empty"),
    ],
)
def test_focus_errors(spec: str, message: str) -> None:
    with pytest.raises(AttnvizError, match=message):
        find_focus(tokenize("it rained and it poured"), spec)


def test_focus_may_contain_a_colon_that_is_not_an_occurrence() -> None:
    assert find_focus(tokenize("a : b"), ":").index == 1


def test_default_focus_is_it_when_present() -> None:
    focus = default_focus(tokenize("The animal was tired because It was late"))
    assert focus is not None and focus.word == "It"
    assert default_focus(tokenize("I am good")) is None


def test_printable_escapes_control_characters_and_keeps_text() -> None:
    assert printable("\x1b[31mred\x07\x08\r\x00") == "\\x1b[31mred\\x07\\x08\\r\\x00"
    assert printable("東京 👨\u200d👩\u200d👧 [bold]x[/]") == "東京 👨\u200d👩\u200d👧 [bold]x[/]"


def test_a_sentence_longer_than_the_limit_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert len(tokenize("a" * MAX_SENTENCE_CHARS)) == 1
    with pytest.raises(AttnvizError, match=f"at most {MAX_SENTENCE_CHARS:,}"):
        tokenize("a" * (MAX_SENTENCE_CHARS + 1))
    with pytest.raises(AttnvizError, match="20,001 characters"):
        attnviz.trace_attention(["a" * 10_000, "b" * 10_001])
    started = time.perf_counter()
    assert run(["explain", "word " * 200_000]) == ExitStatus.BAD_INPUT  # a megabyte
    assert time.perf_counter() - started < 5
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "error: The sentence has 1,000,000 characters; attnviz takes at most 20,000. Shorten it."
    )
