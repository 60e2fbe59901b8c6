"""Saving a figure: every format valid and deterministic, written all or nothing, no warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from attnviz.errors import OutputProblem
from attnviz.render.figures.heatmap import save_heatmap
from render.pictures import (
    it_focus,
    trace_of,
)

from support import shown


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suffix", "magic"), [(".svg", None), (".pdf", b"%PDF-"), (".PNG", b"\x89PNG")]
)
def test_every_format_is_valid_and_deterministic(
    tmp_path: Path, suffix: str, magic: bytes | None
) -> None:
    trace = trace_of("I think it works")
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    for path in (first, second):
        save_heatmap(trace, shown(trace, (0, 1), it_focus(trace)), path)
    data = first.read_bytes()
    if magic is None:
        text = data.decode("utf-8")
        assert (
            text.startswith("<?xml") and "<svg" in text[:1000] and text.rstrip().endswith("</svg>")
        )
    else:
        assert data.startswith(magic)
    assert data == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name, second.name]


def test_unknown_extension_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputProblem, match=r"\.png, \.svg or \.pdf"):
        save_heatmap(trace_of("I am"), shown(trace_of("I am"), (0,), None), tmp_path / "x.jpg")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), RuntimeError("bug")])
def test_a_failing_write_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def half_write(self: Figure, path: Path, **kwargs: object) -> None:
        Path(path).write_bytes(b"\x89PNG half")
        raise error

    monkeypatch.setattr(Figure, "savefig", half_write)
    expected = OutputProblem if isinstance(error, OSError) else RuntimeError
    with pytest.raises(expected):
        save_heatmap(trace_of("I am"), shown(trace_of("I am"), (0,), None), tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_an_existing_picture_survives_a_failed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.png"
    path.write_bytes(b"old picture")

    def broken(self: Figure, path: Path, **kwargs: object) -> None:
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(OutputProblem, match="Permission denied"):
        save_heatmap(trace_of("I am"), shown(trace_of("I am"), (0,), None), path)
    assert path.read_bytes() == b"old picture"
    assert [p.name for p in tmp_path.iterdir()] == ["x.png"]


@pytest.mark.slow
def test_words_without_a_glyph_render_without_warnings(tmp_path: Path) -> None:
    trace = trace_of("I like 👍🏽 and 漢字")
    save_heatmap(trace, shown(trace, (0,), None), tmp_path / "x.png")  # warnings are errors here
    assert (tmp_path / "x.png").stat().st_size > 0
