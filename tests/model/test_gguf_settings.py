"""A GGUF file's metadata read as a model's sizes (attnviz.model.sources.gguf_settings): a bias the
forward pass would never read is refused by its name, not skipped (test_gguf_model.py and
test_agreement.py hold the other disagreements between metadata and tensors)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from attnviz.errors import FileProblem

pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")

from attnviz.model.sources.gguf_file import GgufFile, read_gguf  # noqa: E402
from attnviz.model.sources.gguf_settings import read_settings  # noqa: E402

TINY = Path(__file__).resolve().parent / "tiny_llama.gguf"


def with_tensor(file: GgufFile, name: str, architecture: str = "llama") -> GgufFile:
    """``file`` with one more tensor called ``name`` (a norm's bytes: only its name counts)."""
    norm = file.tensors["blk.0.attn_norm.weight"]
    metadata = {
        key.replace("llama.", f"{architecture}.", 1): value for key, value in file.metadata.items()
    }
    metadata["general.architecture"] = architecture
    tensors = {**file.tensors, name: replace(norm, name=name)}
    return replace(file, metadata=metadata, tensors=tensors)


@pytest.mark.parametrize(
    ("architecture", "bias"),
    [
        ("llama", "blk.1.attn_q.bias"),
        ("llama", "blk.0.attn_output.bias"),
        ("llama", "blk.0.ffn_down.bias"),
        ("qwen2", "blk.0.attn_output.bias"),
        ("qwen2", "blk.1.ffn_up.bias"),
    ],
)
def test_a_bias_the_forward_pass_would_skip_is_refused(architecture: str, bias: str) -> None:
    file = with_tensor(read_gguf(TINY), bias, architecture)
    with pytest.raises(FileProblem, match=rf"biases the attnviz {architecture} model .*\({bias}\)"):
        read_settings(file)


def test_qwen2s_own_biases_are_read() -> None:
    file = with_tensor(read_gguf(TINY), "blk.0.attn_q.bias", "qwen2")
    assert read_settings(file).architecture == "qwen2"
