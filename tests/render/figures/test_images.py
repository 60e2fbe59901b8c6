"""Which pictures `attnviz heatmap` draws and where they go: the command's options reach the
files."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnviz
from attnviz.cli import app
from attnviz.errors import ExitStatus
from render.pictures import (
    IT_SENTENCE,
)

from support import CliRunner

runner = CliRunner()


@pytest.mark.slow
def test_cli_heatmap_writes_a_png(tmp_path: Path) -> None:
    output = tmp_path / "x.png"
    result = runner.invoke(app, ["heatmap", "I am good", "-o", str(output)])
    assert result.exit_code == 0, result.stderr
    assert output.read_bytes()[:4] == b"\x89PNG"
    assert f"wrote {output}" in result.stderr and not result.stdout


@pytest.mark.slow
def test_cli_heatmap_per_head_writes_one_image_per_head(tmp_path: Path) -> None:
    folder = tmp_path / "heads"
    args = ["heatmap", IT_SENTENCE, "-o", str(tmp_path / "all.svg"), "--per-head", str(folder)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["head_1.svg", "head_2.svg"]
    assert (folder / "head_1.svg").read_text(encoding="utf-8").startswith("<?xml")


@pytest.mark.slow
def test_cli_heatmap_per_head_png(tmp_path: Path) -> None:
    folder = tmp_path / "heads"
    args = ["heatmap", "I am good", "-o", str(tmp_path / "x.png"), "--per-head", str(folder)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    for name in ("head_1.png", "head_2.png"):
        assert (folder / name).read_bytes()[:4] == b"\x89PNG"


def test_cli_unknown_colormap_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    output = tmp_path / "x.png"
    result = runner.invoke(app, ["heatmap", "I am good", "-o", str(output), "--cmap", "nosuch"])
    assert result.exit_code == ExitStatus.BAD_INPUT
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "colormap" in lines[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("style", ["grid", "lines"])
def test_words_the_font_lacks_give_no_warning_in_either_style(style: str, tmp_path: Path) -> None:
    """Emoji and CJK are drawn as boxes by the bundled font; the user sees 'wrote …', no noise.

    (The suite turns warnings into errors, so a warning would fail this test.)
    """
    result = CliRunner().invoke(
        app, ["heatmap", "it ⌭ 猫 👍🏽", "--style", style, "-o", str(tmp_path / "glyphs.png")]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0 and "Warning" not in result.output + result.stderr


@pytest.mark.slow
def test_cli_scale_reaches_the_picture_and_is_in_the_help(tmp_path: Path) -> None:
    output = tmp_path / "row.png"
    result = runner.invoke(app, ["heatmap", IT_SENTENCE, "--scale", "row", "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert output.read_bytes()[:4] == b"\x89PNG"
    bad = runner.invoke(app, ["heatmap", "I am", "--scale", "loud", "-o", str(tmp_path / "b.png")])
    assert bad.exit_code != 0 and "--scale" in bad.stderr and not (tmp_path / "b.png").exists()
    help_text = " ".join(runner.invoke(app, ["heatmap", "--help"]).output.split())
    assert "fixed up to 16 words, else auto" in help_text
    figure = attnviz.heatmap(attnviz.explain(IT_SENTENCE), scale="row")
    assert figure.axes[-1].get_ylabel().startswith("attention weight ÷ its row's largest")


@pytest.mark.slow
def test_words_the_pictures_font_lacks_are_named_in_a_note(tmp_path: Path) -> None:
    output = tmp_path / "x.png"
    result = runner.invoke(app, ["heatmap", "東京 は because it Привет", "-o", str(output)])
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "'東京', 'は'" in notes[0] and "drawn as boxes" in notes[0]
    assert "Привет" not in notes[0]  # Cyrillic is in DejaVu
    plain = runner.invoke(app, ["heatmap", "I am good", "-o", str(tmp_path / "y.png")])
    assert "note:" not in plain.stderr


def test_lines_refuse_a_colour_scale_they_would_ignore(tmp_path: Path) -> None:
    output = tmp_path / "l.png"
    arguments = ["heatmap", IT_SENTENCE, "--style", "lines", "--scale", "row", "-o", str(output)]
    result = runner.invoke(app, arguments)
    assert result.exit_code == ExitStatus.BAD_INPUT
    assert result.stderr.startswith("error: --scale sets the heatmaps' colours")
    assert not output.exists()


def test_all_layers_without_a_model_is_refused_as_its_help_says(tmp_path: Path) -> None:
    """Random or loaded weights are one layer: --all-layers, "every layer of a --model run",
    is refused in one line naming --model, before anything is written; the API alike."""
    from support import one_error_line

    output = tmp_path / "grid.png"
    result = runner.invoke(app, ["heatmap", "I am good", "--all-layers", "-o", str(output)])
    assert result.exit_code == ExitStatus.BAD_INPUT
    one_error_line(result.stderr, "--all-layers", "--model NAME", "drop --all-layers")
    assert list(tmp_path.iterdir()) == []
    helped = " ".join(runner.invoke(app, ["heatmap", "--help"]).stdout.split())
    assert "refused without --model: random weights are one layer" in helped
    with pytest.raises(attnviz.AttnvizError, match="give model=NAME"):
        attnviz.heatmap(attnviz.explain("I am good"), all_layers=True)
