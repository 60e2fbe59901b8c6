"""Model runs estimated before the work (attnviz.model_limits.check_model_run): the estimates
checked against what the run does, counted, not timed: the layer passes against an instrumented
count of the feed-forward blocks run, the multiply-adds of a layer against the model's own
weight matrices, the memory against tracemalloc's peak of the run's allocations (numpy's
included), and the refusals as one line naming the estimate and the way round."""

from __future__ import annotations

import dataclasses
import gc
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import attnviz
from attnviz import limits, model_limits
from attnviz.cli import app
from attnviz.errors import ExitStatus, command_line
from attnviz.model import run as model_run
from attnviz.model_limits import ModelSizes, Work

from support import CliRunner, needs_model, one_error_line

pytestmark = needs_model

IT = "The animal didn't cross the street because it was too tired"
WORDS = "the cat sat on the mat and looked at the dog because it was tired".split()
runner = CliRunner()


def text_of(n_words: int) -> str:
    return " ".join(WORDS[index % len(WORDS)] for index in range(n_words))


@pytest.fixture
def estimates(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[ModelSizes, Work]]]:
    """Every (sizes, work) the runs of the test were checked with."""
    seen: list[tuple[ModelSizes, Work]] = []
    real = model_limits.check_model_run

    def spy(sizes: ModelSizes, work: Work | None = None) -> None:
        seen.append((sizes, work or model_limits.planned_work()))
        real(sizes, work)

    monkeypatch.setattr(model_run, "check_model_run", spy)
    yield seen


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """A counter of calls of ``module.name``, one a layer pass (each runs one feed-forward
    block), the function still doing its work."""
    calls: list[int] = []
    real: Callable[..., Any] = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


# -- time: layer passes and multiply-adds -------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "module", "function", "layer"),
    [
        pytest.param("minilm", "bert", "gelu", None, marks=pytest.mark.slow),  # 6 + 12·21
        ("minilm", "bert", "gelu", 4),
        pytest.param("smollm2", "llama", "swiglu_columns", 30, marks=pytest.mark.slow),  # 30 + 9
    ],
)
def test_the_layer_passes_estimated_are_the_layer_passes_run(
    monkeypatch: pytest.MonkeyPatch,
    estimates: list[tuple[ModelSizes, Work]],
    model: str,
    module: str,
    function: str,
    layer: int | None,
) -> None:
    import importlib

    calls = counted(
        monkeypatch, importlib.import_module(f"attnviz.model.families.{module}"), function
    )
    result = attnviz.ablate(IT, model=model, layer=layer)
    ((sizes, work),) = estimates
    assert work.ablated and work.layer == layer
    assert len(calls) == model_limits.layer_passes(sizes, work)
    assert len(result.effects) == sizes.n_heads * (1 if layer else sizes.n_layers)


@pytest.mark.slow
def test_a_forward_pass_is_one_pass_a_layer(
    monkeypatch: pytest.MonkeyPatch, estimates: list[tuple[ModelSizes, Work]]
) -> None:
    from attnviz.model.families import bert

    calls = counted(monkeypatch, bert, "gelu")
    attnviz.explain(IT, model="minilm")
    ((sizes, work),) = estimates
    assert len(calls) == model_limits.layer_passes(sizes, work) == 6


@pytest.mark.slow
def test_compare_checks_each_run_as_two_held_at_once(
    estimates: list[tuple[ModelSizes, Work]],
) -> None:
    attnviz.compare(IT, IT.replace("tired", "wide"), model="minilm")
    assert [work.runs for _, work in estimates] == [2, 2]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["minilm", "smollm2"])
def test_a_layers_multiply_adds_are_its_weight_matrices_products(
    estimates: list[tuple[ModelSizes, Work]], model: str
) -> None:
    loaded = model_run.load_model(IT, model)
    ((sizes, _),) = estimates
    layer = loaded.weights.layers[0]
    matrices = [
        value
        for field in dataclasses.fields(layer)
        for value in _arrays(getattr(layer, field.name))
        if value.ndim >= 2
    ]
    n, h = len(loaded.encoding.ids), sizes.n_heads
    # Each weight matrix multiplies every token once; scores and weights·V, h·n²·d_k each.
    products = n * sum(matrix.size for matrix in matrices) + 2 * h * n * n * sizes.d_k
    assert model_limits.layer_multiply_adds(sizes) == products
    assert sizes.n_tokens == n


