"""attnviz's toy transformer as a model of its own: the shipped coref and coref-word, read back
from their folders without the optional extra, against attnviz.train.network's forward pass."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus, FileProblem
from attnviz.files import load_npz
from attnviz.model.families import toy
from attnviz.model.run import trace_model
from attnviz.model.sources.checkpoint import config_data, find_model
from attnviz.train import network, tasks

from support import CliRunner, step, steps_spec

SHIPPED = {"coref": tasks.Readout.POINTER, "coref-word": tasks.Readout.WORD}
SENTENCES = (tasks.TIRED, tasks.WIDE, "since it was so icy the cow never crossed the lane")
runner = CliRunner()


def parameters(name: str) -> dict[str, np.ndarray]:
    return load_npz(find_model(name) / toy.WEIGHTS, "Model weights")


def config(name: str) -> toy.ToyConfig:
    return toy.read_config(config_data(find_model(name)))


def one_line_error(args: list[str], status: ExitStatus) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == status, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return lines[0]


def copy_of(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(find_model(name), folder)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("name", SHIPPED)
def test_every_layer_matches_the_training_forward_pass(
    name: str, sentence: str, dtype: str
) -> None:
    """Each layer through multi_head_attention gives network.forward's numbers (bit for bit on
    the machine the models were made on; the tolerance allows another BLAS's rounding, or
    another order of the same sums: relative for the scores, which reach hundreds)."""
    task = tasks.coref(SHIPPED[name])
    weights = {key: value.astype(dtype) for key, value in parameters(name).items()}
    words = sentence.split()
    ids = np.array([[task.vocabulary.index(word) for word in words]])
    expected = network.forward(weights, network.shape_of(task), ids, np.array([words.index("it")]))
    run = trace_model(sentence, name, dtype=dtype)
    assert run.trace.tokens == tuple(words)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for layer, reference in zip(run.trace.layers, expected.layers, strict=True):
        assert layer.X.dtype == np.dtype(dtype)
        np.testing.assert_allclose(layer.X, reference.x[0], rtol=0, atol=tolerance * 10)
        np.testing.assert_allclose(
            layer.scaled, reference.scaled[0], rtol=tolerance, atol=tolerance * 10
        )
        np.testing.assert_allclose(layer.weights, reference.weights[0], rtol=0, atol=tolerance)
    np.testing.assert_allclose(
        run.trace.last_hidden_state, expected.output[0], rtol=0, atol=tolerance * 10
    )


@pytest.mark.parametrize(
    ("sentence", "referent"), [(tasks.TIRED, "animal"), (tasks.WIDE, "street")]
)
def test_coref_last_layer_it_row_lands_on_the_referent(sentence: str, referent: str) -> None:
    trace = trace_model(sentence, "coref").trace
    last = trace.layers[-1]
    assert last.weights[0, trace.tokens.index("it"), trace.tokens.index(referent)] >= 0.9


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_held_out_accuracy_recomputed_from_the_shipped_files(name: str) -> None:
    task = tasks.coref(SHIPPED[name])
    accuracy = network.accuracy(parameters(name), network.shape_of(task), task.held_out)
    assert accuracy >= 0.99
    # What the lesson says of the model is what the files do.
    recorded = config(name)
    assert recorded.held_out_accuracy == pytest.approx(accuracy)
    assert recorded.held_out_examples == len(task.held_out.ids)
    assert recorded.vocabulary == task.vocabulary


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_models_are_small(name: str) -> None:
    folder = find_model(name)
    assert folder.parent.name == "trained" and folder.name == name
    assert sum(path.stat().st_size for path in folder.iterdir()) < 200_000


def test_the_answer_is_read_as_each_model_was_trained_to_give_it() -> None:
    for name, sentence, expected in (
        ("coref", tasks.TIRED, "animal"),
        ("coref", tasks.WIDE, "street"),
        ("coref-word", tasks.TIRED, "animal"),
        ("coref-word", tasks.WIDE, "street"),
    ):
        about = trace_model(sentence, name).trace.layers[0].provenance.weights.about
        assert about is not None and about.endswith(f'its answer at "it" is "{expected}".')


def test_every_layer_records_how_the_model_gives_its_answer_and_an_export_keeps_it(
    tmp_path: Path,
) -> None:
    from attnviz.trace_files import export_trace, load_trace

    for name, readout in SHIPPED.items():
        layers = trace_model(tasks.TIRED, name).trace.layers
        origins = {layer.provenance.weights for layer in layers}
        assert {(o.readout, o.answers_at) for o in origins} == {(readout.value, ("it",))}
        path = tmp_path / f"{name}.json"
        export_trace(layers[-1], path)
        (again,) = load_trace(path)
        assert again.provenance.weights.readout == readout.value
        assert again.provenance.weights.answers_at == ("it",)


def test_an_export_with_a_readout_attnviz_does_not_know_is_refused(tmp_path: Path) -> None:
    from attnviz.trace_files import export_trace, load_trace

    path = tmp_path / "coref.json"
    export_trace(trace_model(tasks.TIRED, "coref").trace.layers[-1], path)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["config"]["provenance"]["weights"]["readout"] = "oracle"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FileProblem, match="readout is not one of pointer, word, token"):
        load_trace(path)


@pytest.mark.slow
def test_the_lesson_says_what_coref_is_from_its_numbers() -> None:
    result = runner.invoke(app, ["explain", "--model", "coref", tasks.TIRED])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    recorded = config("coref")
    right = round(recorded.held_out_accuracy * recorded.held_out_examples)
    share = f"{100 * right / recorded.held_out_examples:.2f}%"  # 4,812 of 4,814: 99.96%
    for fragment in (
        "coref is a toy transformer trained by attnviz, not a language model",
        f"2 layers of 1 head each, d_model = 32, attention only, {len(recorded.vocabulary)} words",
        'its last layer was trained so that the row of "it" IS the answer',
        f"Trained {recorded.steps} steps of Adam (seed {recorded.seed}) on "
        f"{recorded.train_examples:,} sentences of 8 to 16 words",
        f"it answers {right:,} of {recorded.held_out_examples:,} ({share}) right",
        "no biases, no LayerNorm, no feed-forward block",
        "Weights: coref (trained by attnviz), layer 2 of 2",
        f"Step {step('tokens')} · Words and X",
        "(11 words)",
    ):
        assert fragment in text, fragment
    # No other family's sentences.
    for borrowed in ("[CLS]", "[SEP]", "word piece", "GELU", "LayerNorm(", "ln_1", "b_Q"):
        assert borrowed not in text, borrowed


def test_the_word_readout_says_its_attention_need_not_be_the_answer() -> None:
    result = runner.invoke(
        app, ["explain", "--model", "coref-word", tasks.WIDE, "--steps", steps_spec("tokens")]
    )
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert 'W_U [32 × 24] reads X at "it" after the last layer and names one of 24 words' in text
    assert 'where "it" looks need not be the answer' in text


def test_tokenizer_lowercases_and_drops_punctuation_at_word_ends() -> None:
    encoding = toy.encode('"The animal, didn\'t ... cross!" it', config("coref"))
    assert encoding.tokens == ("the", "animal", "didn't", "cross", "it")
    assert encoding.offsets[0] == (1, 4)


def test_unknown_words_get_one_line_naming_them_and_some_it_knows() -> None:
    line = one_line_error(
        ["explain", "--model", "coref", "the zebra saw the Zebra and a lion"], ExitStatus.BAD_INPUT
    )
    assert "does not know: 'zebra', 'saw', 'and', 'a', 'lion'. It knows only its 97 words" in line
    vocabulary = config("coref").vocabulary
    some = toy.sample_of(vocabulary)
    assert line.startswith("error: The sentence has words that coref (--model coref) does not know")
    listed = find_model("coref") / "config.json"
    assert f"use words such as {' '.join(some)} (all are listed in {listed})." in line
    # A dozen, from the function words to the adjectives, every one of them its own.
    assert len(some) == 12 and set(some) <= set(vocabulary)
    assert some[0] == vocabulary[0] and some[-1] == vocabulary[-1]


def test_a_sentence_longer_than_the_positions_is_refused_with_the_limit() -> None:
    line = one_line_error(
        ["explain", "--model", "coref", "the animal " * 8 + "it"], ExitStatus.BAD_INPUT
    )
    assert line == (
        "error: The sentence has 17 words; coref (--model coref) reads at most 16 (it was "
        "trained on sentences of 8 to 16 words). Shorten it."
    )


def test_padding_is_refused() -> None:
    line = one_line_error(
        ["explain", "--model", "coref", "the animal", "--pad-to", "4"], ExitStatus.BAD_INPUT
    )
    assert "--pad-to" in line and "no padding token" in line


def test_missing_weights_get_one_line(tmp_path: Path) -> None:
    folder = copy_of("coref", tmp_path)
    (folder / toy.WEIGHTS).unlink()
    line = one_line_error(["explain", "--model", str(folder), "the animal"], ExitStatus.BAD_FILE)
    assert "no weights.npz" in line


@pytest.mark.parametrize(
    ("damage", "fragment"),
    [
        (lambda path: path.write_bytes(path.read_bytes()[:2000]), "not a valid .npz"),
        (lambda path: path.write_bytes(b"not a zip"), "not a valid .npz"),
        (lambda path: np.savez(path, E=np.zeros((3, 3))), "config.json says"),
        (
            lambda path: np.savez(
                path, **{**load_npz(path, "w"), "P": np.full((16, 32), np.nan, np.float32)}
            ),
            "P holds NaN or infinity",
        ),
        (
            lambda path: np.savez(
                path, **{k: v for k, v in load_npz(path, "w").items() if k != "W_O.2"}
            ),
            "lacks W_O.2",
        ),
    ],
)
def test_damaged_weights_get_one_line(
    tmp_path: Path, damage: Callable[[Path], object], fragment: str
) -> None:
    folder = copy_of("coref", tmp_path)
    path = folder / toy.WEIGHTS
    damage(path)
    line = one_line_error(["explain", "--model", str(folder), "the animal"], ExitStatus.BAD_FILE)
    assert fragment in line


@pytest.mark.slow
def test_a_damaged_config_gets_one_line(tmp_path: Path) -> None:
    folder = copy_of("coref", tmp_path)
    data = json.loads((folder / "config.json").read_text())
    data["n_heads"] = 5
    (folder / "config.json").write_text(json.dumps(data))
    line = one_line_error(["explain", "--model", str(folder), "the animal"], ExitStatus.BAD_FILE)
    assert "not divisible by 5 heads" in line
    del data["training"]
    (folder / "config.json").write_text(json.dumps(data))
    line = one_line_error(["explain", "--model", str(folder), "the animal"], ExitStatus.BAD_FILE)
    assert "lacks 'training'" in line


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        (
            {"n_layers": 1},
            "n_layers is 1, but weights.npz holds 2 layers (W_Q.1 … W_Q.2); set n_layers to 2",
        ),
        # Named by the table that disagrees, not as a sentence too long for 8 positions.
        (
            {"max_positions": 8, "trained_lengths": [8, 8]},
            "P is a float32 array [16, 32]; config.json says it is a float",
        ),
        # A length it was trained on that it has no position for is refused as such.
        ({"max_positions": 8}, "trained_lengths is [8, 16], not 1 ≤ fewest ≤ most ≤"),
    ],
)
def test_a_config_that_disagrees_with_its_weights_is_refused_before_a_run(
    tmp_path: Path, changes: dict[str, object], fragment: str
) -> None:
    folder = copy_of("coref", tmp_path)
    data = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**data, **changes}))
    sentence = tasks.TIRED  # 11 words
    line = one_line_error(["explain", "--model", str(folder), sentence], ExitStatus.BAD_FILE)
    assert fragment in line, line
    with pytest.raises(FileProblem) as caught:
        trace_model(sentence, str(folder))
    assert caught.value.message == line.removeprefix("error: ")


def test_runs_without_the_optional_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither safetensors nor tokenizers is needed: importing either would fail here."""
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    for name in SHIPPED:
        assert trace_model(tasks.TIRED, name).trace.tokens == tuple(tasks.TIRED.split())


