"""Regenerate the toy word vectors in this folder: ``python sample_embeddings/make_samples.py``.

Each word gets 8 hand-set features (so d_model = 8, attnviz's default width) plus a little seeded
noise so that no two words are identical. The features make the geometry easy to read: "animal",
"dog" and "cat" are close; "it" and "I" share the pronoun feature; "tired" and "hungry" are both
states. They are invented for teaching, not learned from text.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FOLDER = Path(__file__).resolve().parent
FEATURES = ("pronoun", "animate", "thing", "action", "state", "function", "technology", "past")

# word: the features it has (1.0), or has a little of (0.5).
WORDS: dict[str, dict[str, float]] = {
    "i": {"pronoun": 1.0, "animate": 1.0},
    "am": {"action": 0.5, "function": 0.5},
    "good": {"state": 1.0},
    "thinking": {"action": 1.0, "technology": 0.5},
    "machines": {"thing": 1.0, "technology": 1.0},
    "the": {"function": 1.0},
    "a": {"function": 1.0},
    "animal": {"animate": 1.0, "thing": 0.5},
    "dog": {"animate": 1.0, "thing": 0.5},
    "cat": {"animate": 1.0, "thing": 0.5},
    "didn't": {"action": 0.5, "function": 0.5, "past": 1.0},
    "cross": {"action": 1.0},
    "street": {"thing": 1.0},
    "food": {"thing": 1.0, "state": 0.5},
    "because": {"function": 1.0},
    "over": {"function": 1.0, "action": 0.5},
    "it": {"pronoun": 1.0, "animate": 0.5, "thing": 0.5},
    "was": {"action": 0.5, "function": 0.5, "past": 1.0},
    "too": {"function": 1.0, "state": 0.5},
    "tired": {"state": 1.0, "animate": 0.5},
    "hungry": {"state": 1.0, "animate": 0.5},
    "lazy": {"state": 1.0, "animate": 0.5},
    "ate": {"action": 1.0, "past": 1.0},
    "jumped": {"action": 1.0, "past": 1.0},
    ".": {"function": 0.5},
    ",": {"function": 0.5},
}


# Feature values are multiplied by this, so the vectors' components have a spread like
# attnviz's unit-variance random embeddings, which its random weights are scaled for.
SCALE = 2.5


def vectors(seed: int = 0) -> dict[str, np.ndarray]:
    """Every word's 8 features × SCALE, plus N(0, 0.25²) noise from a seeded generator."""
    rng = np.random.default_rng(seed)
    table = {}
    for word, features in WORDS.items():
        base = SCALE * np.array([features.get(name, 0.0) for name in FEATURES])
        table[word] = np.round(base + rng.normal(0.0, 0.25, size=len(FEATURES)), 4)
    return table


def main() -> None:
    table = vectors()
    lines = [
        f"{word} {' '.join(f'{value:.4f}' for value in vector)}" for word, vector in table.items()
    ]
    (FOLDER / "toy8d.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (FOLDER / "toy8d.json").write_text(
        json.dumps({word: vector.tolist() for word, vector in table.items()}, indent=1) + "\n",
        encoding="utf-8",
    )
    np.savez(
        FOLDER / "toy8d_vocab.npz",
        words=np.array(list(table), dtype=np.str_),
        vectors=np.stack(list(table.values())),
    )
    # One row per token of "I am good", the layout a .npy embeddings file needs.
    np.save(FOLDER / "i_am_good.npy", np.stack([table["i"], table["am"], table["good"]]))


if __name__ == "__main__":
    main()
