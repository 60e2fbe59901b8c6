"""A command writes its lesson once, whatever it is drawn on: the terminal, --svg, --html and
--slides all draw the same blocks."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from attnviz.cli import app

from support import CliRunner


@pytest.mark.slow  # writes an SVG, an HTML file and a deck of slides
@pytest.mark.parametrize(
    "command",
    [
        ["explain", "I am good"],
        # The same lesson function and outputs, from cross's traces: the full run.
        pytest.param(["cross", "I am good", "Je vais"], marks=pytest.mark.full),
    ],
)
def test_the_lesson_is_written_once_per_command(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # attnviz.lesson is the API's function; the package of the same name is reached by import.
    build = importlib.import_module("attnviz.lesson.build")
    importlib.import_module("attnviz.render.slides")
    importlib.import_module("attnviz.render.terminal.lesson")
    written = []
    lesson = build.lesson

    def counted(*arguments, **options):  # type: ignore[no-untyped-def]
        written.append(arguments[0])
        return lesson(*arguments, **options)

    # Wherever a module took the function in by name (the terminal, the slides), it is counted.
    for module in [m for name, m in sys.modules.items() if name.startswith("attnviz.")]:
        for name, value in vars(module).items():
            if value is lesson:
                monkeypatch.setattr(module, name, counted)
    outputs = ["--svg", str(tmp_path / "l.svg"), "--html", str(tmp_path / "l.html")]
    outputs += ["--slides", str(tmp_path / "slides")]
    result = CliRunner().invoke(app, [*command, *outputs])
    assert result.exit_code == 0, result.output
    assert len(written) == 1
    assert (tmp_path / "l.svg").stat().st_size and (tmp_path / "l.html").stat().st_size
    assert len(list((tmp_path / "slides").glob("*.png"))) > 5