@pytest.mark.slow
def test_a_folder_attnviz_train_saves_runs_with_a_causal_mask_and_a_token_readout(
    tmp_path: Path,
) -> None:
    from attnviz.api import train as training

    training.train("previous", steps=2, until=None).save(tmp_path / "previous")
    run = trace_model("c a b b a g e f", str(tmp_path / "previous"))
    assert run.model_name == "previous"
    assert run.trace.layers[0].provenance.masking.causal
    assert np.all(np.triu(run.trace.layers[0].weights[0], 1) == 0)
    about = run.trace.layers[0].provenance.weights.about
    assert about is not None and "reads X at every position" in about and ", causal" in about


def test_errors_in_the_api_are_attnviz_errors(tmp_path: Path) -> None:
    with pytest.raises(AttnvizError, match="knows only its 97 words"):
        trace_model("the zebra", "coref")
    folder = copy_of("coref-word", tmp_path)
    (folder / toy.WEIGHTS).write_bytes(b"")
    with pytest.raises(FileProblem):
        trace_model("the animal", str(folder))


def test_the_toy_model_is_a_family_of_its_own_in_the_registry() -> None:
    from attnviz.model.base import MODULES, family_of
    from attnviz.model.sources.checkpoint import read_config

    assert MODULES[toy.MODEL_TYPE] == "attnviz.model.families.toy"
    assert family_of(toy.MODEL_TYPE) is toy.FAMILY
    assert not toy.FAMILY.special_tokens and toy.FAMILY.token_unit == "word"
    with pytest.raises(FileProblem, match="not a Hugging Face checkpoint"):
        read_config(find_model("coref"))


def test_words_is_refused_for_tokens_that_are_whole_words() -> None:
    line = one_line_error(
        ["explain", "--model", "coref", "the animal", "--words"], ExitStatus.BAD_INPUT
    )
    assert "coref's tokens are whole words already" in line


@pytest.mark.slow
def test_with_it_twice_the_answer_names_the_occurrence_it_was_given_at() -> None:
    """coref was trained on sentences with one "it"; with two it answers at the first, and the
    lesson says which, as the tables name it."""
    result = runner.invoke(
        app, ["explain", "--model", "coref", "it didn't cross the street because it was too tired"]
    )
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert (
        'This sentence has "it" more than once, and every sentence it was trained on had one; '
        'its answer at the first, "it:1", is "'
    ) in text
    assert 'its answer at "it" is' not in text
