"""compare -o draws a panel of two rows per listed head, a weight written in every cell: more
than limits.MAX_COMPARE_CELLS is refused before the report, with the --top that fits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz import limits
from attnviz.cli import app
from attnviz.errors import ExitStatus

from support import CliRunner

runner = CliRunner()
TIRED = "The cat sat on the mat because it was tired"
WIDE = "The cat sat on the mat because it was wide"


@pytest.mark.slow
def test_a_comparison_picture_too_large_is_refused_before_anything_is_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slots = 10  # 9 shared words and the changed one, tired / wide, a slot each: 11 in all
    monkeypatch.setattr(limits, "MAX_COMPARE_CELLS", 5 * 2 * (slots + 1))  # 5 heads fit
    out = tmp_path / "pair.png"
    args = ["compare", TIRED, WIDE, "--heads", "8", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == ExitStatus.CANNOT_WRITE, result.stderr
    said = re.search(r"would draw 8 heads × 2 rows × (\d+) words, ([\d,]+) cells", result.stderr)
    assert said is not None, result.stderr
    assert int(said[1]) == slots + 1 and said[2] == f"{8 * 2 * (slots + 1):,}"
    assert "draw fewer heads with --top 5 or use shorter sentences." in result.stderr
    assert result.stdout == "" and not out.exists()  # refused before the report
    fitting = runner.invoke(app, [*args, "--top", "5"])
    assert fitting.exit_code == 0, fitting.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_bound_allows_the_readmes_pictures() -> None:
    limits.check_compare_picture(20, 75, path="c.png")  # 20 heads of 75 words: 3,000 cells
    with pytest.raises(limits.AttnvizError):
        limits.check_compare_picture(20, 76, path="c.png")
