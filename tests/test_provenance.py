"""Where a trace came from, as typed data: set by every way of making a trace, read by every
view, written into every export and read back by load_trace."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.cli import app
from attnviz.core import cross_layers, trace_layers
from attnviz.errors import FileProblem
from attnviz.options import TraceOptions
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Masking,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)
from attnviz.trace import ARRAY_KEYS, AttentionTrace
from attnviz.trace_files import export_trace, load_trace

from support import CliRunner

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def assert_same(a: AttentionTrace, b: AttentionTrace) -> None:
    assert a.tokens == b.tokens and a.source_tokens == b.source_tokens
    assert a.provenance == b.provenance and a.config == b.config
    for key, array in a.arrays().items():
        np.testing.assert_array_equal(array, b.arrays()[key], err_msg=key)


def test_the_random_layer_says_it_is_random_with_its_seed() -> None:
    (trace,) = trace_layers("I am good", TraceOptions(seed=7)).layers
    assert trace.provenance == Provenance(
        EmbeddingsOrigin(EmbeddingsKind.RANDOM, seed=7), WeightsOrigin(WeightsKind.RANDOM, seed=7)
    )
    assert trace.provenance.weights.is_random and not trace.provenance.weights.is_pretrained
    assert trace.provenance.weights.describe() == "random (seed 7)"


def test_masks_and_padding_are_recorded_as_data() -> None:
    (trace,) = trace_layers("I am good", TraceOptions(causal=True, pad_to=5)).layers
    assert trace.provenance.masking == Masking(causal=True, padding=2)
    assert trace.provenance.special == (3, 4)


def test_word_vector_files_are_recorded_with_how_they_were_read(tmp_path: Path) -> None:
    vocabulary = ROOT / "sample_embeddings" / "toy8d.txt"
    (trace,) = trace_layers("I am good", TraceOptions(embeddings=vocabulary)).layers
    embeddings = trace.provenance.embeddings
    expected = EmbeddingsOrigin(EmbeddingsKind.FILE, path=str(vocabulary), vocabulary=True)
    assert embeddings == expected
    rows = ROOT / "sample_embeddings" / "i_am_good.npy"
    (trace,) = trace_layers("I am good", TraceOptions(embeddings=rows)).layers
    assert trace.provenance.embeddings.vocabulary is False
    assert trace.provenance.embeddings.describe() == f"rows of {rows}"
    oov = TraceOptions(embeddings=vocabulary, oov=attnviz.embeddings.OutOfVocabulary.random, seed=3)
    (trace,) = trace_layers("I am zorbly", oov).layers
    assert trace.provenance.embeddings.seed == 3  # the seed of the words it drew


@pytest.mark.parametrize("extension", [".npz", ".json"])
def test_an_export_reads_back_with_its_provenance(tmp_path: Path, extension: str) -> None:
    (masked,) = trace_layers("The cat sat", TraceOptions(causal=True, pad_to=5, seed=2)).layers
    (crossed,) = cross_layers("I am good", "Je vais bien", TraceOptions(heads=4, d_model=8)).layers
    for trace in (masked, crossed):
        path = tmp_path / f"trace{extension}"
        export_trace(trace, path)
        (again,) = load_trace(path)
        assert_same(trace, again)


def test_a_file_without_provenance_reads_back_as_coming_from_that_file(tmp_path: Path) -> None:
    trace = attnviz.trace_attention("I am good")
    path = tmp_path / "hand.npz"
    np.savez(path, tokens=np.array(trace.tokens), **{k: getattr(trace, k) for k in ARRAY_KEYS})
    (again,) = load_trace(path)
    assert again.provenance.weights == WeightsOrigin(WeightsKind.FILE, path=str(path))
    assert again.provenance.embeddings.kind is EmbeddingsKind.FILE
    np.testing.assert_array_equal(again.weights, trace.weights)


def test_damaged_exports_are_refused_naming_the_file(tmp_path: Path) -> None:
    trace = attnviz.trace_attention("I am good")
    path = tmp_path / "t.json"
    export_trace(trace, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["config"]["provenance"]["weights"]["kind"] = "magic"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FileProblem, match="provenance is not one attnviz wrote"):
        load_trace(path)
    document["config"]["provenance"]["weights"]["kind"] = "random"
    document["Q"] = document["Q"][:1]
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FileProblem, match=r"Q has shape \[1, 3, 4\], expected \[2, 3, 4\]"):
        load_trace(path)


@pytest.mark.slow
def test_weights_fed_back_from_a_random_export_are_still_called_random(tmp_path: Path) -> None:
    path = tmp_path / "t.npz"
    export_trace(attnviz.trace_attention("I am good"), path)
    (trace,) = trace_layers("I am good", TraceOptions(weights=path)).layers
    weights = trace.provenance.weights
    assert weights.kind is WeightsKind.FILE and weights.path == str(path)
    assert weights.is_random and weights.seed == 0
    result = runner.invoke(app, ["explain", "I am good", "--weights", str(path)])
    assert "the weights are random, not learned" in " ".join(result.stdout.split())


def test_no_view_parses_a_display_string_to_learn_where_a_trace_came_from() -> None:
    """The defects the restructure removed, kept out: provenance read from display strings and
    special tokens recognised by their spelling."""
    source = "\n".join(
        path.read_text(encoding="utf-8") for path in (ROOT / "attnviz").rglob("*.py")
    )
    for pattern in (
        r"weights_source|embeddings_source",
        r"\.describe\([^)]*\)\s*\.(startswith|split|rsplit|partition)",
        r"\"\[PAD\]\" in|\"\[CLS\]\" in|SPECIAL_TOKEN",
        r"startswith\(\"##\"\)",
    ):
        assert not re.search(pattern, source), pattern


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"X": [[1.0], [1.0, 2.0]]}, "X is not an array of numbers"),
        ({"tokens": [["a"], "b", "c"]}, "tokens is not a list of words"),
        ({"mask": [[True], [True, False]]}, "mask is not an array"),
    ],
)
def test_malformed_exports_are_refused_in_one_sentence(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "t.json"
    export_trace(attnviz.trace_attention("I am good"), path)
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**document, **change}), encoding="utf-8")
    with pytest.raises(FileProblem, match=message):
        load_trace(path)


def test_an_export_whose_provenance_names_positions_it_lacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    export_trace(attnviz.trace_attention("I am good"), path)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["config"]["provenance"]["special"] = [99]
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FileProblem, match="names token positions it does not have"):
        load_trace(path)


def test_a_model_name_in_brackets_takes_the_kind_inside_them() -> None:
    origin = WeightsOrigin(
        WeightsKind.PRETRAINED, model="SmolLM2 (GGUF, 4-bit Q4_1)", layer=3, n_layers=30
    )
    assert origin.describe() == "SmolLM2 (GGUF, 4-bit Q4_1, pretrained), layer 3 of 30"
    plain = WeightsOrigin(WeightsKind.PRETRAINED, model="all-MiniLM-L6-v2", layer=6, n_layers=6)
    assert plain.describe() == "all-MiniLM-L6-v2 (pretrained), layer 6 of 6"
