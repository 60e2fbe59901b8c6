"""Model files and folders the system will not read, and Ollama stores made to break the reader:
each is one line naming the file (or Ollama's folder) and the cause, exit 4, never a traceback
or a wait, on the command line and in the Python API alike.

As root, permissions do not bite: a folder that may not be entered is simulated by making the
system refuse (PermissionError) to look inside it, as it would for another user; when the tests
run as another user, chmod 000 is tried as well.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import attnviz
from attnviz.cli import app
from attnviz.errors import ExitStatus, FileProblem
from model.checkpoints import LLAMA
from model.test_ollama import DIGEST, pulled

from support import CliRunner, needs_model

pytestmark = needs_model
runner = CliRunner()
SENTENCE = "the cat sat"
TINY_GGUF = Path(__file__).resolve().parent / "tiny_llama.gguf"


def refused(model: str, *fragments: str) -> str:
    """explain with ``model`` ends in one ``error:`` line holding every fragment, exit 4, and
    attnviz.explain raises the same sentence as a FileProblem."""
    result = runner.invoke(app, ["explain", SENTENCE, "-m", model])
    assert isinstance(result.exception, SystemExit), result.exception  # not a bug's exception
    assert result.exit_code == ExitStatus.BAD_FILE, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert result.stdout == ""
    with pytest.raises(FileProblem) as refusal:
        attnviz.explain(SENTENCE, model=model)
    for fragment in fragments:
        assert fragment.replace("--model", "model") in str(refusal.value)
    return lines[0]


# -- a model folder the system will not read -----------------------------------------------------


def refuse_inside(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """The system refuses to look inside ``folder`` (no search permission), as for a user who
    may not enter it: every stat, open and listing of a path in it is PermissionError."""
    inside = str(folder) + os.sep

    def denied(path: object) -> None:
        if os.fspath(path).startswith(inside):  # type: ignore[call-overload]
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))  # type: ignore[call-overload]

    real_stat, real_open = os.stat, os.open

    def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        denied(path)
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    def open_(path: object, *args: object, **kwargs: object) -> int:
        denied(path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "open", open_)


def unreadable_file(name: str) -> Callable[[pytest.MonkeyPatch, Path], None]:
    """The system refuses to open ``name`` in the folder (a file without read permission)."""

    def refuse(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
        real_open = os.open
        target = str(folder / name)

        def open_(path: object, *args: object, **kwargs: object) -> int:
            if os.fspath(path) == target:  # type: ignore[call-overload]
                raise PermissionError(errno.EACCES, "Permission denied", target)
            return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "open", open_)

    return refuse


def folder_instead(name: str) -> Callable[[pytest.MonkeyPatch, Path], None]:
    def replace(_: pytest.MonkeyPatch, folder: Path) -> None:
        (folder / name).unlink()
        (folder / name).mkdir()

    return replace


def fifo_instead(name: str) -> Callable[[pytest.MonkeyPatch, Path], None]:
    def replace(_: pytest.MonkeyPatch, folder: Path) -> None:
        (folder / name).unlink()
        os.mkfifo(folder / name)  # never opened: refused by its kind, without waiting

    return replace


def disk_error(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Reading the weights fails as a failing disk makes it fail (EIO), mid-load."""
    import attnviz.model.sources.tensors as tensors

    def failing(handle: object, path: Path) -> None:
        raise OSError(errno.EIO, "Input/output error", str(path))

    monkeypatch.setattr(tensors, "read_header", failing)


def chmod_000(_: pytest.MonkeyPatch, folder: Path) -> None:
    folder.chmod(0)


DAMAGE: dict[str, tuple[Callable[[pytest.MonkeyPatch, Path], None], tuple[str, ...]]] = {
    "a folder that may not be entered": (refuse_inside, ("config.json", "Permission denied")),
    "config.json unreadable": (unreadable_file("config.json"), ("config.json", "Permission")),
    "model.safetensors unreadable": (
        unreadable_file("model.safetensors"),
        ("model.safetensors", "Permission denied"),
    ),
    "tokenizer.json unreadable": (
        unreadable_file("tokenizer.json"),
        ("tokenizer.json", "Permission denied"),
    ),
    "config.json a folder": (folder_instead("config.json"), ("config.json is a folder",)),
    "model.safetensors a folder": (folder_instead("model.safetensors"), ("is a folder",)),
    "tokenizer.json a folder": (folder_instead("tokenizer.json"), ("is a folder",)),
    "config.json a FIFO": (fifo_instead("config.json"), ("named pipe",)),
    "model.safetensors a FIFO": (fifo_instead("model.safetensors"), ("named pipe",)),
    "a disk error": (disk_error, ("model.safetensors", "Input/output error")),
}
if os.geteuid() != 0:  # permissions bite only when the tests are not run as root
    DAMAGE["chmod 000"] = (chmod_000, ("Permission denied",))


@pytest.mark.slow
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_model_file_the_system_will_not_read_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(LLAMA, folder)
    make, fragments = DAMAGE[damage]
    make(monkeypatch, folder)
    try:
        refused(str(folder), *fragments)
    finally:
        folder.chmod(0o755)


def test_a_gguf_file_that_cannot_be_opened_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(TINY_GGUF, folder / "tiny.gguf")
    unreadable_file("tiny.gguf")(monkeypatch, folder)
    refused(str(folder / "tiny.gguf"), "tiny.gguf", "Permission denied")


# -- Ollama's store ------------------------------------------------------------------------------

MODEL_LAYER = "application/vnd.ollama.image.model"


