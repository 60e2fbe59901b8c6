"""Llama and Qwen2 in numpy, against Hugging Face transformers.

tests/model/make_llama.py made the tiny random checkpoints in tests/model/tiny_llama/ and
tiny_qwen2/ (2 layers, 4 query heads sharing 2 key/value heads, d_model 32, a tokenizer whose
post-processor puts <s> first) and the reference values in golden_llama.npz and
golden_qwen2.npz, with torch and transformers (float64 made really float64 there), which these
tests do not need.
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
from attnviz.errors import ExitStatus  # noqa: E402
from attnviz.model.base import family_of  # noqa: E402
from attnviz.model.families.llama import ARCHITECTURE, LlamaConfig  # noqa: E402
from attnviz.model.families.rotary import rms_norm  # noqa: E402
from attnviz.model.run import trace_model  # noqa: E402
from attnviz.model.sources.checkpoint import read_config  # noqa: E402
from attnviz.model.sources.tensors import open_tensors  # noqa: E402
from attnviz.positions import Rope  # noqa: E402

HERE = Path(__file__).resolve().parent
MODELS = {"llama": HERE / "tiny_llama", "qwen2": HERE / "tiny_qwen2"}
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}
SENTENCE = "The animal didn't cross the street because it was too tired"
runner = CliRunner()


@pytest.fixture(scope="module", params=sorted(MODELS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def golden(kind: str) -> dict[str, np.ndarray]:
    with np.load(HERE / f"golden_{kind}.npz", allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_every_layer_and_the_last_hidden_state_match_transformers(
    kind: str, index: int, dtype: str
) -> None:
    expected = golden(kind)
    run = trace_model(str(expected[f"s{index}_sentence"]), str(MODELS[kind]), dtype=dtype)
    assert list(run.encoding.ids) == expected[f"s{index}_input_ids"].tolist()
    for layer in run.trace.layers:  # every intermediate in the precision asked for
        assert {array.dtype for array in layer.arrays().values() if array.dtype != bool} == {
            np.dtype(dtype)
        }
        assert layer.Q_rotated is not None and layer.Q_rotated.dtype == np.dtype(dtype)
    tolerance = TOLERANCE[dtype]
    weights = np.stack([layer.weights for layer in run.trace.layers])
    np.testing.assert_allclose(
        weights, expected[f"s{index}_{dtype}_attentions"], rtol=0, atol=tolerance
    )
    np.testing.assert_allclose(
        run.trace.last_hidden_state,
        expected[f"s{index}_{dtype}_last_hidden_state"],
        rtol=0,
        atol=tolerance,
    )
    np.testing.assert_allclose(
        run.trace.hidden_states,
        expected[f"s{index}_{dtype}_hidden_states"],
        rtol=0,
        atol=tolerance,
    )


def test_the_trace_keeps_g_key_value_heads_and_the_rotated_q_and_k(kind: str) -> None:
    run = trace_model(SENTENCE, str(MODELS[kind]), dtype="float64")
    n = len(run.trace.tokens)
    theta = {"llama": 10000.0, "qwen2": 1000000.0}[kind]
    for number, layer in enumerate(run.trace.layers, start=1):
        assert layer.n_heads == 4 and layer.n_kv_heads == 2 and layer.d_k == 8
        assert layer.W_Q.shape == (4, 32, 8) and layer.W_K.shape == layer.W_V.shape == (2, 32, 8)
        assert layer.Q.shape == (4, n, 8) and layer.K.shape == layer.V.shape == (2, n, 8)
        assert [layer.kv_head(head) for head in range(4)] == [0, 0, 1, 1]
        assert layer.rope == Rope(base=theta, pairing="half")
        assert layer.Q_rotated is not None and layer.K_rotated is not None
        # Q and K as projected, then rotated: position 0 is not turned, the others are.
        np.testing.assert_array_equal(layer.Q_rotated[:, 0], layer.Q[:, 0])
        assert not np.allclose(layer.Q_rotated[:, 1:], layer.Q[:, 1:])
        # A rotation keeps each pair's length: (i, i + d_k/2).
        for projected, rotated in ((layer.Q, layer.Q_rotated), (layer.K, layer.K_rotated)):
            np.testing.assert_allclose(
                projected[..., :4] ** 2 + projected[..., 4:] ** 2,
                rotated[..., :4] ** 2 + rotated[..., 4:] ** 2,
                rtol=1e-12,
            )
        # The scores are the rotated query of head i against the rotated keys of its group.
        for head in range(4):
            expected = layer.Q_rotated[head] @ layer.K_rotated[layer.kv_head(head)].T
            np.testing.assert_allclose(layer.scores[head], expected, rtol=1e-12, atol=1e-12)
            z = layer.weights[head] @ layer.V[layer.kv_head(head)]  # V is not rotated
            np.testing.assert_allclose(layer.Z[head], z, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(layer.scaled, layer.scores / np.sqrt(8), rtol=1e-15)
        assert layer.mask is not None and (layer.mask == np.tril(np.ones((n, n), bool))).all()
        assert (layer.weights[:, ~layer.mask] == 0).all()
        assert layer.provenance.weights.architecture == kind
        assert layer.provenance.weights.layer == number and layer.provenance.masking.causal
        assert "input_layernorm" in layer.provenance.embeddings.describe()
        assert layer.has_biases == (kind == "qwen2")
        if layer.b_Q is not None and layer.b_K is not None and layer.b_O is not None:
            assert layer.b_Q.shape == (4, 8) and layer.b_K.shape == (2, 8)
            assert not layer.b_O.any()  # Qwen2's output projection has no bias


def test_layer_1_reads_the_rms_norm_of_the_token_embeddings() -> None:
    run = trace_model(SENTENCE, str(MODELS["llama"]), dtype="float64")
    config, architecture = read_config(MODELS["llama"])
    with open_tensors(MODELS["llama"], np.float64, architecture.prefixes) as tensors:
        weights = architecture.load(tensors, config, run.encoding.ids)
        table = tensors.get("embed_tokens.weight", (450, 32))
    np.testing.assert_array_equal(run.trace.hidden_states[0], table[list(run.encoding.ids)])
    x = run.trace.hidden_states[0]
    expected = x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6) * weights.layers[0].attention_norm
    np.testing.assert_allclose(run.trace.layers[0].X, expected, rtol=1e-13)
    # The forward pass normalises Xᵀ's columns (rms_norm_columns), not X's rows: the same
    # formula with each row's d_model squares added in another order. Two such sums of positive
    # terms are at most 2·γ_d ≈ d·eps apart, relative, their square roots half that, and the
    # division and γ round once each: a relative d_model·eps bounds it.
    rtol = x.shape[1] * float(np.finfo(x.dtype).eps)
    np.testing.assert_allclose(
        run.trace.layers[0].X, rms_norm(x, weights.layers[0].attention_norm, 1e-6), rtol=rtol
    )


def test_the_relative_position_property_holds_in_the_models_own_scores() -> None:
    """The same token at two positions: its score against the <s> before it depends only on
    how far back <s> is, so moving both by the same amount keeps the score."""
    run = trace_model("it it it it it", str(MODELS["llama"]), dtype="float64")
    layer = run.trace.layers[0]  # layer 1: X of each "it" is the same row
    its = [i for i, token in enumerate(run.trace.tokens) if token == "it"]
    np.testing.assert_allclose(layer.X[its[0]], layer.X[its[-1]], rtol=0, atol=0)
    for head in range(4):
        # q at position m against k at position m − 1, for every m: the same score.
        pairs = [layer.scores[head, m, m - 1] for m in its[1:]]
        np.testing.assert_allclose(pairs, pairs[0], rtol=1e-12)
        assert not np.isclose(layer.scores[head, its[-1], its[0]], pairs[0])


def test_begin_of_sequence_is_a_special_token_and_the_pieces_are_text(kind: str) -> None:
    run = trace_model(SENTENCE + " über", str(MODELS[kind]))
    tokens = run.trace.tokens
    provenance = run.trace.layers[0].provenance
    assert tokens[0] == "<s>" and provenance.special == (0,)
    assert not any(mark in token for token in tokens for mark in ("▁", "Ġ", "<0x"))
    assert "<c3>" in tokens and "<bc>" in tokens  # ü's two bytes, as GPT-2's are shown
    assert provenance.words[:3] == ("<s>", "The", "animal") and "it" in provenance.words
    assert provenance.words[-1] == "über"


def test_the_family_says_what_a_llama_layer_does_around_attention() -> None:
    llama, qwen2 = family_of("llama"), family_of("qwen2")
    assert llama is not None and qwen2 is not None
    for family in (llama, qwen2):
        assert "RMSNorm" in family.sublayer and "SwiGLU" in family.sublayer
        assert "residual stream" in family.sublayer and "causal" in family.sublayer
        assert "LayerNorm" not in family.sublayer and "GELU" not in family.sublayer
        assert "Word order is not in X" in family.word_order and "RoPE" in family.word_order
        assert family.special_names == ("<s>",)
    assert "without biases" in llama.sublayer
    assert "with biases on Q, K and V" in qwen2.sublayer and "b_O = 0" in qwen2.sublayer


def test_rope_theta_is_read_at_the_top_level_or_inside_rope_parameters() -> None:
    data = json.loads((MODELS["llama"] / "config.json").read_text(encoding="utf-8"))
    assert ARCHITECTURE.read_config(data).rope_theta == 10000.0
    del data["rope_theta"]
    assert ARCHITECTURE.read_config(data).rope_theta == 10000.0  # the default
    data["rope_parameters"] = {"rope_type": "default", "rope_theta": 500000.0}
    config = ARCHITECTURE.read_config(data)
    assert isinstance(config, LlamaConfig) and config.rope_theta == 500000.0
    assert (config.n_heads, config.n_kv_heads, config.d_k, config.d_ff) == (4, 2, 8, 64)
    assert config.layer_norm_eps == 1e-6 and config.pad_token_id == 2  # </s> pads
    data["num_key_value_heads"] = None
    assert ARCHITECTURE.read_config(data).n_kv_heads == 4  # missing: one per query head


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "rope_type 'llama3'"),
        ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4}}, "rope_type 'yarn'"),
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, "rope_type 'linear'"),
        ({"num_local_experts": 8}, "mixture of experts"),
        ({"hidden_act": "gelu"}, "hidden_act 'silu'"),
        ({"mlp_bias": True}, "mlp_bias false"),
        ({"num_key_value_heads": 3}, "cannot share 3 key/value heads"),
        ({"head_dim": 16}, "not head_dim 16"),
        ({"rope_theta": 0.5}, "rope_theta must be a number above 1"),
        ({"model_type": "mistral"}, "is a 'mistral' model"),
    ],
)
def test_features_attnviz_does_not_run_are_refused_in_one_line(
    tmp_path: Path, change: dict[str, object], fragment: str
) -> None:
    folder = tmp_path / "llama"
    shutil.copytree(MODELS["llama"], folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, **change}), encoding="utf-8")
    result = runner.invoke(app, ["explain", "-m", str(folder), "I am good"])
    assert result.exit_code == ExitStatus.BAD_FILE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr


@pytest.mark.slow
def test_the_models_own_sliding_window_runs_in_the_layers_that_have_it(tmp_path: Path) -> None:
    """Qwen2's use_sliding_window from max_window_layers on, or layer_types: those layers read
    only the last W tokens (i − W < j ≤ i), the others every earlier one; a layer before the
    first windowed one has the plain model's numbers."""
    from attnviz.attention import causal_mask, sliding_window_mask
    from attnviz.trace_files import export_layers, load_trace

    folder = tmp_path / "qwen2"
    shutil.copytree(MODELS["qwen2"], folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config |= {
        "use_sliding_window": True,
        "sliding_window": 4,
        "max_window_layers": 1,
        "layer_types": None,
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    windowed = trace_model(SENTENCE, str(folder), dtype="float64").trace.layers
    plain = trace_model(SENTENCE, str(MODELS["qwen2"]), dtype="float64").trace.layers
    n = len(windowed[0].tokens)
    assert n > 4
    assert windowed[0].window is None and windowed[1].window == 4
    np.testing.assert_array_equal(windowed[0].mask, causal_mask(n))
    np.testing.assert_array_equal(windowed[1].mask, sliding_window_mask(n, 4))
    assert (windowed[1].weights[:, ~sliding_window_mask(n, 4)] == 0.0).all()
    # layer 1 is the same computation on the same X: its numbers, to float64 rounding
    np.testing.assert_allclose(windowed[0].weights, plain[0].weights, rtol=0, atol=1e-12)
    assert np.abs(windowed[1].weights - plain[1].weights).max() > 0.1
    # one export of both layers: the widest mask written once, each layer's own read back
    export_layers(windowed, tmp_path / "layers.npz")
    reloaded = load_trace(tmp_path / "layers.npz")
    assert [layer.window for layer in reloaded] == [None, 4]
    for again, layer in zip(reloaded, windowed, strict=True):
        np.testing.assert_array_equal(again.mask, layer.mask)
    # layer_types names the layers itself: here the first alone
    config |= {"layer_types": ["sliding_attention", "full_attention"]}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    named = trace_model(SENTENCE, str(folder), dtype="float64").trace.layers
    assert [layer.window for layer in named] == [4, None]
    # a window given to the run narrows the model's own where both apply, and rules the rest
    both = trace_model(SENTENCE, str(folder), dtype="float64", window=2).trace.layers
    assert [layer.window for layer in both] == [2, 2]
    np.testing.assert_array_equal(both[1].mask, sliding_window_mask(n, 2))
    # without use_sliding_window transformers gives no layer a window, and fails on a layer
    # named sliding_attention: refused in one line, or run without a window when none is named
    config |= {"use_sliding_window": False}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    result = runner.invoke(app, ["explain", "-m", str(folder), SENTENCE])
    assert result.exit_code == ExitStatus.BAD_FILE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "use_sliding_window is not true" in lines[0], result.stderr
    config |= {"layer_types": ["full_attention", "full_attention"], "max_window_layers": 0}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    unwindowed = trace_model(SENTENCE, str(folder), dtype="float64").trace.layers
    assert [layer.window for layer in unwindowed] == [None, None]


def test_a_llama_config_s_sliding_window_is_ignored_as_transformers_llama_does(
    tmp_path: Path,
) -> None:
    """transformers' LlamaAttention reads no sliding window (only Qwen2's config has one): a
    Llama config carrying use_sliding_window, sliding_window and layer_types runs every layer
    on every earlier token, the numbers of the config without them."""
    folder = tmp_path / "llama"
    shutil.copytree(MODELS["llama"], folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config |= {
        "use_sliding_window": True,
        "sliding_window": 2,
        "max_window_layers": 0,
        "layer_types": ["sliding_attention", "sliding_attention"],
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    read = ARCHITECTURE.read_config(config)
    assert read.sliding_window is None and read.window_layers == ()
    given = trace_model(SENTENCE, str(folder), dtype="float64").trace.layers
    plain = trace_model(SENTENCE, str(MODELS["llama"]), dtype="float64").trace.layers
    for layer, before in zip(given, plain, strict=True):
        assert layer.window is None
        # the same computation on the same files: equal to float64 rounding
        np.testing.assert_allclose(layer.weights, before.weights, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_pad_to_appends_end_of_sequence_masked_as_keys() -> None:
    plain = trace_model("I am good", str(MODELS["llama"]), dtype="float64")
    n = len(plain.trace.tokens)
    padded = trace_model("I am good", str(MODELS["llama"]), dtype="float64", pad_to=n + 3)
    assert padded.trace.tokens[n:] == ("</s>",) * 3
    for before, after in zip(plain.trace.layers, padded.trace.layers, strict=True):
        assert (after.weights[:, :, n:] == 0).all()
        np.testing.assert_allclose(after.weights[:, :n, :n], before.weights, atol=1e-12)


@pytest.mark.slow
def test_the_views_that_read_only_the_weights_work(tmp_path: Path) -> None:
    picture = str(tmp_path / "a.png")
    for args in (
        ["heads", "-m", str(MODELS["llama"]), SENTENCE, "--words"],
        ["heads", "-m", str(MODELS["qwen2"]), SENTENCE, "--dtype", "float64"],
        ["heatmap", "-m", str(MODELS["llama"]), SENTENCE, "--all-layers", "-o", picture],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.stderr)
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_the_lesson_says_the_familys_own_sentences_and_no_other_familys(model_type: str) -> None:
    from lesson.test_family_sentences import as_model, lesson_text, sentences

    from attnviz.core import trace_layers
    from attnviz.model.families import bert, gpt2
    from attnviz.options import TraceOptions

    (trace,) = trace_layers(SENTENCE, TraceOptions())[0]
    text = " ".join(lesson_text(as_model(trace, model_type)).split())
    own = family_of(model_type)
    assert own is not None
    for sentence in (own.tokenizer, own.word_order, own.sublayer, own.after_attention):
        assert sentence in text, sentence
    for other in (bert.FAMILY, gpt2.FAMILY):
        for sentence in sentences(other):
            assert sentence not in text, sentence


@pytest.mark.slow
@pytest.mark.parametrize("model", ["llama", "qwen2", "gguf"])
def test_the_ablation_says_why_it_measures_the_hidden_state_without_the_bert_sentence(
    model: str,
) -> None:
    """A decoder's output layer is not loaded: the ablation says that of this model, not the
    BERT family's "read as an encoder only"; a GGUF file's name, which ends in its quantization
    in parentheses, is not followed by a second parenthesis."""
    path = HERE / "tiny_llama.gguf" if model == "gguf" else MODELS[model]
    result = runner.invoke(
        app,
        ["heads", "-m", str(path), SENTENCE, "--focus", "it", "--ablate"],
        env={"COLUMNS": "3000"},
    )
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "attnviz does not load the output layer of" in text
    assert "only the hidden state is measured" in text
    assert "encoder" not in text and "BERT" not in text
    assert ") (" not in text


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_word_order_is_said_of_layer_1_and_of_the_layers_after_it(model_type: str) -> None:
    """Layer 1's X is the token embeddings, which carry no positions; a later layer's X comes
    from layers that rotated q and k by position, so "not in X" would be false there."""
    said = {}
    for layer in ("1", "2"):
        args = ["explain", "-m", str(MODELS[model_type]), SENTENCE, "--layer", layer]
        result = runner.invoke(app, args, env={"COLUMNS": "3000"})
        assert result.exit_code == 0, result.stderr
        said[layer] = " ".join(result.stdout.split())
    assert "Word order is not in X" in said["1"]
    assert "reaches this X only through the layers below" not in said["1"]
    assert "Word order is not in X" not in said["2"]
    assert "Word order reaches this X only through the layers below" in said["2"]
    assert "RoPE" in said["2"] and "causal mask" in said["2"]
