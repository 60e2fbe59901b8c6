"""GPT-2 in numpy, against Hugging Face transformers, through every view of attnviz.

tests/model/make_gpt2.py made the tiny random checkpoint in tests/model/tiny_gpt2/ (2 layers, 4
heads, d_model 32, a byte-level BPE tokenizer) and the reference values in golden_gpt2.npz,
with torch and transformers, which these tests do not need.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from support import CliRunner

pytest.importorskip("safetensors", reason="needs the optional extra attnviz[model]")
pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")

from attnviz.cli import app  # noqa: E402
from attnviz.errors import AttnvizError, ExitStatus  # noqa: E402
from attnviz.model.families.gpt2 import GPT2  # noqa: E402
from attnviz.model.functional import layer_norm  # noqa: E402
from attnviz.model.run import trace_model  # noqa: E402
from attnviz.model.sources.checkpoint import find_model, read_config  # noqa: E402
from attnviz.model.sources.tensors import open_tensors  # noqa: E402
from attnviz.provenance import EmbeddingsKind  # noqa: E402
from attnviz.trace_files import load_trace  # noqa: E402

MODEL = Path(__file__).resolve().parent / "tiny_gpt2"
GOLDEN = MODEL.parent / "golden_gpt2.npz"
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}
SENTENCE = "The animal didn't cross the street because it was too tired"
runner = CliRunner()


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_every_layer_and_the_last_hidden_state_match_transformers(
    golden: dict[str, np.ndarray], index: int, dtype: str
) -> None:
    run = trace_model(str(golden[f"s{index}_sentence"]), str(MODEL), dtype=dtype)
    assert list(run.encoding.ids) == golden[f"s{index}_input_ids"].tolist()
    # Every intermediate in the precision asked for: no float64 round trip in float32 mode.
    for layer in run.trace.layers:
        assert {array.dtype for array in layer.arrays().values() if array.dtype != bool} == {
            np.dtype(dtype)
        }
    weights = np.stack([layer.weights for layer in run.trace.layers])
    tolerance = TOLERANCE[dtype]
    expected = golden[f"s{index}_{dtype}_attentions"]
    np.testing.assert_allclose(weights, expected, rtol=0, atol=tolerance)
    np.testing.assert_allclose(
        run.trace.last_hidden_state,
        golden[f"s{index}_{dtype}_last_hidden_state"],
        rtol=0,
        atol=tolerance,
    )
    np.testing.assert_allclose(
        run.trace.hidden_states, golden[f"s{index}_{dtype}_hidden_states"], rtol=0, atol=tolerance
    )


def test_layers_are_causal_and_read_ln_1_of_the_residual_stream() -> None:
    run = trace_model(SENTENCE, str(MODEL), dtype="float64")
    n = len(run.trace.tokens)
    for number, layer in enumerate(run.trace.layers, start=1):
        assert layer.mask is not None and (layer.mask == np.tril(np.ones((n, n), bool))).all()
        assert (layer.weights[np.broadcast_to(~layer.mask, layer.weights.shape)] == 0).all()
        provenance = layer.provenance
        assert provenance.masking.causal and provenance.weights.architecture == "gpt2"
        assert provenance.weights.layer == number and provenance.weights.n_layers == 2
        assert provenance.embeddings.kind is (
            EmbeddingsKind.MODEL if number == 1 else EmbeddingsKind.LAYER
        )
        assert "ln_1" in provenance.embeddings.describe()
    # Pre-LN: attention reads ln_1 of the residual stream, not the stream itself.
    config, architecture = read_config(MODEL)
    with open_tensors(MODEL, np.float64, GPT2.prefixes) as tensors:
        weights = architecture.load(tensors, config, run.encoding.ids)
    first_norm = weights.blocks[0].norm_1
    expected = layer_norm(run.trace.hidden_states[0], *first_norm, config.layer_norm_eps)
    np.testing.assert_array_equal(run.trace.layers[0].X, expected)
    assert not np.allclose(run.trace.layers[0].X, run.trace.hidden_states[0])


def test_byte_level_pieces_are_shown_as_text_and_grouped_into_words() -> None:
    run = trace_model(SENTENCE + " über, unbelievable.", str(MODEL))
    tokens = run.trace.tokens
    assert not any("Ġ" in token for token in tokens)
    assert tokens[0] == "The" and "because" in tokens and "it" in tokens
    assert "<c3>" in tokens  # half of "ü": shown as its byte, not as a broken character
    provenance = run.trace.layers[0].provenance
    # A word and its continuation pieces (no leading space) are one word; punctuation and the
    # contraction "'t", which the pre-tokenizer cuts off, are words of their own.
    words = SENTENCE.replace("didn't", "didn 't").split() + ["über", ",", "unbelievable", "."]
    assert provenance.words == tuple(words)
    unbelievable = provenance.word_groups[provenance.words.index("unbelievable")]
    assert (
        len(unbelievable) > 1
        and "".join(tokens[i] for i in unbelievable).lstrip("␣") == "unbelievable"
    )
    assert provenance.special == ()  # GPT-2 adds no special tokens


@pytest.mark.slow
def test_explain_shows_the_causal_mask_as_random_causal_does() -> None:
    result = runner.invoke(app, ["explain", "-m", str(MODEL), SENTENCE, "--head", "1"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Causal mask (decoder self-attention)" in out and "−∞" in out
    assert "scaled₁ = scores₁ / √d_k, masked" in out
    assert "Weights: tiny_gpt2 (random, untrained checkpoint), layer 2 of 2" in " ".join(
        out.split()
    )
    assert "byte-level BPE" in out and "ln_1" in out
    assert "Focus: where does 'it' look?" in out


@pytest.mark.slow
def test_every_view_works_for_gpt2(tmp_path: Path) -> None:
    for args in (
        ["heads", "-m", str(MODEL), SENTENCE, "--words"],
        ["heatmap", "-m", str(MODEL), SENTENCE, "--all-layers", "-o", str(tmp_path / "a.png")],
        ["heatmap", "-m", str(MODEL), SENTENCE, "--words", "-o", str(tmp_path / "w.png")],
        ["explain", "-m", str(MODEL), SENTENCE, "--hide-special", "--words", "--layer", "1"],
        ["explain", "-m", str(MODEL), SENTENCE, "--export", str(tmp_path / "t.npz")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.stderr)
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
    layers = load_trace(tmp_path / "t.npz")
    assert len(layers) == 2 and layers[1].provenance.weights.model == "tiny_gpt2"
    assert layers[0].provenance.masking.causal and layers[0].mask is not None
    with np.load(tmp_path / "t.npz") as data:
        assert data["weights"].shape[:2] == (2, 4) and data["mask"].ndim == 2


@pytest.mark.slow
def test_pad_to_appends_end_of_text_masked_as_keys() -> None:
    plain = trace_model("I am good", str(MODEL), dtype="float64")
    n = len(plain.trace.tokens)
    padded = trace_model("I am good", str(MODEL), dtype="float64", pad_to=n + 3)
    assert padded.trace.tokens[n:] == ("<|endoftext|>",) * 3
    for before, after in zip(plain.trace.layers, padded.trace.layers, strict=True):
        assert (after.weights[:, :, n:] == 0).all()
        np.testing.assert_allclose(after.weights[:, :n, :n], before.weights, atol=1e-12)
    assert padded.trace.layers[0].provenance.special == tuple(range(n, n + 3))


@pytest.mark.slow
def test_gpt2_is_found_in_a_local_cache_and_never_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(AttnvizError, match="models--openai-community--gpt2 or models--gpt2"):
        find_model("gpt2")
    result = runner.invoke(app, ["explain", "-m", "gpt2", "I am good"])
    assert result.exit_code == ExitStatus.BAD_INPUT and len(result.stderr.splitlines()) == 1
    assert "never downloads" in result.stderr
    snapshot = tmp_path / "hub" / "models--gpt2" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (snapshot / name).symlink_to(MODEL / name)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert find_model("openai-community/gpt2") == snapshot
    result = runner.invoke(app, ["explain", "-m", "gpt2", "I am good", "--head", "1"])
    assert result.exit_code == 0, result.stderr
    # The name is the one asked for; the tiny checkpoint behind it still says it is untrained.
    assert "Weights: gpt2 (random, untrained checkpoint), layer 2 of 2" in " ".join(
        result.stdout.split()
    )


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"activation_function": "relu"}, "gelu_new"),
        ({"scale_attn_by_inverse_layer_idx": True}, "scaled by √d_k only"),
        ({"n_head": 5}, "not divisible by 5 heads"),
        ({"n_layer": 0}, "must be positive"),
        ({"n_embd": "32"}, "not a whole number"),
    ],
)
def test_configs_attnviz_cannot_run_are_refused_in_one_line(
    tmp_path: Path, change: dict[str, object], fragment: str
) -> None:
    folder = tmp_path / "gpt2"
    shutil.copytree(MODEL, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, **change}), encoding="utf-8")
    result = runner.invoke(app, ["explain", "-m", str(folder), "I am good"])
    assert result.exit_code == ExitStatus.BAD_FILE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr


def test_the_focus_is_a_word_not_a_piece_inside_another_word() -> None:
    from attnviz.selection import select

    run = trace_model("I sit and it waits", str(MODEL))
    layer = run.trace.layers[0]
    pieces = layer.tokens
    assert pieces.count("it") >= 2  # the piece inside "sit" and the word "it"
    selection = select(layer)  # the default focus, "it"
    assert selection.focus is not None
    group = layer.provenance.words.index("it")
    assert selection.focus.index == layer.provenance.word_groups[group][0]
    assert selection.focus.label == "it"  # one word "it", however many pieces spell "it"


def test_merged_masked_scores_average_only_the_pairs_that_were_allowed() -> None:
    from attnviz.selection import ViewOptions, select

    layer = trace_model("The cat sat", str(MODEL)).trace.layers[0]
    selection = select(layer, ViewOptions(words=True))
    scaled = selection.pairs(layer.scaled[0], masked=layer.masked)
    masked = selection.masked_pairs(layer.masked)
    for row, queries in enumerate(selection.row_groups):
        for column, keys in enumerate(selection.column_groups):
            allowed = [layer.scaled[0, q, k] for q in queries for k in keys if layer.mask[q, k]]
            if masked[row, column]:
                assert not allowed
            else:
                # The view adds the cell's m float32 scores in its order, np.mean in its own:
                # each sum is within γ_m·Σ|score| of the exact one, and np.mean's float32
                # division rounds once more, so the two means are within m·eps·mean|score|
                # (2 float32 ulps apart with OpenBLAS's Prescott kernel, over rtol's 1e-7).
                bound = len(allowed) * np.finfo(layer.scaled.dtype).eps * np.mean(np.abs(allowed))
                np.testing.assert_allclose(
                    scaled[row, column], np.mean(allowed), rtol=0, atol=bound
                )


# -- attnviz.model.families.gpt2 itself ----------------------------------------------------------


def test_the_config_takes_gpt2s_names_and_defaults_and_refuses_other_variants() -> None:
    from attnviz.model.families.gpt2 import ARCHITECTURE

    data = json.loads((MODEL / "config.json").read_text(encoding="utf-8"))
    config = ARCHITECTURE.read_config(data)
    assert (config.d_model, config.n_heads, config.n_layers, config.max_positions) == (32, 4, 2, 64)
    assert config.d_ff == 4 * 32  # n_inner null: GPT-2's 4·d_model
    assert config.pad_token_id == 0  # no padding token: end-of-text pads
    assert config.layer_norm_eps == 1e-5 and ARCHITECTURE.causal
    refusals = {
        "activation_function 'gelu_new'": {"activation_function": "relu"},
        "scaled by √d_k only": {"scale_attn_by_inverse_layer_idx": True},
    }
    for message, change in refusals.items():
        with pytest.raises(AttnvizError, match=message):
            ARCHITECTURE.read_config(data | change)
    with pytest.raises(AttnvizError, match="scaled by √d_k only"):
        ARCHITECTURE.read_config(data | {"scale_attn_weights": False})


def test_c_attn_is_split_into_w_q_w_k_w_v_in_that_order() -> None:
    from attnviz.model.families.gpt2 import ARCHITECTURE

    config, architecture = read_config(MODEL)
    assert architecture is ARCHITECTURE
    with open_tensors(MODEL, np.float64, ()) as tensors:  # its names have no prefix
        weights = ARCHITECTURE.load(tensors, config, [0, 1, 2])
        c_attn = tensors.get("h.1.attn.c_attn.weight", (32, 96))  # Conv1D: [in, out] already
        b_attn = tensors.get("h.1.attn.c_attn.bias", (96,))
    attention = weights.blocks[1].attention
    for part, (w, b) in enumerate(
        [
            (attention.W_Q, attention.b_Q),
            (attention.W_K, attention.b_K),
            (attention.W_V, attention.b_V),
        ]
    ):
        columns = c_attn[:, 32 * part : 32 * (part + 1)]
        for head in range(4):
            np.testing.assert_array_equal(w[head], columns[:, 8 * head : 8 * (head + 1)])
        np.testing.assert_array_equal(b.reshape(-1), b_attn[32 * part : 32 * (part + 1)])
    assert weights.token_embeddings.shape == (3, 32)  # only the sentence's rows of the table
