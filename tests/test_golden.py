"""Golden text: the exact output of a few commands at a fixed width, colour off.

After an intended change of output, regenerate with ``python tests/golden/regenerate.py`` and
review the diff.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from attnviz.lesson.steps import STEPS, last_plain_number

from support import of_the_real_table

GOLDEN_FOLDER = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN_FOLDER))

import regenerate  # noqa: E402


@of_the_real_table
@pytest.mark.parametrize("name", sorted(regenerate.GOLDEN))
def test_output_matches_golden_file(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(GOLDEN_FOLDER.parent.parent)
    expected = (GOLDEN_FOLDER / name).read_text(encoding="utf-8")
    actual = regenerate.render(regenerate.GOLDEN[name], regenerate.WIDTHS.get(name, 100))
    assert actual == expected, "output changed; if intended, run python tests/golden/regenerate.py"


@of_the_real_table
def test_golden_i_am_good_shows_every_step_and_sums_to_one() -> None:
    text = (GOLDEN_FOLDER / "explain_i_am_good.txt").read_text(encoding="utf-8")
    for step in range(1, last_plain_number(STEPS) + 1):
        assert f"Step {step} ·" in text
    sums = [
        line.split()[-1] for line in text.splitlines() if line.startswith(("I ", "am ", "good "))
    ]
    assert "1.00" in sums
