"""Write tests/model/tiny_llama.gguf: a tiny random Llama model in a GGUF file, as llama.cpp's
converter writes one, for tests/model/test_gguf_model.py and the GGUF tests that follow it.

2 layers, d_model 64, 4 query heads sharing 2 key/value heads of size 16, a SwiGLU width of 96,
RoPE base 100000; a byte-level BPE tokenizer of 256 bytes, a few merges learnt from the seeds'
sentences and two control tokens, pre-tokenizer "smollm", no BOS added. The weights are drawn
in Hugging Face's layout from a fixed seed (``hf_weights``), W_Q's and W_K's rows permuted for
adjacent RoPE pairs as llama.cpp's converter does, and stored in several types: Q4_1 (attention),
Q4_0, Q8_0 (the embeddings, gate, up), F16, BF16 and F32 (the norms, and layer 2's W_Q and W_K,
so that the permutation is checked exactly). The key ``attnviz.untrained`` (true) makes attnviz
say the weights are random, not pretrained. Run: python tests/model/make_tiny_gguf.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "tiny_llama.gguf"
N_LAYERS, D_MODEL, N_HEADS, N_KV_HEADS, D_FF = 2, 64, 4, 2, 96
D_K = D_MODEL // N_HEADS
ROPE_BASE, RMS_EPS = 100000.0, 1e-5
CORPUS = (
    "The animal didn't cross the street because it was too tired.",
    "The animal didn't cross the street because it was too wide.",
    "The cat sat on the mat. It was happy in 2024.",
)
CONTROL_TOKENS = ("<|endoftext|>", "<|im_start|>")
#: (layer, Hugging Face name) -> the type it is stored as; anything else is Q8_0 (norms F32).
TYPES = {
    "self_attn.q_proj": ("Q4_1", "F32"),
    "self_attn.k_proj": ("Q4_1", "F32"),
    "self_attn.v_proj": ("Q4_1", "Q4_0"),
    "self_attn.o_proj": ("Q4_0", "F16"),
    "mlp.gate_proj": ("Q8_0", "Q8_0"),
    "mlp.up_proj": ("Q8_0", "BF16"),
    "mlp.down_proj": ("Q4_1", "Q8_0"),
}
GGUF_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def vocabulary() -> tuple[list[str], list[str]]:
    """A byte-level BPE vocabulary learnt from CORPUS: tokens in id order (the 256 bytes first,
    then the merges' results, then the control tokens) and the merges in rank order."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    # Learnt with the split the file declares ("smollm"), so that no merge joins two digits.
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    state = tokenizer.to_str()
    import json

    model = json.loads(state)["model"]
    tokens = sorted(model["vocab"], key=model["vocab"].__getitem__)
    merges = [" ".join(merge) if isinstance(merge, list) else merge for merge in model["merges"]]
    return [*tokens, *CONTROL_TOKENS], merges


def hf_weights(vocab_size: int) -> dict[str, np.ndarray]:
    """The model's weights by Hugging Face name and layout ([out, in]), float32, seed 22."""
    rng = np.random.default_rng(22)
    shapes = {
        "self_attn.q_proj": (N_HEADS * D_K, D_MODEL),
        "self_attn.k_proj": (N_KV_HEADS * D_K, D_MODEL),
        "self_attn.v_proj": (N_KV_HEADS * D_K, D_MODEL),
        "self_attn.o_proj": (D_MODEL, N_HEADS * D_K),
        "mlp.gate_proj": (D_FF, D_MODEL),
        "mlp.up_proj": (D_FF, D_MODEL),
        "mlp.down_proj": (D_MODEL, D_FF),
    }
    weights = {"model.embed_tokens.weight": rng.normal(0, 0.5, (vocab_size, D_MODEL))}
    for layer in range(N_LAYERS):
        prefix = f"model.layers.{layer}."
        for name, shape in shapes.items():
            weights[f"{prefix}{name}.weight"] = rng.normal(0, shape[1] ** -0.5, shape)
        weights[f"{prefix}input_layernorm.weight"] = 1 + rng.normal(0, 0.1, D_MODEL)
        weights[f"{prefix}post_attention_layernorm.weight"] = 1 + rng.normal(0, 0.1, D_MODEL)
    weights["model.norm.weight"] = 1 + rng.normal(0, 0.1, D_MODEL)
    return {name: value.astype(np.float32) for name, value in weights.items()}


def permute(rows: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf.py LlamaModel.permute: within each head, rows (i,
    i + d_k/2) become rows (2i, 2i+1)."""
    return (
        rows.reshape(n_heads, 2, rows.shape[0] // n_heads // 2, *rows.shape[1:])
        .swapaxes(1, 2)
        .reshape(rows.shape)
    )


def add(writer: object, name: str, values: np.ndarray, type_name: str) -> None:
    from gguf import GGMLQuantizationType, GGUFWriter
    from gguf.quants import quantize

    assert isinstance(writer, GGUFWriter)
    qtype = GGMLQuantizationType[type_name]
    if type_name == "F32":
        writer.add_tensor(name, values.astype(np.float32))
    elif type_name == "F16":
        writer.add_tensor(name, values.astype(np.float16))
    else:
        writer.add_tensor(name, quantize(values, qtype), raw_dtype=qtype)


def main() -> None:
    from gguf import GGUFWriter, TokenType

    tokens, merges = vocabulary()
    weights = hf_weights(len(tokens))
    writer = GGUFWriter(OUT, "llama")
    writer.add_name("attnviz tiny llama")
    # Random weights, never trained: attnviz says so, as config.json's "attnviz_untrained" does.
    writer.add_bool("attnviz.untrained", True)
    writer.add_block_count(N_LAYERS)
    writer.add_context_length(128)
    writer.add_embedding_length(D_MODEL)
    writer.add_feed_forward_length(D_FF)
    writer.add_head_count(N_HEADS)
    writer.add_head_count_kv(N_KV_HEADS)
    writer.add_rope_freq_base(ROPE_BASE)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_rope_dimension_count(D_K)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(tokens)
    control = set(CONTROL_TOKENS)
    writer.add_token_types(
        [TokenType.CONTROL if t in control else TokenType.NORMAL for t in tokens]
    )
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|im_start|>"))
    writer.add_eos_token_id(tokens.index("<|endoftext|>"))
    writer.add_add_bos_token(False)
    add(writer, "token_embd.weight", weights["model.embed_tokens.weight"], "Q8_0")
    for layer in range(N_LAYERS):
        prefix = f"model.layers.{layer}."
        for name, types in TYPES.items():
            values = weights[f"{prefix}{name}.weight"]
            if name in ("self_attn.q_proj", "self_attn.k_proj"):
                values = permute(values, N_HEADS if name == "self_attn.q_proj" else N_KV_HEADS)
            add(writer, f"blk.{layer}.{GGUF_NAMES[name]}.weight", values, types[layer])
        for name, gguf_name in (
            ("input_layernorm", "attn_norm"),
            ("post_attention_layernorm", "ffn_norm"),
        ):
            add(writer, f"blk.{layer}.{gguf_name}.weight", weights[f"{prefix}{name}.weight"], "F32")
    add(writer, "output_norm.weight", weights["model.norm.weight"], "F32")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
