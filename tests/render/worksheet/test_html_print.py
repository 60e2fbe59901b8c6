"""The HTML set printed by headless Chromium, as a teacher's browser prints it: pages of the
paper asked, each sheet from a new page, and questions flowing on a page (not one a page)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from browser import CHROMIUM, FLAGS

from attnviz.render.worksheet.html import sheets_html
from render.worksheet.made import sheets

pytestmark = pytest.mark.browser


def _printed(page: str, folder: Path) -> list[tuple[float, float]]:
    """Each printed page's size in points."""
    source, printed = folder / "sheet.html", folder / "sheet.pdf"
    source.write_text(page, encoding="utf-8")
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={folder / 'profile'}",
            "--no-pdf-header-footer",
            f"--print-to-pdf={printed}",
            source.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    boxes = re.findall(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", printed.read_bytes())
    return [(float(width), float(height)) for width, height in boxes]


@pytest.mark.parametrize(("paper", "points"), [("a4", (595, 842)), ("letter", (612, 792))])
def test_each_sheet_prints_from_a_new_page_of_the_paper_asked(
    tmp_path: Path, paper: str, points: tuple[float, float]
) -> None:
    pages = _printed(sheets_html(sheets(copies=3, count=2), paper), tmp_path)
    # Two short questions fit on one page: a page per sheet, no more.
    assert len(pages) == 3
    assert all(page == pytest.approx(points, abs=1.5) for page in pages)


def test_questions_share_a_page(tmp_path: Path) -> None:
    pages = _printed(sheets_html(sheets(copies=1, count=8), "a4"), tmp_path)
    assert 1 <= len(pages) <= 3  # eight questions of two small tables each
