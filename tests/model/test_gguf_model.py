"""tiny_llama.gguf handed over in Hugging Face's terms: its sizes, its tensors by Hugging Face
name equal to what transformers' GGUF loader makes of them (golden_tiny_gguf.npz,
make_smollm2_gguf_golden.py), W_Q and W_K in either RoPE pairing giving the same attention
scores, and the features attnviz does not compute refused in one line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from attnviz.errors import FileProblem

pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")

from attnviz.model.sources.gguf_file import GgufFile, read_gguf  # noqa: E402
from attnviz.model.sources.gguf_model import (  # noqa: E402
    GgufTensors,
    hf_name,
    open_gguf_model,
    to_adjacent,
    to_half,
)
from attnviz.model.sources.gguf_settings import read_settings  # noqa: E402
from model.make_tiny_gguf import hf_weights  # noqa: E402

HERE = Path(__file__).resolve().parent
TINY = HERE / "tiny_llama.gguf"
GOLDEN = HERE / "golden_tiny_gguf.npz"


def with_metadata(file: GgufFile, **changes: object) -> GgufFile:
    return replace(file, metadata={**file.metadata, **changes})


def test_the_settings_are_those_of_a_config_json() -> None:
    settings = read_settings(read_gguf(TINY))
    assert settings.config() == {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "intermediate_size": 96,
        "rope_theta": 100000.0,
        "rms_norm_eps": pytest.approx(1e-5),
        "vocab_size": 318,
        "max_position_embeddings": 128,
        "tie_word_embeddings": True,
        "hidden_act": "silu",
    }
    assert settings.stored_pairing == "adjacent"


def test_every_tensor_equals_what_transformers_gguf_loader_makes_of_it() -> None:
    golden = dict(np.load(GOLDEN))
    tensors = open_gguf_model(TINY)
    names = [name for name in golden if name.startswith("model.")]
    assert sorted(names) == sorted(tensors.names)
    for full in names:
        name = full.removeprefix("model.")
        shape = tensors.file.tensors[tensors.stored[full]].shape
        values = tensors.get(name, shape)
        np.testing.assert_array_equal(
            values if values.ndim == 1 else values[golden["rows"]], golden[full], err_msg=full
        )


def test_unquantized_w_q_and_w_k_come_back_exactly_in_hugging_face_layout() -> None:
    original = hf_weights(318)
    tensors = open_gguf_model(TINY, np.float64)
    for projection, rows in (("q_proj", 64), ("k_proj", 32)):
        name = f"layers.1.self_attn.{projection}.weight"  # stored as F32
        read = tensors.get(name, (rows, 64))
        assert read.dtype == np.float64 and not read.flags.writeable
        np.testing.assert_array_equal(read, original[f"model.{name}"])


def test_quantized_tensors_are_close_to_the_weights_they_were_made_from() -> None:
    original = hf_weights(318)
    tensors = open_gguf_model(TINY)
    q = tensors.get("layers.0.self_attn.q_proj.weight", (64, 64))  # Q4_1: 16 levels per block
    spread = np.ptp(original["model.layers.0.self_attn.q_proj.weight"].reshape(-1, 32), axis=1)
    error = np.abs(q - original["model.layers.0.self_attn.q_proj.weight"]).reshape(-1, 32)
    assert (error.max(axis=1) <= spread / 15 / 2 * 1.01 + 1e-3).all()
    embedding = tensors.rows("embed_tokens.weight", [3, 300], 64)  # Q8_0: 255 levels
    np.testing.assert_allclose(
        embedding, original["model.embed_tokens.weight"][[3, 300]], atol=2.0 / 127
    )


def rotate(vectors: np.ndarray, positions: np.ndarray, base: float, pairing: str) -> np.ndarray:
    """RoPE written out for the test: [n, d_k] rotated pair by pair."""
    d_k = vectors.shape[-1]
    theta = base ** (-2 * np.arange(d_k // 2) / d_k)
    angles = positions[:, None] * theta  # [n, d_k/2]
    if pairing == "half":
        first, second = np.arange(d_k // 2), np.arange(d_k // 2) + d_k // 2
    else:
        first, second = np.arange(0, d_k, 2), np.arange(1, d_k, 2)
    x, y = vectors[:, first], vectors[:, second]
    rotated = vectors.copy()
    rotated[:, first] = x * np.cos(angles) - y * np.sin(angles)
    rotated[:, second] = x * np.sin(angles) + y * np.cos(angles)
    return rotated


def scores(tensors: GgufTensors, x: np.ndarray, layer: int, pairing: str = "") -> np.ndarray:
    """Every head's scores q_m·k_n with RoPE in ``pairing`` (the tensors' own unless given).
    -> [h, n, n]"""
    pairing = pairing or tensors.pairing
    settings = tensors.settings
    w_q = tensors.get(f"layers.{layer}.self_attn.q_proj.weight", (64, 64))
    w_k = tensors.get(f"layers.{layer}.self_attn.k_proj.weight", (32, 64))
    positions = np.arange(len(x), dtype=np.float64)
    result = []
    for head in range(settings.n_heads):
        kv = head // (settings.n_heads // settings.n_kv_heads)
        q = rotate(x @ w_q[head * 16 : (head + 1) * 16].T, positions, 100000.0, pairing)
        k = rotate(x @ w_k[kv * 16 : (kv + 1) * 16].T, positions, 100000.0, pairing)
        result.append(q @ k.T)
    return np.stack(result)


@pytest.mark.parametrize("layer", [0, 1])
def test_both_pairings_give_the_same_attention_scores(layer: int) -> None:
    x = np.random.default_rng(7).normal(size=(9, 64))
    half = GgufTensors(read_gguf(TINY), np.float64, pairing="half")
    adjacent = GgufTensors(read_gguf(TINY), np.float64, pairing="adjacent")
    np.testing.assert_allclose(scores(half, x, layer), scores(adjacent, x, layer), atol=1e-12)
    # The wrong pairing runs but is another model: the trap the permutation hides.
    assert np.abs(scores(half, x, layer, "adjacent") - scores(half, x, layer)).max() > 0.1


def test_the_permutation_and_its_inverse() -> None:
    rows = np.random.default_rng(3).normal(size=(3 * 8, 5))
    np.testing.assert_array_equal(to_half(to_adjacent(rows, 3), 3), rows)
    bias = np.arange(8.0)  # one head of size 8: i pairs with i + 4, then 2i with 2i + 1
    assert to_adjacent(bias, 1).tolist() == [0, 4, 1, 5, 2, 6, 3, 7]


def test_names_map_to_hugging_face_and_the_output_layer_is_never_read() -> None:
    assert hf_name("blk.12.attn_q.weight") == "model.layers.12.self_attn.q_proj.weight"
    assert hf_name("blk.0.ffn_down.weight") == "model.layers.0.mlp.down_proj.weight"
    assert hf_name("token_embd.weight") == "model.embed_tokens.weight"
    assert hf_name("output.weight") is None and hf_name("rope_freqs.weight") is None
    tensors = open_gguf_model(TINY)
    assert "layers.0.self_attn.q_proj.weight" in tensors
    assert "layers.0.self_attn.q_proj.bias" not in tensors
    w, b = tensors.linear("layers.0.self_attn.k_proj", 64, 32)
    assert w.shape == (64, 32) and b is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"general.architecture": "gemma2"}, r"the 'gemma2' architecture; attnviz runs .*llama"),
        ({"llama.expert_count": 8}, r"uses a mixture of 8 experts"),
        ({"llama.attention.sliding_window": 4096}, r"uses sliding-window attention"),
        ({"llama.rope.scaling.type": "yarn"}, r"uses scaled RoPE \(yarn\)"),
        ({"llama.rope.scaling.factor": 4.0}, r"uses scaled RoPE"),
        ({"llama.rope.dimension_count": 8}, r"RoPE on only part of each head"),
        ({"llama.attention.head_count_kv": 3}, r"cannot share 3 key/value heads evenly"),
        ({"llama.block_count": "two"}, r"llama.block_count holds the text 'two'"),
        ({"llama.attention.layer_norm_rms_epsilon": -1.0}, r"RMSNorm's ε -1.0"),
    ],
)
def test_what_attnviz_does_not_compute_is_refused_in_one_line(
    changes: dict[str, object], message: str
) -> None:
    file = with_metadata(read_gguf(TINY), **changes)
    with pytest.raises(FileProblem, match=message):
        read_settings(file)


def test_llama_3_1_frequency_factors_are_refused_as_scaled_rope() -> None:
    file = read_gguf(TINY)
    odd = replace(
        file, tensors={**file.tensors, "rope_freqs.weight": file.tensors["output_norm.weight"]}
    )
    with pytest.raises(FileProblem, match=r"scaled RoPE \(Llama 3.1's frequency factors"):
        read_settings(odd)


def test_a_qwen2_file_is_stored_in_hugging_face_layout() -> None:
    file = read_gguf(TINY)
    renamed = {key.replace("llama.", "qwen2.", 1): value for key, value in file.metadata.items()}
    qwen2 = replace(file, metadata={**renamed, "general.architecture": "qwen2"})
    tensors = GgufTensors(qwen2, np.float64, pairing="half")
    stored = GgufTensors(read_gguf(TINY), np.float64, pairing="adjacent")
    assert tensors.settings.stored_pairing == "half"
    name = "layers.1.self_attn.q_proj.weight"
    np.testing.assert_array_equal(tensors.get(name, (64, 64)), stored.get(name, (64, 64)))


def test_shapes_ids_and_missing_tensors_are_checked() -> None:
    tensors = open_gguf_model(TINY)
    with pytest.raises(FileProblem, match=r"has shape \[64, 64\], the file's metadata implies"):
        tensors.get("layers.0.self_attn.q_proj.weight", (64, 32))
    with pytest.raises(FileProblem, match=r"id 999, outside token_embd.weight's 318 rows"):
        tensors.rows("embed_tokens.weight", [1, 999], 64)
    with pytest.raises(FileProblem, match=r"lacks model.layers.5.input_layernorm.weight"):
        tensors.get("layers.5.input_layernorm.weight", (64,))
    with pytest.raises(FileProblem, match=r"give 'half' or 'adjacent'"):
        open_gguf_model(TINY, pairing="sideways")


def test_a_number_that_is_not_finite_is_named(tmp_path: Path) -> None:
    content = bytearray(TINY.read_bytes())
    norm = read_gguf(TINY).tensors["output_norm.weight"]
    content[norm.start + 8 : norm.start + 12] = np.float32(np.nan).tobytes()
    path = tmp_path / "nan.gguf"
    path.write_bytes(bytes(content))
    with pytest.raises(FileProblem, match=r"output_norm.weight holds a number that is not finite"):
        open_gguf_model(path).get("norm.weight", (64,))


@pytest.mark.parametrize("pairing", ["half", "adjacent"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stacked_weights_are_the_tensors_concatenated(pairing: str, dtype: type) -> None:
    tensors = open_gguf_model(TINY, dtype, pairing=pairing)
    parts = [
        (f"layers.1.self_attn.{name}_proj.weight", (rows, 64))
        for name, rows in (("q", 64), ("k", 32), ("v", 32))
    ]
    stacked = tensors.stacked(parts)
    whole = np.concatenate([tensors.get(name, shape) for name, shape in parts])
    assert stacked.dtype == dtype and stacked.shape == (128, 64) and not stacked.flags.writeable
    np.testing.assert_array_equal(stacked.view(np.uint8), whole.view(np.uint8))
    with pytest.raises(FileProblem, match=r"attn_k.weight \(model.layers.1.self_attn.k_proj"):
        tensors.stacked([parts[0], (parts[1][0], (64, 64))])


def test_a_damaged_scale_in_stacked_weights_names_its_tensor(tmp_path: Path) -> None:
    content = bytearray(TINY.read_bytes())
    k = read_gguf(TINY).tensors["blk.0.attn_k.weight"]
    assert k.type_name == "Q4_1"
    content[k.start + 20 : k.start + 22] = np.float16(np.inf).tobytes()  # block 2's scale d
    path = tmp_path / "inf.gguf"
    path.write_bytes(bytes(content))
    parts = [
        (f"layers.0.self_attn.{name}_proj.weight", (rows, 64))
        for name, rows in (("q", 64), ("k", 32), ("v", 32))
    ]
    with pytest.raises(FileProblem, match=r": blk.0.attn_k.weight holds a number that is not"):
        open_gguf_model(path).stacked(parts)


def test_load_gguf_hands_over_tensors_tokenizer_and_the_quantization() -> None:
    from attnviz.model.sources.gguf_model import load_gguf
    from attnviz.model.sources.tokenizer import encode

    model = load_gguf(TINY, np.float64)
    assert model.settings.n_layers == 2 and model.tensors.dtype is np.float64
    assert encode(model.tokenizer, "the cat", 64).ids
    assert model.attention_type == "Q4_1" and model.attention_tensor == "blk.0.attn_v.weight"
    assert model.quantization == "4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"llama.attention.layer_norm_rms_epsilon": 1e30},
            r"RMSNorm's ε 1e\+30 \(llama.attention.layer_norm_rms_epsilon\) is not usable: its "
            r"epsilon must be a small positive number",
        ),
        (
            {"llama.rope.freq_base": 0.5},
            r"RoPE's base 0.5 is not usable \(llama.rope.freq_base must be a number above 1",
        ),
    ],
)
def test_an_epsilon_or_base_that_cannot_be_used_is_named_by_its_key(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(FileProblem, match=message):
        read_settings(with_metadata(read_gguf(TINY), **changes))
