"""The heads' heatmap: what the figure holds, its title, cross-attention, masks and the file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.image
import numpy as np
import pytest

import attnviz
from attnviz.cli import run
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.render.figures.captions import caption_of
from attnviz.render.figures.cells import cell_texts
from attnviz.render.figures.grid import build_layers_figure
from attnviz.render.figures.heatmap import MAX_HEAD_PANELS, build_figure, save_heatmap
from attnviz.render.figures.heatmap_text import CROSS_SIDES, heatmap_text, sentences_line
from attnviz.render.figures.saving import DPI
from attnviz.render.figures.titles import shown_row_sums
from attnviz.render.figures.words import CONTINUED_PHRASE, word_label_texts
from attnviz.selection import Selection, ViewOptions, select
from attnviz.tokens import find_focus
from attnviz.trace import AttentionTrace
from render.analysed import for_grid
from render.pictures import (
    IT_SENTENCE,
    SIXTY,
    WORDS,
    all_heads,
    assert_readable,
    distinct_colours,
    it_focus,
    labels_of,
    summary_panel,
    tick_texts,
    trace_of,
    words_of,
)

from support import shown

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sentence", "d_model", "n_heads", "focus"),
    [
        ("I am", 8, 2, False),
        ("I am good", 8, 2, False),
        (IT_SENTENCE, 8, 2, True),
        (IT_SENTENCE, 16, 8, True),
        (SIXTY, 8, 2, True),
        (SIXTY, 16, 8, True),
    ],
)
def test_labels_never_overlap_nor_leave_the_picture(
    sentence: str, d_model: int, n_heads: int, focus: bool
) -> None:
    trace = trace_of(sentence, d_model, n_heads)
    figure = build_figure(trace, shown(trace, all_heads(trace), it_focus(trace) if focus else None))
    assert_readable(figure)


@pytest.mark.slow
def test_figure_has_a_titled_panel_per_head_and_one_shared_colour_bar() -> None:
    trace = trace_of(IT_SENTENCE, 16, 8)
    figure = build_figure(trace, shown(trace, (0, 2, 7), None))
    panels, colour_bars = figure.axes[:-1], figure.axes[-1:]
    assert [axes.get_title() for axes in panels] == ["Head 1", "Head 3", "Head 8"]
    assert len(colour_bars) == 1
    assert colour_bars[0].get_ylabel() == "attention weight\n(colours 0–1)"
    assert colour_bars[0].get_ylim() == (0.0, 1.0)
    for axes, head in zip(panels, (0, 2, 7), strict=True):
        image = axes.get_images()[0]
        assert image.get_clim() == (0.0, 1.0)
        np.testing.assert_array_equal(image.get_array(), trace.weights[head])
        assert [t.get_text() for t in labels_of(axes, x=False)] == [
            "The:1", "animal", "didn't", "cross", "the:2", "street", "because", "it", "was",
            "too", "tired",
        ]  # fmt: skip  # repeated words numbered, as the terminal's tables name them


@pytest.mark.slow
def test_focus_panel_adds_an_axes_with_the_focus_row_of_every_head() -> None:
    trace = trace_of(IT_SENTENCE)
    focus = it_focus(trace)
    without = build_figure(trace, shown(trace, (0, 1), None))
    with_focus = build_figure(trace, shown(trace, (0, 1), focus))
    assert len(with_focus.axes) == len(without.axes) + 1
    panel = next(axes for axes in with_focus.axes if axes.get_title() == 'Where "it" looks')
    np.testing.assert_array_equal(panel.get_images()[0].get_array(), trace.weights[:, focus.index])
    assert [t.get_text() for t in panel.get_yticklabels()] == ["head 1", "head 2"]


@pytest.mark.slow
def test_weights_are_printed_in_cells_whenever_they_fit() -> None:
    short = trace_of("I am good")
    figure = build_figure(short, shown(short, (0, 1), None))
    assert cell_texts(figure.axes[0]) == [f"{w:.2f}" for w in short.weights[0].ravel()]
    labels = {*word_label_texts(figure.axes[0], x=True), *word_label_texts(figure.axes[0], x=False)}
    assert set(figure.axes[0].texts) == labels  # the words; the numbers are one collection
    eleven = trace_of(IT_SENTENCE, 64, 8)  # 8 heads: smaller cells, still room for "0.45"
    figure = build_figure(eleven, shown(eleven, all_heads(eleven), it_focus(eleven)))
    for axes, head in zip(figure.axes, range(8), strict=False):
        assert cell_texts(axes) == [f"{w:.2f}" for w in eleven.weights[head].ravel()]
    focus_panel = summary_panel(figure)
    assert cell_texts(focus_panel) == [f"{w:.2f}" for w in eleven.weights[:, 7].ravel()]
    sixty = trace_of(SIXTY)  # cells of a 60-word panel are too small for any number
    assert cell_texts(build_figure(sixty, shown(sixty, (0,), None)).axes[0]) == []


def test_title_names_the_sentence_and_random_weights() -> None:
    trace = trace_of("Hello , world !")
    figure = build_figure(trace, shown(trace, (0,), None))
    assert figure.get_suptitle().startswith("“Hello, world!”")
    words = words_of(figure)
    assert "random weights" in words.casefold() and "d_model 8, 2 heads, d_k 4" in words


@pytest.mark.slow
def test_title_says_what_the_hatching_means_only_when_there_is_a_mask() -> None:
    trace = trace_of("The cat sat on it")
    assert "masked" not in words_of(build_figure(trace, shown(trace, (0,), None)))
    causal = replace(trace, mask=np.tril(np.ones((5, 5), dtype=bool)))
    assert "hatched: masked, weight 0" in words_of(build_figure(causal, shown(causal, (0,), None)))


@pytest.mark.slow
def test_title_of_given_weights_does_not_say_random() -> None:
    base = trace_of("I am good")
    weights = attnviz.AttentionWeights(W_Q=base.W_Q, W_K=base.W_K, W_V=base.W_V, W_O=base.W_O)
    trace = attnviz.trace_attention("I am good", weights=weights)
    assert "random" not in words_of(build_figure(trace, shown(trace, (0,), None)))


def with_special_tokens() -> AttentionTrace:
    """ "[CLS] zoo ##keeper slept [SEP]" as a model's tokenizer marks it: [CLS] and [SEP]
    special, "zoo ##keeper" one word of two pieces."""
    trace = attnviz.trace_attention(["[CLS]", "zoo", "##keeper", "slept", "[SEP]"])
    provenance = trace.provenance._replace(
        special=(0, 4),
        word_groups=((0,), (1, 2), (3,), (4,)),
        words=("[CLS]", "zookeeper", "slept", "[SEP]"),
    )
    return replace(trace, provenance=provenance)


@pytest.mark.slow
@pytest.mark.parametrize(("hide_special", "words"), [(False, False), (False, True)])
def test_title_says_rows_sum_to_1_when_the_drawn_rows_do(hide_special: bool, words: bool) -> None:
    # Merged words: a row is the mean of its pieces' rows, a column the sum of its pieces'
    # columns, so every drawn row still sums to 1.
    trace = with_special_tokens()
    selection = select(trace, ViewOptions(hide_special=hide_special, words=words))
    np.testing.assert_allclose(shown_row_sums(trace.weights, selection), 1.0, atol=1e-12)
    words = words_of(build_figure(trace, selection)).casefold()
    assert "each row sums to 1" in words and "less than 1" not in words


@pytest.mark.slow
@pytest.mark.parametrize("words", [False, True])
def test_title_says_rows_sum_to_less_than_1_when_special_tokens_are_hidden(words: bool) -> None:
    trace = with_special_tokens()
    selection = select(trace, ViewOptions(hide_special=True, words=words, focus="slept"))
    sums = shown_row_sums(trace.weights, selection)
    assert sums.shape == (2, 3 if not words else 2) and (sums < 1).all()
    figure = build_figure(trace, selection)
    words = words_of(figure)
    assert "each row sums to 1" not in words.casefold()
    phrase = "[CLS]/[SEP] hidden: rows sum to less than 1"
    assert phrase in words
    assert_readable(figure)  # the longer phrase still fits the picture
    layers = [trace, replace(trace, weights=trace.weights[::-1].copy())]
    grid_words = words_of(build_layers_figure(for_grid(layers), selection))
    assert "each row sums to 1" not in grid_words.casefold()
    assert phrase in grid_words


@pytest.mark.slow
def test_long_sentence_title_is_cut_to_the_picture_width() -> None:
    trace = trace_of(" ".join(WORDS * 3))
    figure = build_figure(trace, shown(trace, (0,), None))
    first_line = figure.get_suptitle().splitlines()[0]
    assert first_line.endswith("…") and len(first_line) < len(" ".join(WORDS * 3))
    assert_readable(figure)


@pytest.mark.slow
def test_dollar_signs_are_words_not_math() -> None:
    trace = trace_of("a $^^$ b")  # as mathtext, "$ ^ ^ $" is an error: double superscript
    figure = build_figure(trace, shown(trace, (0,), None))
    assert_readable(figure)
    assert figure.get_suptitle().startswith("“a $ ^ ^ $ b”")
    labels = [t.get_text() for t in labels_of(figure.axes[0], x=True)]
    assert labels == ["a", "$:1", "^:1", "^:2", "$:2", "b"]


def test_no_heads_is_a_bug_not_a_picture() -> None:
    with pytest.raises(ValueError, match="heads"):
        build_figure(trace_of("I am"), shown(trace_of("I am"), (), None))


def test_a_title_claims_hatching_and_hidden_weight_only_where_the_picture_has_them() -> None:
    from attnviz.core import trace_layers
    from attnviz.options import TraceOptions

    (padded,), _ = trace_layers("I am good", TraceOptions(pad_to=5))

    def said(selection: Selection) -> str:
        text = heatmap_text(padded, selection)
        return " ".join([*text.title(8.0, 12.0), *text.caption((8.0, 12.0), 8.0, 10.0)])

    hidden = select(padded, ViewOptions(hide_special=True))
    assert "hatched" not in said(hidden)  # the masked [PAD] columns are not drawn
    assert "Each row sums to 1" in said(hidden)  # the hidden [PAD] takes no weight
    assert "hatched: masked, weight 0" in said(select(padded, ViewOptions()))
    # "·" is the product sign, not a separator
    assert "softmax(Q·Kᵀ/√d_k);" in said(select(padded, ViewOptions()))


def test_pieces_are_named_as_the_terminal_names_them_and_the_title_says_what_hashes_mean() -> None:
    trace = trace_of("token ization isn ' t go")
    pieces = replace(trace, tokens=("token", "##ization", "isn", "'", "t", "go"))
    figure = build_figure(pieces, shown(pieces, (0,), None))
    assert tick_texts(figure.axes[0], x=True) == ["token", "##ization", "isn", "'", "t", "go"]
    words = words_of(figure)
    assert CONTINUED_PHRASE in words and "·t" not in words
    assert CONTINUED_PHRASE not in words_of(build_figure(trace, shown(trace, (0,), None)))


TARGET = "Le chat noir dormait tranquillement sur le vieux canapé du salon hier".split()
SOURCE = "The black cat slept yesterday on the old sofa in the living room".split()


def cross_trace(
    target: Sequence[str], source: Sequence[str], n_heads: int = 2, seed: int = 0
) -> AttentionTrace:
    """A trace of target words (rows) attending to source words (columns), by hand: weights
    [h, n_target, n_source], each row summing to 1."""
    trace = trace_of(" ".join(target), d_model=4 * n_heads, n_heads=n_heads)
    weights = np.random.default_rng(seed).random((n_heads, len(target), len(source)))
    weights /= weights.sum(axis=-1, keepdims=True)
    return replace(trace, source_tokens=tuple(source), weights=weights)


def je_vais_bien() -> AttentionTrace:
    return cross_trace(["Je", "vais", "bien"], ["I", "am", "very", "good"])


def test_sentences_line_cuts_each_sentence_to_its_share() -> None:
    assert sentences_line(["I", "am"], ["Je", "suis"], 80) == "“I am” → “Je suis”"
    line = sentences_line(WORDS, ["Je", "suis"], 40)
    assert len(line) <= 40 and line.endswith(" → “Je suis”") and "…" in line
    line = sentences_line(WORDS, WORDS, 40)
    assert len(line) <= 40 and line.count("…") == 2
    long = "the extraordinarily sleepy animal did not cross the busy street".split()
    for part in sentences_line(long, long, 50).split(" → "):
        assert part.endswith(" …"), part  # cut at a space, never inside a word


@pytest.mark.slow
def test_cross_panels_label_rows_with_target_and_columns_with_source_words() -> None:
    trace = je_vais_bien()
    figure = build_figure(trace, shown(trace, (0, 1), find_focus(trace.tokens, "vais")))
    heads = [axes for axes in figure.axes if axes.get_title().startswith("Head")]
    assert len(heads) == 2
    for head, axes in enumerate(heads):
        np.testing.assert_array_equal(axes.get_images()[0].get_array(), trace.weights[head])
        assert tick_texts(axes, x=True) == ["I", "am", "very", "good"]
        assert tick_texts(axes, x=False) == ["Je", "vais", "bien"]
        assert axes.get_xlabel() == "source word (looked at)"
        width, height = axes.get_position().size * figure.get_size_inches()
        assert width / height == pytest.approx(4 / 3, rel=0.02)  # square cells
    assert heads[0].get_ylabel() == "target word (looking)" and heads[1].get_ylabel() == ""
    bold = [t.get_text() for t in labels_of(heads[0], x=False) if t.get_fontweight() == "bold"]
    assert bold == ["vais"]
    assert cell_texts(heads[0]) == [f"{w:.2f}" for w in trace.weights[0].ravel()]
    assert_readable(figure)


def test_cross_focus_panel_has_a_column_per_source_word() -> None:
    trace = je_vais_bien()
    focus = find_focus(trace.tokens, "vais")
    panel = summary_panel(build_figure(trace, shown(trace, (0, 1), focus)))
    assert panel.get_title() == 'Where "vais" looks'
    cells = np.asarray(panel.get_images()[0].get_array())
    assert cells.shape == (2, 4)
    np.testing.assert_array_equal(cells, trace.weights[:, focus.index])
    assert tick_texts(panel, x=True) == ["I", "am", "very", "good"]
    assert tick_texts(panel, x=False) == ["head 1", "head 2"]
    assert all(t.get_fontweight() != "bold" for t in labels_of(panel, x=True))  # no "vais"
    assert panel.get_xlabel() == "source word (looked at)"


@pytest.mark.slow
def test_cross_title_shows_source_then_target_and_the_kind_of_attention() -> None:
    figure = build_figure(je_vais_bien(), shown(je_vais_bien(), (0,), None))
    title = figure.get_suptitle()
    assert title.startswith("“I am very good” → “Je vais bien”\ncross-attention")
    words = words_of(figure)
    assert CROSS_SIDES in words.casefold()
    assert "d_model 8, 2 heads, d_k 4" in words and "random weights" in words.casefold()
    self_words = words_of(
        build_figure(trace_of("Je vais bien"), shown(trace_of("Je vais bien"), (0,), None))
    )
    assert "cross" not in self_words and "→" not in self_words


@pytest.mark.parametrize(
    ("n_target", "n_source", "n_heads", "focus"),
    [
        (3, 4, 2, True),
        (2, 7, 2, True),
        (7, 2, 2, True),
        (7, 2, 1, True),
        (2, 7, 8, False),
        (7, 2, 8, True),
        (12, 5, 2, True),
        (12, 13, 2, True),
        (60, 4, 2, True),
        (3, 60, 2, True),
    ],
)
@pytest.mark.slow
def test_cross_labels_never_overlap_nor_leave_the_picture(
    n_target: int, n_source: int, n_heads: int, focus: bool
) -> None:
    target = (WORDS * 3)[:n_target]
    source = [word.upper() for word in (WORDS * 3)[:n_source]]
    trace = cross_trace(target, source, n_heads)
    chosen = find_focus(trace.tokens, "bravo") if focus else None
    figure = build_figure(trace, shown(trace, all_heads(trace), chosen))
    assert_readable(figure)
    heads = [axes for axes in figure.axes if axes.get_title().startswith("Head")]
    for axes in heads:
        assert np.asarray(axes.get_images()[0].get_array()).shape == (n_target, n_source)
        width, height = axes.get_position().size * figure.get_size_inches()
        assert width / height == pytest.approx(n_source / n_target, rel=0.02)  # square cells
        cell = axes.get_position().width * figure.get_size_inches()[0] / n_source
        printed = len(cell_texts(axes))
        # Printed whenever ".45" fits the cell at 8 points, in every cell or none.
        assert printed == (n_target * n_source if cell >= 0.26 else 0), cell
    if focus and n_heads > 1:
        assert np.asarray(summary_panel(figure).get_images()[0].get_array()).shape == (
            n_heads,
            n_source,
        )
    elif focus:  # one head: a bar per source word, as long as its weight
        assert bar_lengths(summary_panel(figure)) == pytest.approx(trace.weights[0, chosen.index])


@pytest.mark.slow
def test_cross_png_is_valid_and_its_size_follows_the_figure(tmp_path: Path) -> None:
    for trace, word in ((je_vais_bien(), "vais"), (cross_trace(TARGET, SOURCE[:5]), "chat")):
        focus = find_focus(trace.tokens, word)
        path = tmp_path / "cross.png"
        save_heatmap(trace, shown(trace, (0, 1), focus), path)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = matplotlib.image.imread(path)
        width, height = build_figure(trace, shown(trace, (0, 1), focus)).get_size_inches()
        assert abs(pixels.shape[1] - width * DPI) <= 1
        assert abs(pixels.shape[0] - height * DPI) <= 1
        assert distinct_colours(pixels) > 100  # not blank


@pytest.mark.slow
def test_masked_cells_of_a_square_trace_are_hatched() -> None:
    trace = trace_of("The cat sat on it")
    causal = replace(trace, mask=np.tril(np.ones((5, 5), dtype=bool)))
    figure = build_figure(causal, shown(causal, (0, 1), it_focus(causal)))
    above_diagonal = {(column, row) for row in range(5) for column in range(row + 1, 5)}
    for axes in figure.axes[:2]:
        (hatched,) = [patch for patch in axes.patches if patch.get_hatch() == "///"]
        assert hatched_cells(hatched) == above_diagonal  # the 10 cells above the diagonal
        assert len(axes.patches) == 1 + 2  # and the focus row's frame
    assert not any(axes.patches for axes in build_figure(trace, shown(trace, (0,), None)).axes)
    assert_readable(figure)


def bar_lengths(axes: Axes) -> list[float]:
    """The lengths of the bars of a one-head picture's focus panel, top to bottom, not those of
    the hatched masked keys."""
    return [bar.get_width() for bar in axes.patches if not bar.get_hatch()]


def hatched_cells(patch: object) -> set[tuple[int, int]]:
    """The (column, row) cells a hatched patch covers: its path is one closed rectangle (five
    vertices) per run of masked cells along a row, each cell centred on whole numbers."""
    cells = set()
    for corners in patch.get_path().vertices.reshape(-1, 5, 2):  # type: ignore[attr-defined]
        (left, top), (right, _) = corners.min(axis=0), corners.max(axis=0)
        cells |= {(int(x), int(top + 0.5)) for x in np.arange(left + 0.5, right)}
    return cells


@pytest.mark.slow
def test_png_is_valid_and_its_size_follows_the_figure(tmp_path: Path) -> None:
    trace = trace_of(IT_SENTENCE)
    path = tmp_path / "it.png"
    save_heatmap(trace, shown(trace, (0, 1), it_focus(trace)), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(path)
    width, height = build_figure(trace, shown(trace, (0, 1), it_focus(trace))).get_size_inches()
    assert abs(pixels.shape[1] - width * DPI) <= 1 and abs(pixels.shape[0] - height * DPI) <= 1
    assert pixels.shape[1] > 1500 and pixels.shape[0] > 1000  # two 5-inch panels at 150 dpi
    assert distinct_colours(pixels) > 100  # not blank


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sentence", "d_model", "n_heads"),
    [("I am", 8, 2), (SIXTY, 8, 2), pytest.param(SIXTY, 16, 8, marks=pytest.mark.slow)],
)
def test_tiny_and_long_sentences_render(
    tmp_path: Path, sentence: str, d_model: int, n_heads: int
) -> None:
    trace = trace_of(sentence, d_model, n_heads)
    path = tmp_path / "x.png"
    save_heatmap(trace, shown(trace, all_heads(trace), None), path)
    pixels = matplotlib.image.imread(path)
    assert 400 < pixels.shape[1] < 6000 and 400 < pixels.shape[0] < 6000


def test_unknown_colormap_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(AttnvizError, match="colormap"):
        save_heatmap(
            trace_of("I am"), shown(trace_of("I am"), (0,), None), tmp_path / "x.png", cmap="nosuch"
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_one_picture_holds_at_most_64_heads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "heads.png"
    argv = ["heatmap", "I am good", "--heads", "128", "--d-model", "128", "-o", str(output)]
    assert run(argv) == ExitStatus.BAD_INPUT
    assert capsys.readouterr().err.strip() == (
        f"error: 128 heads would make 128 panels in one picture; it holds at most "
        f"{MAX_HEAD_PANELS}. Draw one head with --head N, or use fewer --heads."
    )
    assert run([*argv, "--head", "3"]) == 0
    assert [path.name for path in tmp_path.iterdir()] == ["heads.png"]


@pytest.mark.slow
def test_a_model_figure_and_the_terminal_name_the_pieces_alike(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from support import has_model_extra

    if not has_model_extra():
        pytest.skip("needs the optional extra attnviz[model]")
    sentence = "Tokenization isn't trivial"
    assert run(["explain", "-m", "minilm", sentence, "--head", "1"]) == 0
    table_rows = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line}
    shown = attnviz.explain(sentence, model="minilm", head=1)
    figure = attnviz.heatmap(shown)
    drawn = tick_texts(figure.axes[0], x=True)
    assert drawn == ["[CLS]", "token", "##ization", "isn", "'", "t", "trivial", "[SEP]"]
    assert set(drawn) <= table_rows  # every label is a row label of the terminal's tables
    assert CONTINUED_PHRASE in words_of(figure)


def title_fits_and_keeps_the_caveat(figure: Figure, caveat: str) -> list[str]:
    """The suptitle's lines, after checking it has two lines at most and lies inside the
    figure, and ``caveat`` is whole in the title or the caption (never cut mid-word with …)."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    title = figure._suptitle  # type: ignore[attr-defined]
    extent = title.get_window_extent(renderer)
    assert extent.x0 >= 0 and extent.x1 <= figure.bbox.width + 0.5, title.get_text()
    lines = title.get_text().splitlines()
    assert len(lines) <= 2, lines
    assert caveat in words_of(figure), words_of(figure)
    assert "…" not in caption_of(figure)
    return lines


