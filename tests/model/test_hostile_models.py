"""Model files made to cost: GGUF tensor records that share bytes (a file of kilobytes claiming
thousands of layers), more layers than attnviz runs, runs whose every layer's trace, ablation,
page or picture of every layer would exceed attnviz's budgets, and GGUF metadata of an
unexpected type. Each is refused in one line, with a named exit code, before anything is printed
or written, on the command line and in the Python API alike.

The hostile files are made from the committed fixtures (tests/model/tiny_llama.gguf, the tiny
safetensors folders) in tmp_path (model/hostile_gguf.py writes GGUF byte by byte).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz import layer_limits as limits
from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus, FileProblem
from model.checkpoints import LLAMA, edit_config, gpt2_copy
from model.hostile_gguf import (
    ARRAY,
    BOOL,
    FLOAT32,
    INT32,
    INT64,
    STRING,
    UINT32,
    UINT64,
    Value,
    tiny_parts,
    with_layers,
    write_gguf,
)

from support import CliRunner, needs_model

pytestmark = needs_model
runner = CliRunner()
SENTENCE = "the cat sat because it was tired"


def refused(arguments: list[str], status: ExitStatus, *fragments: str) -> str:
    """The command ends in one ``error:`` line holding every fragment, with ``status``, having
    printed nothing on standard output."""
    result = runner.invoke(app, arguments)
    assert isinstance(result.exception, SystemExit), result.exception  # not a bug's exception
    assert result.exit_code == status, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert result.stdout == ""
    return lines[0]


def llama_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "llama"
    shutil.copytree(LLAMA, folder)
    return folder


# -- tensors that share bytes --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("n_layers", [2, 3, 2000])
def test_gguf_layers_pointing_at_the_same_bytes_are_refused(tmp_path: Path, n_layers: int) -> None:
    path = write_gguf(tmp_path / "fan.gguf", with_layers(tiny_parts(), n_layers, shared=True))
    with pytest.raises(FileProblem, match=r"blk\.0\.\w+\.weight and blk\.1\.\w+\.weight share"):
        attnviz.explain(SENTENCE, model=str(path))
    refused(["explain", SENTENCE, "-m", str(path)], ExitStatus.BAD_FILE, "share bytes")


@pytest.mark.parametrize(
    ("moved", "onto", "shift"),
    [
        ("blk.0.attn_k.weight", "blk.0.attn_q.weight", 0),  # the same start
        ("blk.0.attn_k.weight", "blk.0.attn_q.weight", 64),  # inside it
        ("blk.1.ffn_down.weight", "token_embd.weight", 32),  # another kind of tensor
        ("output_norm.weight", "blk.1.ffn_norm.weight", 0),  # a tensor that would fit whole
    ],
)
def test_any_tensor_overlapping_another_is_refused(
    tmp_path: Path, moved: str, onto: str, shift: int
) -> None:
    parts = tiny_parts()
    target = next(record for record in parts.records if record.name == onto)
    records = tuple(
        replace(record, offset=target.offset + shift) if record.name == moved else record
        for record in parts.records
    )
    path = write_gguf(tmp_path / "overlap.gguf", replace(parts, records=records))
    message = refused(["explain", SENTENCE, "-m", str(path)], ExitStatus.BAD_FILE, "share bytes")
    assert moved in message and onto in message


@pytest.mark.slow
def test_tensors_side_by_side_are_read(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "five.gguf", with_layers(tiny_parts(), 5, shared=False))
    assert len(attnviz.explain(SENTENCE, model=str(path)).layers) == 5


# -- more layers than attnviz runs ---------------------------------------------------------------

TOO_MANY = limits.MAX_LAYERS + 1
COMMANDS = [
    ["explain"],
    ["explain", "--export", "{out}/x.npz"],
    ["explain", "--export", "{out}/x.json", "--html", "{out}/x.html"],
    ["heatmap", "-o", "{out}/x.png"],
    ["heatmap", "--all-layers", "-o", "{out}/x.png"],
    ["page", "-o", "{out}/x.html"],
    ["heads"],
    ["heads", "--ablate"],
    ["compare", "the cat sat because it was wide"],
]


def too_many_layers(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A model claiming TOO_MANY layers, and the key that says so."""
    if kind == "gguf metadata":  # the tensors of 2 layers: refused before they are counted
        parts = tiny_parts().with_values(llama__block_count=Value(UINT32, TOO_MANY))
        return write_gguf(tmp_path / "many.gguf", parts), "llama.block_count"
    if kind == "gguf layers":  # every layer there, each with its own bytes
        parts = with_layers(tiny_parts(), TOO_MANY, shared=False)
        return write_gguf(tmp_path / "many.gguf", parts), "llama.block_count"
    if kind == "llama folder":
        folder = llama_folder(tmp_path)
        edit_config(num_hidden_layers=TOO_MANY)(folder)
        return folder, ""
    folder = gpt2_copy(tmp_path / "gpt2")
    edit_config(n_layer=20_000)(folder)
    return folder, ""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gguf metadata", "gguf layers", "llama folder", "gpt2 folder"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_model_of_too_many_layers_is_refused_before_any_output(
    tmp_path: Path, kind: str, command: list[str]
) -> None:
    model, key = too_many_layers(tmp_path, kind)
    out = tmp_path / "out"
    out.mkdir()
    arguments = [part.format(out=out) for part in command]
    message = refused(
        [arguments[0], SENTENCE, *arguments[1:], "-m", str(model)],
        ExitStatus.BAD_FILE,
        "layers",
        f"at most {limits.MAX_LAYERS}",
    )
    assert key in message
    assert list(out.iterdir()) == []


