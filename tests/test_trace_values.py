"""An export's provenance checked against what the file holds when it is read back: a padding
count the tokens and mask cannot have, token positions past its tokens. load_trace refuses
them with FileProblem, so lesson() and the views never index past a trace."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import attnviz
from attnviz.cli import app
from attnviz.errors import FileProblem
from attnviz.trace_files import load_trace

from support import CliRunner

runner = CliRunner()


def padded_export(tmp_path: Path) -> Path:
    """A random trace of "I am good" padded to 5 tokens, exported as JSON."""
    path = tmp_path / "padded.json"
    result = runner.invoke(app, ["explain", "I am good", "--pad-to", "5", "--export", str(path)])
    assert result.exit_code == 0, result.output
    return path


def edited(path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document["config"]["provenance"])
    out = path.with_name("edited.json")
    out.write_text(json.dumps(document), encoding="utf-8")
    return out


def set_padding(value: int) -> Callable[[dict[str, Any]], None]:
    return lambda provenance: provenance["masking"].__setitem__("padding", value)


def test_a_padded_export_reads_back_and_teaches(tmp_path: Path) -> None:
    (trace,) = load_trace(padded_export(tmp_path))
    assert trace.provenance.masking.padding == 2
    assert "[PAD]" in attnviz.lesson(trace)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("padding", "message"),
    [
        (10**9, "its provenance says 1000000000 of its 5 tokens are padding"),
        (5, "its provenance says 5 of its 5 tokens are padding"),
        (-3, "its provenance is not one attnviz wrote (a count or token position is negative)"),
        (3, "says the last 3 tokens are padding, but its mask does not hide them"),
    ],
)
def test_a_padding_count_the_file_cannot_have_is_refused(
    padding: int, message: str, tmp_path: Path
) -> None:
    path = edited(padded_export(tmp_path), set_padding(padding))
    with pytest.raises(FileProblem) as raised:
        load_trace(path)
    assert message in str(raised.value)


def test_padding_without_a_mask_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    runner.invoke(app, ["explain", "I am good", "--export", str(path)])
    with pytest.raises(FileProblem, match="its mask does not hide them"):
        load_trace(edited(path, set_padding(1)))


@pytest.mark.slow
@pytest.mark.parametrize(
    "change",
    [
        lambda provenance: provenance.__setitem__("special", [99]),
        lambda provenance: provenance.__setitem__("word_groups", [[0], [1], [7]]),
    ],
    ids=["special 99", "a word group past the tokens"],
)
def test_token_positions_past_the_tokens_are_refused(
    change: Callable[[dict[str, Any]], None], tmp_path: Path
) -> None:
    def with_words(provenance: dict[str, Any]) -> None:
        change(provenance)
        provenance["words"] = ["w"] * len(provenance.get("word_groups", []))

    path = edited(padded_export(tmp_path), with_words)
    with pytest.raises(FileProblem, match="names token positions it does not have"):
        load_trace(path)
