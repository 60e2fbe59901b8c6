"""Work bounded by the input (issue 13, §1): long words are cut in linear time, a sentence has a
length limit, and a picture a largest number of panels, each refused in one line that says how."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import rich.cells
from rich.text import Text

import attnviz
import attnviz.render.text
from attnviz.cli import run
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.render.grid import MAX_GRID_PANELS, check_grid_size, save_layers_heatmap
from attnviz.render.heatmap import MAX_HEAD_PANELS
from attnviz.render.images import save_images
from attnviz.render.labels import fit_label, fitting_prefix
from attnviz.render.options import ImageOptions
from attnviz.render.text import wrap
from attnviz.tokens import MAX_SENTENCE_CHARS, tokenize

from support import shown


class Measured:
    """Counts the characters rich's cell_len is given: the work of cutting, without a clock."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.characters = 0
        real = rich.cells.cell_len

        def counting(text: str, *args: object) -> int:
            self.characters += len(text)
            return real(text)

        monkeypatch.setattr(rich.cells, "cell_len", counting)
        monkeypatch.setattr(attnviz.render.text, "cell_len", counting)


# -- long words ------------------------------------------------------------------------------------


def test_a_16000_character_word_is_cut_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    measured = Measured(monkeypatch)
    started = time.perf_counter()
    assert fit_label("a" * 16_000) == "a" * 9 + "…"
    assert fit_label("b" * 16_000 + ":2", 6) == "bbb…:2"
    assert time.perf_counter() - started < 2  # cutting a character at a time took 11–13 s
    assert measured.characters < 2 * 2 * 16_000  # each word measured whole about once


@pytest.mark.parametrize("word", ["漢字" * 50, "e\u0301" * 80, "👨\u200d👩\u200d👧" * 20, "ab"])
def test_the_fitting_prefix_is_the_longest_piece_that_fits(word: str) -> None:
    for cells in range(12):
        end = fitting_prefix(word, cells)
        assert rich.cells.cell_len(word[:end]) <= cells
        assert end == len(word) or rich.cells.cell_len(word[: end + 1]) > cells


def test_wrapping_a_long_word_grows_linearly_with_its_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    measured = Measured(monkeypatch)
    work = []
    for length in (16_000, 32_000):
        measured.characters = 0
        text = Text(f"Sentence: {'a' * length} and [0.1, 0.2] more words (11 tokens)")
        lines = wrap(text, 80)
        assert all(line.cell_len <= 80 for line in lines)
        assert "".join(line.plain for line in lines).replace(" ", "") == text.plain.replace(" ", "")
        work.append(measured.characters)
    assert work[1] < 2.2 * work[0]  # measuring from the start for every line was quadratic


def test_explain_prints_a_16000_character_word_in_lines_that_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["explain", "a" * 16_000, "--steps", "1"]) == 0
    out = capsys.readouterr().out
    assert "a" * 9 + "…" in out
    assert max(rich.cells.cell_len(line) for line in out.splitlines()) <= 100


# -- sentences -------------------------------------------------------------------------------------


def test_a_sentence_longer_than_the_limit_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert len(tokenize("a" * MAX_SENTENCE_CHARS)) == 1
    with pytest.raises(AttnvizError, match=f"at most {MAX_SENTENCE_CHARS:,}"):
        tokenize("a" * (MAX_SENTENCE_CHARS + 1))
    with pytest.raises(AttnvizError, match="20,001 characters"):
        attnviz.trace_attention(["a" * 10_000, "b" * 10_001])
    started = time.perf_counter()
    assert run(["explain", "word " * 200_000]) == ExitStatus.BAD_INPUT  # a megabyte
    assert time.perf_counter() - started < 5
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "error: The sentence has 1,000,000 characters; attnviz takes at most 20,000. Shorten it."
    )


# -- panels ----------------------------------------------------------------------------------------


def test_the_layers_grid_holds_at_most_384_panels(tmp_path: Path) -> None:
    check_grid_size(24, 16)  # BERT-large, GPT-2 medium
    assert MAX_GRID_PANELS == 24 * 16
    trace = attnviz.trace_attention(
        "I am good", config=attnviz.AttentionConfig(d_model=128, n_heads=64)
    )
    layers = [trace] * 60
    with pytest.raises(AttnvizError) as raised:
        save_layers_heatmap(layers, shown(trace, None, None), tmp_path / "grid.png")
    assert raised.value.message == (
        "--all-layers would draw 60 layers × 64 heads = 3,840 panels; one picture holds at most "
        "384. Draw one layer's heads with --layer N instead of --all-layers (add --head N for "
        "one head)."
    )
    options = ImageOptions(all_layers=True)
    with pytest.raises(AttnvizError, match="--layer N"):
        save_images(layers, trace, shown(trace), tmp_path / "grid.png", options)
    assert list(tmp_path.iterdir()) == []


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