def test_too_many_layers_is_refused_by_the_api(tmp_path: Path) -> None:
    model, _ = too_many_layers(tmp_path, "llama folder")
    with pytest.raises(FileProblem, match=f"{TOO_MANY} layers; attnviz runs models of at most"):
        attnviz.explain(SENTENCE, model=str(model))
    with pytest.raises(FileProblem, match="layers; attnviz runs models of at most"):
        attnviz.ablate(SENTENCE, model=str(model))


# -- budgets over every layer, checked before the work -------------------------------------------


def never(*_: object, **__: object) -> None:
    raise AssertionError("the work began before its budget was checked")


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gguf", "folder"])
def test_every_layers_trace_is_bounded_before_the_weights_are_read(
    tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(write_gguf(tmp_path / "m.gguf", tiny_parts()) if model == "gguf" else LLAMA)
    import attnviz.model.families.llama as llama
    import attnviz.model.sources.gguf_model as gguf_model

    sentence = " ".join([SENTENCE] * 3)
    layers = attnviz.explain(sentence, model=path).layers
    trace = layers[0]
    n, d_model = len(trace.tokens), trace.d_model
    numbers = len(layers) * limits.trace_numbers(n, n, d_model, trace.n_heads)
    monkeypatch.setattr(limits, "MAX_MODEL_TRACE_BYTES", numbers * 4 - 1)  # float32: 1 too few
    monkeypatch.setattr(gguf_model, "gguf_weights", never)
    monkeypatch.setattr(llama.Llama, "load", never)
    with pytest.raises(AttnvizError, match=rf"at most {n - 1} tokens\)\.$"):
        attnviz.explain(sentence, model=path)
    refused(
        ["explain", sentence, "-m", path],
        ExitStatus.BAD_INPUT,
        f"The model's {len(layers)} layers of {trace.n_heads} heads on {n} tokens",
        f"use a shorter sentence (at most {n - 1} tokens).",
    )
    monkeypatch.setattr(limits, "MAX_MODEL_TRACE_BYTES", numbers * 4)  # fits in float32 only
    refused(
        ["explain", sentence, "-m", path, "--dtype", "float64"],
        ExitStatus.BAD_INPUT,
        "tokens), or --dtype float32.",
    )


def test_the_longest_sentence_named_fits_and_one_more_token_does_not() -> None:
    args = {"n_layers": 40, "d_model": 576, "n_heads": 9, "bytes_per_number": 8}
    with pytest.raises(AttnvizError, match=r"at most (\d+) tokens") as refusal:
        limits.check_model_trace(n_tokens=512, **args)  # type: ignore[arg-type]
    most = int(str(refusal.value).split("at most ")[-1].split(" tokens")[0])
    limits.check_model_trace(n_tokens=most, **args)  # type: ignore[arg-type]
    with pytest.raises(AttnvizError):
        limits.check_model_trace(n_tokens=most + 1, **args)  # type: ignore[arg-type]
    # The real models attnviz runs fit at its longest sentence, in float32.
    limits.check_model_trace(30, 512, 576, 9, bytes_per_number=4)  # SmolLM2-135M
    limits.check_model_trace(6, 512, 384, 12, bytes_per_number=8)  # all-MiniLM-L6-v2


@pytest.mark.slow
def test_an_ablation_is_bounded_before_the_first_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnviz.model.run import LoadedModel

    limits.check_ablation(30, 9)  # SmolLM2-135M
    limits.check_ablation(6, 12)  # all-MiniLM-L6-v2
    path = str(write_gguf(tmp_path / "m.gguf", with_layers(tiny_parts(), 6, shared=False)))
    monkeypatch.setattr(limits, "MAX_ABLATION_LAYER_RUNS", 83)  # 4 heads × 21 = 84
    monkeypatch.setattr(LoadedModel, "forward", never)
    with pytest.raises(AttnvizError, match="would run 84 layers again"):
        attnviz.ablate(SENTENCE, model=path)
    refused(["heads", SENTENCE, "--ablate", "-m", path], ExitStatus.BAD_INPUT, "at most 83")


@pytest.mark.slow
def test_a_page_of_every_layer_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(write_gguf(tmp_path / "m.gguf", with_layers(tiny_parts(), 3, shared=False)))
    explained = attnviz.explain(SENTENCE, model=path)
    n = len(explained.trace.tokens)
    monkeypatch.setattr(limits, "MAX_PAGE_NUMBERS", 3 * 4 * n * n - 1)
    with pytest.raises(AttnvizError, match=rf"3 layers × 4 heads × {n} × {n} tokens"):
        attnviz.page(explained)
    attnviz.page(attnviz.explain(SENTENCE, model=path, head=1))  # one head: a third of it
    out = tmp_path / "page.html"
    from attnviz.model.run import LoadedModel

    monkeypatch.setattr(LoadedModel, "forward", never)  # the command line counts before the run
    refused(["page", SENTENCE, "-m", path, "-o", str(out)], ExitStatus.BAD_INPUT, "--head 1")
    assert not out.exists()


@pytest.mark.slow
def test_a_page_of_two_sentences_is_bounded_before_either_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """page --compare holds both sentences' layers: counted as twice a run's, before it."""
    path = str(write_gguf(tmp_path / "m.gguf", with_layers(tiny_parts(), 3, shared=False)))
    n = len(attnviz.explain(SENTENCE, model=path).trace.tokens)
    monkeypatch.setattr(limits, "MAX_PAGE_NUMBERS", 2 * 3 * 4 * n * n - 1)
    from attnviz.model.run import LoadedModel

    monkeypatch.setattr(LoadedModel, "forward", never)
    out = tmp_path / "pair.html"
    other = SENTENCE.replace("tired", "wide")
    arguments = ["page", SENTENCE, "-m", path, "--compare", other, "-o", str(out)]
    refused(arguments, ExitStatus.BAD_INPUT, f"6 layers × 4 heads × {n} × {n} tokens")
    assert not out.exists()


@pytest.mark.slow
def test_a_picture_of_every_layer_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(write_gguf(tmp_path / "m.gguf", with_layers(tiny_parts(), 3, shared=False)))
    explained = attnviz.explain(SENTENCE, model=path)
    monkeypatch.setattr(limits, "MAX_PICTURE_NUMBERS", 100)
    with pytest.raises(AttnvizError, match="--all-layers|all_layers"):
        attnviz.heatmap(explained, all_layers=True)
    out = tmp_path / "all.png"
    arguments = ["heatmap", SENTENCE, "-m", path, "--all-layers", "-o", str(out)]
    from attnviz.model.run import LoadedModel

    monkeypatch.setattr(LoadedModel, "forward", never)  # the command line counts before the run
    refused(arguments, ExitStatus.BAD_INPUT, "--all-layers would draw 3 layers", "--layer N")
    assert not out.exists()
    # Words merged are fewer rows than tokens: counted once they are known, after the run.
    monkeypatch.undo()
    monkeypatch.setattr(limits, "MAX_PICTURE_NUMBERS", 100)
    refused([*arguments, "--words"], ExitStatus.BAD_INPUT, "--all-layers would draw 3 layers")
    assert not out.exists()


# -- metadata of an unexpected type --------------------------------------------------------------


def keys_attnviz_reads() -> list[str]:
    """Every metadata key attnviz reads (attnviz.model.sources.gguf_keys.KEYS), for a llama file."""
    from attnviz.model.sources.gguf_keys import KEYS

    return [key.replace("{arch}", "llama") for key in KEYS]


WRONG = {
    "text": Value(STRING, "seven"),
    "whole numbers": Value(ARRAY, [1, 2, 3], INT32),
    "texts": Value(ARRAY, ["llama", "qwen2"], STRING),
    "number": Value(FLOAT32, 2.5),
    "flag": Value(BOOL, True),
    "negative": Value(INT64, -3),
    "huge": Value(UINT64, 2**64 - 1),
}


def test_the_table_names_every_key_the_gguf_reader_reads() -> None:
    """Every literal key in the modules that read GGUF metadata is in the table."""
    import re

    import attnviz.model.sources.gguf_settings as settings_module
    import attnviz.model.sources.source_gguf as source_module
    import attnviz.model.sources.tokenizer_gguf as tokenizer_module

    sources = "".join(
        Path(module.__file__).read_text(encoding="utf-8")  # type: ignore[arg-type]
        for module in (settings_module, source_module, tokenizer_module)
    )
    used = set(re.findall(r"\"((?:tokenizer\.ggml|general|attnviz)\.[a-z_.]+)\"", sources))
    used |= {"llama" + key for key in re.findall(r"f\"\{arch\}(\.[a-z_.]+)\"", sources)}
    assert used <= set(keys_attnviz_reads()), used - set(keys_attnviz_reads())
    assert "llama.block_count" in used and "tokenizer.ggml.tokens" in used


def tier(key_index: int, wrong_index: int) -> tuple[pytest.MarkDecorator, ...]:
    """The plain run takes the seventh of the grid where (key + type) % 7 == 0: with seven wrong
    types each key meets exactly one, and each type every seventh key. CI (slow) also takes the
    half where (key + type) is even; the full run the rest."""
    if (key_index + wrong_index) % len(WRONG) == 0:
        return ()
    if (key_index + wrong_index) % 2 == 0:
        return (pytest.mark.slow,)
    return (pytest.mark.slow, pytest.mark.full)


EVERY_KEY_WITH_EVERY_WRONG_TYPE = [
    pytest.param(key, wrong, id=f"{key}-{wrong}", marks=tier(i, j))
    for j, wrong in enumerate(WRONG)
    for i, key in enumerate(keys_attnviz_reads())
]


@pytest.mark.parametrize("key, wrong", EVERY_KEY_WITH_EVERY_WRONG_TYPE)
def test_a_key_of_another_type_is_refused_in_one_line(tmp_path: Path, key: str, wrong: str) -> None:
    from attnviz.model.sources.gguf_keys import KEYS, Kind

    parts = tiny_parts()
    kind: Kind = KEYS.get(key, KEYS.get(key.replace("llama.", "{arch}.", 1)))  # type: ignore[assignment]
    path = write_gguf(tmp_path / "typed.gguf", parts.with_key(key, WRONG[wrong]))
    arguments = ["explain", SENTENCE, "-m", str(path)]
    result = runner.invoke(app, arguments)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if result.exit_code == ExitStatus.SUCCESS:
        # Only a value of the key's own type, in its range, may be read: a flag where a flag
        # goes, a real number where a number goes, a text where text goes…
        assert kind.kind in {"flag", "real", "text", "whole", "whole or wholes"}, result.stderr
        return
    assert result.exit_code == ExitStatus.BAD_FILE, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert result.stdout == ""
    with pytest.raises(FileProblem) as refusal:
        attnviz.explain(SENTENCE, model=str(path))
    assert str(refusal.value) in lines[0]


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("general.architecture", Value(ARRAY, ["llama"], STRING), "a list of 1 texts"),
        ("general.architecture", Value(ARRAY, [1, 2], INT32), "an array of 2 whole numbers"),
        ("general.architecture", Value(UINT32, 7), "the whole number 7"),
        ("tokenizer.ggml.tokens", Value(UINT32, 5), "the whole number 5"),
        ("tokenizer.ggml.tokens", Value(STRING, "abc"), "the text 'abc'"),
        ("llama.expert_count", Value(ARRAY, [8], UINT32), "an array of 1 whole numbers"),
        ("llama.attention.sliding_window", Value(ARRAY, [1], INT32), "an array"),
        ("llama.rope.scaling.factor", Value(ARRAY, [2.0], FLOAT32), "an array of 1 numbers"),
        ("llama.rope.dimension_count", Value(ARRAY, [16], UINT32), "an array"),
        ("llama.attention.value_length", Value(ARRAY, [16], UINT32), "an array"),
        ("llama.block_count", Value(INT64, -2), "llama.block_count is -2"),
    ],
)
def test_the_message_names_the_key_and_what_it_holds(
    tmp_path: Path, key: str, value: Value, says: str
) -> None:
    path = write_gguf(tmp_path / "typed.gguf", tiny_parts().with_key(key, value))
    message = refused(["explain", SENTENCE, "-m", str(path)], ExitStatus.BAD_FILE, key, says)
    assert "Traceback" not in message


