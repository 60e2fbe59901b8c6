"""examples/attention_lesson.ipynb runs from top to bottom in a real kernel (nbclient with
ipykernel, as Jupyter runs it), and its outputs hold the notebook displays and the images."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import pytest

from support import has_model_extra, of_the_real_table, step


@pytest.fixture(scope="module")
def kernel_tools() -> tuple[Any, Any]:
    """nbclient and nbformat, imported by the tests that run a kernel (not at collection: the
    Jupyter client takes a second to import in every worker)."""
    return (
        pytest.importorskip("nbclient", reason="needs the test extra (nbclient, ipykernel)"),
        pytest.importorskip("nbformat", reason="needs the test extra (nbformat)"),
    )


ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = ROOT / "examples" / "attention_lesson.ipynb"


@pytest.mark.slow
@of_the_real_table  # its kernel, a process of its own, has the table as it is
@pytest.mark.skipif(not has_model_extra(), reason="its last part runs all-MiniLM-L6-v2")
def test_the_lesson_notebook_runs_and_shows_its_displays(
    tmp_path: Path, kernel_tools: tuple[Any, Any]
) -> None:
    nbclient, nbformat = kernel_tools
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    outputs = [
        output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    ]
    assert not [output for output in outputs if output.output_type == "error"]
    htmls = [
        output.data["text/html"] for output in outputs if "text/html" in output.get("data", {})
    ]
    displays = [markup for markup in htmls if 'class="attnviz"' in markup]
    # "I am good"; the seeds' sentence with random weights, with coref, with coref-word; the
    # masks; the real model.
    assert len(displays) == 6
    assert "Focus: where does 'I' look?" in displays[0]
    assert "the weights are random, not learned" in displays[1]
    assert "coref (trained by attnviz)" in displays[2]
    assert "coref-word (trained by attnviz)" in displays[3]
    assert "class='masked'" in displays[4]  # the causal mask and the padding, hatched
    assert "Every layer and head" in displays[5]
    lesson = "".join(output.get("text", "") for output in outputs if output.output_type == "stream")
    assert f"Step {step('output')} · Concatenate the heads and project with W_O" in lesson
    images = [
        output.data["image/png"] for output in outputs if "image/png" in output.get("data", {})
    ]
    assert images and all(base64.b64decode(image)[:4] == b"\x89PNG" for image in images)
    assert all("data:image/png;base64," in markup for markup in displays)
    pages = [markup for markup in htmls if markup.startswith('<iframe sandbox="allow-scripts"')]
    # The interactive page, and the generation's slider, each in its own frame.
    assert len(pages) == 2 and all("srcdoc=" in page for page in pages)
    framed = html.unescape(pages[1])
    assert "Step 5 of 5: Token 4: ' a'" in framed and 'type="range"' in framed


@pytest.mark.slow
@of_the_real_table  # its kernel, a process of its own, has the table as it is
def test_the_docs_notebook_example_runs_in_a_kernel(
    tmp_path: Path, kernel_tools: tuple[Any, Any]
) -> None:
    nbclient, nbformat = kernel_tools
    python = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    section = python.split("## In a notebook (Jupyter, Colab)")[1]
    cell = section.split("```python\n")[1].split("```")[0]
    assert "%matplotlib inline" in cell
    lines = cell.strip().splitlines()
    # Each expression whose value the notebook shows must be the last of its own cell, as the
    # reader is told to run them: split after "shown", what attnviz.explain returned.
    at = next(i for i, line in enumerate(lines) if line.split("#")[0].strip() == "shown")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("\n".join(lines[: at + 1])),
        nbformat.v4.new_code_cell("\n".join(lines[at + 1 :])),
    ]
    nbclient.NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    shown, printed = notebook.cells[0].outputs, notebook.cells[1].outputs
    assert any('class="attnviz"' in output.get("data", {}).get("text/html", "") for output in shown)
    assert f"Step {step('output')} ·" in "".join(output.get("text", "") for output in printed)
