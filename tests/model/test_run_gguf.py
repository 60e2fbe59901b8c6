"""A GGUF file run end to end: tiny_llama.gguf's token ids and every layer's attention weights
equal to what transformers' GGUF loader makes of it (golden_tiny_gguf.npz,
make_smollm2_gguf_golden.py), its layers dequantized as the forward pass reaches them, the
output layer and the unused embedding rows never read, and the lesson's sentence about the
quantization true at the digits it shows."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.errors import AttnvizError

pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")
pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")

from attnviz.model.run import load_model, trace_model  # noqa: E402
from attnviz.model.sources import gguf_file  # noqa: E402
from attnviz.model.sources.gguf_model import GgufLayers  # noqa: E402

HERE = Path(__file__).resolve().parent
TINY = str(HERE / "tiny_llama.gguf")
GOLDEN = HERE / "golden_tiny_gguf.npz"
TIRED = "The animal didn't cross the street because it was too tired"


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_layer_equals_transformers_gguf_loader(index: int, dtype: str) -> None:
    golden = np.load(GOLDEN)
    run = trace_model(str(golden[f"sentence_{index}"]), TINY, dtype=dtype)
    assert list(run.encoding.ids) == golden[f"ids_{index}"].tolist()
    weights = np.stack([layer.weights for layer in run.trace.layers])
    assert weights.dtype == np.dtype(dtype)
    expected = golden[f"attention_{index}"]
    assert weights.shape == expected.shape  # every layer and head
    np.testing.assert_allclose(weights, expected, rtol=0, atol=2e-5)


def test_the_trace_is_of_the_file_and_pairs_as_hugging_face() -> None:
    run = trace_model(TIRED, TINY)
    layer = run.trace.layers[-1]
    assert run.model_name == "tiny_llama (GGUF, 4-bit Q4_1)"
    weights = layer.provenance.weights
    # a checkpoint, yet random: the file says so (attnviz.untrained), as make_tiny_gguf.py made it
    assert weights.model == run.model_name and not weights.trained and weights.is_random
    assert (weights.architecture, weights.n_layers) == ("llama", 2)
    assert layer.rope is not None and layer.rope.pairing == "half" and layer.rope.base == 1e5
    assert layer.n_kv_heads == 2 and layer.W_K.shape == (2, 64, 16)


def test_the_quantization_sentence_holds_by_hand_at_its_digits() -> None:
    run = trace_model(TIRED, TINY)
    about = run.trace.layers[0].provenance.weights.about
    assert about is not None
    # Layer 2's W_Q and W_K are F32, W_V Q4_0, W_O F16: Q4_1 is the commonest type only.
    assert "W_O mostly as 4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum" in about
    assert "the attention shown is that of this quantized model" in about.lower()
    assert "adjacent coordinates (2i, 2i + 1)" in about
    found = re.search(
        r"code q = (\d+) of block 1 of its row, with the block's scale d = ([0-9.e-]+) and "
        r"minimum m = ([0-9.e-]+): w = d·q \+ m = \2 × \1 ([−+]) ([0-9.e-]+) ≈ (-?[0-9.]+)\.",
        about,
    )
    assert found is not None, about
    q, d, m = int(found[1]), float(found[2]), float(found[3])
    assert abs(m) == float(found[5]) and (found[4] == "−") == (m < 0)
    shown = found[6]
    by_hand = d * q + m
    decimals = len(shown.split(".")[1])
    assert f"{by_hand:.{decimals}f}" == f"{float(shown):.{decimals}f}"
    # The weight is the one layer 1's W_V of key/value head 1 holds at [1, 1] (from 1).
    stored = float(run.trace.layers[0].W_V[0, 0, 0])
    assert float(f"{stored:.7g}") == float(shown) and stored == pytest.approx(by_hand, rel=1e-6)


def test_only_the_sentences_embedding_rows_are_read_and_never_the_output_layer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[tuple[str, tuple[int, ...] | None]] = []
    original = gguf_file.dequantize

    def recording(
        file: object, name: str, rows: np.ndarray | None = None, out: np.ndarray | None = None
    ) -> np.ndarray:
        read.append((name, None if rows is None else tuple(int(i) for i in rows)))
        return original(file, name, rows, out)  # type: ignore[arg-type]

    monkeypatch.setattr("attnviz.model.sources.gguf_model.dequantize", recording)
    run = trace_model(TIRED, TINY)
    names = {name for name, _ in read}
    assert not any(name.startswith("output.") for name in names)
    assert [rows for name, rows in read if name == "token_embd.weight"] == [tuple(run.encoding.ids)]
    assert {f"blk.{i}.ffn_down.weight" for i in range(2)} <= names


@pytest.mark.slow
def test_layers_are_dequantized_when_reached_and_kept_only_when_asked() -> None:
    once = load_model(TIRED, TINY, keep_layers=False)
    assert isinstance(once.weights.layers, GgufLayers) and len(once.weights.layers) == 2
    assert once.weights.layers[1] is not once.weights.layers[1]
    assert once.weights.layers[-1].W_down.shape == (96, 64)
    kept = load_model(TIRED, TINY)
    assert kept.weights.layers[0] is kept.weights.layers[0]
    with pytest.raises(IndexError):
        kept.weights.layers[2]  # noqa: B018
    np.testing.assert_array_equal(
        once.forward().layers[1].weights, kept.forward().layers[1].weights
    )


def test_running_again_from_a_layer_with_its_own_output_changes_nothing() -> None:
    loaded = load_model(TIRED, TINY)
    run = loaded.forward()
    again = loaded.run_layers(
        run.hidden_states[1], start=2, attention_output=run.layers[1].output, mask=None
    )
    np.testing.assert_array_equal(again.hidden_states[-1], run.hidden_states[-1])


@pytest.mark.slow
def test_padding_uses_the_files_end_of_text_token() -> None:
    run = trace_model(TIRED, TINY, pad_to=14)
    assert run.encoding.tokens[-2:] == ("<|endoftext|>",) * 2
    assert run.trace.layers[0].weights[:, :, -2:].max() == 0
    with pytest.raises(AttnvizError, match="pad to between 12 and 128"):
        trace_model(TIRED, TINY, pad_to=200)
