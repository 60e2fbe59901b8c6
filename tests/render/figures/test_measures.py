"""heatmap --measure: the drawn numbers against a recomputation from --export (numpy only), the
words that name them, the default left as it was, and the refusals that leave no file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

import attnviz
from attnviz.cli import run
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.lesson.caveats import short_attention_caveat
from attnviz.render.figures import heatmap as heatmap_module
from attnviz.render.figures.measures import CONTRIBUTION_CAPTION, ROLLOUT_CAPTION
from render.pictures import IT_SENTENCE, words_of

from support import has_model_extra, listing, one_error_line


def saved_figures(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """The figures heatmap saves from here on, in order, still written to their files."""
    figures: list[Figure] = []
    save = heatmap_module.save_figure

    def keep(figure: Figure, path: Path) -> None:
        figures.append(figure)
        save(figure, path)

    monkeypatch.setattr(heatmap_module, "save_figure", keep)
    return figures


def panel_values(figure: Figure) -> list[np.ndarray]:
    """The matrix each titled panel draws (head panels and the focus panel)."""
    return [
        np.asarray(axes.get_images()[0].get_array())
        for axes in figure.axes
        if axes.get_title() and axes.get_images()
    ]


def one_line(text: str) -> str:
    return " ".join(text.split())


def shares_from_export(export: dict[str, Any], layer: int | None = None) -> np.ndarray:
    """‖w_ij·v_j·W_O^h‖ / Σ_k ‖w_ik·v_k·W_O^h‖ for every head: [h, n, n], from the arrays alone."""
    pick = (lambda key: export[key]) if layer is None else (lambda key: export[key][layer])
    weights, values, w_o = pick("weights"), pick("V"), pick("W_O")
    n_heads, _, d_k = values.shape
    result = []
    for head in range(n_heads):
        rows = w_o[head * d_k : (head + 1) * d_k]  # W_O^h
        lengths = np.linalg.norm(values[head] @ rows, axis=1)  # ‖f_h(x_j)‖
        norms = weights[head] * lengths[np.newaxis, :]
        result.append(norms / norms.sum(axis=1, keepdims=True))
    return np.stack(result)


def rollout_from_export(weights: np.ndarray) -> np.ndarray:
    """R_L from [L, h, n, n] weights: Â = ½·mean_h A + ½·I, rows renormalised, multiplied."""
    rolled = np.eye(weights.shape[-1])
    for layer in weights:
        mixed = 0.5 * layer.mean(axis=0) + 0.5 * np.eye(layer.shape[-1])
        rolled = (mixed / mixed.sum(axis=1, keepdims=True)) @ rolled
    return rolled


@pytest.mark.slow
def test_contribution_picture_draws_the_shares_the_export_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = saved_figures(monkeypatch)
    image, export = tmp_path / "c.png", tmp_path / "c.npz"
    arguments = ["heatmap", IT_SENTENCE, "-o", str(image), "--export", str(export)]
    assert run([*arguments, "--measure", "contribution"]) == 0
    assert image.stat().st_size > 0
    with np.load(export) as data:
        expected = shares_from_export(dict(data))
        weights = np.array(data["weights"])
    [figure] = figures
    drawn = panel_values(figure)
    np.testing.assert_allclose(np.stack(drawn[:2]), expected, atol=1e-6)
    it = IT_SENTENCE.split().index("it")
    np.testing.assert_allclose(drawn[2], expected[:, it], atol=1e-6)  # where "it" looks
    assert not np.allclose(expected, weights, atol=0.01)  # a different picture from weights
    title = words_of(figure)
    assert "contribution shares" in title and one_line(CONTRIBUTION_CAPTION) in title
    assert "‖w_ij·f_h(x_j)‖ / Σ_k ‖w_ik·f_h(x_k)‖" in title
    assert "attention weights" not in title and "Each row sums to 1" in title
    assert figure.axes[-1].get_ylabel().startswith("contribution share")  # the colour bar
    assert short_attention_caveat() not in title  # random weights: no model to caution about


@pytest.mark.slow
def test_rollout_of_one_random_layer_is_its_residual_mix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = saved_figures(monkeypatch)
    image, export = tmp_path / "r.png", tmp_path / "r.npz"
    arguments = ["heatmap", IT_SENTENCE, "-o", str(image), "--export", str(export)]
    assert run([*arguments, "--measure", "rollout"]) == 0
    with np.load(export) as data:
        expected = rollout_from_export(np.array(data["weights"])[np.newaxis])
    [figure] = figures
    [panel] = panel_values(figure)  # one panel: a picture of its own, the focus row as bars
    np.testing.assert_allclose(panel, expected, atol=1e-6)
    it = IT_SENTENCE.split().index("it")
    bars = next(axes for axes in figure.axes if axes.get_title().startswith("How much"))
    lengths = [bar.get_width() for bar in bars.patches]
    np.testing.assert_allclose(lengths, expected[it], atol=1e-6)
    np.testing.assert_allclose(panel.sum(axis=1), 1.0, atol=1e-6)
    assert [axes.get_title() for axes in figure.axes[:1]] == ["Rollout R_1"]
    title = words_of(figure)
    assert "attention rollout R_1" in title and one_line(ROLLOUT_CAPTION) in title
    assert figure.axes[-1].get_ylabel().startswith("rollout")


@pytest.mark.slow
def test_model_rollout_multiplies_every_layer_up_to_the_one_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not has_model_extra():
        pytest.skip("needs the optional extra attnviz[model]")
    figures = saved_figures(monkeypatch)
    image, export = tmp_path / "m.png", tmp_path / "m.npz"
    arguments = ["heatmap", "-m", "minilm", IT_SENTENCE, "-o", str(image), "--export", str(export)]
    assert run([*arguments, "--layer", "4", "--measure", "rollout"]) == 0
    with np.load(export) as data:
        weights = np.array(data["weights"])  # [6, h, n, n]: every layer of the run
    [figure] = figures
    [panel] = panel_values(figure)
    np.testing.assert_allclose(panel, rollout_from_export(weights[:4]), atol=1e-5)
    assert not np.allclose(panel, rollout_from_export(weights), atol=1e-3)  # not layer 6's
    title = words_of(figure)
    assert "attention rollout R_4" in title and "R_4 = Â_4·…·Â_1" in title
    assert "every head of 4 layers" in title
    assert short_attention_caveat() in title  # a pretrained model's picture is cautioned


@pytest.mark.slow
def test_trained_toy_model_contribution_against_its_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = saved_figures(monkeypatch)
    image, export = tmp_path / "t.png", tmp_path / "t.npz"
    sentence = "the animal didn't cross the street because it was too tired"
    arguments = ["heatmap", "-m", "coref", sentence, "-o", str(image), "--export", str(export)]
    assert run([*arguments, "--measure", "contribution"]) == 0
    with np.load(export) as data:
        expected = shares_from_export(dict(data), layer=-1)
    [figure] = figures
    np.testing.assert_allclose(panel_values(figure)[0], expected[0], atol=1e-5)
    assert short_attention_caveat() in words_of(figure)


@pytest.mark.slow
def test_the_default_is_the_weights_as_before(tmp_path: Path) -> None:
    default, weights = tmp_path / "default.png", tmp_path / "weights.png"
    assert run(["heatmap", IT_SENTENCE, "-o", str(default)]) == 0
    assert run(["heatmap", IT_SENTENCE, "-o", str(weights), "--measure", "weights"]) == 0
    assert default.read_bytes() == weights.read_bytes()
    shown = attnviz.explain(IT_SENTENCE)
    figure = attnviz.heatmap(shown)
    np.testing.assert_array_equal(panel_values(figure)[0], shown.trace.weights[0])
    title = words_of(figure)
    assert "attention weights softmax(Q·Kᵀ/√d_k)" in title and "caution" not in title
    assert figure.axes[-1].get_ylabel() == "attention weight\n(colours 0–1)"


@pytest.mark.parametrize(
    ("options", "fragments"),
    [
        (["--measure", "rollout", "--head", "1"], ("--measure rollout", "drop --head")),
        (["--measure", "rollout", "--per-head", "heads"], ("drop --per-head",)),
        (["--measure", "contribution", "--style", "lines"], ("--style lines", "weights only")),
        (["--measure", "sum"], ("--measure",)),
    ],
)
def test_contradictions_are_one_line_and_leave_no_file(
    options: list[str],
    fragments: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = run(["heatmap", IT_SENTENCE, "-o", str(tmp_path / "out.png"), *options])
    assert status != 0
    stderr = capsys.readouterr().err
    if options[1] != "sum":  # Typer's own usage message for an unknown choice
        one_error_line(stderr, *fragments)
    assert listing(tmp_path) == {}


def test_all_layers_refuse_rollout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arguments = ["heatmap", IT_SENTENCE, "-o", str(tmp_path / "out.png"), "--all-layers"]
    assert run([*arguments, "--measure", "rollout"]) == ExitStatus.BAD_INPUT
    one_error_line(capsys.readouterr().err, "--all-layers", "--measure rollout")
    assert listing(tmp_path) == {}


@pytest.mark.slow
def test_every_layers_contribution_shares_against_the_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnviz.render.figures import grid

    figures: list[Figure] = []
    save = grid.save_figure
    monkeypatch.setattr(grid, "save_figure", lambda f, p: (figures.append(f), save(f, p)))
    image, export = tmp_path / "g.png", tmp_path / "g.npz"
    sentence = "the animal didn't cross the street because it was too tired"
    arguments = ["heatmap", "-m", "coref", sentence, "-o", str(image), "--export", str(export)]
    assert run([*arguments, "--all-layers", "--measure", "contribution"]) == 0
    with np.load(export) as data:
        arrays = dict(data)
    expected = np.stack([shares_from_export(arrays, layer) for layer in range(2)])  # [L, h, n, n]
    [figure] = figures
    layout = grid.plan_layers_layout(sentence.split(), 2, 1, typed=True)
    tiles = grid.tiled(expected, layout.split, layout.band)
    drawn = np.ma.filled(figure.axes[0].get_images()[0].get_array(), np.nan)
    np.testing.assert_allclose(drawn, tiles, atol=1e-6)
    it = sentence.split().index("it")
    focus = figure.axes[-1].get_images()[0].get_array()  # [L, h]: the largest share of "it"
    np.testing.assert_allclose(focus, expected[:, :, it].max(axis=-1), atol=1e-6)
    title = words_of(figure)
    assert "contribution shares" in title and "2 layers × 1 head" in title
    assert one_line(CONTRIBUTION_CAPTION) in title
    assert "largest contribution share" in one_line(figure.axes[-1].get_xlabel())


@pytest.mark.slow
def test_rollout_of_one_layer_read_back_is_refused_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not has_model_extra():
        pytest.skip("needs the optional extra attnviz[model]")
    export = tmp_path / "layers.npz"
    assert run(["explain", "-m", "minilm", IT_SENTENCE, "--export", str(export)]) == 0
    before = listing(tmp_path)
    capsys.readouterr()
    image = tmp_path / "out.png"
    arguments = ["heatmap", IT_SENTENCE, "--weights", str(export), "--embeddings", str(export)]
    status = run([*arguments, "--layer", "6", "-o", str(image), "--measure", "rollout"])
    assert status == ExitStatus.BAD_INPUT
    one_error_line(capsys.readouterr().err, "every layer from 1 to 6", "--model NAME --layer 6")
    assert listing(tmp_path) == before


def test_the_api_refuses_in_its_own_words() -> None:
    crossed = attnviz.cross("I am good", "Je vais bien")
    with pytest.raises(AttnvizError, match='measure="rollout" follows self-attention'):
        attnviz.heatmap(crossed, measure="rollout")
    with pytest.raises(AttnvizError, match="measure='sum' is not a choice"):
        attnviz.heatmap(crossed, measure="sum")
    with pytest.raises(AttnvizError, match='measure="rollout" draws one matrix.*drop head'):
        attnviz.heatmap(attnviz.explain("I am good"), head=1, measure="rollout")


@pytest.mark.slow
def test_the_api_draws_contributions_of_a_cross_attention_trace() -> None:
    crossed = attnviz.cross("I am good", "Je vais bien")
    figure = attnviz.heatmap(crossed, measure="contribution")
    trace = crossed.trace
    norms = np.linalg.norm(
        np.einsum("hjk,hkd->hjd", trace.V, trace.W_O.reshape(trace.n_heads, trace.d_k, -1)), axis=2
    )
    contributions = trace.weights * norms[:, np.newaxis, :]
    expected = contributions / contributions.sum(axis=2, keepdims=True)
    np.testing.assert_allclose(np.stack(panel_values(figure)[:2]), expected, atol=1e-6)
    assert "contribution shares" in words_of(figure)


@pytest.mark.slow  # three figures drawn
def test_the_focus_panel_is_titled_by_what_it_shows() -> None:
    shown = attnviz.explain(IT_SENTENCE, model="coref", focus="it")
    titles = {}
    for measure in ("weights", "contribution", "rollout"):
        figure = attnviz.heatmap(shown, measure=measure)
        titles[measure] = [axes.get_title() for axes in figure.axes]
    assert 'Where "it" looks' in titles["weights"]
    assert 'What each word adds to "it" (shares)' in titles["contribution"]
    assert 'How much of each word reaches "it" (rollout)' in titles["rollout"]
