"""Rewrite the golden files after an intended change: ``python tests/golden/regenerate.py``.

Each golden file is the exact stdout of one command at a fixed width (100 columns) with colour
off, as the test in tests/test_golden.py runs it. Review the diff before committing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parent
sys.path.insert(0, str(FOLDER.parent.parent))
sys.path.insert(0, str(FOLDER.parent))  # tests/: support.py, the runner the tests use

#: golden file name -> the attnviz arguments that produce it
GOLDEN = {
    "explain_i_am_good.txt": ["explain", "I am good"],
    "explain_i_am_good_focus_i_80.txt": ["explain", "I am good", "--focus", "I"],
    "explain_animal_it.txt": [
        "explain",
        "--embeddings",
        "sample_embeddings/toy8d.txt",
        "The animal didn't cross the street because it was too tired",
    ],
    # A laptop's 80 columns: every table of the 11-word sentence whole.
    "explain_animal_80.txt": [
        "explain",
        "The animal didn't cross the street because it was too tired",
    ],
    # Rotary positions and multi-query attention: the rope step, the shared K and V.
    "explain_i_am_good_rope_gqa_80.txt": [
        "explain",
        "I am good",
        "--positions",
        "rope",
        "--kv-heads",
        "1",
        "--heads",
        "2",
    ],
}
WIDTHS = {
    "explain_i_am_good_focus_i_80.txt": 80,
    "explain_animal_80.txt": 80,
    "explain_i_am_good_rope_gqa_80.txt": 80,
}


def render(arguments: list[str], width: int) -> str:
    """stdout of ``attnviz ARGUMENTS`` at ``width`` columns, colour off, run from the repo root."""
    from attnviz.cli import app

    from support import CliRunner

    os.environ.update({"COLUMNS": str(width), "NO_COLOR": "1", "TERM": "dumb"})
    os.chdir(FOLDER.parent.parent)
    result = CliRunner().invoke(app, arguments)
    if result.exit_code != 0:
        raise SystemExit(f"attnviz {' '.join(arguments)} failed: {result.stderr}")
    return result.stdout


def main() -> None:
    for name, arguments in GOLDEN.items():
        (FOLDER / name).write_text(render(arguments, WIDTHS.get(name, 100)), encoding="utf-8")
        print(f"wrote tests/golden/{name}")


if __name__ == "__main__":
    main()
