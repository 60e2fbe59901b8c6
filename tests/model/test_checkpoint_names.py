"""--model NAME where the name cannot be followed: ~USER with no such user, no home folder at
all (HOME unset and no entry in the user database, as in a container run as an unknown user id),
a Hugging Face cache that cannot be read, and a folder in the current folder named like a
registered model. Each is one true line, never a traceback."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus, FileProblem
from attnviz.model.sources.checkpoint import ModelNotInstalled, find_model, hub_roots
from model.checkpoints import gpt2_copy

from support import CliRunner

runner = CliRunner()


def refused(arguments: list[str], status: ExitStatus, *fragments: str) -> str:
    result = runner.invoke(app, arguments)
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == status, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache and home folder: no registered model is installed."""
    for name in ("HF_HOME", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return cache


@pytest.fixture
def homeless(monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME unset, and no entry for this user in the user database."""

    def unknown(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    for name in ("HOME", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "OLLAMA_MODELS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", unknown)


def test_a_tilde_of_a_user_that_does_not_exist_is_named() -> None:
    refused(
        ["explain", "I am good", "-m", "~nonuser/x"],
        ExitStatus.BAD_FILE,
        "--model ~nonuser/x: there is no user named 'nonuser', so ~nonuser names no folder",
        "full path",
    )
    with pytest.raises(FileProblem, match=r"^model=\"~nonuser/x\": there is no user"):
        find_model("~nonuser/x")


@pytest.mark.slow
def test_without_a_home_folder_a_registered_model_is_looked_for_in_the_caches_named(
    homeless: None,
) -> None:
    with pytest.raises(RuntimeError):
        Path.home()  # what attnviz used to let through
    assert hub_roots() == []
    refused(
        ["explain", "I am good", "-m", "gpt2"],
        ExitStatus.BAD_INPUT,
        "gpt2 is not on this machine",
        "no cache: HOME is unset and this user has no home folder; set HF_HOME",
    )
    refused(
        ["explain", "I am good", "-m", "~/model"],
        ExitStatus.BAD_FILE,
        "~ names no folder (HOME is unset and this user has no entry in the user database)",
    )
    refused(
        ["explain", "I am good", "-m", "ollama:smollm2"],
        ExitStatus.BAD_FILE,
        "HOME is unset and this user has no home folder; set OLLAMA_MODELS",
    )


def test_without_a_home_folder_hf_home_still_finds_a_snapshot(
    homeless: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    snapshot = tmp_path / "hub" / "models--gpt2" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").write_bytes(b"")
    assert find_model("gpt2") == snapshot


def unreadable_snapshots(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A snapshots folder that cannot be listed. chmod 000 does not stop root, so listing it
    fails here as it would for anyone else (test_a_snapshots_folder_of_mode_000 does it for
    real when not run as root)."""
    snapshots = cache / "models--gpt2" / "snapshots"
    (snapshots / "abc").mkdir(parents=True)
    real_iterdir = Path.iterdir

    def refusing(self: Path):  # type: ignore[no-untyped-def]
        if self == snapshots:
            raise PermissionError(13, "Permission denied", str(self))
        return real_iterdir(self)

    monkeypatch.setattr(Path, "iterdir", refusing)
    return snapshots


def test_an_unreadable_snapshots_folder_is_named_with_its_cause(
    no_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshots = unreadable_snapshots(no_cache, monkeypatch)
    refused(
        ["explain", "I am good", "-m", "gpt2"],
        ExitStatus.BAD_INPUT,
        f"{snapshots} cannot be read (Permission denied)",
        f"chmod u+rx {snapshots}",
    )


def test_an_unreadable_snapshots_folder_does_not_hide_a_readable_cache(
    no_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unreadable_snapshots(no_cache, monkeypatch)
    other = tmp_path / "other"
    snapshot = other / "hub" / "models--gpt2" / "snapshots" / "def"
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").write_bytes(b"")
    monkeypatch.setenv("HF_HOME", str(other))
    assert find_model("gpt2") == snapshot


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="chmod 000 does not stop root; "
    "test_an_unreadable_snapshots_folder_is_named_with_its_cause fakes the refusal instead",
)
def test_a_snapshots_folder_of_mode_000(no_cache: Path) -> None:
    snapshots = no_cache / "models--gpt2" / "snapshots"
    (snapshots / "abc").mkdir(parents=True)
    snapshots.chmod(0)
    try:
        with pytest.raises(ModelNotInstalled, match="cannot be read"):
            find_model("gpt2")
    finally:
        snapshots.chmod(0o755)


def test_a_folder_named_like_a_registered_model_that_is_not_a_checkpoint(
    no_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpt2").mkdir()
    line = refused(
        ["explain", "I am good", "-m", "gpt2"],
        ExitStatus.BAD_INPUT,
        "--model gpt2: gpt2 is not on this machine",
        "The folder ./gpt2 here is not a checkpoint (it has no config.json)",
        "the name gpt2 means the registered model",
    )
    assert "give a checkpoint folder (config.json" not in line


@pytest.mark.slow
def test_a_checkpoint_folder_named_like_a_registered_model_is_named_by_its_path(
    no_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    gpt2_copy(tmp_path / "gpt2")
    refused(
        ["explain", "I am good", "-m", "gpt2"],
        ExitStatus.BAD_INPUT,
        "The name gpt2 means that registered model, not the folder ./gpt2 here",
        "give it as a path: --model ./gpt2",
    )
    from support import has_model_extra

    if has_model_extra():
        assert runner.invoke(app, ["explain", "I am good", "-m", "./gpt2"]).exit_code == 0


def test_no_folder_here_keeps_the_install_advice(no_cache: Path) -> None:
    with pytest.raises(ModelNotInstalled, match="attnviz never downloads; give a checkpoint"):
        find_model("gpt2")
    assert issubclass(ModelNotInstalled, AttnvizError)


@pytest.mark.parametrize(
    ("model", "fragment"),
    [
        ("~\x00x", "names no folder; give the model's folder by its full path"),
        (
            "~" + "u" * 5000,
            "there is no user named 'uuuuuuuuuuuuuuuuuuuuuuuu…uuuuuuuuuuuuuuuuuuuuuuuu'",
        ),
        ("x" * 5000, "File name too long"),
        ("/".join(["y" * 200] * 30), "File name too long"),
        ("ollama:" + "x" * 5000, "File name too long; give the model as `ollama list` shows it"),
        ("ollama:a\x00b", "Ollama has not pulled it here"),
    ],
)
def test_names_no_path_can_hold_are_refused_in_a_short_line(model: str, fragment: str) -> None:
    with pytest.raises(FileProblem) as raised:
        find_model(model)
    assert fragment in str(raised.value)
    assert len(str(raised.value)) < 400


def test_an_ollama_digest_longer_than_any_file_name_is_refused_shortly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    manifest = tmp_path / "manifests" / "registry.ollama.ai" / "library" / "m" / "latest"
    manifest.parent.mkdir(parents=True)
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + "a" * 9000}
    manifest.write_text(json.dumps({"layers": [layer]}), encoding="utf-8")
    with pytest.raises(FileProblem, match="which is not a digest; pull the model again") as raised:
        find_model("ollama:m")
    assert len(str(raised.value)) < 400
