"""Regenerate ``tests/model/tiny_gpt2/`` and ``tests/model/golden_gpt2.npz``: a tiny random
GPT-2 checkpoint and what Hugging Face ``transformers`` computes with it.

The checkpoint is a GPT-2 of 2 layers, 4 heads and d_model 32 (``model_type`` "gpt2", Conv1D
weights stored [in, out], the fused ``c_attn``, learned positions, ``gelu_new``, a final
LayerNorm), with every parameter (biases and LayerNorm scales included, which a fresh model has
at 0 and 1) drawn from a seeded normal, so that each one matters to the result. Its tokenizer is
a byte-level BPE trained here on a few sentences, with GPT-2's ``<|endoftext|>``.

The golden file holds, for a few sentences, the token ids and what ``GPT2Model`` (eager
attention, eval mode, no grad) computes, in float32 and in float64 (after ``model.double()``):

    s{s}_sentence                    str scalar
    s{s}_input_ids                   int64 [n]
    s{s}_{d}_attentions              d [2, 4, n, n]   (layer, head, query, key)
    s{s}_{d}_hidden_states           d [3, n, 32]     (embeddings, block 1, ln_f(block 2))
    s{s}_{d}_last_hidden_state       d [n, 32]
    meta_versions                    str scalar

This script needs torch and transformers, which attnviz and its tests do NOT need: the tests
read the committed files with numpy only. Run it from a separate virtualenv::

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch==2.13.0 transformers safetensors tokenizers numpy
    /tmp/hfvenv/bin/python tests/model/make_gpt2.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "tiny_gpt2"
GOLDEN = HERE / "golden_gpt2.npz"
END_OF_TEXT = "<|endoftext|>"
CORPUS = (
    "The animal didn't cross the street because it was too tired.",
    "A dog ate the food because it was hungry.",
    "I am good. You are good. We are all good, thank you!",
    "Thinking machines learn to pay attention to every word.",
    "Tokenization splits words into pieces; attention weighs them.",
    "The cat sat on the mat, and then it slept.",
)
SENTENCES = (
    "The animal didn't cross the street because it was too tired",
    "Tokenization splits words into pieces",
    "I am good",
    "Zebras  jumped—über fast!",  # unseen words, two spaces, a dash and an accent
)
DTYPES = ("float32", "float64")
SEED = 0


def train_tokenizer() -> None:
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer(add_prefix_space=False, trim_offsets=True)
    tokenizer.train_from_iterator(
        list(CORPUS) * 20, vocab_size=320, min_frequency=2, special_tokens=[END_OF_TEXT]
    )
    tokenizer.save(str(FOLDER / "tokenizer.json"))


def build_model() -> None:
    import torch
    from transformers import GPT2Config, GPT2Model

    tokenizer = json.loads((FOLDER / "tokenizer.json").read_text(encoding="utf-8"))
    vocabulary = tokenizer["model"]["vocab"]
    end = vocabulary[END_OF_TEXT]
    config = GPT2Config(
        vocab_size=len(vocabulary),
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        bos_token_id=end,
        eos_token_id=end,
        activation_function="gelu_new",
    )
    torch.manual_seed(SEED)
    model = GPT2Model(config).eval()
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            scale = 0.3 if "ln_" in name else 0.2
            centre = 1.0 if "ln_" in name and name.endswith("weight") else 0.0
            parameter.copy_(centre + scale * torch.randn(parameter.shape, generator=generator))
    model.save_pretrained(str(FOLDER), safe_serialization=True)
    # Say in the checkpoint itself that its weights are random, so attnviz never calls them
    # pretrained or trained.
    config_path = FOLDER / "config.json"
    saved = json.loads(config_path.read_text(encoding="utf-8"))
    saved["attnviz_untrained"] = True
    config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def golden() -> None:
    import torch
    import transformers
    from transformers import GPT2Model, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(FOLDER / "tokenizer.json"))
    model = GPT2Model.from_pretrained(str(FOLDER), attn_implementation="eager").eval()
    arrays: dict[str, np.ndarray] = {}
    for d in DTYPES:
        model = model.float() if d == "float32" else model.double()
        for s, sentence in enumerate(SENTENCES):
            ids = tokenizer(sentence, return_tensors="pt")["input_ids"]
            arrays[f"s{s}_sentence"] = np.array(sentence, dtype=np.str_)
            arrays[f"s{s}_input_ids"] = ids[0].numpy().astype(np.int64)
            with torch.no_grad():
                out = model(input_ids=ids, output_attentions=True, output_hidden_states=True)
            for name, tensor in (
                ("attentions", torch.stack(out.attentions)[:, 0]),
                ("hidden_states", torch.stack(out.hidden_states)[:, 0]),
                ("last_hidden_state", out.last_hidden_state[0]),
            ):
                array = tensor.numpy()
                assert array.dtype == np.dtype(d), (name, array.dtype)
                arrays[f"s{s}_{d}_{name}"] = array
    arrays["meta_versions"] = np.array(
        f"torch={torch.__version__} transformers={transformers.__version__} numpy={np.__version__}",
        dtype=np.str_,
    )
    np.savez_compressed(GOLDEN, **arrays)


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    FOLDER.mkdir(exist_ok=True)
    train_tokenizer()
    build_model()
    golden()
    for path in sorted(FOLDER.iterdir()):
        print(f"wrote {path.relative_to(HERE)} ({path.stat().st_size} bytes)")
    print(f"wrote {GOLDEN.relative_to(HERE)} ({GOLDEN.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
