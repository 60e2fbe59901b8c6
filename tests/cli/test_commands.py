"""attnviz.cli.commands: each command refuses what it cannot do before any work, in one
sentence with the flag's name, and hands the rest to the library."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.api import writing
from attnviz.cli import analyses, commands
from attnviz.errors import AttnvizError, OutputProblem
from attnviz.options import TraceOptions
from attnviz.selection import ViewOptions


def test_outputs_are_checked_before_any_work(tmp_path: Path) -> None:
    writing.check_outputs(tmp_path / "t.npz", (tmp_path / "h.png", "--output"), (None, "-o"))
    with pytest.raises(OutputProblem, match="--export"):
        writing.check_outputs(tmp_path / "t.csv")
    with pytest.raises(OutputProblem, match="--per-head"):
        writing.check_outputs(None, (tmp_path / "h.gif", "--per-head"))
    with pytest.raises(OutputProblem, match="--html"):
        writing.check_recordings(tmp_path / "l.svg", tmp_path / "l.txt")
    with pytest.raises(OutputProblem, match="missing"):
        writing.check_recordings(tmp_path / "missing" / "l.svg", None)
    assert list(tmp_path.iterdir()) == []  # checking writes nothing


def test_heads_needs_a_focus_word_and_a_positive_top() -> None:
    with pytest.raises(AttnvizError, match="--top 0: give 1 or more."):
        analyses.heads("I am good", TraceOptions(), ViewOptions(focus="am"), top=0)
    with pytest.raises(
        AttnvizError, match="heads follows one word: name it with (--focus |focus=)"
    ):
        analyses.heads("I am good", TraceOptions(), ViewOptions())


def test_scaling_prints_its_table_and_notes_capped_sizes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    commands.scaling(dk="4,5000", keys=8, queries=10, seed=0, output=None)
    captured = capsys.readouterr()
    assert "each query scores 8" in " ".join(captured.out.split())
    by_d_k = captured.out.split("√d_k, not √(number of words)")[0]  # the table of sizes
    assert [line.split()[0] for line in by_d_k.splitlines() if line[:4].strip().isdigit()] == [
        "4",
        "4096",
    ]
    assert captured.err.startswith("note: ")
