"""Masks: --causal (decoder self-attention) and --pad-to (padding masked as keys)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from attnviz.attention import causal_mask, padding_mask
from attnviz.cli import app
from attnviz.core import trace_with_options
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.options import TraceOptions

from support import CliRunner

runner = CliRunner()


def test_causal_weights_follow_the_textbook_with_later_words_removed() -> None:
    trace, _ = trace_with_options(
        "The animal didn't cross the street", TraceOptions(causal=True, d_model=8)
    )
    assert trace.mask is not None and (trace.mask == causal_mask(trace.n_tokens)).all()
    for head in range(trace.n_heads):
        for i in range(trace.n_tokens):
            visible = trace.scaled[head, i, : i + 1]
            exps = [math.exp(s - max(visible)) for s in visible]
            expected = [e / sum(exps) for e in exps] + [0.0] * (trace.n_tokens - i - 1)
            np.testing.assert_allclose(trace.weights[head, i], expected, atol=1e-12)
    np.testing.assert_allclose(trace.weights.sum(-1), 1.0, atol=1e-12)


def test_padding_gets_zero_weight_and_the_words_keep_their_weights() -> None:
    plain, _ = trace_with_options("I am good")
    padded, _ = trace_with_options("I am good", TraceOptions(pad_to=6))
    assert padded.tokens == ("I", "am", "good", "[PAD]", "[PAD]", "[PAD]")
    assert (padded.mask == padding_mask(3, 6)).all()
    assert (padded.weights[:, :, 3:] == 0).all()
    np.testing.assert_allclose(padded.weights[:, :3, :3], plain.weights, atol=1e-12)
    np.testing.assert_allclose(padded.weights.sum(-1), 1.0, atol=1e-12)


def test_both_masks_together() -> None:
    trace, _ = trace_with_options("I am good", TraceOptions(causal=True, pad_to=4))
    assert trace.mask is not None
    assert (trace.mask == (causal_mask(4) & padding_mask(3, 4))).all()


def test_pad_to_shorter_than_the_sentence_is_refused() -> None:
    with pytest.raises(AttnvizError, match="the sentence has 3 tokens; pad to between 3 and 512"):
        trace_with_options("I am good", TraceOptions(pad_to=2))


def test_explain_shows_minus_infinity_and_says_why(tmp_path: Path) -> None:
    export = tmp_path / "masked.npz"
    result = runner.invoke(
        app, ["explain", "I am good", "--causal", "--pad-to", "5", "--export", str(export)]
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "scaled₁ = scores₁ / √d_k, masked" in out and "−∞" in out
    assert "Causal mask" in out and "Padding mask" in out and "exp(−∞) = 0" in out
    with np.load(export) as data:
        assert data["mask"].dtype == bool and data["mask"].shape == (5, 5)
        assert not data["mask"][0, 1] and data["mask"][1, 0]


@pytest.mark.slow
def test_heatmap_with_masks(tmp_path: Path) -> None:
    out = tmp_path / "m.png"
    result = runner.invoke(
        app, ["heatmap", "The cat sat", "--causal", "--pad-to", "4", "-o", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["explain", "I am good", "--pad-to", "2"], "pad to between 3 and 512"),
        (["explain", "I am good", "--pad-to", "600"], "pad to between 3 and 512"),
    ],
)
def test_mask_errors(args: list[str], fragment: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == ExitStatus.BAD_INPUT
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr


def test_pad_to_the_sentence_length_masks_nothing_and_says_nothing() -> None:
    result = runner.invoke(app, ["explain", "I am good", "--pad-to", "3", "--head", "1"])
    assert result.exit_code == 0
    assert "masked" not in result.stdout and "−∞" not in result.stdout


@pytest.mark.slow
def test_model_export_stores_one_mask() -> None:
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    from attnviz.model.run import trace_model
    from attnviz.trace_files import export_layers

    run = trace_model("I am good", "minilm", pad_to=7)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.npz"
        export_layers(run.trace.layers, path)
        with np.load(path) as data:
            assert data["mask"].shape == (7, 7) and data["weights"].shape == (6, 12, 7, 7)
