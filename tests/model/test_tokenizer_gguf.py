"""The tokenizer a GGUF file carries: tiny_llama.gguf's token ids equal to those of transformers'
GGUF loader (golden_tiny_gguf.npz), control tokens special, BOS added only when the file says so,
each pre-tokenizer splitting digits its own way, and other kinds refused in one line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from attnviz.errors import FileProblem

pytest.importorskip("gguf", reason="needs the optional extra attnviz[model]")
pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")

from attnviz.model.sources.gguf_file import GgufFile, read_gguf  # noqa: E402
from attnviz.model.sources.tokenizer import encode  # noqa: E402
from attnviz.model.sources.tokenizer_gguf import describe_pre_tokenizer, gguf_tokenizer  # noqa: E402

HERE = Path(__file__).resolve().parent
TINY = HERE / "tiny_llama.gguf"


def with_metadata(file: GgufFile, **changes: object) -> GgufFile:
    return replace(file, metadata={**file.metadata, **changes})


def test_token_ids_equal_those_of_transformers_gguf_loader() -> None:
    golden = dict(np.load(HERE / "golden_tiny_gguf.npz"))
    tokenizer = gguf_tokenizer(read_gguf(TINY))
    for i in range(2):
        sentence = str(golden[f"sentence_{i}"])
        assert tokenizer.encode(sentence).ids == golden[f"ids_{i}"].tolist(), sentence


def test_the_seeds_sentence_is_shown_readably_and_without_bos() -> None:
    tokenizer = gguf_tokenizer(read_gguf(TINY))
    encoding = encode(tokenizer, "The animal didn't cross the street because it was too tired", 128)
    assert encoding.tokens[:4] == ("The", "animal", "didn", "'t")
    assert encoding.special == ()


def test_control_tokens_are_special_and_matched_whole() -> None:
    tokenizer = gguf_tokenizer(read_gguf(TINY))
    encoding = encode(tokenizer, "the cat<|im_start|>sat", 128)
    assert "<|im_start|>" in encoding.tokens
    assert encoding.special == (encoding.tokens.index("<|im_start|>"),)


def test_bos_is_added_when_the_file_says_so() -> None:
    file = read_gguf(TINY)
    bos = file.metadata["tokenizer.ggml.bos_token_id"]
    tokenizer = gguf_tokenizer(with_metadata(file, **{"tokenizer.ggml.add_bos_token": True}))
    encoding = encode(tokenizer, "the cat", 128)
    assert encoding.ids[0] == bos and encoding.tokens[0] == "<|im_start|>"
    assert encoding.special == (0,)
    broken = with_metadata(
        file, **{"tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.bos_token_id": 4000}
    )
    with pytest.raises(FileProblem, match=r"adds a BOS token whose id 4000 is not in"):
        gguf_tokenizer(broken)


@pytest.mark.parametrize(
    ("pre", "pieces"),
    [
        ("smollm", ["in", "Ġ", "1", "2", "3", "4"]),
        ("qwen2", ["in", "Ġ", "1", "2", "3", "4"]),
        ("gpt2", ["in", "Ġ1234"]),
    ],
)
def test_each_pre_tokenizer_splits_digits_its_own_way(pre: str, pieces: list[str]) -> None:
    file = with_metadata(read_gguf(TINY), **{"tokenizer.ggml.pre": pre})
    split = gguf_tokenizer(file).pre_tokenizer.pre_tokenize_str("in 1234")
    assert [piece for piece, _ in split] == pieces


def test_llama_3_groups_digits_by_three() -> None:
    file = with_metadata(read_gguf(TINY), **{"tokenizer.ggml.pre": "llama-bpe"})
    pieces = gguf_tokenizer(file).pre_tokenizer.pre_tokenize_str("in 1234567")
    assert [piece for piece, _ in pieces] == ["in", "Ġ", "123", "456", "7"]
    assert describe_pre_tokenizer(file).startswith("Llama 3's split")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tokenizer.ggml.pre": "deepseek-coder"}, r"pre-tokenizer 'deepseek-coder' .* 'smollm'"),
        ({"tokenizer.ggml.model": "llama"}, r"tokenizer is of kind 'llama'"),
        ({"tokenizer.ggml.tokens": []}, r"holds no tokenizer"),
        ({"tokenizer.ggml.merges": ["Ġt"]}, r"the merge 'Ġt' is not two pieces"),
        ({"tokenizer.ggml.token_type": np.array([1, 1])}, r"token_type has 2 entries for 318"),
    ],
)
def test_a_tokenizer_attnviz_cannot_build_is_refused(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(FileProblem, match=message):
        gguf_tokenizer(with_metadata(read_gguf(TINY), **changes))


def test_a_merge_of_pieces_outside_the_vocabulary_is_refused() -> None:
    file = read_gguf(TINY)
    merges = [*file.metadata["tokenizer.ggml.merges"], "zq xw"]
    with pytest.raises(FileProblem, match=r"merges do not fit its tokens .*out of vocabulary"):
        gguf_tokenizer(with_metadata(file, **{"tokenizer.ggml.merges": merges}))
