"""Regenerate ``tests/model/tiny_llama/``, ``tests/model/tiny_qwen2/`` and their golden files: tiny
random Llama and Qwen2 checkpoints and what Hugging Face ``transformers`` computes with them.

Both checkpoints have 2 layers, d_model 32, 4 query heads sharing 2 key/value heads (d_k 8),
RMSNorm, RoPE (rope_theta 10000 for Llama, written at the top level of config.json as older
checkpoints do; 1000000 for Qwen2, inside ``rope_parameters`` as transformers 5 writes it),
SwiGLU, a final RMSNorm and tied input/output embeddings; Qwen2 adds biases to Q, K and V. Every
parameter (biases and RMSNorm scales included, which a fresh model has at 0 and 1) is drawn from
a seeded normal, so that each one matters to the result.

Tokenizers, each with a post-processor that puts ``<s>`` before the sentence:
- tiny_llama: a SentencePiece-style BPE in the layout of Llama 2 and TinyLlama's tokenizer.json
  (a normalizer writing spaces as "▁" and prepending one, byte fallback to <0x..> pieces, no
  pre-tokenizer), trained here on a few sentences;
- tiny_qwen2: a byte-level BPE (spaces as "Ġ"), trained here on the same sentences.

The golden files hold, for a few sentences, the token ids and what ``LlamaModel`` /
``Qwen2Model`` (eager attention, eval mode, no grad) computes, in float32 and in float64:

    s{s}_sentence                    str scalar
    s{s}_input_ids                   int64 [n]
    s{s}_{d}_attentions              d [2, 4, n, n]   (layer, head, query, key)
    s{s}_{d}_hidden_states           d [3, n, 32]     (embeddings, layer 1, norm(layer 2))
    s{s}_{d}_last_hidden_state       d [n, 32]
    meta_versions                    str scalar

float64: stock transformers computes RMSNorm, the RoPE angles (cos, sin) and the softmax in
float32 even in a model converted with ``model.double()``, so its float64 output carries float32
rounding (about 1e-7). For the float64 reference this script replaces, while it runs, those three
pieces of the modeling modules with the same formulas computed in the input's dtype
(``float64_reference``): ``*RMSNorm.forward`` without the cast to float32, ``*RotaryEmbedding.
forward`` with the inverse frequencies and angles in float64, and ``eager_attention_forward``
with its softmax in the scores' dtype. The float32 reference is stock transformers.

This script needs torch and transformers, which attnviz and its tests do NOT need: the tests
read the committed files with numpy only. Run it from a separate virtualenv::

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch==2.13.0 transformers safetensors tokenizers numpy
    /tmp/hfvenv/bin/python tests/model/make_llama.py
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
BEGIN = "<s>"
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
SIZES = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}


def sentencepiece_tokenizer() -> dict[str, Any]:
    """Llama 2's tokenizer.json layout: <unk>, <s>, </s>, the 256 byte pieces <0x00>…<0xFF>,
    then the pieces BPE learned (spaces as "▁"), with byte fallback."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    learner = Tokenizer(models.BPE())
    learner.normalizer = normalizers.Sequence(
        [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
    )
    learner.pre_tokenizer = pre_tokenizers.Split("▁", "merged_with_next")
    learner.train_from_iterator(
        list(CORPUS) * 20, trainers.BpeTrainer(vocab_size=200, min_frequency=2, show_progress=False)
    )
    learned = json.loads(learner.to_str())["model"]
    vocabulary = {"<unk>": 0, BEGIN: 1, "</s>": 2}
    vocabulary |= {f"<0x{byte:02X}>": 3 + byte for byte in range(256)}
    for piece in sorted(learned["vocab"], key=learned["vocab"].get):
        vocabulary.setdefault(piece, len(vocabulary))

    def added(index: int, content: str) -> dict[str, Any]:
        return {
            "id": index,
            "content": content,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<unk>"), added(1, BEGIN), added(2, "</s>")],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            ],
        },
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": BEGIN, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": BEGIN, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": BEGIN, "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {BEGIN: {"id": BEGIN, "ids": [1], "tokens": [BEGIN]}},
        },
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocabulary,
            "merges": learned["merges"],
        },
    }


