"""--model given a path that is neither a checkpoint folder nor a GGUF file
(attnviz.model.sources.checkpoint.find_model): what is there is said, never "no such" of a path that
exists; a FIFO or a device is named without being opened; a file of a checkpoint folder points
to its folder. The command line and the Python API say the same one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import attnviz
from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus
from model.checkpoints import gpt2_copy

from support import CliRunner

runner = CliRunner()


def refused(model: str, *fragments: str) -> None:
    result = runner.invoke(app, ["explain", "I am good", "-m", model])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == ExitStatus.BAD_FILE, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    with pytest.raises(AttnvizError) as caught:
        attnviz.explain("I am good", model=model)
    assert caught.value.message.startswith("model=")  # the option as Python spells it
    for fragment in fragments:
        assert fragment in caught.value.message, caught.value.message


def test_a_fifo_is_named_and_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    refused(str(fifo), "it is a FIFO (named pipe), not a folder or a .gguf file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_named_and_never_read(device: str, tmp_path: Path) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    link = tmp_path / "zero.gguf"
    link.symlink_to(device)
    refused(device, "it is a device, not a folder or a .gguf file")
    refused(str(link), "it is a device, not a folder or a .gguf file")


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.json"])
def test_a_file_of_a_checkpoint_folder_points_to_the_folder(name: str, tmp_path: Path) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    refused(
        str(folder / name), "it is one file of a checkpoint folder; give the folder that holds it"
    )
    with pytest.raises(AttnvizError, match=r"holds it, model=\".*/gpt2\"\.$"):
        attnviz.explain("I am good", model=str(folder / name))


def test_another_file_is_said_not_to_be_gguf_and_a_missing_one_missing(tmp_path: Path) -> None:
    other = tmp_path / "weights.pt"
    other.write_bytes(b"PK\x03\x04 a pickle in a zip")
    refused(str(other), "it is a file that is not GGUF (it does not start with the bytes GGUF)")
    refused(str(tmp_path / "missing" / "config.json"), "no such folder or .gguf file; give a")


def test_control_characters_in_the_path_are_shown_escaped(tmp_path: Path) -> None:
    name = tmp_path / "a\nb\x1b]0;title\x07.gguf"
    os.mkfifo(name)
    result = runner.invoke(app, ["explain", "I am good", "-m", str(name)])
    assert result.exit_code == ExitStatus.BAD_FILE
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "a\\nb\\x1b]0;title\\x07.gguf: it is a FIFO" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
