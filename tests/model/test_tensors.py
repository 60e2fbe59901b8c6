"""model.safetensors tensors of a type attnviz does not read (sources.tensors): named by
their type with the types attnviz reads, whether or not their byte count matches their shape,
on the command line and in Python alike; such a tensor the model never reads is no obstacle."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.model.sources.tensors import FLOAT_TYPES, TYPE_NAMES, TYPE_SIZES
from model.checkpoints import gpt2_copy

from support import CliRunner, needs_model

pytestmark = needs_model
runner = CliRunner()


def retyped(folder: Path, name: str, dtype: str, n_bytes: int | None = None) -> None:
    """model.safetensors with tensor ``name``'s header saying ``dtype``; its bytes replaced by
    ``n_bytes`` zero bytes when given (else kept: a byte count its new type does not match)."""
    path = folder / "model.safetensors"
    content = path.read_bytes()
    (length,) = struct.unpack_from("<Q", content)
    header = json.loads(content[8 : 8 + length])
    data = content[8 + length :]
    if n_bytes is not None:
        begin, end = header[name]["data_offsets"]
        data = data[:begin] + bytes(n_bytes) + data[end:]
        for entry in header.values():
            if "data_offsets" in entry and entry["data_offsets"][0] > begin:
                entry["data_offsets"] = [o + n_bytes - (end - begin) for o in entry["data_offsets"]]
        header[name]["data_offsets"] = [begin, begin + n_bytes]
    header[name]["dtype"] = dtype
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)


def refused_by_type(folder: Path, dtype: str, what: str) -> None:
    result = runner.invoke(app, ["explain", "I am good", "-m", str(folder)])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == ExitStatus.BAD_FILE, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"wte.weight is stored as {dtype} ({what}), which attnviz does not read" in lines[0]
    assert "it reads checkpoints of F16, BF16, F32 or F64 numbers" in lines[0]
    with pytest.raises(AttnvizError) as caught:
        attnviz.explain("I am good", model=str(folder))
    assert caught.value.message == lines[0].removeprefix("error: ")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dtype", "what"),
    [("F8_E4M3", "8-bit floats"), ("F8_E5M2", "8-bit floats"), ("I8", "whole numbers")],
)
def test_a_type_attnviz_does_not_read_is_named_with_those_it_reads(
    dtype: str, what: str, tmp_path: Path
) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    retyped(folder, "wte.weight", dtype, n_bytes=320 * 32 * TYPE_SIZES[dtype])
    refused_by_type(folder, dtype, what)


@pytest.mark.slow
@pytest.mark.parametrize(("dtype", "what"), [("F8_E4M3", "8-bit floats"), ("U64", "whole numbers")])
def test_a_type_whose_size_does_not_match_is_still_named_by_its_type(
    dtype: str, what: str, tmp_path: Path
) -> None:
    """float32 bytes labelled as another type: the type is the problem to name, not a size."""
    folder = gpt2_copy(tmp_path / "gpt2")
    retyped(folder, "wte.weight", dtype)
    refused_by_type(folder, dtype, what)


@pytest.mark.slow
def test_a_tensor_of_another_type_that_is_never_read_is_no_obstacle(tmp_path: Path) -> None:
    """An integer buffer beside the weights (old BERT checkpoints hold position_ids as I64),
    even one whose bytes do not match its shape, is left alone."""
    folder = gpt2_copy(tmp_path / "gpt2")
    before = attnviz.explain("I am good", model=str(folder)).trace.weights
    content = (folder / "model.safetensors").read_bytes()
    (length,) = struct.unpack_from("<Q", content)
    header = json.loads(content[8 : 8 + length])
    end = max(entry["data_offsets"][1] for entry in header.values() if "data_offsets" in entry)
    header["position_ids"] = {"dtype": "I64", "shape": [1, 64], "data_offsets": [end, end + 8]}
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    data = content[8 + length :][:end] + bytes(8)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)
    after = attnviz.explain("I am good", model=str(folder)).trace.weights
    np.testing.assert_array_equal(before, after)


def test_every_type_attnviz_does_not_read_has_words() -> None:
    assert set(TYPE_NAMES) == set(TYPE_SIZES) - set(FLOAT_TYPES)


def test_a_tensor_read_is_read_only_all_the_way_down_and_kept_without_a_copy() -> None:
    """What a tensor views is fresh from the file and nobody else's: read-only too, so the
    attention weights made of its views keep them as they are instead of copying them."""
    from attnviz.model.sources.tensors import open_tensors
    from attnviz.trace import _writable
    from attnviz.weights import AttentionWeights
    from model.checkpoints import GPT2

    with open_tensors(GPT2, np.float32, ("transformer.",)) as tensors:
        weight, _ = tensors.conv1d("h.0.attn.c_attn", 32, 96)
        out, _ = tensors.conv1d("h.0.attn.c_proj", 32, 32)
    assert not weight.flags.writeable and not _writable(weight)
    heads = weight.reshape(32, 3, 4, 8).transpose(1, 2, 0, 3)  # [Q K V, h, d_model, d_k] views
    attention = AttentionWeights(W_Q=heads[0], W_K=heads[1], W_V=heads[2], W_O=out)
    for kept, read in ((attention.W_Q, weight), (attention.W_V, weight), (attention.W_O, out)):
        assert np.shares_memory(kept, read)
