"""Regenerate docs/notebook.png: the first cells of examples/attention_lesson.ipynb, executed
in a real kernel (nbclient + ipykernel) and drawn by headless Chromium.

    python docs/make_notebook_screenshot.py

Needs the test extra (nbclient, ipykernel) and Debian's chromium (scripts/install-browser).
The page is laid out like a notebook: each code cell, then its outputs as the kernel sent them
(the trace's own HTML display, images, text); nothing is drawn by hand.
"""

from __future__ import annotations

import html
import subprocess
import sys
import tempfile
from pathlib import Path

import nbclient
import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the browser as the tests start it

from browser import CHROMIUM, FLAGS  # noqa: E402

NOTEBOOK = ROOT / "examples" / "attention_lesson.ipynb"
OUTPUT = ROOT / "docs" / "notebook.png"
FIRST_CODE_CELL = 2  # "I am good": the cell after the title and the introduction

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body{{font-family:system-ui,sans-serif;margin:0;padding:16px 24px;background:#f5f5f5}}
.cell{{background:#fff;border:1px solid #ddd;border-radius:4px;margin-bottom:12px;padding:8px 12px}}
.in{{font-family:monospace;background:#f7f7f7;padding:6px 8px;white-space:pre;color:#333}}
.prompt{{color:#303f9f;font-family:monospace;font-size:0.85em}}
</style></head><body>{cells}</body></html>"""


def cell_html(cell: nbformat.NotebookNode, number: int) -> str:
    """A code cell and its outputs, as a notebook front end lays them out."""
    outputs = []
    for output in cell.outputs:
        data = output.get("data", {})
        if "text/html" in data:
            outputs.append(data["text/html"])
        elif "image/png" in data:
            outputs.append(f"<img src='data:image/png;base64,{data['image/png']}'>")
        elif output.output_type == "stream":
            outputs.append(f"<pre>{html.escape(output.text)}</pre>")
    return (
        f"<div class='cell'><div class='prompt'>In [{number}]:</div>"
        f"<div class='in'>{html.escape(cell.source)}</div>{''.join(outputs)}</div>"
    )


def main() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    with tempfile.TemporaryDirectory() as folder:
        nbclient.NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": folder}}
        ).execute()
        cells = cell_html(notebook.cells[FIRST_CODE_CELL], 1)
        page = Path(folder) / "notebook.html"
        page.write_text(PAGE.format(cells=cells), encoding="utf-8")
        subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={folder}/profile",
                "--hide-scrollbars",
                "--window-size=1000,1240",
                f"--screenshot={OUTPUT}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
