"""Every command on a GGUF file (tests/model/tiny_llama.gguf): explain with --focus and
--steps, heatmap --all-layers, heads and heads --ablate, page, --export read back, and both
dtypes; each one's output says the model was read from a quantized file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app

from support import CliRunner, step, steps_spec

pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")
pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")

TINY = str(Path(__file__).resolve().parents[1] / "model" / "tiny_llama.gguf")
IT = "The animal didn't cross the street because it was too tired"
NAME = "tiny_llama (GGUF, 4-bit Q4_1)"
runner = CliRunner()
ENV = {"COLUMNS": "100", "NO_COLOR": "1"}


def run(*args: str) -> str:
    result = runner.invoke(app, list(args), env=ENV)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_explain_with_focus_and_steps(dtype: str) -> None:
    spec = steps_spec("tokens", "rope", "focus", rope=True)  # the checkpoint turns q and k
    text = run("explain", "-m", TINY, IT, "--focus", "it", "--steps", spec, "--dtype", dtype)
    flat = " ".join(text.split())
    assert f"Weights: {NAME[:-1]}, random, untrained checkpoint), layer 2 of 2" in flat
    # attnviz.untrained in the file's metadata: its random weights are said to be random
    assert "Note: the weights are random, not learned." in flat
    assert "tiny_llama.gguf stores the model quantized" in flat
    assert f"computed in {dtype} from the rebuilt weights" in flat
    tokens, rope, qkv = step("tokens"), step("rope", rope=True), step("qkv")
    assert f"Step {tokens} ·" in text and f"Step {rope} · Rotary positions" in text
    assert f"Step {qkv} ·" not in text


@pytest.mark.slow
def test_heatmap_of_every_layer(tmp_path: Path) -> None:
    out = tmp_path / "all.png"
    run("heatmap", "-m", TINY, IT, "--all-layers", "-o", str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


@pytest.mark.slow
def test_heads_and_ablation() -> None:
    assert "tiny_llama" in run("heads", "-m", TINY, IT)
    ablated = run("heads", "-m", TINY, IT, "--ablate")
    assert "layer" in ablated.lower()


@pytest.mark.slow
def test_page(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    run("page", "-m", TINY, IT, "-o", str(out))
    html = out.read_text(encoding="utf-8")
    assert f"{NAME[:-1]}, random, untrained checkpoint)" in html and "4-bit Q4_1" in html


@pytest.mark.slow
def test_export_keeps_the_quantization_sentence_and_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "trace.npz"
    run("explain", "-m", TINY, IT, "--export", str(out))
    with np.load(out) as saved:
        weights = saved["weights"]
        config = json.loads(str(saved["config"]))
    assert weights.shape[-3:] == (4, 12, 12)
    provenance = config["layers"][-1] if "layers" in config else config["provenance"]
    assert provenance["weights"]["model"] == NAME
    assert "4-bit Q4_1" in provenance["weights"]["about"]
    again = run(
        "explain", "--weights", str(out), "--layer", "2", IT, "--steps", steps_spec("tokens")
    )
    said = f"loaded from {out}: {NAME[:-1]}, random, untrained checkpoint), layer 2 of 2"
    assert said in " ".join(again.split())


def test_a_damaged_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(Path(TINY).read_bytes()[:5000])
    result = runner.invoke(app, ["explain", "-m", str(bad), IT], env=ENV)
    assert result.exit_code != 0
    assert "Traceback" not in result.output and str(bad) in result.output
