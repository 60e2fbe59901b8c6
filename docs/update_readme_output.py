"""Paste the real output of ``attnviz explain "I am good" --focus I`` into README.md.

Run after a change of output: ``python docs/update_readme_output.py``. The README shows the first
five steps and the focus section; tests/test_readme.py checks they match the real output.
"""

from __future__ import annotations

import os
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def real_output() -> list[str]:
    from typer.testing import CliRunner

    from attnviz.cli import app

    os.environ.update({"COLUMNS": "100", "NO_COLOR": "1"})
    result = CliRunner().invoke(app, ["explain", "I am good", "--focus", "I"])
    return [line.rstrip() for line in result.stdout.splitlines()]


def replace_block(text: str, starts_with: str, lines: list[str]) -> str:
    """Replace the ```text block whose first line starts with ``starts_with``."""
    opening = "```text\n" + starts_with
    start = text.index(opening) + len("```text\n")
    end = text.index("```", start)
    return text[:start] + "\n".join(lines) + "\n" + text[end:]


def main() -> None:
    lines = real_output()
    end_of_step_5 = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("good  0.")
        and i > next(j for j, x in enumerate(lines) if x.startswith("weights₁"))
    )
    focus = next(i for i, line in enumerate(lines) if "Focus: where does" in line)
    text = README.read_text(encoding="utf-8")
    text = replace_block(text, "attnviz · multi-head", lines[: end_of_step_5 + 1])
    text = replace_block(text, "─", lines[focus:])
    README.write_text(text, encoding="utf-8")
    print("updated README.md")


if __name__ == "__main__":
    main()
