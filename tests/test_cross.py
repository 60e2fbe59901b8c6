"""Cross-attention (encoder–decoder): queries from the target, keys and values from the source."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.cli import app
from attnviz.core import trace_cross
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.options import TraceOptions

from support import CliRunner, step, steps_spec

runner = CliRunner()


def test_cross_attention_equals_the_per_word_textbook_loop() -> None:
    trace, _ = trace_cross(
        "I am very good", "Je vais bien", TraceOptions(d_model=12, heads=3, seed=4)
    )
    assert trace.tokens == ("Je", "vais", "bien")
    assert trace.key_tokens == ("I", "am", "very", "good")
    assert trace.Q.shape == (3, 3, 4) and trace.K.shape == (3, 4, 4) and trace.V.shape == (3, 4, 4)
    assert trace.weights.shape == (3, 3, 4)
    assert trace.X_source is not None
    for h in range(3):
        q = trace.X @ trace.W_Q[h]  # queries from the target
        k = trace.X_source @ trace.W_K[h]  # keys and values from the source
        v = trace.X_source @ trace.W_V[h]
        for i in range(3):
            scores = [float(q[i] @ k[j]) / math.sqrt(4) for j in range(4)]
            exps = [math.exp(s - max(scores)) for s in scores]
            weights = [e / sum(exps) for e in exps]
            np.testing.assert_allclose(trace.weights[h, i], weights, atol=1e-12)
            np.testing.assert_allclose(
                trace.Z[h, i], sum(w * v[j] for j, w in enumerate(weights)), atol=1e-12
            )


def test_a_word_has_the_same_vector_on_both_sides() -> None:
    trace, _ = trace_cross("good day", "good night")
    assert trace.X_source is not None
    np.testing.assert_array_equal(trace.X_source[0], trace.X[0])


@pytest.mark.parametrize(
    ("source", "target", "side"), [("", "Je vais", "source"), ("I am", "  ", "target")]
)
def test_an_empty_side_is_refused(source: str, target: str, side: str) -> None:
    with pytest.raises(AttnvizError, match=f"The {side} sentence is empty"):
        trace_cross(source, target)


def test_cross_command_prints_the_steps_and_exports(tmp_path: Path) -> None:
    export = tmp_path / "cross.npz"
    result = runner.invoke(
        app, ["cross", "I am very good", "Je vais bien", "--focus", "vais", "--export", str(export)]
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "multi-head cross-attention (encoder–decoder)" in out
    assert "K₁ = X_source·W_K₁" in out and "X_source  [4 × 8]" in out
    assert "weights₁ = softmax(scaled₁)  [3 × 4]" in out
    assert "Focus: where does 'vais' look?" in out
    with np.load(export) as data:
        assert data["source_tokens"].tolist() == ["I", "am", "very", "good"]
        assert data["target_tokens"].tolist() == ["Je", "vais", "bien"]
        assert data["weights"].shape == (2, 3, 4) and data["K"].shape == (2, 4, 4)
        assert data["Q"].shape == (2, 3, 4)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["cross", "I am good", "Je vais bien", "--causal"], "does not apply to cross"),
        (["cross", "", "Je vais bien"], "source sentence is empty"),
        (["cross", "I am good", "Je vais bien", "--focus", "good"], "not in the sentence"),
    ],
)
def test_cross_errors(args: list[str], fragment: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == ExitStatus.BAD_INPUT
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr


@pytest.mark.slow
def test_cross_heatmap_is_rectangular(tmp_path: Path) -> None:
    out = tmp_path / "cross.png"
    result = runner.invoke(app, ["cross", "I am very good", "Je vais bien", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_cross_help_says_causal_is_refused_and_it_is() -> None:
    result = CliRunner().invoke(app, ["cross", "--help"])
    assert "Refused: a causal mask is for self-attention." in " ".join(result.stdout.split())
    result = CliRunner().invoke(app, ["cross", "I am good", "Je vais bien", "--causal"])
    assert (
        result.exit_code == ExitStatus.BAD_INPUT
        and "masks belong to self-attention" in result.stderr
    )


@pytest.mark.slow
def test_cross_saves_its_lesson_as_svg_and_html_and_paces_like_explain(tmp_path: Path) -> None:
    svg, html = tmp_path / "cross.svg", tmp_path / "cross.html"
    arguments = ["cross", "I am good", "Je vais bien", "--focus", "vais", "--step"]
    result = runner.invoke(app, [*arguments, "--svg", str(svg), "--html", str(html)])
    assert result.exit_code == 0, result.stderr
    # Not at a terminal: --step says so once and does not wait.
    assert "--step pauses only at a terminal" in result.stderr
    assert f"wrote {svg}" in result.stderr and f"wrote {html}" in result.stderr
    drawn = svg.read_text(encoding="utf-8").replace("&#160;", " ")
    assert drawn.lstrip().startswith("<svg") and ">attnviz cross</text>" in drawn  # its title
    page = html.read_text(encoding="utf-8")
    assert "cross-attention (encoder–decoder)" in page and "background-color: #" in page
    assert "Focus: where does &#x27;vais&#x27; look?" in page


@pytest.mark.parametrize(
    ("option", "path", "fragment"),
    [
        ("--svg", "lesson.png", "unknown extension '.png'; use .svg."),
        ("--html", "no/such/folder/lesson.html", "does not exist"),
    ],
)
def test_cross_refuses_an_unwritable_lesson_file_before_any_work(
    option: str, path: str, fragment: str, tmp_path: Path
) -> None:
    result = runner.invoke(
        app, ["cross", "I am good", "Je vais bien", option, str(tmp_path / path)]
    )
    assert result.exit_code == ExitStatus.CANNOT_WRITE
    assert result.stdout == ""  # nothing computed, nothing printed
    assert len(result.stderr.strip().splitlines()) == 1 and fragment in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_cross_shows_only_the_steps_asked_for() -> None:
    result = runner.invoke(
        app, ["cross", "I am good", "Je vais bien", "--steps", steps_spec("scores", "output")]
    )
    assert result.exit_code == 0, result.stderr
    steps = [line.split(" ·")[0] for line in result.stdout.splitlines() if line.startswith("Step")]
    # head 1's raw scores in full, head 2 by its rows
    assert steps == [f"Step {step('scores')}", f"Step {step('output')}"]
    assert "Head 2 of 2 · the row of" in result.stdout
    assert "Target (queries): Je vais bien" in result.stdout
    refused = runner.invoke(
        app, ["cross", "I am good", "Je vais bien", "--steps", steps_spec("focus")]
    )
    assert refused.exit_code == ExitStatus.BAD_INPUT and "--focus WORD" in refused.stderr


def test_layer_without_an_export_names_what_cross_reads_in_each_surface() -> None:
    """cross takes no --model: --layer alone is refused with the export it reads, not --model."""
    with pytest.raises(attnviz.AttnvizError) as refused:
        attnviz.cross("I am good", "Je vais bien", layer=2)
    message = str(refused.value)
    assert "export_layers" in message and "model's export" in message
    result = CliRunner().invoke(app, ["cross", "I am good", "Je vais bien", "--layer", "2"])
    assert result.exit_code == 3
    assert "--layer with cross reads that layer of a model's export" in result.output
    assert "needs --model" not in result.output


def test_too_many_tokens_in_the_pair_names_both_sentences() -> None:
    from attnviz.core import cross_layers
    from attnviz.errors import AttnvizError

    words = " ".join(f"w{i}" for i in range(300))
    with pytest.raises(AttnvizError, match=r"The two sentences have 300 \+ 300 = 600 tokens"):
        cross_layers(words, words)


@pytest.mark.parametrize("command", ["cross", "explain"])
def test_grouped_query_attention_says_what_it_saves_of_the_sentence_that_gives_k_and_v(
    command: str,
) -> None:
    """Cross-attention's K and V come from the source: what grouping saves is said of the
    source's tokens, kept once for every target word written, not of a self-attention K/V cache
    of "this sentence"."""
    args = [command, "I am good", *(["je suis bon ici"] if command == "cross" else [])]
    result = runner.invoke(app, [*args, "--kv-heads", "1", "--heads", "2"], env={"COLUMNS": "3000"})
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stdout.split())
    if command == "cross":
        assert "keeps the source's K and V, computed once for all of them" in said
        assert "for the source's n = 3 tokens that is 2·n·G·d_k = 2·3·1·4 = 24" in said
        assert "K/V cache" not in said and "this sentence's" not in said
    else:
        assert (
            "keeps every token's K and V (its K/V cache); for this sentence's n = 3 tokens" in said
        )
