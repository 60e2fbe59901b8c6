"""A trace file edited by hand is refused at load, one line naming the layer, row or pair, not
loaded to crash the lesson or the page on NaN later: every row of its mask lets the query attend
to something, its weights are finite, 0 or more, 0 where the mask forbids, and sum to 1 per row.
Each variant below is a real export with one thing changed, in .npz and .json alike."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnviz
from attnviz.errors import AttnvizError, FileProblem

from support import step

Edit = Callable[[dict[str, Any]], None]


def _set(key: str, change: Callable[[np.ndarray], None]) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        array = np.array(data[key])
        change(array)
        data[key] = array

    return edit


def _empty_mask_row(mask: np.ndarray) -> None:
    mask[2, :] = False


def _first_key_only(mask: np.ndarray) -> None:
    mask[3, 1:] = False  # a valid mask, but the weights still spread over the other keys


def _row_off(weights: np.ndarray) -> None:
    weights[1, 2, 0] += 0.25


def _negative(weights: np.ndarray) -> None:
    weights[0, 3] = [-0.5, 1.5, 0.0, 0.0]  # the row still sums to 1


def _masked_weight(weights: np.ndarray) -> None:
    weights[0, 0, 0] -= 0.5
    weights[0, 0, 2] += 0.5  # row 1 may look at key 1 only (causal): sums to 1, leaks to 3


def _zero_row(weights: np.ndarray) -> None:
    weights[1, 1] = 0.0


def _nan(weights: np.ndarray) -> None:
    weights[0, 0, 0] = np.nan


def _inf(scores: np.ndarray) -> None:
    scores[0, 0, 0] = np.inf


def _float_mask(data: dict[str, Any]) -> None:
    data["mask"] = np.asarray(data["mask"], dtype=np.float64) * 0.5


VARIANTS: list[tuple[str, Edit, str]] = [
    ("mask row of nothing", _set("mask", _empty_mask_row), r"mask's row 3 \('good'\) lets it "),
    ("mask allows less", _set("mask", _first_key_only), r"row 4 \('today'\), column 2"),
    ("row sums to 1.25", _set("weights", _row_off), r"head 2's weights row 3 .* sums to 1\.25"),
    ("negative weight", _set("weights", _negative), r"is -0\.5; a softmax weight is 0 or more"),
    ("weight where masked", _set("weights", _masked_weight), r"column 3 \('good'\) is 0\.5 but"),
    ("row of zeros", _set("weights", _zero_row), r"row 2 \('am'\) sums to 0, not 1"),
    ("NaN weight", _set("weights", _nan), "NaN|infinit|not finite"),
    ("inf score", _set("scores", _inf), "NaN|infinit|not finite"),
    ("mask of numbers", _float_mask, "mask is not an array of true/false"),
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("traces")
    trace = attnviz.explain("I am good today", causal=True).trace
    attnviz.export_trace(trace, folder / "good.npz")
    return folder


def _write(data: dict[str, Any], path: Path) -> None:
    if path.suffix == ".npz":
        np.savez(path, **data)
    else:
        document = {
            key: value.tolist() if isinstance(value, np.ndarray) and key != "config" else value
            for key, value in data.items()
        }
        document["config"] = json.loads(str(data["config"]))
        path.write_text(json.dumps(document), encoding="utf-8")


@pytest.mark.parametrize("extension", [".npz", ".json"])
@pytest.mark.parametrize(("label", "edit", "says"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_an_edited_export_is_refused_at_load(
    exported: Path, extension: str, label: str, edit: Edit, says: str
) -> None:
    data = dict(np.load(exported / "good.npz"))
    edit(data)
    path = exported / f"edited{extension}"
    _write(data, path)
    with pytest.raises(FileProblem) as refused:
        attnviz.load_trace(path)
    message = str(refused.value)
    assert "\n" not in message and len(message) < 400, message
    assert str(path) in message
    assert re.search(says, message), message


@pytest.mark.parametrize("extension", [".npz", ".json"])
def test_the_unedited_export_loads_and_teaches(exported: Path, extension: str) -> None:
    data = dict(np.load(exported / "good.npz"))
    path = exported / f"same{extension}"
    _write(data, path)
    (trace,) = attnviz.load_trace(path)
    assert np.array_equal(trace.weights, data["weights"])
    assert f"Step {step('weights')} ·" in attnviz.lesson(trace)
    assert "<html" in attnviz.page(trace).html


def test_a_layer_of_a_stacked_export_is_named(tmp_path: Path) -> None:
    shown = attnviz.explain("I am good today", causal=True)
    traces = [shown.trace, shown.trace]
    path = tmp_path / "layers.npz"
    attnviz.export_layers(traces, path)
    data = dict(np.load(path))
    data["weights"] = np.array(data["weights"])
    data["weights"][1, 0, 1, 1] = 0.0
    np.savez(path, **data)
    with pytest.raises(FileProblem, match=r"layer 2: head 1's weights row 2 \('am'\) sums to"):
        attnviz.load_trace(path)


def test_export_layers_refuses_traces_of_different_sentences(tmp_path: Path) -> None:
    a, b = attnviz.explain("I am good").trace, attnviz.explain("you are bad").trace
    masked = attnviz.explain("I am good", causal=True).trace
    wider = attnviz.explain("I am good", heads=4, d_model=16).trace
    for traces, says in (
        ([a, b], r"traces\[1\] is of other tokens \('you are bad'\)"),
        ([a, attnviz.explain("I am good today").trace], "of other tokens"),
        ([a, masked], r"traces\[1\] has another mask"),
        ([a, wider], r"traces\[1\]'s X has shape \[3, 16\]"),
    ):
        with pytest.raises(AttnvizError, match=says):
            attnviz.export_layers(traces, tmp_path / "x.npz")
    assert list(tmp_path.iterdir()) == []
