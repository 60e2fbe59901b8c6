"""Regenerate ``tests/model/golden_qwen2_window.npz``: what Hugging Face ``transformers`` computes
with tests/model/tiny_qwen2/ given its own sliding window, the reference for attnviz's.

The checkpoint is tiny_qwen2 (2 layers, random weights; see make_llama.py) with its config.json
changed as WINDOW says, in a temporary copy: use_sliding_window true, sliding_window 3 and
max_window_layers 1, and no layer_types, as a Qwen2 checkpoint written before transformers 5
has. transformers' Qwen2Config then gives layer 2 (index 1, from max_window_layers on) the
window and layer 1 none: in layer 2 the query at position i reads the keys j with
i − 3 < j ≤ i, three keys (itself and the two before it), as attnviz's sliding_window_mask does.
Each sentence is longer than the window, so the window hides keys in layer 2.

The file holds, for each sentence s and d in (float32, float64), what ``Qwen2Model`` (eager
attention, eval mode, no grad) computes; float64 with make_llama.float64_reference (RMSNorm,
RoPE and the softmax in float64, which stock transformers computes in float32):

    s{s}_sentence                    str scalar
    s{s}_input_ids                   int64 [n]
    s{s}_{d}_attentions              d [2, 4, n, n]   (layer, head, query, key)
    s{s}_{d}_hidden_states           d [3, n, 32]     (embeddings, layer 1, norm(layer 2))
    meta_window                      str scalar: WINDOW as JSON, the changes to config.json
    meta_layer_windows               int64 [2]: each layer's window as transformers set it (0: none)
    meta_versions                    str scalar

It needs torch and transformers, which attnviz and its tests do not::

    /tmp/hfvenv/bin/python tests/model/make_qwen2_window_golden.py
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # make_llama, beside this script

from make_llama import BEGIN, DTYPES, float64_reference  # noqa: E402

#: What the checkpoint's config.json is given, and what it loses (layer_types: None).
WINDOW = {"use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1}
SENTENCES = (
    "The animal didn't cross the street because it was too tired",
    "I am good",
)
OUT = HERE / "golden_qwen2_window.npz"


def windowed_copy(folder: Path) -> Path:
    """tiny_qwen2 copied into ``folder``, its config.json given WINDOW and no layer_types."""
    model = folder / "tiny_qwen2_window"
    shutil.copytree(HERE / "tiny_qwen2", model)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config |= WINDOW
    config.pop("layer_types", None)
    (model / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return model


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers
    from transformers import AutoModel, PreTrainedTokenizerFast

    with tempfile.TemporaryDirectory() as temporary:
        folder = windowed_copy(Path(temporary))
        tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
        model = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    assert type(model).__name__ == "Qwen2Model"
    windows = [layer.self_attn.sliding_window for layer in model.layers]
    assert windows == [None, WINDOW["sliding_window"]], windows
    arrays: dict[str, np.ndarray] = {}
    for d in DTYPES:
        model = model.float() if d == "float32" else model.double()
        for s, sentence in enumerate(SENTENCES):
            ids = tokenizer(sentence, return_tensors="pt")["input_ids"]
            assert ids[0, 0].item() == tokenizer.convert_tokens_to_ids(BEGIN)
            assert ids.shape[1] > WINDOW["sliding_window"]  # the window hides some keys
            arrays[f"s{s}_sentence"] = np.array(sentence, dtype=np.str_)
            arrays[f"s{s}_input_ids"] = ids[0].numpy().astype(np.int64)
            patched = float64_reference() if d == "float64" else contextlib.nullcontext()
            with torch.no_grad(), patched:
                out = model(input_ids=ids, output_attentions=True, output_hidden_states=True)
            hidden_states = list(out.hidden_states)
            hidden_states[-1] = out.last_hidden_state  # after the final norm, as attnviz's
            for name, tensor in (
                ("attentions", torch.stack(out.attentions)[:, 0]),
                ("hidden_states", torch.stack(hidden_states)[:, 0]),
            ):
                array = tensor.numpy()
                assert array.dtype == np.dtype(d), (name, array.dtype)
                arrays[f"s{s}_{d}_{name}"] = array
    arrays["meta_window"] = np.array(json.dumps(WINDOW, sort_keys=True), dtype=np.str_)
    arrays["meta_layer_windows"] = np.array([w or 0 for w in windows], dtype=np.int64)
    arrays["meta_versions"] = np.array(
        f"torch={torch.__version__} transformers={transformers.__version__} numpy={np.__version__}",
        dtype=np.str_,
    )
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT.relative_to(HERE)} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
