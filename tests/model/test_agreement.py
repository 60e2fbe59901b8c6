"""config.json against the tensors beside it (sources.agreement): every size it gives that a
tensor's shape also holds, refused by its key with both numbers and the fix, before a single
number of the checkpoint is read; on the command line (one line, exit 4, no export left) and in
Python (AttnvizError) alike. The GGUF side (metadata against its tensors) is at the end.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus
from model.checkpoints import LLAMA, edit_config, gpt2_copy, put, tiny_bert

from support import CliRunner, needs_model

pytestmark = needs_model
runner = CliRunner()
TINY_GGUF = Path(__file__).resolve().parent / "tiny_llama.gguf"


def llama_copy(folder: Path) -> Path:
    shutil.copytree(LLAMA, folder)
    return folder


def no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, reading any tensor's numbers fails the test: a refusal must come first."""
    from attnviz.model.sources.tensors import Tensors

    def never(*arguments: object) -> None:
        raise AssertionError("a tensor was read before config.json was checked")

    monkeypatch.setattr(Tensors, "_bytes", never)


def refused_everywhere(folder: Path, tmp_path: Path, *fragments: str) -> None:
    """The command ends in one ``error:`` line holding every fragment (exit 4, no export
    written), and attnviz.explain raises an AttnvizError with the same sentence."""
    export = tmp_path / "out.npz"
    arguments = ["explain", "I am good", "-m", str(folder), "--export", str(export)]
    result = runner.invoke(app, arguments)
    assert isinstance(result.exception, SystemExit), result.exception  # not a bug's exception
    assert result.exit_code == ExitStatus.BAD_FILE, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert result.stdout == "" and not export.exists()
    with pytest.raises(AttnvizError) as caught:
        attnviz.explain("I am good", model=str(folder))
    assert caught.value.message == lines[0].removeprefix("error: ")


def narrow_feed_forward(folder: Path) -> Path:
    """The tiny GPT-2 with a first feed-forward layer of 64 columns, not 4 × n_embd."""
    gpt2_copy(folder)
    put("h.0.mlp.c_fc.weight", np.zeros((32, 64), np.float32))(folder)
    return folder


