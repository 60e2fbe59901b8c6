"""What the lesson says of a GGUF file's weights for files of the K-quants, as most files run
from Ollama or LM Studio are (Q4_K_M mixes Q4_K and Q6_K): the types in words and one weight
rebuilt by hand from its sub-block and super-block, true at the digits it shows."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")
pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")

from attnviz.model.sources.gguf_about import quantization_about  # noqa: E402
from attnviz.model.sources.gguf_model import load_gguf  # noqa: E402

D_MODEL, N_HEADS, N_KV_HEADS = 256, 4, 2  # a K-quant's rows hold 256 numbers at least
D_K = D_MODEL // N_HEADS
#: Where each K-quant keeps its float16 d (and dmin) in its block, and the block's bytes.
HALVES = {"Q4_K": ((0, 2), 144), "Q6_K": ((208,), 210), "Q3_K": ((108,), 110)}


def k_quant_bytes(rng: np.random.Generator, rows: int, type_name: str) -> np.ndarray:
    """Random codes and sub-block scales, with finite float16 d (and dmin) in every block."""
    places, size = HALVES[type_name]
    raw = rng.integers(0, 256, (rows, size), dtype=np.uint8)
    for at in places:
        halves = (rng.choice([-1, 1], rows) * 10 ** rng.uniform(-4, -2, rows)).astype(np.float16)
        raw[:, at : at + 2] = halves.view(np.uint8).reshape(rows, 2)
    return raw


def write_model(path: Path, types: dict[str, str]) -> Path:
    """A 2-layer llama GGUF file whose attention weights are stored as ``types`` says
    ("blk.1.attn_v" -> "Q4_K"; Q4_K where it says nothing) and a tokenizer of 3 tokens."""
    from gguf import GGMLQuantizationType, GGUFWriter

    rng = np.random.default_rng(22)
    writer = GGUFWriter(path, "llama")
    writer.add_block_count(2)
    writer.add_context_length(64)
    writer.add_embedding_length(D_MODEL)
    writer.add_feed_forward_length(2 * D_MODEL)
    writer.add_head_count(N_HEADS)
    writer.add_head_count_kv(N_KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(["a", "b", "ab"])
    writer.add_token_merges(["a b"])
    rows = {"q": D_MODEL, "k": N_KV_HEADS * D_K, "v": N_KV_HEADS * D_K, "output": D_MODEL}
    for layer in range(2):
        for kind, n_rows in rows.items():
            name = f"blk.{layer}.attn_{kind}"
            type_name = types.get(name, "Q4_K")
            if type_name == "F16":
                writer.add_tensor(
                    f"{name}.weight", rng.normal(0, 0.1, (n_rows, D_MODEL)).astype(np.float16)
                )
                continue
            raw = k_quant_bytes(rng, n_rows, type_name)
            qtype = GGMLQuantizationType[type_name]
            writer.add_tensor(f"{name}.weight", raw, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def holds_by_hand(formula: str) -> None:
    """The numbers after the formula's last "=" give the value after "≈" to its last digit."""
    numbers, shown = formula.split(" = ")[-1].split(" ≈ ")
    assert re.fullmatch(r"[-−+×() 0-9.e]+", numbers), numbers
    expression = re.sub(
        r"\d+(?:\.\d+)?(?:e-?\d+)?",
        lambda number: f"Fraction('{number[0]}')",
        numbers.replace("×", "*").replace("−", "-"),
    )
    value = eval(expression, {"__builtins__": {}, "Fraction": Fraction})  # noqa: S307
    last = Decimal(shown)
    unit = Decimal(1).scaleb(last.as_tuple().exponent)  # type: ignore[arg-type]
    assert abs(Decimal(value.numerator) / Decimal(value.denominator) - last) <= unit / 2, formula


