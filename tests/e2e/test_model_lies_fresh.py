"""Model files that lie, and output paths that name folders, run by the installed command in a
fresh process: one line naming the key (or the path) and the fix, a named exit code, nothing
written and no traceback (in-process: tests/model/test_agreement.py, test_tensors.py,
test_checkpoint_paths.py and tests/test_arguments.py)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path

from model.checkpoints import edit_config, gpt2_copy

from attnviz.errors import ExitStatus

from support import installed_attnviz, needs_model

pytestmark = needs_model


def run_attnviz(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run(
        [installed_attnviz(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**environment, "COLUMNS": "100"},
    )


def refused(result: subprocess.CompletedProcess[str], status: ExitStatus, *fragments: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_a_config_that_lies_about_its_layers_in_a_fresh_process(tmp_path: Path) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    edit_config(n_layer=1)(folder)
    result = run_attnviz(
        "explain", "I am good", "-m", str(folder), "--export", "t.npz", cwd=tmp_path
    )
    refused(result, ExitStatus.BAD_FILE, "n_layer is 1, but model.safetensors holds 2 layers")
    assert not (tmp_path / "t.npz").exists()


def test_an_eight_bit_float_tensor_in_a_fresh_process(tmp_path: Path) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    path = folder / "model.safetensors"
    content = path.read_bytes()
    (length,) = struct.unpack_from("<Q", content)
    header = json.loads(content[8 : 8 + length])
    header["wte.weight"]["dtype"] = "F8_E4M3"  # its float32 bytes left as they are
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + content[8 + length :])
    result = run_attnviz("explain", "I am good", "-m", str(folder), cwd=tmp_path)
    refused(result, ExitStatus.BAD_FILE, "wte.weight is stored as F8_E4M3 (8-bit floats)")


def test_an_output_with_a_trailing_slash_in_a_fresh_process(tmp_path: Path) -> None:
    result = run_attnviz("heatmap", "I am good", "-o", "x.png/", cwd=tmp_path)
    refused(result, ExitStatus.USAGE, "'x.png/' names a folder", "such as 'x.png'")
    assert list(tmp_path.iterdir()) == []
