"""Three words with 4-d vectors, and the same vocabulary written in every embeddings format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TOKENS = ["The", "cat", "sat"]
VOCABULARY = {
    "the": [1.0, 2.0, 3.0, 4.0],
    "cat": [0.5, -1.0, 0.0, 2.0],
    "sat": [-3.0, 1.0, 1.0, 0.0],
}
EXPECTED = np.array([VOCABULARY["the"], VOCABULARY["cat"], VOCABULARY["sat"]])


def glove_text(vocabulary: dict[str, list[float]]) -> str:
    return "".join(f"{w} {' '.join(str(v) for v in vector)}\n" for w, vector in vocabulary.items())


def every_format(folder: Path) -> dict[str, Path]:
    """VOCABULARY written in each format, by the name of the format."""
    paths = {
        "glove": folder / "vectors.txt",
        "word2vec": folder / "vectors.vec",
        "bom_crlf": folder / "windows.txt",
        "json": folder / "vectors.json",
        "npy": folder / "rows.npy",
        "npz_rows": folder / "rows.npz",
        "npz_vocab": folder / "vocab.npz",
    }
    paths["glove"].write_text(glove_text(VOCABULARY), encoding="utf-8")
    paths["word2vec"].write_text("3 4\n" + glove_text(VOCABULARY), encoding="utf-8")
    paths["bom_crlf"].write_bytes(
        b"\xef\xbb\xbf" + glove_text(VOCABULARY).replace("\n", "\r\n").encode()
    )
    paths["json"].write_text(json.dumps(VOCABULARY), encoding="utf-8")
    np.save(paths["npy"], EXPECTED)
    np.savez(paths["npz_rows"], X=EXPECTED)
    np.savez(
        paths["npz_vocab"],
        words=np.array(list(VOCABULARY)),
        vectors=np.array(list(VOCABULARY.values())),
    )
    return paths