Make = Callable[[Path], Path]
CASES: dict[str, tuple[Make, dict[str, object], tuple[str, ...]]] = {
    "gpt2 vocab_size below wte's rows": (
        gpt2_copy,
        {"vocab_size": 100},
        (
            "config.json: vocab_size is 100, but model.safetensors's wte.weight has shape "
            "[320, 32], config.json implies [100, 32] (rows: one per token); set vocab_size to 320",
        ),
    ),
    "gpt2 vocab_size above wte's rows": (
        gpt2_copy,
        {"vocab_size": 10**6},
        ("set vocab_size to 320",),
    ),
    "gpt2 vocab_size not a number": (gpt2_copy, {"vocab_size": True}, ("vocab_size is True",)),
    "gpt2 one layer of two": (
        gpt2_copy,
        {"n_layer": 1},
        ("n_layer is 1, but model.safetensors holds 2 layers (h.0 … h.1); set n_layer to 2",),
    ),
    "gpt2 three layers of two": (gpt2_copy, {"n_layer": 3}, ("n_layer is 3", "set n_layer to 2")),
    "gpt2 positions": (
        gpt2_copy,
        {"n_positions": 1000},
        ("n_positions is 1000", "wpe.weight has shape [64, 32], config.json implies [1000, 32]"),
    ),
    "gpt2 width": (
        gpt2_copy,
        {"n_embd": 16},
        ("n_embd is 16", "wte.weight has shape [320, 32]", "set n_embd to 32"),
    ),
    "gpt2 width by its other name": (
        gpt2_copy,
        {"n_embd": None, "hidden_size": 64},
        ("hidden_size is 64", "set hidden_size to 32"),
    ),
    "gpt2 feed-forward width unset": (
        narrow_feed_forward,
        {"n_inner": None},
        (
            "n_inner is unset, so 4 × n_embd = 128, but model.safetensors's h.0.mlp.c_fc.weight "
            "has shape [32, 64], config.json implies [32, 128]",
            "set n_inner to 64",
        ),
    ),
    "gpt2 heads not dividing the width": (
        gpt2_copy,
        {"n_head": 5},
        ("n_embd 32 is not divisible by 5 heads (n_head)", "set n_head to a number of heads"),
    ),
    "gpt2 no layers": (
        gpt2_copy,
        {"n_layer": 0},
        ("the number of layers must be positive, got 0 (n_layer); set n_layer as",),
    ),
    "bert a negative feed-forward width": (
        tiny_bert,
        {"intermediate_size": -5},
        ("the feed-forward width must be positive, got -5 (intermediate_size)",),
    ),
    "gpt2 a width beyond any model's": (
        gpt2_copy,
        {"n_embd": 2**32},
        ("the hidden size is 4294967296, beyond any model's (at most 2,147,483,648) (n_embd)",),
    ),
    "bert vocab_size": (
        tiny_bert,
        {"vocab_size": 30522},
        ("vocab_size is 30522", "embeddings.word_embeddings.weight has shape [10, 8]"),
    ),
    "bert one layer of two": (
        tiny_bert,
        {"num_hidden_layers": 1},
        ("num_hidden_layers is 1", "holds 2 layers (encoder.layer.0 … encoder.layer.1)"),
    ),
    "bert positions": (
        tiny_bert,
        {"max_position_embeddings": 512},
        ("max_position_embeddings is 512", "set max_position_embeddings to 16"),
    ),
    "bert no token type": (
        tiny_bert,
        {"type_vocab_size": 0},
        ("type_vocab_size is 0; a BERT has at least one token type",),
    ),
    "bert more token types than rows": (
        tiny_bert,
        {"type_vocab_size": 5},
        ("type_vocab_size is 5", "set type_vocab_size to 2"),
    ),
    "bert width": (
        tiny_bert,
        {"hidden_size": 16},
        ("hidden_size is 16", "set hidden_size to 8"),
    ),
    "bert feed-forward width": (
        tiny_bert,
        {"intermediate_size": 4},
        ("intermediate_size is 4", "set intermediate_size to 16"),
    ),
    "bert heads not dividing the width": (
        tiny_bert,
        {"num_attention_heads": 3},
        ("hidden_size 8 is not divisible by 3 heads (num_attention_heads)",),
    ),
    "llama vocab_size": (
        llama_copy,
        {"vocab_size": 10},
        ("vocab_size is 10", "set vocab_size to 450"),
    ),
    "llama one layer of two": (
        llama_copy,
        {"num_hidden_layers": 1},
        ("holds 2 layers (model.layers.0 … model.layers.1); set num_hidden_layers to 2",),
    ),
    "llama key/value heads": (
        llama_copy,
        {"num_key_value_heads": 4},
        (
            "num_key_value_heads is 4",
            "[16, 32], config.json implies [32, 32] (2 key/value heads of d_k 8)",
            "set num_key_value_heads to 2",
        ),
    ),
    "llama key/value heads unset": (
        llama_copy,
        {"num_key_value_heads": None},
        ("num_key_value_heads is unset, so one per query head (4)",),
    ),
    "llama feed-forward width": (
        llama_copy,
        {"intermediate_size": 10},
        ("intermediate_size is 10", "set intermediate_size to 64"),
    ),
    "llama width against head_dim": (
        llama_copy,
        {"hidden_size": 16},
        ("hidden_size 16 over num_attention_heads 4 gives heads of d_k 4", "not head_dim 8"),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_a_config_that_disagrees_with_its_tensors_is_refused_by_its_key(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, changes, fragments = CASES[case]
    folder = make(tmp_path / "model")
    edit_config(**changes)(folder)
    no_reading(monkeypatch)
    refused_everywhere(folder, tmp_path, *fragments)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tensor", "rows", "fragments"),
    [
        (
            "model.layers.0.self_attn.q_proj.bias",
            32,
            ("attention_bias is false, but model.safetensors holds", "set attention_bias to true"),
        ),
        ("model.layers.0.self_attn.o_proj.bias", 32, ("attention_bias is false",)),
        ("model.layers.0.mlp.gate_proj.bias", 64, ("mlp_bias is false", "attnviz runs models")),
    ],
)
def test_a_bias_config_json_says_the_model_lacks_is_refused_not_ignored(
    tensor: str, rows: int, fragments: tuple[str, ...], tmp_path: Path
) -> None:
    folder = llama_copy(tmp_path / "llama")
    put(tensor, np.ones(rows, np.float32))(folder)
    refused_everywhere(folder, tmp_path, f"holds {tensor}, a bias the llama model", *fragments)


@pytest.mark.slow
def test_a_layer_beyond_a_gap_is_named_and_a_huge_index_is_no_layer(tmp_path: Path) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    put("h.7.ln_1.weight", np.ones(32, np.float32))(folder)
    refused_everywhere(
        folder,
        tmp_path,
        "n_layer is 2, but model.safetensors holds layers numbered up to h.7 "
        "without h.2; the checkpoint is damaged",
    )
    folder = gpt2_copy(tmp_path / "other")
    put(f"h.{'9' * 5000}.ln_1.weight", np.ones(32, np.float32))(folder)  # int() refuses it
    assert len(attnviz.explain("I am good", model=str(folder)).layers) == 2


@pytest.mark.slow
def test_an_empty_token_table_is_named_as_empty_not_as_a_wrong_vocab_size(tmp_path: Path) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    put("wte.weight", np.zeros((0, 32), np.float32))(folder)
    refused_everywhere(folder, tmp_path, "wte.weight has shape [0, 32]", "with at least one row")


@pytest.mark.slow
def test_a_config_that_agrees_still_runs(tmp_path: Path) -> None:
    """The checks hold for the test models as written, and an unset vocab_size is not one."""
    for make in (gpt2_copy, tiny_bert, llama_copy):
        folder = make(tmp_path / make.__name__)
        edit_config(vocab_size=None)(folder)
        assert len(attnviz.explain("I am good", model=str(folder)).layers) == 2


# -- GGUF metadata against its tensors -----------------------------------------------------------


def gguf_with(tmp_path: Path, key: bytes, value: int) -> Path:
    """tiny_llama.gguf with the uint32 metadata value of ``key`` replaced by ``value``."""
    content = bytearray(TINY_GGUF.read_bytes())
    at = content.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
    assert struct.unpack_from("<I", content, at)[0] == 4  # a uint32
    struct.pack_into("<I", content, at + 4, value)
    path = tmp_path / "lying.gguf"
    path.write_bytes(bytes(content))
    return path


GGUF_CASES: dict[str, tuple[bytes, int, tuple[str, ...]]] = {
    "more query heads, the same width": (
        b"llama.attention.head_count",
        8,
        (
            "2 key/value heads of 8 numbers (llama.attention.head_count_kv; each head "
            "llama.embedding_length / llama.attention.head_count)",
            "blk.0.attn_k.weight has shape [32, 64], not [16, 64]",
        ),
    ),
    "fewer key/value heads": (
        b"llama.attention.head_count_kv",
        1,
        ("1 key/value head of 16 numbers", "blk.0.attn_k.weight has shape [32, 64]"),
    ),
    "key/value heads that do not divide the query heads": (
        b"llama.attention.head_count_kv",
        3,
        ("4 query heads cannot share 3 key/value heads evenly",),
    ),
    "a narrower feed-forward block": (
        b"llama.feed_forward_length",
        64,
        (
            "a feed-forward width of 64 (llama.feed_forward_length), "
            "but blk.0.ffn_gate.weight has 96",
        ),
    ),
    "one layer of two": (
        b"llama.block_count",
        1,
        ("says 1 layers (llama.block_count), but it holds more layers, 2 (blk.0 … blk.1)",),
    ),
    "part of each head rotated, or a wrong head count": (
        b"llama.rope.dimension_count",
        8,
        ("llama.rope.dimension_count 8 is not the head size 16", "RoPE on only part of each head"),
    ),
}


@pytest.mark.parametrize("case", list(GGUF_CASES))
def test_gguf_metadata_that_disagrees_with_its_tensors_is_refused_by_its_key(
    case: str, tmp_path: Path
) -> None:
    key, value, fragments = GGUF_CASES[case]
    refused_everywhere(gguf_with(tmp_path, key, value), tmp_path, *fragments)
