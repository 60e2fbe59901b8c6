"""GGUF files read and checked: tiny_llama.gguf (make_tiny_gguf.py) against the gguf package's
own reader, and damaged copies of it, each refused in one FileProblem before anything large is
allocated: truncated anywhere, lying counts and sizes, other formats."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from attnviz.errors import FileProblem

gguf = pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")

from attnviz.model.sources.gguf_file import TensorInfo, dequantize, read_gguf  # noqa: E402

TINY = Path(__file__).resolve().parent / "tiny_llama.gguf"


def damaged(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "damaged.gguf"
    path.write_bytes(content)
    return path


def place_after(content: bytes, key: bytes) -> int:
    """Where the bytes just after the first occurrence of ``key`` in the header start."""
    return content.index(key) + len(key)


def test_the_header_reads_as_the_gguf_package_reads_it() -> None:
    file = read_gguf(TINY)
    reader = gguf.GGUFReader(TINY)
    assert file.version == 3
    assert len(file.tensors) == len(reader.tensors) == 20
    for tensor in reader.tensors:
        info = file.tensors[tensor.name]
        assert info.start == tensor.data_offset and info.n_bytes == tensor.n_bytes
        assert info.type_id == int(tensor.tensor_type)
        assert info.shape == tuple(int(n) for n in reversed(tensor.shape))
    for key, field in reader.fields.items():
        if not key.startswith("GGUF."):
            expected = field.contents()
            got = file.metadata[key]
            assert (list(got) if isinstance(got, np.ndarray) else got) == pytest.approx(expected)


def test_tensors_are_dequantized_as_the_gguf_package_does_and_rows_alone() -> None:
    file = read_gguf(TINY)
    reader = gguf.GGUFReader(TINY)
    for tensor in reader.tensors:
        expected = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        np.testing.assert_array_equal(dequantize(file, tensor.name), expected)
    table = dequantize(file, "token_embd.weight")
    assert table.shape == (318, 64)
    np.testing.assert_array_equal(
        dequantize(file, "token_embd.weight", np.array([5, 0, 317])), table[[5, 0, 317]]
    )


def test_a_type_attnviz_does_not_dequantize_is_named() -> None:
    file = read_gguf(TINY)
    info = file.tensors["output_norm.weight"]
    as_integers = replace(info, type_id=int(gguf.GGMLQuantizationType.I32))
    odd = replace(file, tensors={**file.tensors, info.name: as_integers})
    with pytest.raises(FileProblem, match=r"output_norm.weight is stored as I32, .* Q4_1"):
        dequantize(odd, info.name)
    assert isinstance(as_integers, TensorInfo)


@pytest.mark.slow
def test_a_file_cut_anywhere_is_refused_in_one_line(tmp_path: Path) -> None:
    content = TINY.read_bytes()
    header_end = read_gguf(TINY).tensors["token_embd.weight"].start
    cuts = [*range(0, 200, 7), *range(200, header_end, 97), header_end, len(content) - 1]
    for cut in cuts:
        with pytest.raises(FileProblem) as caught:
            read_gguf(damaged(tmp_path, content[:cut]))
        message = str(caught.value)
        assert "\n" not in message and str(tmp_path) in message, message


def test_a_file_cut_in_its_tensors_names_the_tensor_outside_it(tmp_path: Path) -> None:
    content = TINY.read_bytes()
    with pytest.raises(FileProblem, match=r"tensor output_norm.weight .* lies outside"):
        read_gguf(damaged(tmp_path, content[:-100]))
    in_last_merge = content.index(b"tokenizer.ggml.bos_token_id") - 8 - 2
    with pytest.raises(FileProblem, match=r"item \d+ of tokenizer.ggml.merges needs .*truncated"):
        read_gguf(damaged(tmp_path, content[:in_last_merge]))
    with pytest.raises(FileProblem, match=r"claims 20 tensors, more than the rest of the file"):
        read_gguf(damaged(tmp_path, content[:200]))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (8, 2**40, r"claims 1,099,511,627,776 tensors"),
        (16, 2**62, r"claims 4,611,686,018,427,387,904 metadata entries"),
        (8, 10**5, r"claims 100,000 tensors, more than the rest of the file could hold"),
    ],
)
def test_absurd_counts_are_refused_before_they_are_spent(
    tmp_path: Path, field: int, value: int, message: str
) -> None:
    content = bytearray(TINY.read_bytes())
    struct.pack_into("<Q", content, field, value)
    with pytest.raises(FileProblem, match=message):
        read_gguf(damaged(tmp_path, bytes(content)))


def test_an_array_or_string_longer_than_the_file_is_refused(tmp_path: Path) -> None:
    content = bytearray(TINY.read_bytes())
    count_at = place_after(content, b"tokenizer.ggml.tokens") + 8  # after its two type ids
    struct.pack_into("<Q", content, count_at, 3 * 10**9)
    with pytest.raises(FileProblem, match=r"claims 3,000,000,000 strings in tokenizer.ggml.tokens"):
        read_gguf(damaged(tmp_path, bytes(content)))
    content = bytearray(TINY.read_bytes())
    name_length_at = content.index(b"general.name") - 8
    struct.pack_into("<Q", content, name_length_at, 2**63)
    with pytest.raises(FileProblem, match=r"bytes in a metadata key"):
        read_gguf(damaged(tmp_path, bytes(content)))


def test_a_tensor_whose_offset_lies_outside_the_file_is_refused(tmp_path: Path) -> None:
    content = bytearray(TINY.read_bytes())
    # token_embd.weight: 2 dimensions (4 bytes), 2 sizes (16), its type (4), then its offset.
    offset_at = place_after(content, b"token_embd.weight") + 4 + 16 + 4
    struct.pack_into("<Q", content, offset_at, 2**50)
    with pytest.raises(FileProblem, match=r"tensor token_embd.weight .* lies outside the file"):
        read_gguf(damaged(tmp_path, bytes(content)))


def test_dimensions_beyond_ggml_and_unknown_types_are_refused(tmp_path: Path) -> None:
    content = bytearray(TINY.read_bytes())
    struct.pack_into("<I", content, place_after(content, b"token_embd.weight"), 7)
    with pytest.raises(FileProblem, match=r"token_embd.weight has 7 dimensions"):
        read_gguf(damaged(tmp_path, bytes(content)))
    content = bytearray(TINY.read_bytes())
    struct.pack_into("<I", content, place_after(content, b"token_embd.weight") + 20, 250)
    with pytest.raises(FileProblem, match=r"token_embd.weight has type 250, .*pip install -U"):
        read_gguf(damaged(tmp_path, bytes(content)))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", r"empty or cannot be mapped"),
        (b"PK\x03\x04" + bytes(40), r"does not start with GGUF"),
        (b"GGUF" + struct.pack(">I", 3) + bytes(16), r"big-endian GGUF"),
        (b"GGUF" + struct.pack("<I", 1) + bytes(16), r"GGUF version 1"),
        (b"GGUF\x03\x00", r"past the end of the file"),
    ],
)
def test_other_formats_are_named(tmp_path: Path, content: bytes, message: str) -> None:
    with pytest.raises(FileProblem, match=message):
        read_gguf(damaged(tmp_path, content))


def test_a_folder_is_not_read_as_a_file(tmp_path: Path) -> None:
    with pytest.raises(FileProblem, match=r"is a folder"):
        read_gguf(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_damage_is_refused_in_one_line_or_read(tmp_path: Path, dtype: type) -> None:
    """Bytes overwritten at random (in the header, or anywhere: a scale may become a NaN, a
    signalling one among them): the file, its sizes, its tokenizer and every tensor either read
    or refused with one FileProblem line; never another exception nor a numpy warning."""
    from attnviz.model.sources.gguf_model import GgufTensors
    from attnviz.model.sources.tokenizer_gguf import gguf_tokenizer

    content = TINY.read_bytes()
    header_end = read_gguf(TINY).tensors["token_embd.weight"].start
    rng = np.random.default_rng(22)
    for trial in range(300):
        changed = bytearray(content)
        end = header_end if trial % 2 else len(content)
        for place in rng.integers(0, end, size=rng.integers(1, 5)):
            changed[int(place)] = int(rng.integers(0, 256))
        try:
            file = read_gguf(damaged(tmp_path, bytes(changed)))
            tensors = GgufTensors(file, dtype)
            gguf_tokenizer(file).encode("The cat in 2024<|im_start|>")
            for name in tensors.names:
                tensors.get(name.removeprefix("model."), file.tensors[tensors.stored[name]].shape)
        except FileProblem as problem:
            assert "\n" not in problem.message


def test_an_empty_or_repeated_metadata_key_is_refused(tmp_path: Path) -> None:
    """llama.cpp refuses both: with a key given twice, which value counts is anyone's guess."""
    content = TINY.read_bytes()
    twice = content.replace(b"llama.rope.freq_base", b"llama.context_length", 1)
    with pytest.raises(
        FileProblem, match=r"entry \d+ has the key 'llama.context_length', given tw"
    ):
        read_gguf(damaged(tmp_path, twice))
    empty = bytearray(content)
    name_at = content.index(b"general.name")
    struct.pack_into("<Q", empty, name_at - 8, 0)  # the key "", then "general.name" as its type
    with pytest.raises(FileProblem, match=r"metadata entry 2 has an empty key"):
        read_gguf(damaged(tmp_path, bytes(empty)))
