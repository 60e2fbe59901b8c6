"""The lines figure: a line from the focus word to every word, one colour per head."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnviz
from attnviz.cli import app
from attnviz.errors import AttnvizError, command_line
from attnviz.render.figures.captions import caption_of
from attnviz.render.figures.plots import save_lines_figure
from attnviz.tokens import find_focus
from render.pictures import words_of

from support import CliRunner, shown


@pytest.mark.slow
def test_lines_style_draws_one_line_per_word_and_head(tmp_path: Path) -> None:

    trace = attnviz.trace_attention("The animal didn't cross the street because it was too tired")
    focus = find_focus(trace.tokens, "it")
    out = tmp_path / "lines.svg"
    save_lines_figure(trace, shown(trace, (0, 1), focus), out)
    text = out.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "head 2" in text
    runner = CliRunner()
    result = runner.invoke(
        app, ["heatmap", "I am good", "--style", "lines", "-o", str(tmp_path / "x.png")]
    )
    assert result.exit_code == 3 and "--focus WORD" in result.stderr
    assert not (tmp_path / "x.png").exists()
    result = runner.invoke(
        app,
        [
            "heatmap",
            "I am good",
            "--style",
            "lines",
            "--focus",
            "am",
            "-o",
            str(tmp_path / "y.png"),
        ],
    )
    assert result.exit_code == 0 and (tmp_path / "y.png").read_bytes()[:4] == b"\x89PNG"


def test_lines_style_refuses_more_heads_than_colours(tmp_path: Path) -> None:

    trace = attnviz.trace_attention("it is", config=attnviz.AttentionConfig(d_model=12, n_heads=12))
    with pytest.raises(AttnvizError, match="pick one with --head"), command_line():
        save_lines_figure(
            trace,
            shown(trace, tuple(range(12)), find_focus(trace.tokens, "it")),
            tmp_path / "x.png",
        )
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_a_trained_models_lines_carry_the_caution_and_random_ones_do_not() -> None:
    from attnviz.lesson.caveats import short_attention_caveat

    sentence = "the animal didn't cross the street because it was too tired"
    trained = attnviz.heatmap(attnviz.explain(sentence, model="coref"), style="lines")
    random = attnviz.heatmap(attnviz.explain(sentence), style="lines")
    assert short_attention_caveat() in words_of(trained)
    assert "caution" not in words_of(random)
    assert all(len(figure.get_suptitle().splitlines()) <= 2 for figure in (trained, random))
    # The caption is under the lines and their words, inside the picture.
    trained.draw_without_rendering()
    renderer = trained.canvas.get_renderer()  # type: ignore[attr-defined]
    (lines,) = trained.axes
    paragraphs = [text for text in trained.texts if text.get_gid() == "caption"]
    assert len(paragraphs) == 2  # what coref's answer is, and the caution
    for paragraph in paragraphs:
        box = paragraph.get_window_extent(renderer)
        assert 0 <= box.x0 and box.x1 <= trained.bbox.width and 0 <= box.y0
        assert not box.overlaps(lines.get_tightbbox(renderer))


@pytest.mark.slow
@pytest.mark.parametrize("model", ["coref", "coref-word"])
def test_a_toy_models_lines_say_what_its_answer_is(model: str) -> None:
    from attnviz.lesson.caveats import readout_note

    sentence = "the animal didn't cross the street because it was too tired"
    figure = attnviz.heatmap(attnviz.explain(sentence, model=model), style="lines")
    readout = "pointer" if model == "coref" else "word"
    other = "word" if model == "coref" else "pointer"
    caption = caption_of(figure)
    assert readout_note(readout, ["it"]) in caption
    assert readout_note(other, ["it"]) not in caption
