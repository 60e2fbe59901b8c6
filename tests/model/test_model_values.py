"""Values a model folder or GGUF file gives, checked before they are used as a size or an index:
a padding id outside the tokenizer, position tables far larger than the sentence, safetensors
headers that lie, sizes beyond any model, and GGUF metadata that disagrees with its tensors.

Each test builds its own hostile folder or file in tmp_path and expects one ``error:`` line,
a named exit code and no traceback (tests/e2e/test_model_values_fresh.py runs the largest ones
in a fresh process under a memory cap).
"""

from __future__ import annotations

import errno
import json
import mmap
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus
from model.checkpoints import (
    D_MODEL,
    GPT2,
    LLAMA,
    QWEN2,
    edit_config,
    gpt2_copy,
    load_tensors,
    tiny_bert,
    with_setting,
)

from support import CliRunner, needs_model

pytestmark = needs_model
runner = CliRunner()
TINY_GGUF = Path(__file__).resolve().parent / "tiny_llama.gguf"
POSITIONS = "embeddings.position_embeddings.weight"


def refused(arguments: list[str], status: ExitStatus, *fragments: str) -> str:
    """The command ends in one ``error:`` line holding every fragment, with ``status``."""
    result = runner.invoke(app, arguments)
    assert isinstance(result.exception, SystemExit), result.exception  # not a bug's exception
    assert result.exit_code == status, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert result.stdout == ""
    return lines[0]


def sparse_table(folder: Path, name: str, rows: int) -> None:
    """model.safetensors with table ``name`` grown to ``rows`` rows of zeros."""
    width = load_tensors(folder / "model.safetensors")[name].shape[1]
    with_holes(folder, {name: (rows, width)})


def with_holes(folder: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """model.safetensors with the tensors ``shapes`` names made that shape, all zeros, written
    as a hole at the end of the file (a sparse file: gigabytes claimed, kilobytes on disk)."""
    tensors = load_tensors(folder / "model.safetensors")
    header, chunks, offset = {}, [], 0
    for name, array in tensors.items():
        if name in shapes:
            continue
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    for name, shape in shapes.items():
        size = int(np.prod(shape)) * 4
        header[name] = {
            "dtype": "F32",
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path = folder / "model.safetensors"
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))
        handle.truncate(8 + len(encoded) + offset)


def huge_feed_forward(folder: Path, d_ff: int) -> None:
    """The tiny BERT's feed-forward blocks made ``d_ff`` wide: 2 × 4·d_ff·8 bytes per layer."""
    shapes: dict[str, tuple[int, ...]] = {}
    for layer in range(2):
        base = f"encoder.layer.{layer}."
        shapes[f"{base}intermediate.dense.weight"] = (d_ff, D_MODEL)
        shapes[f"{base}intermediate.dense.bias"] = (d_ff,)
        shapes[f"{base}output.dense.weight"] = (D_MODEL, d_ff)
    with_holes(folder, shapes)
    edit_config(intermediate_size=d_ff)(folder)


# -- the padding token ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("pad", [-1, 10**12, 5000])
def test_a_padding_id_outside_the_tokenizer_is_named_as_configs(pad: int, tmp_path: Path) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    edit_config(pad_token_id=pad)(folder)
    refused(
        ["explain", "I am good", "-m", str(folder), "--pad-to", "8"],
        ExitStatus.BAD_FILE,
        f"gpt2's config.json gives the padding token as id {pad}",
        "outside the model's 320 tokens (ids 0 to 319)",
        "drop --pad-to",
    )
    # Without --pad-to the padding token is never used, and the model runs.
    assert runner.invoke(app, ["explain", "I am good", "-m", str(folder)]).exit_code == 0


def test_a_bert_padding_id_outside_its_vocab_txt_is_refused(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "bert")
    edit_config(pad_token_id=10)(folder)  # vocab.txt has 10 pieces: ids 0 to 9
    refused(
        ["explain", "I am good", "-m", str(folder), "--pad-to", "8"],
        ExitStatus.BAD_FILE,
        "padding token as id 10, outside the model's 10 tokens (ids 0 to 9)",
    )


