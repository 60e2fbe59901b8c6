"""--model ollama:NAME[:TAG] finds the GGUF blob of a model Ollama pulled, in a fake Ollama
folder ($OLLAMA_MODELS, else ~/.ollama/models) built in tmp_path; never a download."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnviz.errors import FileProblem
from attnviz.model.sources.checkpoint import checkpoint_name, find_model

DIGEST = "ab" * 32


def pulled(root: Path, *parts: str, layers: object = None, blob: str = "sha256-") -> Path:
    """A manifest at root/manifests/<parts> naming a model layer, and its blob."""
    manifest = root.joinpath("manifests", *parts)
    manifest.parent.mkdir(parents=True)
    if layers is None:
        layers = [
            {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64},
            {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{DIGEST}"},
        ]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))
    (root / "blobs").mkdir(exist_ok=True)
    path = root / "blobs" / f"{blob}{DIGEST}"
    path.write_bytes(b"GGUF")
    return path


def test_a_library_model_and_its_tag_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    blob = pulled(tmp_path, "registry.ollama.ai", "library", "smollm2", "135m")
    assert find_model("ollama:smollm2:135m") == blob
    assert checkpoint_name("ollama:smollm2:135m", blob) == "smollm2:135m"


def test_latest_is_the_default_tag_and_home_the_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    root = tmp_path / ".ollama" / "models"
    blob = pulled(root, "registry.ollama.ai", "library", "qwen2.5", "latest")
    assert find_model("ollama:qwen2.5") == blob


def test_user_models_other_registries_and_old_blob_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    blob = pulled(tmp_path, "registry.ollama.ai", "someone", "tiny", "q4", blob="sha256:")
    assert find_model("ollama:someone/tiny:q4") == blob
    other = tmp_path / "other"
    monkeypatch.setenv("OLLAMA_MODELS", str(other))
    blob = pulled(other, "hf.co", "org", "repo", "Q4_K_M")
    assert find_model("ollama:hf.co/org/repo:Q4_K_M") == blob


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        ([], r"names no model layer; pull the model again"),
        ("layers", r"names no model layer"),
        (
            [{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:../x"}],
            r"names the blob",
        ),
    ],
)
def test_a_damaged_manifest_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layers: object, message: str
) -> None:
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    pulled(tmp_path, "registry.ollama.ai", "library", "m", "latest", layers=layers)
    with pytest.raises(FileProblem, match=message):
        find_model("ollama:m")


def test_what_is_not_pulled_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    with pytest.raises(
        FileProblem,
        match=r"not pulled it here \(no manifest .*library/nothing/7b\); run `ollama pull nothing",
    ):
        find_model("ollama:nothing:7b")
    blob = pulled(tmp_path, "registry.ollama.ai", "library", "gone", "latest")
    blob.unlink()
    with pytest.raises(FileProblem, match=r"blob sha256:abab.* is missing from"):
        find_model("ollama:gone")
    for bad in ("ollama:", "ollama:a:b/c", "ollama:../../etc:x"):
        with pytest.raises(FileProblem, match=r"give an Ollama model as ollama:NAME"):
            find_model(bad)
    with pytest.raises(FileProblem, match=r"an Ollama model name is \[HOST/\]\[USER/\]NAME"):
        find_model("ollama:a/b/c/d")