@pytest.mark.parametrize("command", ["explain", "generate"])
@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_sliding_window_in_the_metadata_is_refused_never_run_as_full_attention(
    tmp_path: Path, command: str, arch: str
) -> None:
    """Gemma's and Mistral's GGUF files carry {arch}.attention.sliding_window; which layers
    slide is not in the file, so the window is refused by its key, with the fix."""
    parts = tiny_parts()
    if arch == "qwen2":  # the same file written as a qwen2 one: its keys renamed
        renamed = {key.replace("llama.", "qwen2.", 1): v for key, v in parts.metadata.items()}
        parts = replace(parts, metadata=renamed).with_values(
            general__architecture=Value(STRING, "qwen2")
        )
    key = f"{arch}.attention.sliding_window"
    path = write_gguf(tmp_path / "window.gguf", parts.with_key(key, Value(UINT32, 4)))
    message = refused(
        [command, SENTENCE, "-m", str(path)], ExitStatus.BAD_FILE, f"({key} 4 tokens)"
    )
    assert "read the model's Hugging Face folder" in message
    with pytest.raises(FileProblem, match=key):
        attnviz.explain(SENTENCE, model=str(path))


def test_a_sliding_window_of_0_is_no_window(tmp_path: Path) -> None:
    parts = tiny_parts().with_key("llama.attention.sliding_window", Value(UINT32, 0))
    path = write_gguf(tmp_path / "none.gguf", parts)
    layers = attnviz.explain(SENTENCE, model=str(path)).layers
    assert layers and all(layer.window is None for layer in layers)


def test_a_whole_number_per_layer_of_heads_is_refused_as_a_feature(tmp_path: Path) -> None:
    value = Value(ARRAY, [4, 4], UINT32)
    parts = tiny_parts().with_values(llama__attention__head_count_kv=value)
    path = write_gguf(tmp_path / "per-layer.gguf", parts)
    refused(
        ["explain", SENTENCE, "-m", str(path)],
        ExitStatus.BAD_FILE,
        "a different number of heads in each layer",
    )


@pytest.mark.slow
def test_the_unchanged_file_still_runs(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "same.gguf", tiny_parts())
    trace = attnviz.explain(SENTENCE, model=str(path)).trace
    assert np.isfinite(trace.weights).all()