def test_a_q4_k_m_file_rebuilds_a_q4_k_weight_of_w_v(tmp_path: Path) -> None:
    # As llama.cpp's Q4_K_M: W_V of some layers in Q6_K, everything else in Q4_K.
    path = write_model(tmp_path / "model.Q4_K_M.gguf", {"blk.0.attn_v": "Q6_K"})
    gguf = load_gguf(path)
    assert (gguf.attention_type, gguf.attention_tensor) == ("Q4_K", "blk.1.attn_v.weight")
    about = quantization_about(gguf, path, np.float32)
    assert (
        "its attention weights W_Q, W_K, W_V and W_O mostly as 4-bit Q4_K, super-blocks of 256 "
        "numbers in 8 sub-blocks of 32, each with a 6-bit scale and minimum. Each weight is "
        "rebuilt from its small integer code q, its sub-block's integer scale and minimum and "
        "its super-block's float16 d and dmin: for example the weight in layer 2's W_V of "
        "key/value head 1 that carries x's coordinate 1 into v's coordinate 1 is code q = "
    ) in about
    found = re.search(
        r"is code q = (\d+) of sub-block 1 \(32 numbers\) of super-block 1 of its row, with the "
        r"sub-block's 6-bit scale sc = (\d+) and minimum mn = (\d+), and the super-block's "
        r"d = ([-0-9.e]+) and dmin = ([-0-9.e]+): (w = d·sc·q − dmin·mn = (.*?) ≈ (-?[0-9.e-]+))\.",
        about,
    )
    assert found is not None, about
    q, sc, mn, d, dmin = int(found[1]), int(found[2]), int(found[3]), found[4], found[5]
    dmin_shown = f"({dmin})" if dmin.startswith("-") else dmin
    assert found[7] == f"{d} × {sc} × {q} − {dmin_shown} × {mn}"
    holds_by_hand(found[6])
    assert "the attention shown is that of this quantized model" in about.lower()


@pytest.mark.parametrize(
    ("types", "tensor", "words", "formula"),
    [
        (
            {f"blk.{i}.attn_v": "Q6_K" for i in range(2)},
            "blk.0.attn_k.weight",
            "layer 1's W_K of key/value head 1 that carries x's coordinate 1 into k's coordinate 1",
            "w = d·sc·q − dmin·mn = ",
        ),
        (
            {f"blk.{i}.attn_{kind}": "Q6_K" for i in range(2) for kind in ("q", "k", "v")},
            "blk.0.attn_v.weight",
            "layer 1's W_V of key/value head 1",
            "w = d·sc·(q − 32) = ",
        ),
        (
            {f"blk.{i}.attn_{kind}": "Q3_K" for i in range(2) for kind in ("k", "v", "output")},
            "blk.0.attn_v.weight",
            "layer 1's W_V",
            "w = d·(sc − 32)·(q − 4) = ",
        ),
    ],
)
def test_the_example_names_the_tensor_it_comes_from(
    tmp_path: Path, types: dict[str, str], tensor: str, words: str, formula: str
) -> None:
    path = write_model(tmp_path / "model.gguf", types)
    gguf = load_gguf(path)
    assert gguf.attention_tensor == tensor
    about = quantization_about(gguf, path, np.float64)
    assert f"for example the weight in {words}" in about, about
    example = about[about.index(formula) :].split(". ")[0].removesuffix(".")
    holds_by_hand(example)
    assert "computed in float64" in about


def test_a_file_of_floats_is_not_said_to_be_quantized(tmp_path: Path) -> None:
    types = {f"blk.{i}.attn_{kind}": "F16" for i in range(2) for kind in ("q", "k", "v", "output")}
    path = write_model(tmp_path / "model.F16.gguf", types)
    about = quantization_about(load_gguf(path), path, np.float32)
    assert about.startswith(
        "model.F16.gguf stores its attention weights W_Q, W_K, W_V and W_O as 16-bit floats "
        "(float16), not quantized; the attention shown is computed in float32 from them. The "
        "file stores W_Q and W_K for RoPE on adjacent coordinates"
    ), about
    assert "quantized model" not in about and "code q" not in about