@pytest.mark.slow
def test_a_padding_id_the_tokenizer_has_but_the_weights_lack_is_refused(
    tmp_path: Path,
) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    tensors = load_tensors(folder / "model.safetensors")
    from model.checkpoints import save_tensors

    tensors["wte.weight"] = tensors["wte.weight"][:300]  # the tokenizer has 320 tokens
    save_tensors(folder / "model.safetensors", tensors)
    edit_config(pad_token_id=310, vocab_size=300)(folder)  # config.json agrees with the weights
    refused(
        ["explain", "I am good", "-m", str(folder), "--pad-to", "8"],
        ExitStatus.BAD_FILE,
        "padding token as id 310, outside the model's 300 tokens (ids 0 to 299)",
    )


# -- position tables: only the rows the sentence uses are read ----------------------------------


def bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every read model.safetensors is asked for, from now on."""
    from attnviz.model.sources.tensors import Tensors

    sizes: list[int] = []
    original = Tensors._bytes

    def counting(self: Tensors, start: int, n_bytes: int, numbers: np.dtype) -> np.ndarray:
        sizes.append(n_bytes)
        return original(self, start, n_bytes, numbers)

    monkeypatch.setattr(Tensors, "_bytes", counting)
    return sizes


@pytest.mark.slow
@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_a_position_table_of_2_to_the_27_rows_costs_the_sentences_rows(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4 GB of positions claimed (a sparse file), 5 rows read: every read is one row or one
    layer's tensor, never the table."""
    rows = 2**27
    if model == "bert":
        folder, table, key = tiny_bert(tmp_path / "bert"), POSITIONS, "max_position_embeddings"
    else:
        folder, table, key = gpt2_copy(tmp_path / "gpt2"), "wpe.weight", "n_positions"
    sparse_table(folder, table, rows)
    edit_config(**{key: rows})(folder)
    sizes = bytes_read(monkeypatch)
    result = runner.invoke(app, ["explain", "I am good", "-m", str(folder)])
    assert result.exit_code == 0, result.output
    assert max(sizes) < 100_000, max(sizes)


def test_positions_are_those_of_the_whole_table(tmp_path: Path) -> None:
    """Rows 0 … n − 1 read alone are the table's first rows: the same trace as from the
    unchanged folder."""
    from attnviz.model.run import trace_model

    original = tiny_bert(tmp_path / "bert")
    whole = trace_model("I am good", str(original)).trace
    from attnviz.model.sources.tensors import open_tensors

    with open_tensors(original, np.float32, ()) as tensors:
        first = tensors.leading_rows(POSITIONS, 5, (16, D_MODEL))
        table = tensors.get(POSITIONS, (16, D_MODEL))
    np.testing.assert_array_equal(first, table[:5])
    assert whole.hidden_states.shape == (3, 5, D_MODEL)


def test_a_position_table_that_disagrees_with_config_json_is_named(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "bert")
    sparse_table(folder, POSITIONS, 2**25)  # config.json still says 16
    refused(
        ["explain", "I am good", "-m", str(folder)],
        ExitStatus.BAD_FILE,
        f"{POSITIONS} has shape [33554432, 8], config.json implies [16, 8]",
    )


