"""Every command and the Python API with attnviz's shipped toy models, and the script that
trains them reproducing the shipped files."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import attnviz
from attnviz.cli import app
from attnviz.files import load_npz
from attnviz.model.checkpoint import find_model
from attnviz.train import tasks

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

pytestmark = pytest.mark.slow


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("model", ["coref", "coref-word"])
def test_explain_every_layer_with_the_focus(model: str) -> None:
    for layer in ("1", "2"):
        text = invoke("explain", "--model", model, tasks.WIDE, "--layer", layer, "--focus", "it")
        assert f"Weights: {model} (trained by attnviz), layer {layer} of 2" in text
        assert "Focus: where does 'it' look?" in text
        assert "not a language model" in text


def test_heatmap_page_heads_and_slides(tmp_path: Path) -> None:
    invoke("heatmap", "--model", "coref", tasks.TIRED, "-o", str(tmp_path / "it.png"))
    assert (tmp_path / "it.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    invoke(
        "heatmap",
        "--model",
        "coref-word",
        tasks.WIDE,
        "--all-layers",
        "-o",
        str(tmp_path / "all.svg"),
    )
    assert (tmp_path / "all.svg").stat().st_size > 1000
    invoke("page", "--model", "coref", tasks.TIRED, "-o", str(tmp_path / "lesson.html"))
    html = (tmp_path / "lesson.html").read_text(encoding="utf-8")
    assert "toy transformer trained by attnviz" in html and "[CLS]" not in html
    text = invoke("heads", "--model", "coref", tasks.TIRED)
    assert "2 layers × 1 head" in text
    assert "animal   L2 H1  1.00" in text
    invoke("explain", "--model", "coref", tasks.TIRED, "--slides", str(tmp_path / "slides"))
    assert (tmp_path / "slides" / "01-title.png").exists()


def test_the_python_api_and_the_notebook_display() -> None:
    shown = attnviz.explain(tasks.TIRED, model="coref", focus="it")
    assert shown.trace.provenance.weights.model == "coref"
    html = shown._repr_html_()
    assert "not a language model" in html and "[SEP]" not in html
    figure = attnviz.heatmap(shown)
    assert figure.axes
    ranking = attnviz.heads(attnviz.explain(tasks.WIDE, model="coref", focus="it"))
    assert ranking is not None


def _train_models_script() -> object:
    path = ROOT / "scripts" / "train-models"
    loader = importlib.machinery.SourceFileLoader("train_models", str(path))
    spec = importlib.util.spec_from_loader("train_models", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["coref", "coref-word"])
def test_the_script_reproduces_the_shipped_models(name: str, tmp_path: Path) -> None:
    script = _train_models_script()
    script.train_model(name, tmp_path)  # type: ignore[attr-defined]
    shipped = find_model(name)
    assert json.loads((tmp_path / name / "config.json").read_text()) == json.loads(
        (shipped / "config.json").read_text()
    )
    made = load_npz(tmp_path / name / "weights.npz", "made")
    expected = load_npz(shipped / "weights.npz", "shipped")
    assert made.keys() == expected.keys()
    for key, array in expected.items():
        # Bit for bit on the machine that made them; another BLAS may round differently.
        np.testing.assert_allclose(made[key], array, rtol=0, atol=1e-4, err_msg=key)
