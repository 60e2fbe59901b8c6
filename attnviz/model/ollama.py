"""``--model ollama:NAME[:TAG]``: the GGUF file of a model Ollama has pulled, found on disk.

Ollama keeps one JSON manifest per model and tag under
``$OLLAMA_MODELS`` (else ``~/.ollama/models``)``/manifests/registry.ollama.ai/library/NAME/TAG``
(``…/USER/NAME/TAG`` for a user's model, ``manifests/HOST/USER/NAME/TAG`` for another
registry, as in ollama:hf.co/USER/REPO:TAG); its layer
of media type ``application/vnd.ollama.image.model`` names, by digest, the blob that is the GGUF
file: ``blobs/sha256-<hex>``. Nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from attnviz.errors import FileProblem, option
from attnviz.files import open_regular

PREFIX = "ollama:"
REGISTRY = "registry.ollama.ai"
MODEL_LAYER = "application/vnd.ollama.image.model"
MANIFEST_MAX_BYTES = 1_000_000  # a manifest is a few hundred bytes


def ollama_root() -> Path:
    """Where Ollama keeps its models: $OLLAMA_MODELS, else ~/.ollama/models."""
    configured = os.environ.get("OLLAMA_MODELS")
    return Path(configured) if configured else Path.home() / ".ollama" / "models"


def manifest_path(reference: str) -> Path:
    """The manifest of ``NAME[:TAG]`` (TAG "latest" when left out)."""
    name, _, tag = reference.partition(":")
    parts = [part for part in name.split("/") if part]
    if not parts or not re.fullmatch(r"[\w.\-]+", tag or "latest") or ".." in parts:
        raise FileProblem(
            f"{option('model', PREFIX + reference)}: give an Ollama model as ollama:NAME or "
            "ollama:NAME:TAG, as `ollama list` shows it (ollama:smollm2:135m)."
        )
    if len(parts) > 3:
        raise FileProblem(
            f"{option('model', PREFIX + reference)}: an Ollama model name is [HOST/][USER/]NAME; "
            "give it as `ollama list` shows it."
        )
    # HOST/USER/NAME with the missing parts filled from the left, as Ollama does: its own
    # registry, and "library" for its own models.
    parts = [REGISTRY, "library", *parts][-3:] if len(parts) == 1 else parts
    parts = [REGISTRY, *parts] if len(parts) == 2 else parts
    return ollama_root().joinpath("manifests", *parts, tag or "latest")


def find_ollama_model(reference: str) -> Path:
    """The GGUF blob of the model Ollama pulled as ``reference`` (``NAME[:TAG]``)."""
    manifest = manifest_path(reference)
    shown = option("model", PREFIX + reference)
    try:
        pulled = manifest.is_file()
    except OSError:  # a name longer than the file system takes: nothing was pulled as it
        pulled = False
    if not pulled:
        raise FileProblem(
            f"{shown}: Ollama has not pulled it here (no manifest {manifest}); run `ollama pull "
            f"{reference}` or set OLLAMA_MODELS to where Ollama keeps its models."
        )
    with open_regular(manifest, "Ollama manifest") as handle:
        content = handle.read(MANIFEST_MAX_BYTES)
    try:
        layers = json.loads(content)["layers"]
        digest = next(
            str(layer["digest"]) for layer in layers if layer.get("mediaType") == MODEL_LAYER
        )
    except (ValueError, KeyError, TypeError, AttributeError, StopIteration):
        raise FileProblem(
            f"{shown}: the manifest {manifest} names no model layer; pull the model again."
        ) from None
    algorithm, _, hex_digest = digest.partition(":")
    if not re.fullmatch(r"[a-z0-9]+", algorithm) or not re.fullmatch(r"[0-9a-f]+", hex_digest):
        raise FileProblem(f"{shown}: the manifest {manifest} names the blob {digest!r}.")
    blobs = ollama_root() / "blobs"
    for blob in (blobs / f"{algorithm}-{hex_digest}", blobs / f"{algorithm}:{hex_digest}"):
        if blob.is_file():
            return blob
    raise FileProblem(
        f"{shown}: the blob {digest} its manifest names is missing from {blobs}; pull the model "
        "again (`ollama pull`)."
    )