def byte_level_tokenizer() -> dict[str, Any]:
    """A byte-level BPE (GPT-2's and Qwen2's kind) whose post-processor puts <s> first."""
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer(add_prefix_space=False, trim_offsets=True)
    tokenizer.train_from_iterator(
        list(CORPUS) * 20, vocab_size=320, min_frequency=2, special_tokens=[BEGIN]
    )
    data: dict[str, Any] = json.loads(tokenizer._tokenizer.to_str())
    begin = data["model"]["vocab"][BEGIN]
    data["post_processor"] = {
        "type": "Sequence",
        "processors": [
            data["post_processor"],
            {
                "type": "TemplateProcessing",
                "single": [
                    {"SpecialToken": {"id": BEGIN, "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}},
                ],
                "pair": [
                    {"Sequence": {"id": "A", "type_id": 0}},
                    {"Sequence": {"id": "B", "type_id": 1}},
                ],
                "special_tokens": {BEGIN: {"id": BEGIN, "ids": [begin], "tokens": [BEGIN]}},
            },
        ],
    }
    return data


def build_model(kind: str, folder: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocabulary = tokenizer["model"]["vocab"]
    begin = vocabulary[BEGIN]
    if kind == "llama":
        config: Any = LlamaConfig(
            vocab_size=len(vocabulary),
            bos_token_id=begin,
            eos_token_id=vocabulary["</s>"],
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            **SIZES,
        )
        model: Any = LlamaForCausalLM(config)
    else:
        config = Qwen2Config(
            vocab_size=len(vocabulary),
            bos_token_id=begin,
            eos_token_id=begin,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            **SIZES,
        )
        model = Qwen2ForCausalLM(config)
    model.eval()
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            norm = "norm" in name
            scale = 0.3 if norm else 0.2
            centre = 1.0 if norm else 0.0
            parameter.copy_(centre + scale * torch.randn(parameter.shape, generator=generator))
    model.save_pretrained(str(folder), safe_serialization=True)
    config_path = folder / "config.json"
    saved = json.loads(config_path.read_text(encoding="utf-8"))
    # Say in the checkpoint itself that its weights are random, so attnviz never calls them
    # pretrained or trained.
    saved["attnviz_untrained"] = True
    if kind == "llama":  # rope_theta at the top level, as checkpoints before transformers 5
        saved["rope_theta"] = saved.pop("rope_parameters")["rope_theta"]
    config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for extra in ("generation_config.json",):
        (folder / extra).unlink(missing_ok=True)


@contextlib.contextmanager
def float64_reference() -> Iterator[None]:
    """RMSNorm, RoPE and the softmax of transformers' Llama and Qwen2 computed in the input's
    dtype (float64) instead of float32, for as long as the block runs."""
    import torch
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen2 import modeling_qwen2

    def rms_norm(self: Any, hidden_states: torch.Tensor) -> torch.Tensor:
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))

    def rotary(self: Any, x: torch.Tensor, position_ids: torch.Tensor) -> Any:
        base = self.config.rope_parameters["rope_theta"]
        dim = self.inv_freq.shape[0] * 2
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        freqs = position_ids[..., None].to(torch.float64) * inv_freq
        angles = torch.cat((freqs, freqs), dim=-1)
        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)

    def eager(module: Any, query: Any, key: Any, value: Any, mask: Any, scaling: float, **_: Any):
        key_states = modeling_llama.repeat_kv(key, module.num_key_value_groups)
        value_states = modeling_llama.repeat_kv(value, module.num_key_value_groups)
        scores = torch.matmul(query, key_states.transpose(2, 3)) * scaling
        if mask is not None:
            scores = scores + mask
        weights = torch.nn.functional.softmax(scores, dim=-1)  # in the scores' dtype
        output = torch.matmul(weights, value_states).transpose(1, 2).contiguous()
        return output, weights

    replaced = [
        (modeling_llama.LlamaRMSNorm, "forward", rms_norm),
        (modeling_qwen2.Qwen2RMSNorm, "forward", rms_norm),
        (modeling_llama.LlamaRotaryEmbedding, "forward", rotary),
        (modeling_qwen2.Qwen2RotaryEmbedding, "forward", rotary),
        (modeling_llama, "eager_attention_forward", eager),
        (modeling_qwen2, "eager_attention_forward", eager),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in replaced]
    for owner, name, function in replaced:
        setattr(owner, name, function)
    try:
        yield
    finally:
        for owner, name, function in originals:
            setattr(owner, name, function)


def golden(kind: str, folder: Path, path: Path) -> None:
    import torch
    import transformers
    from transformers import AutoModel, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    model = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    assert type(model).__name__ == {"llama": "LlamaModel", "qwen2": "Qwen2Model"}[kind]
    arrays: dict[str, np.ndarray] = {}
    for d in DTYPES:
        model = model.float() if d == "float32" else model.double()
        for s, sentence in enumerate(SENTENCES):
            ids = tokenizer(sentence, return_tensors="pt")["input_ids"]
            assert ids[0, 0].item() == tokenizer.convert_tokens_to_ids(BEGIN)
            arrays[f"s{s}_sentence"] = np.array(sentence, dtype=np.str_)
            arrays[f"s{s}_input_ids"] = ids[0].numpy().astype(np.int64)
            patched = float64_reference() if d == "float64" else contextlib.nullcontext()
            with torch.no_grad(), patched:
                out = model(input_ids=ids, output_attentions=True, output_hidden_states=True)
            hidden_states = list(out.hidden_states)
            # As attnviz (and GPT-2 in transformers) reports it: the last one after the norm.
            hidden_states[-1] = out.last_hidden_state
            for name, tensor in (
                ("attentions", torch.stack(out.attentions)[:, 0]),
                ("hidden_states", torch.stack(hidden_states)[:, 0]),
                ("last_hidden_state", out.last_hidden_state[0]),
            ):
                array = tensor.numpy()
                assert array.dtype == np.dtype(d), (name, array.dtype)
                arrays[f"s{s}_{d}_{name}"] = array
    arrays["meta_versions"] = np.array(
        f"torch={torch.__version__} transformers={transformers.__version__} numpy={np.__version__}",
        dtype=np.str_,
    )
    np.savez_compressed(path, **arrays)


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for kind, make in (("llama", sentencepiece_tokenizer), ("qwen2", byte_level_tokenizer)):
        folder = HERE / f"tiny_{kind}"
        path = HERE / f"golden_{kind}.npz"
        folder.mkdir(exist_ok=True)
        text = json.dumps(make(), ensure_ascii=False, indent=1)
        (folder / "tokenizer.json").write_text(text + "\n", encoding="utf-8")
        build_model(kind, folder)
        golden(kind, folder, path)
        for written in sorted(folder.iterdir()):
            print(f"wrote {written.relative_to(HERE)} ({written.stat().st_size} bytes)")
        print(f"wrote {path.relative_to(HERE)} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
