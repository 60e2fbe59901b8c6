"""Word order: the sinusoidal positional encoding (--positions), from the formula to the lesson,
the command line, the provenance and the exports."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.attention import multi_head_attention
from attnviz.cli import app
from attnviz.config import AttentionConfig
from attnviz.core import cross_layers, trace_layers
from attnviz.embeddings import random_embeddings
from attnviz.errors import AttnvizError, ExitStatus, FileProblem
from attnviz.lesson.blocks import Paragraph, Tables
from attnviz.options import TraceOptions
from attnviz.positions import Positions, sinusoidal_positions
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)
from attnviz.selection import select
from attnviz.trace import AttentionTrace
from attnviz.trace_files import export_trace, load_trace
from attnviz.weights import random_weights

from support import CliRunner, product_atol, step
from support import written_lesson as lesson

SENTENCE = "The cat saw the dog"  # "The" (position 0) and "the" (3) share one random vector
THE, THE_AGAIN = 0, 3
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def flat(text: str) -> str:
    """Text with its line breaks and runs of spaces as single spaces: wrapping aside."""
    return " ".join(text.split())


def traced(sentence: str = SENTENCE, **options: object) -> AttentionTrace:
    (trace,) = trace_layers(sentence, TraceOptions(**options)).layers  # type: ignore[arg-type]
    return trace


def table_titles(trace: AttentionTrace) -> list[str]:
    return [
        matrix.title
        for block in lesson(trace, select(trace))
        if isinstance(block, Tables)
        for matrix in block.matrices
    ]


def paragraphs(trace: AttentionTrace) -> str:
    return " ".join(
        span.text
        for block in lesson(trace, select(trace))
        if isinstance(block, Paragraph)
        for span in block.spans
    )


# -- the formula -----------------------------------------------------------------------------


@pytest.mark.parametrize(("n_positions", "d_model"), [(1, 2), (7, 8), (50, 9), (12, 512)])
def test_the_encoding_is_the_papers_formula_written_as_a_loop(
    n_positions: int, d_model: int
) -> None:
    expected = np.zeros((n_positions, d_model))
    for pos in range(n_positions):
        for i in range((d_model + 1) // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            expected[pos, 2 * i] = math.sin(angle)
            if 2 * i + 1 < d_model:
                expected[pos, 2 * i + 1] = math.cos(angle)
    encoding = sinusoidal_positions(n_positions, d_model)
    assert encoding.shape == (n_positions, d_model)
    np.testing.assert_allclose(encoding, expected, rtol=0, atol=1e-12)


def test_known_values() -> None:
    encoding = sinusoidal_positions(3, 6)
    np.testing.assert_array_equal(encoding[0], [0, 1, 0, 1, 0, 1])  # sin 0, cos 0
    assert encoding[1, 0] == pytest.approx(math.sin(1)) and encoding[1, 1] == pytest.approx(
        math.cos(1)
    )
    # The last pair turns slowest: 1 / 10000^(4/6) radians per position.
    assert encoding[2, 4] == pytest.approx(math.sin(2 / 10000 ** (4 / 6)))
    assert np.all(np.abs(encoding) <= 1)


# -- what positions change -------------------------------------------------------------------


def rounding_apart(trace: AttentionTrace) -> tuple[float, float]:
    """How far apart two weights, and two numbers of the output, may be where the rows of X
    they come from are equal, the math the same: numpy's BLAS kernel may add one row's terms
    in another order than another row's of the same product (at a tile's edge), so each step
    is a few ulps apart (product_atol) and carries what came before it along: the scores by
    d_k·(ΔQ·|K| + |Q|·ΔK), a softmax row by at most twice its scores' move (÷√d_k before; and a
    few eps, numpy's exp taking another path at an array's tail), Z by n_keys·(Δweights·|V| +
    ΔV), the output by h·d_k·ΔZ·|W_O|.  -> (weights, output)"""
    keys = trace.X if trace.X_source is None else trace.X_source
    projected = max(
        product_atol(trace.X, trace.W_Q),
        product_atol(keys, trace.W_K),
        product_atol(keys, trace.W_V),
    )
    q, k, v = (float(np.abs(array).max()) for array in (trace.Q, trace.K, trace.V))
    scores = trace.d_k * projected * (q + k) + product_atol(trace.Q, np.swapaxes(trace.K, 1, 2))
    weights = 2 * scores / math.sqrt(trace.d_k) + 4 * float(np.finfo(trace.weights.dtype).eps)
    z = len(trace.key_tokens) * (weights * v + projected) + product_atol(trace.weights, trace.V)
    output = trace.n_heads * trace.d_k * z * float(np.abs(trace.W_O).max())
    return weights, output + product_atol(trace.concat, trace.W_O)


def test_without_positions_the_and_the_are_the_same_row_everywhere() -> None:
    trace = traced()
    assert trace.E is None and trace.PE is None
    np.testing.assert_array_equal(trace.X[THE], trace.X[THE_AGAIN])
    # The same numbers from there on, up to the order the products add their terms in (here
    # at most 3e-13 for a weight, 2e-11 for the output; positions move them by about 0.3).
    weights, output = rounding_apart(trace)
    np.testing.assert_allclose(
        trace.weights[:, THE], trace.weights[:, THE_AGAIN], rtol=0, atol=weights
    )
    np.testing.assert_allclose(trace.output[THE], trace.output[THE_AGAIN], rtol=0, atol=output)
    # …and every query weighs the two alike.
    np.testing.assert_allclose(
        trace.weights[:, :, THE], trace.weights[:, :, THE_AGAIN], rtol=0, atol=weights
    )


def test_with_sinusoidal_positions_the_and_the_differ() -> None:
    trace = traced(positions=Positions.sinusoidal)
    assert trace.E is not None and trace.PE is not None
    np.testing.assert_array_equal(trace.E[THE], trace.E[THE_AGAIN])  # the same word…
    assert not np.allclose(trace.X[THE], trace.X[THE_AGAIN])  # …at another place
    assert not np.allclose(trace.weights[:, THE], trace.weights[:, THE_AGAIN])
    assert not np.allclose(trace.output[THE], trace.output[THE_AGAIN])


def test_x_is_the_embeddings_plus_the_encoding_and_the_rest_is_unchanged() -> None:
    plain, positioned = traced(), traced(positions=Positions.sinusoidal)
    assert positioned.E is not None and positioned.PE is not None
    tokens = list(positioned.tokens)
    np.testing.assert_array_equal(positioned.E, random_embeddings(tokens, 8, 0))
    np.testing.assert_array_equal(positioned.E, plain.X)
    np.testing.assert_array_equal(positioned.PE, sinusoidal_positions(5, 8))
    np.testing.assert_array_equal(positioned.X, positioned.E + positioned.PE)
    np.testing.assert_array_equal(positioned.W_Q, plain.W_Q)  # the same weights
    # Q = X·W_Q up to the order of its sums: the trace takes every head's Q, K and V from one
    # stacked product W·Xᵀ, whose BLAS kernel may add each number's d_model terms in another
    # order than X @ W_Q does (1 ulp apart on some kernels). A Q from E alone is off by ~1.
    atol = product_atol(positioned.X, positioned.W_Q)
    np.testing.assert_allclose(positioned.Q, positioned.X @ positioned.W_Q, rtol=0, atol=atol)
    for array in (positioned.E, positioned.PE):
        assert not array.flags.writeable


def test_only_positions_make_attention_see_word_order() -> None:
    """Permuting the words permutes the rows of every result, unless X holds positions."""
    words, order = ["dogs", "chase", "cats"], [2, 1, 0]
    shuffled = " ".join(words[i] for i in order)
    plain, plain_shuffled = traced(" ".join(words)), traced(shuffled)
    np.testing.assert_allclose(plain_shuffled.output, plain.output[order], rtol=0, atol=1e-12)
    positioned = traced(" ".join(words), positions=Positions.sinusoidal)
    positioned_shuffled = traced(shuffled, positions=Positions.sinusoidal)
    assert not np.allclose(positioned_shuffled.output, positioned.output[order])


def test_padding_tokens_have_positions_too() -> None:
    trace = traced("I am good", positions=Positions.sinusoidal, pad_to=5)
    assert trace.E is not None and trace.PE is not None
    np.testing.assert_array_equal(trace.E[3:], 0)  # a zero [PAD] embedding…
    np.testing.assert_array_equal(trace.X[3:], sinusoidal_positions(5, 8)[3:])  # …at a place


def test_cross_attention_counts_each_sentence_from_zero() -> None:
    options = TraceOptions(positions=Positions.sinusoidal)
    (trace,) = cross_layers("the cat saw the dog", "le chat", options).layers
    assert trace.PE is not None and trace.PE_source is not None and trace.X_source is not None
    assert trace.E_source is not None
    np.testing.assert_array_equal(trace.PE, sinusoidal_positions(2, 8))
    np.testing.assert_array_equal(trace.PE_source, sinusoidal_positions(5, 8))
    np.testing.assert_array_equal(trace.X_source, trace.E_source + trace.PE_source)
    assert not np.allclose(trace.weights[:, :, 0], trace.weights[:, :, 3])  # the ≠ the
    (plain,) = cross_layers("the cat saw the dog", "le chat").layers
    weights, _ = rounding_apart(plain)  # the two keys' columns: equal up to rounding
    np.testing.assert_allclose(plain.weights[:, :, 0], plain.weights[:, :, 3], rtol=0, atol=weights)


def test_the_python_api_takes_positions_by_name() -> None:
    trace = attnviz.trace_attention(SENTENCE, positions="sinusoidal")
    assert trace.provenance.embeddings.positions is Positions.sinusoidal
    configured = attnviz.trace_attention(
        SENTENCE, config=AttentionConfig(d_model=12, n_heads=3), positions="sinusoidal"
    )
    assert configured.PE is not None and configured.PE.shape == (5, 12)
    with pytest.raises(AttnvizError, match="positions must be 'none' or 'sinusoidal'"):
        attnviz.trace_attention(SENTENCE, positions="learned")


def test_multi_head_attention_keeps_the_encoding_and_provenance_together() -> None:
    weights = random_weights(AttentionConfig(), np.random.default_rng(0))
    x, encoding = np.ones((3, 8)), sinusoidal_positions(3, 8)
    trace = multi_head_attention(["a", "b", "c"], x, weights, positional_encoding=encoding)
    assert trace.provenance.embeddings.positions is Positions.sinusoidal
    np.testing.assert_array_equal(trace.X, x + encoding)
    random_x = Provenance(EmbeddingsOrigin(EmbeddingsKind.RANDOM, seed=0), weights.origin)
    with pytest.raises(AttnvizError, match="give both or neither"):
        multi_head_attention(
            ["a", "b", "c"], x, weights, provenance=random_x, positional_encoding=encoding
        )
    with pytest.raises(AttnvizError, match="positional encoding has shape"):
        multi_head_attention(["a", "b", "c"], x, weights, positional_encoding=encoding[:2])


# -- the command line ------------------------------------------------------------------------


def test_explain_shows_e_pe_and_their_sum_with_the_formula() -> None:
    code, stdout, stderr = run("explain", SENTENCE, "--positions", "sinusoidal")
    assert code == 0, stderr
    text = flat(stdout)
    assert "Embeddings: seeded random vectors (seed 0) + sinusoidal positional encoding" in text
    assert "PE[pos, 2i] = sin(pos / 10000^(2i/d_model))" in text
    assert "PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))" in text
    assert "'The:1' and 'the:2' share E but not PE, so their rows of X differ" in text
    step_1 = stdout.split(f"Step {step('tokens')} ·")[1].split(f"Step {step('qkv')} ·")[0]
    titles = [line.split("  [")[0] for line in step_1.splitlines() if "[5 × 8]" in line]
    assert titles == ["E (tokens)", "PE (positions)", "X = E + PE"]
    assert "The:1   0.00   1.00  0.00  1.00" in step_1  # the first row of PE


@pytest.mark.slow
def test_explain_without_positions_says_attention_ignores_word_order() -> None:
    code, stdout, _ = run("explain", SENTENCE, "--full")
    assert code == 0
    text = flat(stdout)
    assert "Attention alone ignores word order: it treats the sentence as a set of words" in text
    assert (
        "'The:1' and 'the:2' (one word once case is ignored, as embeddings are looked up) get "
        "identical rows of X and so identical weights and outputs" in text
    )
    brief = flat(run("explain", SENTENCE)[1])
    assert (
        "Attention alone ignores word order: permuting the words only permutes the rows (and "
        "the columns) of every table below, and 'The:1' and 'the:2' (the same word, case "
        "aside) get identical rows of X, weights and outputs." in brief
    )
    assert "--positions sinusoidal adds each word's position to X" in text
    assert "PE" not in stdout.split(f"Step {step('qkv')} ·")[0]
    # No repeated word, no claim about one.
    _, stdout, _ = run("explain", "I am good")
    assert "ignores word order" in stdout and "identical rows" not in flat(stdout)
    # With a causal mask, the mask alone tells positions apart.
    _, stdout, _ = run("explain", SENTENCE, "--causal")
    assert "only the mask gives them different weights" in flat(stdout)


def test_the_lesson_says_where_a_model_s_positions_come_from() -> None:
    weights = random_weights(AttentionConfig(), np.random.default_rng(0))
    for architecture, names in (("gpt2", "(wpe,"), ("bert", "(position_embeddings,")):
        for layer in (1, 2):
            provenance = Provenance(
                EmbeddingsOrigin(
                    EmbeddingsKind.MODEL if layer == 1 else EmbeddingsKind.LAYER,
                    architecture=architecture,
                    layer=layer,
                ),
                WeightsOrigin(
                    WeightsKind.PRETRAINED,
                    model="tiny",
                    architecture=architecture,
                    layer=layer,
                    n_layers=2,
                ),
            )
            x = np.random.default_rng(1).standard_normal((3, 8))
            trace = multi_head_attention(["a", "b", "c"], x, weights, provenance=provenance)
            text = paragraphs(trace)
            assert "Word order is already in X" in text and names in text
            assert "before layer 1" in text
            assert ("through the layers before it" in text) == (layer == 2)
            assert "ignores word order" not in text


@pytest.mark.parametrize("command", ["explain", "heatmap", "heads"])
def test_positions_with_a_model_is_refused_in_one_line(command: str, tmp_path: Path) -> None:
    args = [command, SENTENCE, "--model", "gpt2", "--positions", "sinusoidal"]
    if command == "heatmap":
        args += ["-o", str(tmp_path / "map.png")]
    code, stdout, stderr = run(*args)
    assert code == ExitStatus.BAD_INPUT, (stdout, stderr)
    (line,) = stderr.strip().splitlines()
    assert line.startswith("error: --positions applies to the random layer")
    assert "Drop --positions, or --model." in line
    with pytest.raises(AttnvizError, match="Drop positions, or model"):
        TraceOptions(model="gpt2", positions=Positions.sinusoidal)
    TraceOptions(model="gpt2", positions=Positions.none)  # the default is no contradiction


def test_an_unknown_positions_value_is_a_usage_error() -> None:
    code, _, stderr = run("explain", SENTENCE, "--positions", "learned")
    assert code == ExitStatus.USAGE and "--positions" in stderr


@pytest.mark.slow
def test_every_random_layer_command_takes_positions(tmp_path: Path) -> None:
    code, _, stderr = run(
        "heatmap", SENTENCE, "--positions", "sinusoidal", "-o", str(tmp_path / "map.png")
    )
    assert code == 0, stderr
    assert (tmp_path / "map.png").read_bytes().startswith(b"\x89PNG")
    code, stdout, stderr = run("heads", SENTENCE, "--positions", "sinusoidal", "--focus", "cat")
    assert code == 0, stderr
    code, stdout, stderr = run("cross", SENTENCE, "le chat", "--positions", "sinusoidal")
    assert code == 0, stderr
    assert "X_source = E_source + PE_source" in stdout
    assert "counted from 0 in each sentence" in flat(stdout)


# -- provenance and exports --------------------------------------------------------------------


def test_the_provenance_records_the_positions_and_reads_them_back() -> None:
    trace = traced(positions=Positions.sinusoidal)
    data = trace.provenance.to_dict()
    assert data["embeddings"] == {"kind": "random", "seed": 0, "positions": "sinusoidal"}
    assert Provenance.from_dict(json.loads(json.dumps(data))) == trace.provenance
    # Without positions the record is as it was before the option existed, and reads back.
    plain = traced().provenance.to_dict()
    assert "positions" not in plain["embeddings"]
    assert Provenance.from_dict(plain).embeddings.positions is Positions.none
    data["embeddings"]["positions"] = "learned"
    with pytest.raises(AttnvizError, match="provenance is not one attnviz wrote"):
        Provenance.from_dict(data)


@pytest.mark.parametrize("extension", [".npz", ".json"])
def test_an_export_holds_e_and_pe_and_reads_back(tmp_path: Path, extension: str) -> None:
    path = tmp_path / f"trace{extension}"
    code, _, stderr = run("explain", SENTENCE, "--positions", "sinusoidal", "--export", str(path))
    assert code == 0, stderr
    trace = traced(positions=Positions.sinusoidal)
    if extension == ".npz":
        with np.load(path, allow_pickle=False) as data:
            stored = {key: data[key] for key in ("E", "PE", "X")}
            config = json.loads(str(data["config"]))
    else:
        document = json.loads(path.read_text(encoding="utf-8"))
        stored = {key: np.array(document[key]) for key in ("E", "PE", "X")}
        config = document["config"]
    np.testing.assert_array_equal(stored["E"], trace.E)
    np.testing.assert_array_equal(stored["PE"], sinusoidal_positions(5, 8))
    np.testing.assert_array_equal(stored["X"], stored["E"] + stored["PE"])
    assert config["provenance"]["embeddings"]["positions"] == "sinusoidal"
    assert config["embeddings"].endswith("+ sinusoidal positional encoding")
    (again,) = load_trace(path)
    assert again.provenance == trace.provenance
    for key, array in trace.arrays().items():
        np.testing.assert_array_equal(again.arrays()[key], array, err_msg=key)
    assert table_titles(again)[:3] == ["E (tokens)", "PE (positions)", "X = E + PE"]


def test_an_export_without_positions_has_no_e_or_pe(tmp_path: Path) -> None:
    export_trace(traced(), tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as data:
        assert "E" not in data.files and "PE" not in data.files
    (again,) = load_trace(tmp_path / "t.npz")
    assert again.E is None and again.PE is None


@pytest.mark.parametrize("extension", [".npz", ".json"])
def test_a_cross_export_holds_both_encodings(tmp_path: Path, extension: str) -> None:
    options = TraceOptions(positions=Positions.sinusoidal)
    (trace,) = cross_layers("the cat saw the dog", "le chat", options).layers
    export_trace(trace, tmp_path / f"cross{extension}")
    (again,) = load_trace(tmp_path / f"cross{extension}")
    assert set(again.arrays()) >= {"E", "PE", "E_source", "PE_source", "X_source"}
    for key, array in trace.arrays().items():
        np.testing.assert_array_equal(again.arrays()[key], array, err_msg=key)


def test_a_file_whose_arrays_contradict_its_provenance_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.npz"
    export_trace(traced(positions=Positions.sinusoidal), path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files if key not in ("E", "PE")}
    np.savez(path, **arrays)
    with pytest.raises(FileProblem, match='says positions="sinusoidal" but it holds no E and PE'):
        load_trace(path)


@pytest.mark.slow
def test_an_export_reused_with_the_same_positions_gives_the_same_numbers(tmp_path: Path) -> None:
    original = tmp_path / "original.npz"
    run("explain", SENTENCE, "--positions", "sinusoidal", "--seed", "4", "--export", str(original))
    again = tmp_path / "again.npz"
    code, _, stderr = run(
        "explain",
        SENTENCE,
        "--positions",
        "sinusoidal",
        "--weights",
        str(original),
        "--embeddings",
        str(original),  # its E: the positions are added anew
        "--export",
        str(again),
    )
    assert code == 0 and "note:" not in stderr, stderr
    (first,), (second,) = load_trace(original), load_trace(again)
    for key in ("E", "PE", "X", "weights", "output"):
        np.testing.assert_array_equal(first.arrays()[key], second.arrays()[key], err_msg=key)
    # Leaving --positions out reuses only the weights, and says how to get the X back.
    code, _, stderr = run("explain", SENTENCE, "--weights", str(original), "--seed", "4")
    assert code == 0
    assert "add --positions sinusoidal to reuse its X too" in flat(stderr)
