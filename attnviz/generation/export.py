"""``attnviz generate --export FILE.npz``: every step's numbers, plain arrays (no pickle), written
whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np

from attnviz.generation.result import Generation


def generation_arrays(result: Generation) -> dict[str, np.ndarray]:
    """The run as arrays: the prompt, the tokens chosen, and for token j (from 1) ``j.attention``
    [layers, h, t] (its query's weights over the cache), ``j.keys`` and ``j.values`` [layers, G,
    m, d_k] (the rows appended in its pass), ``j.logits`` [V], ``j.shown`` and ``j.probabilities``
    (the most likely tokens and p at the temperature), ``j.cache_bytes``; with --sinks
    ``sinks.weight``, ``sinks.size``, ``sinks.share`` [layers, h]; with --window
    ``held.log_p.whole``/``keep``/``drop`` and ``held.tv.keep``/``drop`` [n − 1]."""
    arrays: dict[str, np.ndarray] = {
        "model": np.array(result.model),
        "prompt_ids": np.array(result.prompt_ids, dtype=np.int64),
        "prompt_tokens": np.array(result.prompt_tokens),
        "generated_ids": np.array([t.choice.chosen for t in result.tokens], dtype=np.int64),
        "texts": np.array(result.texts),
        "temperature": np.array(result.sampling.applied_temperature),
        "greedy": np.array(result.sampling.greedy),
        "top_k": np.array(-1 if result.sampling.top_k is None else result.sampling.top_k),
        "top_p": np.array(-1.0 if result.sampling.top_p is None else result.sampling.top_p),
        "seed": np.array(-1 if result.seed is None else result.seed),
    }
    if result.proof is not None:
        proof = result.proof
        arrays["proof"] = np.array([proof.weights, proof.hidden, proof.probabilities])
    if result.first_token is not None:  # --sinks: [layers, h] each
        arrays["sinks.weight"] = result.first_token.weight
        arrays["sinks.size"] = result.first_token.size
        arrays["sinks.share"] = result.first_token.share
    if result.held is not None:  # --window: [n − 1] each, position i predicting token i + 1
        arrays["held.window"] = np.array([result.held.window, result.held.keep_first])
        for name, values in result.held.log_p.items():
            arrays[f"held.log_p.{name}"] = values
        for name, values in result.held.tv.items():
            arrays[f"held.tv.{name}"] = values
    for token in result.tokens:
        j = token.number
        arrays[f"{j}.attention"] = np.stack(token.attention)
        arrays[f"{j}.keys"] = np.stack(token.new_keys)
        arrays[f"{j}.values"] = np.stack(token.new_values)
        arrays[f"{j}.logits"] = token.logits
        arrays[f"{j}.shown"] = token.choice.shown
        arrays[f"{j}.probabilities"] = token.choice.probabilities
        arrays[f"{j}.kept_probabilities"] = token.choice.renormalised
        arrays[f"{j}.cache_bytes"] = np.array(token.cache.bytes)
        if token.choice.draw is not None:
            arrays[f"{j}.draw"] = np.array(token.choice.draw)
    return arrays


def save_generation(path: Path, result: Generation) -> None:
    from attnviz.files import atomic_write

    arrays = generation_arrays(result)

    def write(temporary: Path) -> None:
        with open(temporary, "wb") as stream:
            np.savez(stream, **cast(dict[str, Any], arrays))

    atomic_write(path, write)