def _arrays(value: object) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if dataclasses.is_dataclass(value):  # its matrices, not its biases (b_Q [h, d_k] …)
        fields = [f.name for f in dataclasses.fields(value) if not f.name.startswith("b_")]
        return [a for name in fields for a in _arrays(getattr(value, name))]
    if isinstance(value, tuple):
        return [a for item in value for a in _arrays(item)]
    return []


# -- memory -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "dtype", "n_words"),
    [
        # Each family and precision once in CI, and the short and the long sentence; the
        # sizes between them, and SmolLM2's long sentence, in the full run.
        ("minilm", "float32", 10),
        pytest.param("minilm", "float32", 100, marks=pytest.mark.full),
        ("minilm", "float32", 300),
        ("minilm", "float64", 200),
        ("smollm2", "float32", 10),
        pytest.param("smollm2", "float32", 200, marks=pytest.mark.full),
    ],
)
def test_the_memory_estimated_bounds_the_peak_within_three_times(
    estimates: list[tuple[ModelSizes, Work]], model: str, dtype: str, n_words: int
) -> None:
    gc.collect()
    tracemalloc.start()
    try:
        run = model_run.trace_model(text_of(n_words), model, dtype=dtype)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    ((sizes, work),) = estimates
    estimate = model_limits.run_bytes(sizes, work)
    assert peak <= estimate <= 3 * peak, (peak, estimate)
    assert len(run.trace.layers) == sizes.n_layers


# -- the refusals -------------------------------------------------------------------------------


def test_the_seeds_ablation_of_smollm2_is_within_the_bound() -> None:
    sizes = ModelSizes("SmolLM2", 30, 9, 3, 576, 1536, 14, ffn_matrices=3)
    work = Work("heads --ablate", ablated=True)
    assert (
        model_limits.run_seconds(sizes, model_limits.layer_passes(sizes, work))
        < model_limits.MAX_RUN_SECONDS
    )
    model_limits.check_model_run(sizes, work)  # runs: about 40 s estimated


@pytest.mark.slow
def test_a_long_ablation_is_refused_with_the_estimate_and_layer_n() -> None:
    long = " ".join([IT] * 20)  # about 240 tokens
    result = runner.invoke(app, ["heads", "-m", "smollm2", long, "--ablate"])
    assert result.exit_code == ExitStatus.BAD_INPUT
    line = one_error_line(
        result.stderr, "heads --ablate of SmolLM2", "layer passes", "min", "60 s", "--layer N"
    )
    assert "shorten the text (about" in line


@pytest.mark.slow
def test_the_way_round_runs() -> None:
    long = " ".join([IT] * 4)
    refused = runner.invoke(app, ["heads", "-m", "smollm2", long, "--ablate"])
    assert refused.exit_code == ExitStatus.BAD_INPUT and "--layer N" in refused.stderr
    with command_line():  # the same, estimated, with --layer 30: well within
        sizes = ModelSizes("SmolLM2", 30, 9, 3, 576, 1536, 60, ffn_matrices=3)
        model_limits.check_model_run(sizes, Work("heads --ablate", ablated=True, layer=30))


@pytest.mark.slow
def test_a_layer_that_does_not_exist_is_refused_before_the_run() -> None:
    result = runner.invoke(app, ["heads", "-m", "minilm", IT, "--ablate", "--layer", "7"])
    assert result.exit_code == ExitStatus.BAD_INPUT
    one_error_line(result.stderr, "--layer 7 does not exist", "layers 1 to 6")
    with pytest.raises(attnviz.AttnvizError, match="layer=0 does not exist"):
        attnviz.ablate(IT, model="minilm", layer=0)