@pytest.mark.slow  # draws five figures
def test_every_picture_title_breaks_between_words_and_keeps_its_caveat() -> None:
    from matplotlib.figure import Figure

    from attnviz.render.figures.compare_figure import build_comparison_figure
    from attnviz.render.figures.plots import build_lines_figure

    # The cross-attention of a short pair, one head: a narrow figure, once "not a trained mod…".
    crossed = attnviz.cross("I am very good", "Je vais bien")
    figure = attnviz.heatmap(crossed, head=1)
    assert isinstance(figure, Figure)
    title_fits_and_keeps_the_caveat(figure, "not a trained model")
    long = (
        "the extraordinarily sleepy animal did not cross the busy street because it was too "
        "tired and nobody on the road had ever seen such a creature before that cold morning"
    )
    shown_long = attnviz.explain(long, heads=1)
    title_fits_and_keeps_the_caveat(attnviz.heatmap(shown_long), "not a trained model")
    lines = title_fits_and_keeps_the_caveat(
        build_layers_figure(for_grid(shown_long.layers), shown_long.selection),
        "not a trained model",
    )
    assert lines[0].startswith("“the extraordinarily")
    assert lines[0].endswith("”") or lines[0].endswith(" …")  # whole, or cut at a space
    focus = attnviz.explain(long.replace("animal", "a" * 90), focus="sleepy")
    build_lines_figure(focus.trace, focus.selection)  # a long word wraps, the title stays inside
    # The coref model's own words, as many as it reads (16).
    known = "the sleepy animal didn't cross the busy street because it was too tired so it never"
    other = known.replace("tired", "wide")
    pair = attnviz.compare(known, other, model="coref", focus="animal")
    compared = build_comparison_figure(
        pair.comparison, top=1, sentences=(known, other), weights=pair.a.trace.provenance.weights
    )
    title_fits_and_keeps_the_caveat(compared, "A caution: attention shows where")
    assert caption_of(compared).endswith("Pinter 2019).")
