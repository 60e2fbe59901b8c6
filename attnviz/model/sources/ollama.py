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
import stat
from pathlib import Path

from attnviz.errors import FileProblem, option
from attnviz.files import open_regular
from attnviz.files.writing import kind_of_path
from attnviz.model.sources.paths import home_folder, shortened

PREFIX = "ollama:"
REGISTRY = "registry.ollama.ai"
MODEL_LAYER = "application/vnd.ollama.image.model"
MANIFEST_MAX_BYTES = 1_000_000  # a manifest is a few hundred bytes


def ollama_root() -> Path:
    """Where Ollama keeps its models: $OLLAMA_MODELS, else ~/.ollama/models."""
    configured = os.environ.get("OLLAMA_MODELS")
    if configured:
        return Path(configured)
    home = home_folder()
    if home is None:
        raise FileProblem(
            f"{option('model', metavar='ollama:NAME')}: Ollama keeps its models in "
            "~/.ollama/models, but HOME is unset and this user has no home folder; set "
            "OLLAMA_MODELS to where Ollama keeps its models."
        )
    return home / ".ollama" / "models"


def manifest_path(reference: str) -> Path:
    """The manifest of ``NAME[:TAG]`` (TAG "latest" when left out)."""
    name, _, tag = reference.partition(":")
    parts = [part for part in name.split("/") if part]
    if not parts or not re.fullmatch(r"[\w.\-]+", tag or "latest") or ".." in parts:
        raise FileProblem(
            f"{option('model', shortened(PREFIX + reference))}: give an Ollama model as "
            "ollama:NAME or ollama:NAME:TAG, as `ollama list` shows it (ollama:smollm2:135m)."
        )
    if len(parts) > 3:
        raise FileProblem(
            f"{option('model', shortened(PREFIX + reference))}: an Ollama model name is "
            "[HOST/][USER/]NAME; "
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
    shown = option("model", shortened(PREFIX + reference))
    root = ollama_root()
    _require_folder(root, shown)
    try:
        pulled = manifest.is_file()
    except PermissionError as error:  # a folder on the way that this user may not enter
        raise FileProblem(_unreadable(shown, root, error)) from None
    except (OSError, ValueError) as error:  # a name too long; a NUL in it
        reason = getattr(error, "strerror", None) or str(error)
        raise FileProblem(f"{shown}: {reason}; give the model as `ollama list` shows it.") from None
    if not pulled and manifest.exists():  # a folder, a FIFO, a device where the file goes
        what = "a folder" if manifest.is_dir() else kind_of_path(manifest.stat().st_mode)
        raise FileProblem(
            f"{shown}: its manifest {shortened(str(manifest))} is {what}, not a file; "
            f"run `ollama pull {shortened(reference)}` again to replace it."
        )
    if not pulled:
        raise FileProblem(
            f"{shown}: Ollama has not pulled it here (no manifest {shortened(str(manifest))}); "
            f"run `ollama pull {shortened(reference)}` or set OLLAMA_MODELS to where Ollama "
            "keeps its models."
        )
    digest = _model_digest(manifest, shown)
    algorithm, _, hex_digest = digest.partition(":")
    # A digest names a file: sha256 is 64 hex digits; a longer name no file system holds.
    if not re.fullmatch(r"[a-z0-9]{1,16}", algorithm) or not re.fullmatch(
        r"[0-9a-f]{1,128}", hex_digest
    ):
        raise FileProblem(
            f"{shown}: the manifest {manifest} names the blob {shortened(digest)!r}, which is "
            "not a digest; pull the model again."
        )
    blobs = root / "blobs"
    for blob in (blobs / f"{algorithm}-{hex_digest}", blobs / f"{algorithm}:{hex_digest}"):
        try:
            mode = blob.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as error:
            raise FileProblem(_unreadable(shown, root, error)) from None
        if stat.S_ISDIR(mode) or not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else kind_of_path(mode)
            raise FileProblem(
                f"{shown}: the blob {blob} its manifest names is {kind}, not a file; pull the "
                "model again."
            )
        _require_gguf(blob, shown)
        return blob
    raise FileProblem(
        f"{shown}: the blob {digest} its manifest names is missing from {blobs}; pull the model "
        "again (`ollama pull`)."
    )


def _unreadable(shown: str, root: Path, error: OSError) -> str:
    """Ollama's folder ``root`` (or a path in it, the error's) cannot be read, and why."""
    at = f" at {shortened(str(error.filename))}" if error.filename not in (None, str(root)) else ""
    return (
        f"{shown}: Ollama's models in {shortened(str(root))} cannot be read "
        f"({error.strerror or error}{at}); give yourself permission to read them, or set "
        "OLLAMA_MODELS to where Ollama keeps its models."
    )


def _require_folder(root: Path, shown: str) -> None:
    """FileProblem naming Ollama's models folder (``$OLLAMA_MODELS``) when it is there but is
    not a folder this user may read."""
    try:
        status = root.stat()
    except FileNotFoundError:
        return  # nothing pulled here: said with the manifest looked for
    except OSError as error:
        raise FileProblem(_unreadable(shown, root, error)) from None
    if not stat.S_ISDIR(status.st_mode):
        raise FileProblem(
            f"{shown}: Ollama keeps its models in {shortened(str(root))}, which is "
            f"{kind_of_path(status.st_mode)}, not a folder; set OLLAMA_MODELS to the folder "
            "where Ollama keeps its models."
        )


def _model_digest(manifest: Path, shown: str) -> str:
    """The digest of the model layer the manifest names, the manifest read to at most
    MANIFEST_MAX_BYTES and checked to be a JSON object listing layers."""
    with open_regular(manifest, "Ollama manifest") as handle:
        try:
            content = handle.read(MANIFEST_MAX_BYTES + 1)
        except OSError as error:
            raise FileProblem(f"Cannot read {manifest}: {error.strerror or error}.") from None

    def damaged(what: str) -> FileProblem:
        return FileProblem(f"{shown}: the manifest {manifest} {what}; pull the model again.")

    if len(content) > MANIFEST_MAX_BYTES:
        raise damaged(
            f"is larger than {MANIFEST_MAX_BYTES:,} bytes, and a manifest is a few hundred"
        )
    try:
        data = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise damaged("is not JSON text") from None
    except RecursionError:
        raise damaged("nests JSON too deeply for a manifest, one small JSON object") from None
    if not isinstance(data, dict):
        raise damaged("is not a JSON object")
    layers = data.get("layers")
    models = [
        layer.get("digest")
        for layer in (layers if isinstance(layers, list) else [])
        if isinstance(layer, dict) and layer.get("mediaType") == MODEL_LAYER
    ]
    if not models or not isinstance(models[0], str):
        raise damaged("names no model layer")
    return models[0]


def _require_gguf(blob: Path, shown: str) -> None:
    """FileProblem unless the blob is a GGUF file (every model layer Ollama pulls is one)."""
    with open_regular(blob, "Ollama blob") as handle:
        try:
            magic = handle.read(4)
        except OSError as error:
            raise FileProblem(f"Cannot read {blob}: {error.strerror or error}.") from None
    if magic != b"GGUF":
        raise FileProblem(
            f"{shown}: the blob {blob} its manifest names is not a GGUF file (it starts with "
            f"{magic!r}, not GGUF); attnviz runs the models Ollama stores as GGUF: pull the "
            "model again."
        )