def test_layer_without_ablate_is_refused() -> None:
    result = runner.invoke(app, ["heads", "-m", "minilm", IT, "--layer", "2"])
    assert result.exit_code == ExitStatus.BAD_INPUT
    one_error_line(result.stderr, "--layer", "add --ablate")


def test_two_long_runs_held_at_once_are_refused_by_memory() -> None:
    sizes = ModelSizes("SmolLM2", 30, 9, 3, 576, 1536, 500, ffn_matrices=3, ffn_kept=False)
    model_limits.check_model_run(sizes)  # one run: about 1.4 GB
    with command_line(), pytest.raises(attnviz.AttnvizError) as refused:
        model_limits.check_model_run(sizes, Work("compare", runs=2))
    message = str(refused.value)
    assert "2 runs held at once" in message and "holds at most 2.0 GB" in message
    assert "shorten the text (about" in message and "\n" not in message


def test_float64_is_offered_the_way_of_float32() -> None:
    sizes = ModelSizes("M", 30, 9, 3, 576, 1536, 480, ffn_matrices=3, number_bytes=8)
    with command_line(), pytest.raises(attnviz.AttnvizError, match="use --dtype float32"):
        model_limits.check_model_run(sizes)


# -- exports and pictures -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("n_words", [5, 60, 200])
def test_an_npz_export_writes_no_more_than_estimated(tmp_path: Any, n_words: int) -> None:
    shown = attnviz.explain(text_of(n_words), model="minilm")
    numbers = sum(a.size for t in shown.layers for a in t.arrays().values())
    extra = 24 * sum(len(token) + 4 for token in shown.trace.tokens) + 20_000 * 6
    estimate = limits.npz_export_bytes(numbers, extra)
    written = attnviz.export_layers(shown.layers, tmp_path / "run.npz") or tmp_path / "run.npz"
    size = written.stat().st_size
    assert size <= estimate <= 3 * size, (size, estimate)


@pytest.mark.slow
def test_an_npz_export_past_the_limit_is_refused_before_stacking(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    shown = attnviz.explain(text_of(30), model="minilm")
    monkeypatch.setattr(limits, "MAX_EXPORT_BYTES", 1_000_000)
    monkeypatch.setattr(np, "stack", _never)
    with pytest.raises(attnviz.AttnvizError, match="would write about .* attnviz writes at most"):
        attnviz.export_layers(shown.layers, tmp_path / "run.npz")
    assert list(tmp_path.iterdir()) == []


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("stacked before the check")


def test_a_large_all_layers_picture_is_refused_with_layer_n() -> None:
    with command_line(), pytest.raises(attnviz.AttnvizError) as refused:
        limits.check_grid_memory(30, 9, 128)  # SmolLM2 at 128 tokens: 2.2 GB measured
    message = str(refused.value)
    assert "--layer N" in message and "shorten the text (about" in message
    limits.check_grid_memory(30, 9, 14)  # the seeds' sentence
    limits.check_grid_memory(24, 16, 40)  # BERT-large's 384 panels on a short sentence


@pytest.mark.slow
def test_a_models_export_too_large_is_refused_before_its_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setattr(model_run.LoadedModel, "forward", _never)  # the run must not start
    long = text_of(480)  # MiniLM: about 494 MB as .npz; as JSON 1.6 GB
    result = runner.invoke(
        app, ["explain", "-m", "minilm", long, "--export", str(tmp_path / "x.json")]
    )
    assert result.exit_code == ExitStatus.CANNOT_WRITE
    one_error_line(result.stderr, "as JSON", "export as .npz instead")
    monkeypatch.setattr(limits, "MAX_EXPORT_BYTES", 100_000_000)
    result = runner.invoke(
        app, ["explain", "-m", "minilm", long, "--export", str(tmp_path / "x.npz")]
    )
    assert result.exit_code == ExitStatus.CANNOT_WRITE
    one_error_line(result.stderr, "--export x.npz", "attnviz writes at most 100.0 MB")
    assert list(tmp_path.iterdir()) == []