def manifest_of(root: Path) -> Path:
    return root / "manifests" / "registry.ollama.ai" / "library" / "m" / "latest"


@pytest.fixture
def ollama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An Ollama folder ($OLLAMA_MODELS) that has pulled "m" as tiny_llama.gguf."""
    root = tmp_path / "ollama"
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    blob = pulled(root, "registry.ollama.ai", "library", "m", "latest")
    shutil.copy(TINY_GGUF, blob)
    return root


@pytest.mark.slow
def test_the_pulled_model_runs(ollama: Path) -> None:
    assert len(attnviz.explain(SENTENCE, model="ollama:m").layers) == 2


MODEL = {"mediaType": MODEL_LAYER, "digest": f"sha256:{DIGEST}"}
MANIFESTS: dict[str, tuple[bytes, str]] = {
    "nested 100,000 deep": (b"[" * 100_000 + b"]" * 100_000, "nests JSON too deeply"),
    "nested in its layers": (
        b'{"layers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "nests JSON too deeply",
    ),
    "not JSON": (b"schemaVersion: 2", "is not JSON text"),
    "not UTF-8": (b'{"layers": "\xff\xfe"}', "is not JSON text"),
    "empty": (b"", "is not JSON text"),
    "a list": (json.dumps([MODEL]).encode(), "is not a JSON object"),
    "a string": (b'"layers"', "is not a JSON object"),
    "a number": (b"5", "is not a JSON object"),
    "no layers": (b'{"schemaVersion": 2}', "names no model layer"),
    "layers not a list": (b'{"layers": 5}', "names no model layer"),
    "layers not objects": (b'{"layers": [1, "x", null]}', "names no model layer"),
    "no model layer": (
        json.dumps({"layers": [{**MODEL, "mediaType": "x"}]}).encode(),
        "names no model layer",
    ),
    "digest not text": (
        json.dumps({"layers": [{**MODEL, "digest": 5}]}).encode(),
        "names no model layer",
    ),
    "digest up the tree": (
        json.dumps({"layers": [{**MODEL, "digest": "sha256:../../../etc/passwd"}]}).encode(),
        "which is not a digest",
    ),
    "digest an absolute path": (
        json.dumps({"layers": [{**MODEL, "digest": "/etc:passwd"}]}).encode(),
        "which is not a digest",
    ),
    "digest of a folder name": (
        json.dumps({"layers": [{**MODEL, "digest": "..:ab"}]}).encode(),
        "which is not a digest",
    ),
    "larger than a manifest": (
        json.dumps({"layers": [MODEL]}).encode() + b" " * 1_000_000,
        "is larger than 1,000,000 bytes",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(MANIFESTS))
def test_a_damaged_manifest_is_one_line(ollama: Path, case: str) -> None:
    content, fragment = MANIFESTS[case]
    manifest_of(ollama).write_bytes(content)
    message = refused("ollama:m", "ollama:m", fragment)
    assert "pull the model again" in message


@pytest.mark.parametrize(
    ("blob_is", "fragment"),
    [
        ("safetensors", "is not a GGUF file (it starts with"),
        ("empty", "is not a GGUF file"),
        ("a folder", "is a folder, not a file"),
        ("a FIFO", "is a FIFO (named pipe), not a file"),
    ],
)
def test_a_blob_that_is_not_gguf_is_named_as_ollamas(
    ollama: Path, blob_is: str, fragment: str
) -> None:
    blob = ollama / "blobs" / f"sha256-{DIGEST}"
    blob.unlink()
    if blob_is == "safetensors":
        shutil.copy(LLAMA / "model.safetensors", blob)
    elif blob_is == "empty":
        blob.write_bytes(b"")
    elif blob_is == "a folder":
        blob.mkdir()
    else:
        os.mkfifo(blob)
    message = refused("ollama:m", fragment)
    assert "config.json" not in message and "Hugging Face" not in message


@pytest.mark.parametrize("where", ["the models folder", "its manifests", "its blobs"])
def test_an_unreadable_ollama_folder_is_named(
    ollama: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    folder = {
        "the models folder": ollama,
        "its manifests": ollama / "manifests",
        "its blobs": ollama / "blobs",
    }[where]
    if folder == ollama:
        real_stat = pathlib.Path.stat

        def stat(path: Path, **kwargs: object) -> os.stat_result:
            if path == ollama:
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_stat(path, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(pathlib.Path, "stat", stat)
    else:
        refuse_inside(monkeypatch, folder)
    message = refused("ollama:m", "Ollama's models in", "Permission denied", "OLLAMA_MODELS")
    assert ollama.name in message


def test_ollama_models_that_is_a_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "models.txt"
    file.write_text("not a folder")
    monkeypatch.setenv("OLLAMA_MODELS", str(file))
    refused("ollama:m", file.name, "which is a file, not a folder", "OLLAMA_MODELS")


@pytest.mark.parametrize(
    ("manifest_is", "fragment"),
    [("a folder", "is a folder, not a file"), ("a FIFO", "is a FIFO (named pipe), not a file")],
)
def test_a_manifest_that_is_not_a_file_is_named_not_said_unpulled(
    ollama: Path, manifest_is: str, fragment: str
) -> None:
    manifest = manifest_of(ollama)
    manifest.unlink()
    if manifest_is == "a folder":
        manifest.mkdir()
    else:
        os.mkfifo(manifest)  # never opened: a reader would wait for a writer
    message = refused("ollama:m", "ollama:m", fragment)
    assert "has not pulled" not in message and "ollama pull" in message
