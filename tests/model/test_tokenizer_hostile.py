"""attnviz.model.sources.tokenizer with a hostile tokenizer.json, run in its child process
(sources.sandbox): a regular expression that backtracks is stopped at the time limit, a
Rust panic and a missing unknown token are one FileProblem, replacements that grow the text are
stopped at the memory limit, a normalizer that removes every character is refused, and the GGUF
tokenizer runs in the same child. Signals in fresh processes: tests/e2e/test_hostile_tokenizer.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from attnviz.errors import AttnvizError, ExitStatus, FileProblem
from attnviz.model.sources import sandbox
from model.hostile_tokenizers import (
    BACKTRACKING,
    NO_DIGITS,
    PANICKING,
    REMOVE_ALL,
    bert_folder,
    gpt2_folder,
    growing_replacements,
    split,
    word_level_without_unknown,
)

from support import needs_model

pytestmark = needs_model

SENTENCE = "I am a cat"


def encoded(folder: Path, sentence: str = SENTENCE, max_positions: int = 1024) -> tuple[str, ...]:
    from attnviz.model.sources.tokenizer import encode, isolated_tokenizer

    return encode(isolated_tokenizer(folder), sentence, max_positions).tokens


@pytest.mark.slow
def test_an_isolated_tokenizer_gives_what_the_tokenizer_gives_here(tmp_path: Path) -> None:
    from attnviz.model.sources.tokenizer import (
        encode,
        isolated_tokenizer,
        load_tokenizer,
        token_text,
    )

    for folder in (gpt2_folder(tmp_path / "gpt2"), bert_folder(tmp_path / "bert")):
        sentence = "The animal didn't cross, I am a cat"
        here = encode(load_tokenizer(folder), sentence, 64)
        assert encode(isolated_tokenizer(folder), sentence, 64) == here
        assert token_text(isolated_tokenizer(folder), 0) == token_text(load_tokenizer(folder), 0)


@pytest.mark.slow
def test_a_backtracking_pattern_is_stopped_at_the_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "TOKENIZER_SECONDS", 1.0)
    folder = gpt2_folder(tmp_path / "slow", pre_tokenizer=split(BACKTRACKING))
    started = time.monotonic()
    with pytest.raises(FileProblem, match=r"tokenizer.json took more than 1 s to split") as caught:
        encoded(folder, NO_DIGITS)  # on main: minutes, Ctrl-C ignored
    assert time.monotonic() - started < 3
    assert "fix the tokenizer or use another model" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_panic_in_rust_is_one_file_problem(tmp_path: Path) -> None:
    folder = gpt2_folder(tmp_path / "panic", pre_tokenizer=split(PANICKING))
    with pytest.raises(FileProblem, match=r"cannot split the sentence \(Onig: .*retry-limit"):
        encoded(folder, "a" * 100)  # pyo3_runtime.PanicException, a BaseException, on main


@pytest.mark.slow
def test_replacements_that_grow_the_text_are_stopped_at_the_memory_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "TOKENIZER_MEMORY", 256 * 1024**2)
    folder = gpt2_folder(tmp_path / "grow", normalizer=growing_replacements(5))
    started = time.monotonic()
    with pytest.raises(FileProblem, match=r"more than 0.25 GiB of memory .* or crashed"):
        encoded(folder)  # on main: 23 GB in 80 s, then the kernel's OOM killer
    assert time.monotonic() - started < 10


@pytest.mark.slow
def test_a_tokenizer_that_makes_the_text_grow_is_named(tmp_path: Path) -> None:
    prepend = {"type": "Prepend", "prepend": "x " * 1000}
    folder = gpt2_folder(tmp_path / "grow", normalizer=prepend)
    with pytest.raises(FileProblem, match=r"turns the sentence's 10 characters into 2,00\d tokens"):
        encoded(folder, max_positions=64)
    replacements = gpt2_folder(tmp_path / "replace", normalizer=growing_replacements(2, 10))
    with pytest.raises(FileProblem, match=r"turns the sentence's 10 characters into \d+ tokens"):
        encoded(replacements, max_positions=64)  # 100 × "a" for each "a": within the memory
    with pytest.raises(AttnvizError, match=r"The sentence is 10 tokens .* has 4 positions"):
        encoded(gpt2_folder(tmp_path / "plain"), "I am a cat, a cat", max_positions=4)


@pytest.mark.parametrize("make", [gpt2_folder, bert_folder])
def test_a_word_level_model_without_its_unknown_token_is_one_file_problem(
    tmp_path: Path, make: object
) -> None:
    assert callable(make)
    folder = make(tmp_path / "words", model=word_level_without_unknown())
    with pytest.raises(FileProblem, match=r"Missing \[UNK\] token from the vocabulary\); fix"):
        encoded(folder, "I am a zebra")


@pytest.mark.parametrize(("make", "left"), [(gpt2_folder, "no token"), (bert_folder, "only the 2")])
def test_a_normalizer_that_removes_every_character_is_refused(
    tmp_path: Path, make: object, left: str
) -> None:
    assert callable(make)
    folder = make(tmp_path / "empty", normalizer=REMOVE_ALL)
    with pytest.raises(AttnvizError, match=rf"leaves nothing of the sentence \({left}") as caught:
        encoded(folder)
    assert caught.value.exit_status == ExitStatus.BAD_INPUT


@pytest.mark.slow
def test_a_missing_or_damaged_tokenizer_keeps_its_message_and_exit_status(tmp_path: Path) -> None:
    folder = gpt2_folder(tmp_path / "damaged")
    (folder / "tokenizer.json").write_text('{"model": 3}', encoding="utf-8")
    with pytest.raises(FileProblem, match=r"tokenizer.json cannot be read as a tokenizer"):
        encoded(folder)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(FileProblem, match=r"has no tokenizer.json or vocab.txt"):
        encoded(folder)


@pytest.mark.slow
def test_the_gguf_tokenizer_runs_in_the_child_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from attnviz.model.sources.gguf_file import read_gguf
    from attnviz.model.sources.tokenizer import encode
    from attnviz.model.sources.tokenizer_gguf import gguf_tokenizer, isolated_gguf_tokenizer

    file = read_gguf(Path(__file__).resolve().parent / "tiny_llama.gguf")
    tokenizer = isolated_gguf_tokenizer(file)
    assert encode(tokenizer, "the cat", 64) == encode(gguf_tokenizer(file), "the cat", 64)
    damaged = replace(file, metadata={**file.metadata, "tokenizer.ggml.merges": ["t"]})
    with pytest.raises(FileProblem, match=r"the merge 't' is not two pieces"):
        encode(isolated_gguf_tokenizer(damaged), "the cat", 64)
    monkeypatch.setattr(sandbox, "TOKENIZER_SECONDS", 1e-4)
    with pytest.raises(FileProblem, match=r"tiny_llama.gguf's tokenizer took more than"):
        encode(tokenizer, "the cat", 64)


@pytest.mark.slow
def test_the_python_api_raises_the_same_one_sentence(tmp_path: Path) -> None:
    import attnviz

    folder = bert_folder(tmp_path / "words", model=word_level_without_unknown())
    with pytest.raises(FileProblem, match=r"tokenizer.json cannot split the sentence \(WordLevel"):
        attnviz.explain("I am a zebra", model=str(folder))
    empty = gpt2_folder(tmp_path / "empty", normalizer=REMOVE_ALL)
    with pytest.raises(AttnvizError, match=r"leaves nothing of the sentence"):
        attnviz.explain("I am a cat", model=str(empty))