@pytest.mark.slow
def test_weights_that_would_not_fit_in_memory_are_refused_before_they_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A feed-forward block of 2²⁶ × 8 numbers (2 GB as float32) against 1 GB free."""
    from attnviz.model.sources import tensors as tensors_module

    folder = tiny_bert(tmp_path / "bert")
    huge_feed_forward(folder, 2**26)
    monkeypatch.setattr(tensors_module, "memory_available", lambda: 10**9)
    sizes = bytes_read(monkeypatch)
    refused(
        ["explain", "I am good", "-m", str(folder), "--dtype", "float64"],
        ExitStatus.BAD_FILE,
        "encoder.layer.0.intermediate.dense.weight needs 6.44 GB of memory after the",
        "and only 1 GB is free",
        "use a smaller model, or use --dtype float32",
    )
    assert max(sizes) < 10_000


def test_memory_available_is_below_an_address_space_limit() -> None:
    import resource

    from attnviz.model.sources.tensors import memory_available

    available = memory_available()
    assert available is None or available > 0
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status", encoding="ascii") as status:
        mapped = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, (mapped + 500_000_000, hard))
    try:
        limited = memory_available()
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert limited is not None and limited <= 500_000_000


# -- safetensors headers that lie ----------------------------------------------------------------


def header_file(header: object, data: bytes = b"", length: int | None = None) -> bytes:
    encoded = json.dumps(header).encode() if not isinstance(header, bytes) else header
    size = len(encoded) if length is None else length
    return struct.pack("<Q", size) + encoded + data


def words_entry(**changes: object) -> dict[str, object]:
    entry: dict[str, object] = {"dtype": "F32", "shape": [10, 8], "data_offsets": [0, 320]}
    entry.update(changes)
    return {"embeddings.word_embeddings.weight": entry}


HEADERS: dict[str, tuple[bytes, str]] = {
    "shorter than 8 bytes": (b"\x01\x02", "claims 0 bytes of the file's 2 bytes"),
    "a header longer than the file": (
        header_file({}, length=10**15),
        "claims 1e+03 TB of the file's",
    ),
    "a header that is not JSON": (header_file(b"{nope}"), "its header is not JSON text"),
    "a header that is a list": (header_file([1, 2]), "its header is not a JSON object"),
    "a 5000-digit number": (
        header_file(b'{"a": {"dtype": "F32", "shape": [' + b"9" * 5000 + b"]}}"),
        "its header is not JSON text",
    ),
    "bytes beyond the file": (
        header_file(words_entry(data_offsets=[0, 2**40], shape=[2**35, 8])),
        "are not that many inside the file's 0 bytes of data",
    ),
    "a range that is not the shape's size": (
        header_file(words_entry(data_offsets=[0, 8]), bytes(320)),
        "needs 320 bytes, but its bytes 0…8",
    ),
    "a negative dimension": (
        header_file(words_entry(shape=[-10, -8])),
        "has no valid shape and data_offsets",
    ),
    "a boolean dimension": (
        header_file(words_entry(shape=[True, 8], data_offsets=[0, 32]), bytes(32)),
        "has no valid shape and data_offsets",
    ),
    "an unknown type": (header_file(words_entry(dtype="Q4_K")), "the unknown type 'Q4_K'"),
    "a header of 17 MB": (  # the file grown to 17 MB by the test (a hole: nothing written)
        header_file({}, length=17_000_000),
        "its header claims 17 MB of the file's 17 MB",
    ),
    "an entry that is a number": (
        header_file({"embeddings.word_embeddings.weight": 3}),
        "is not an object",
    ),
    "two tensors sharing bytes": (
        header_file(
            {
                **words_entry(),
                "embeddings.position_embeddings.weight": {
                    "dtype": "F32",
                    "shape": [4, 8],
                    "data_offsets": [192, 320],
                },
            },
            bytes(320),
        ),
        "the bytes of 'embeddings.word_embeddings.weight' and "
        "'embeddings.position_embeddings.weight' overlap",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(HEADERS))
def test_a_safetensors_header_that_lies_is_refused_before_anything_is_read(
    case: str, tmp_path: Path
) -> None:
    content, fragment = HEADERS[case]
    folder = tiny_bert(tmp_path / "bert")
    (folder / "model.safetensors").write_bytes(content)
    if case == "a header of 17 MB":
        with (folder / "model.safetensors").open("r+b") as handle:
            handle.truncate(17_000_100)
    refused(
        ["explain", "I am good", "-m", str(folder)],
        ExitStatus.BAD_FILE,
        "model.safetensors is not a readable safetensors file",
        fragment,
    )


@pytest.mark.slow
def test_a_file_cut_after_its_header_was_read_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file shrinking between reading its header and its tensors: never a short array."""
    from attnviz.model.sources import tensors as tensors_module

    folder = tiny_bert(tmp_path / "bert")
    original = tensors_module.read_header

    def then_cut(handle: object, path: Path) -> object:
        header = original(handle, path)  # type: ignore[arg-type]
        with path.open("r+b") as cut:
            cut.truncate(path.stat().st_size // 2)
        return header

    monkeypatch.setattr(tensors_module, "read_header", then_cut)
    refused(
        ["explain", "I am good", "-m", str(folder)],
        ExitStatus.BAD_FILE,
        "ends before the bytes its header promises",
    )


# -- sizes and numbers of config.json ------------------------------------------------------------


def llama_copy(folder: Path) -> Path:
    shutil.copytree(LLAMA, folder)
    return folder


def qwen2_copy(folder: Path) -> Path:
    shutil.copytree(QWEN2, folder)
    return folder


CONFIGS: dict[str, tuple[Callable[[Path], Path], Callable[[Path], None], str]] = {
    "llama with 0 heads": (
        llama_copy,
        edit_config(num_attention_heads=0),
        "the number of heads must be positive, got 0",
    ),
    "qwen2 with a negative sliding window": (
        qwen2_copy,
        edit_config(use_sliding_window=True, sliding_window=-1),
        "sliding_window must be a positive number of tokens, got -1",
    ),
    "llama with RMSNorm's ε 1e300": (
        llama_copy,
        edit_config(rms_norm_eps=1e300),
        "epsilon must be a small positive number such as 1e-12, got 1e+300",
    ),
    "llama with 10⁴⁰ positions": (
        llama_copy,
        edit_config(max_position_embeddings=10**40),
        "the number of positions is 10000000000000000000000000000000000000000, beyond any",
    ),
    "llama with rope_theta infinite": (
        llama_copy,
        with_setting('"rope_theta": Infinity'),
        "rope_theta must be a number above 1, got inf",
    ),
    "bert with a 2³²-wide hidden size": (
        tiny_bert,
        edit_config(hidden_size=2**32, num_attention_heads=2),
        "the hidden size is 4294967296, beyond any model's (at most 2,147,483,648)",
    ),
    "bert with ε 1": (tiny_bert, edit_config(layer_norm_eps=1), "got 1"),
    "gpt2 with 2³¹ + 1 layers": (
        gpt2_copy,
        edit_config(n_layer=2**31 + 1),
        "the number of layers is 2147483649",
    ),
    "gpt2 with 100 layers and 2 in the file": (
        gpt2_copy,
        edit_config(n_layer=100),
        "n_layer is 100, but model.safetensors holds 2 layers (h.0 … h.1); set n_layer to 2",
    ),
    "gpt2 with 10⁶ layers": (
        gpt2_copy,
        edit_config(n_layer=10**6),
        "the model has 1,000,000 layers; attnviz runs models of at most 256",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CONFIGS))
def test_config_values_beyond_any_model_are_refused(case: str, tmp_path: Path) -> None:
    make, edit, fragment = CONFIGS[case]
    folder = make(tmp_path / "model")
    edit(folder)
    refused(["explain", "I am good", "-m", str(folder)], ExitStatus.BAD_FILE, fragment)


# -- GGUF metadata --------------------------------------------------------------------------------


def gguf_with(tmp_path: Path, key: bytes, fmt: str, value: object) -> Path:
    """tiny_llama.gguf with the value of metadata ``key`` (a number of struct format ``fmt``)
    replaced by ``value``."""
    content = bytearray(TINY_GGUF.read_bytes())
    at = content.index(key) + len(key) + 4  # after the key and its type
    struct.pack_into(fmt, content, at, value)
    path = tmp_path / "hostile.gguf"
    path.write_bytes(bytes(content))
    return path


GGUF_VALUES: dict[str, tuple[bytes, str, object, str]] = {
    "3 layers claimed, 2 held": (
        b"llama.block_count",
        "<I",
        3,
        "its metadata says 3 layers (llama.block_count), but it holds no weights for layer 3",
    ),
    "1 layer claimed, 2 held": (
        b"llama.block_count",
        "<I",
        1,
        "its metadata says 1 layers (llama.block_count), but it holds more layers",
    ),
    "4 billion layers claimed": (
        b"llama.block_count",
        "<I",
        4_000_000_000,
        "llama.block_count is 4000000000; the file's metadata is damaged",
    ),
    "no key/value heads": (
        b"llama.attention.head_count_kv",
        "<I",
        0,
        "llama.attention.head_count_kv is 0",
    ),
    "RMSNorm's ε 1e30": (
        b"llama.attention.layer_norm_rms_epsilon",
        "<f",
        1e30,
        "epsilon must be a small positive number",
    ),
    "2³¹ heads": (
        b"llama.attention.head_count",
        "<I",
        2**31,
        "llama.attention.head_count 2147483648 does not divide llama.embedding_length 64",
    ),
    "3 heads, which W_Q does not have": (
        b"llama.attention.head_count",
        "<I",
        3,
        "does not divide llama.embedding_length 64",
    ),
    "a width of 2³¹": (
        b"llama.embedding_length",
        "<I",
        2**31,
        "blk.0.attn_q.weight has shape [64, 64], not [2147483648, 2147483648]",
    ),
    "a vocabulary of 10⁹ tokens": (
        b"llama.vocab_size",
        "<I",
        10**9,
        "a vocabulary of 1000000000 tokens (llama.vocab_size, or tokenizer.ggml.tokens), but "
        "token_embd.weight has 318 rows",
    ),
    "RoPE's base infinite": (
        b"llama.rope.freq_base",
        "<f",
        float("inf"),
        "RoPE's base inf is not usable",
    ),
    "RoPE's base NaN": (
        b"llama.rope.freq_base",
        "<f",
        float("nan"),
        "RoPE's base nan is not usable",
    ),
}


@pytest.mark.parametrize("case", list(GGUF_VALUES))
def test_gguf_metadata_that_disagrees_with_the_file_is_refused(case: str, tmp_path: Path) -> None:
    key, fmt, value, fragment = GGUF_VALUES[case]
    path = gguf_with(tmp_path, key, fmt, value)
    refused(["explain", "I am good", "-m", str(path)], ExitStatus.BAD_FILE, fragment)


def test_a_gguf_padding_id_outside_its_vocabulary_is_named(tmp_path: Path) -> None:
    path = gguf_with(tmp_path, b"tokenizer.ggml.eos_token_id", "<I", 4_000_000_000)
    refused(
        ["explain", "I am good", "-m", str(path), "--pad-to", "8"],
        ExitStatus.BAD_FILE,
        "hostile.gguf's metadata gives the padding token as id 4000000000",
        "outside the model's 318 tokens (ids 0 to 317)",
    )


def test_a_layer_count_is_checked_before_any_layer_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnviz.model.families import llama

    path = gguf_with(tmp_path, b"llama.block_count", "<I", 3)

    def never(*arguments: object) -> None:
        raise AssertionError("a layer was read before the layer count was checked")

    monkeypatch.setattr(llama, "load_layer", never)
    refused(["explain", "I am good", "-m", str(path)], ExitStatus.BAD_FILE, "layer 3")


def test_a_gguf_file_beyond_the_memory_limit_is_named_as_such(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mmap's ENOMEM (a file larger than ulimit -v allows) is the limit, not a damaged file."""

    def no_memory(*arguments: object, **keywords: object) -> object:
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", no_memory)
    line = refused(
        ["explain", "I am good", "-m", str(TINY_GGUF)],
        ExitStatus.BAD_FILE,
        "cannot be mapped into memory: this process may not use that much address space",
        "raise the limit",
    )
    assert "not a GGUF file" not in line


@pytest.mark.slow
def test_the_tiny_checkpoints_still_run_padded() -> None:
    """The checks above refuse nothing a sound checkpoint or GGUF file holds."""
    for folder in (GPT2, LLAMA, TINY_GGUF):
        result = runner.invoke(app, ["explain", "I am good", "-m", str(folder), "--pad-to", "12"])
        assert result.exit_code == 0, result.output


def test_the_python_api_raises_attnviz_error(tmp_path: Path) -> None:
    import attnviz

    folder = gpt2_copy(tmp_path / "gpt2")
    edit_config(pad_token_id=-1)(folder)
    with pytest.raises(AttnvizError, match="padding token as id -1"):
        attnviz.explain("I am good", model=str(folder), pad_to=8)


# -- a model's export used as embeddings ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("special", "fragment"),
    [
        ([99], "its provenance names token positions it does not have (it holds 4 tokens)"),
        ([-1], "its provenance is not one attnviz wrote (a count or token position is negative)"),
    ],
)
def test_an_export_naming_positions_it_lacks_is_refused_as_embeddings(
    special: list[int], fragment: str, tmp_path: Path
) -> None:
    export = tmp_path / "tx.json"
    made = runner.invoke(app, ["explain", "I am good", "-m", str(GPT2), "--export", str(export)])
    assert made.exit_code == 0, made.output
    document = json.loads(export.read_text(encoding="utf-8"))
    for layer in document["config"]["layers"]:
        layer["special"] = special
    export.write_text(json.dumps(document), encoding="utf-8")
    refused(
        ["explain", "I am good", "-e", str(export), "--layer", "1", "--hide-special"],
        ExitStatus.BAD_FILE,
        "tx.json",
        fragment,
    )


@pytest.mark.slow
def test_the_next_token_readout_reads_the_tables_own_row_count(tmp_path: Path) -> None:
    """config.json's vocab_size, which GPT-2's readout used to take as the table's size, may be
    missing: the table says how many rows it has."""
    folder = gpt2_copy(tmp_path / "gpt2")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    del config["vocab_size"]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    result = runner.invoke(app, ["heads", "I am good", "-m", str(folder), "--ablate", "-f", "good"])
    assert result.exit_code == 0, result.output
    assert "next-token distribution" in result.stdout


def test_a_gguf_tensor_that_would_not_fit_in_memory_is_refused_before_it_is_dequantized(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from attnviz.model.sources import tensors as tensors_module

    monkeypatch.setattr(tensors_module, "memory_available", lambda: 1000)
    refused(
        ["explain", "I am good", "-m", str(TINY_GGUF)],
        ExitStatus.BAD_FILE,
        "blk.0.attn_q.weight needs 32.8 kB of memory to dequantize, and only 1 kB is free",
    )


# -- attnviz's own limit on a model with more positions ------------------------------------------


@pytest.mark.slow
def test_a_model_with_2_to_the_31_positions_still_takes_at_most_512_tokens(
    tmp_path: Path,
) -> None:
    """Every layer keeps heads × n² weights: a Llama claiming 2³¹ positions must not make a
    100,000-token padding or a 600-token sentence fill memory."""
    folder = llama_copy(tmp_path / "llama")
    edit_config(max_position_embeddings=2**31)(folder)
    refused(
        ["explain", "I am good", "-m", str(folder), "--pad-to", "100000"],
        ExitStatus.BAD_INPUT,
        "--pad-to 100000: the model sees 5 tokens",
        "pad to between 5 and 512 (attnviz's limit)",
    )
    refused(
        ["explain", "a " * 600, "-m", str(folder)],
        ExitStatus.BAD_INPUT,
        "tokens as the model splits it (special tokens included); attnviz takes at most 512, "
        "whatever the model's positions",
    )


# -- saying whether the weights were trained ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("value", ["yes", 0, 1, None, "false"])
def test_attnviz_untrained_must_be_true_or_false(value: object, tmp_path: Path) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    edit_config(attnviz_untrained=value)(folder)
    refused(
        ["explain", "I am good", "-m", str(folder)],
        ExitStatus.BAD_FILE,
        "attnviz_untrained is",
        "it must be true (random weights, made for tests and demos) or false",
    )
    for flag, said in ((True, "random, untrained checkpoint"), (False, "(pretrained)")):
        edit_config(attnviz_untrained=flag)(folder)
        result = runner.invoke(app, ["explain", "I am good", "-m", str(folder)])
        assert result.exit_code == 0 and said in " ".join(result.stdout.split())


def test_a_bert_config_that_makes_a_decoder_is_refused(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "bert")
    edit_config(is_decoder=True)(folder)
    refused(
        ["explain", "I am good", "-m", str(folder)],
        ExitStatus.BAD_FILE,
        "attnviz runs BERT as an encoder",
        "is_decoder",
    )


def test_a_model_type_that_is_not_a_name_is_named_as_such(tmp_path: Path) -> None:
    folder = gpt2_copy(tmp_path / "gpt2")
    edit_config(model_type=None)(folder)
    refused(
        ["explain", "I am good", "-m", str(folder)],
        ExitStatus.BAD_FILE,
        "gives model_type None, not a name; attnviz runs model_type 'bert', 'gpt2'",
    )
