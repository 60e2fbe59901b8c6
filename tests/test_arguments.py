"""attnviz.arguments: whole numbers in ASCII digits, values quoted briefly, and every file of
numbers (weights, traces, embeddings) refusing text, true/false and dates that numpy would
turn into numbers silently."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.arguments import digits, few_digits, folder_ending, only_numbers
from attnviz.errors import (
    AttnvizError,
    ExitStatus,
    FileProblem,
    clipped,
    shortened,
    shown_value,
)

from support import one_error_line


def test_digits_are_ascii_digits_only() -> None:
    assert digits("0") and digits("2048")
    for text in ("", "²", "١٢", "1_000", " 3", "+3", "-3", "3.0", "Ⅻ"):
        assert not digits(text), text
        assert not (text.isascii() and text.isdigit())


def test_huge_values_are_quoted_by_their_start_or_their_size() -> None:
    assert clipped("x" * 200) == "x" * 200
    assert clipped("x" * 100_000) == "x" * 40 + "…"
    assert shown_value(10**5000) == "a number of about 5,001 digits"
    assert shown_value(-(10**50)).startswith("-a number of about 51 digits")
    assert shown_value(2**64) == str(2**64)
    message = shortened(f"'{'9' * 100_000}' is bad, and so is {'y' * 300}", ["9" * 100_000])
    assert message == f"'{'9' * 40}…' is bad, and so is {'y' * 40}…"
    with pytest.raises(AttnvizError, match="at most 40 digits"):
        few_digits(seed=10**40)
    few_digits(seed=10**40 - 1, name="not a number: left to the caller")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (np.zeros((2, 2), dtype="datetime64[D]"), "holds dates"),
        (np.ones((2, 2), dtype=bool), "holds true/false values"),
        (np.full((2, 2), "1"), "holds text"),
        ([[1, 2], [3, "4"]], 'it holds "4"'),
        ([[1, 2], [3, True]], "it holds true"),
        ([[1, 2], [3, None]], "it holds null"),
        ([[1, 2], {"a": 1}], "it holds {…}"),
        ("12", 'it holds "12"'),
    ],
)
def test_only_numbers_refuses_what_numpy_would_make_numbers(value: object, says: str) -> None:
    with pytest.raises(FileProblem, match=says.replace("{", "\\{")) as refused:
        only_numbers(value, "X", "x.json", 2)
    assert "x.json" in str(refused.value)
    only_numbers([[1, 2.5], [3, -4]], "X", "x.json", 2)
    only_numbers(np.ones((2, 2), dtype=np.int8), "X", "x.npz", 2)


def test_weights_and_traces_of_text_or_true_are_refused(tmp_path: Path) -> None:
    trace = attnviz.explain("I am good").trace
    matrices = {key: getattr(trace, key) for key in ("W_Q", "W_K", "W_V", "W_O")}
    np.savez(tmp_path / "w.npz", **{key: value > 0 for key, value in matrices.items()})
    with pytest.raises(FileProblem, match="W_Q in .*w.npz holds true/false values"):
        attnviz.load_weights(tmp_path / "w.npz")
    document = {key: value.tolist() for key, value in matrices.items()}
    document["W_O"][0][0] = "0.5"
    (tmp_path / "w.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(FileProblem, match='W_O in .*w.json is not a 2-d array .* "0.5"'):
        attnviz.load_weights(tmp_path / "w.json")
    attnviz.export_trace(trace, tmp_path / "t.json")
    exported = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    exported["weights"][0][0][0] = True
    (tmp_path / "t.json").write_text(json.dumps(exported), encoding="utf-8")
    with pytest.raises(FileProblem, match="Weights in .*t.json .* it holds true"):
        attnviz.load_trace(tmp_path / "t.json")


# -- an output file's path that names a folder by its ending ---------------------------------------


@pytest.mark.parametrize(
    ("text", "ending", "file"),
    [
        ("x.png/", "/", "x.png"),
        ("x.png/.", "/.", "x.png"),
        ("out/x.png//", "//", "out/x.png"),
        ("x.png/./", "/./", "x.png"),
        ("a\nb\x1b[31m.svg/", "/", "a\\nb\\x1b[31m.svg"),
    ],
)
def test_a_path_ending_in_a_separator_names_a_folder(text: str, ending: str, file: str) -> None:
    problem = folder_ending(text)
    assert problem is not None
    assert f"names a folder (it ends in {ending!r}); give a file path such as '{file}'" in problem
    assert "\n" not in problem and "\x1b" not in problem  # shown escaped, never interpreted


@pytest.mark.parametrize("text", ["x.png", "/", ".", "./", "..", "x.png/..", "a/./b.png"])
def test_other_paths_are_left_to_the_checks_of_what_is_there(text: str) -> None:
    assert folder_ending(text) is None


@pytest.mark.parametrize(
    "arguments",
    [
        ["heatmap", "I am good", "-o", "x.png/"],
        ["heatmap", "I am good", "-o", "x.png/."],
        ["explain", "I am good", "--svg", "x.svg/"],
        ["explain", "I am good", "--html", "x.html/"],
        ["explain", "I am good", "--export", "x.npz/"],
        ["cross", "I am good", "Je vais bien", "-o", "x.png/"],
        ["page", "I am good", "-o", "x.html/"],
        ["train", "reverse", "--steps", "2", "--history", "x.npz/"],
        ["train", "reverse", "--steps", "2", "--animate", "x.gif/"],
    ],
)
def test_every_output_file_option_refuses_a_trailing_separator(
    arguments: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from attnviz.cli import run

    monkeypatch.chdir(tmp_path)
    assert run(arguments) == ExitStatus.USAGE
    given = arguments[-1]
    stderr = capsys.readouterr().err
    one_error_line(stderr, f"{given!r} names a folder", f"such as {given.rstrip('/.')!r}")
    assert list(tmp_path.iterdir()) == []  # nothing written, no folder made


@pytest.mark.slow  # two pictures drawn: about 0.8 s
def test_a_folder_option_takes_a_trailing_separator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnviz.cli import app

    from support import CliRunner

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["heatmap", "I am good", "-o", "x.png", "--per-head", "ph/"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "ph").iterdir()) == ["head_1.png", "head_2.png"]


@pytest.mark.slow
def test_the_python_api_refuses_a_trailing_separator_alike(tmp_path: Path) -> None:
    explanation = attnviz.explain("I am good")
    writers = {
        "page": lambda path: attnviz.page(explanation).save(path),
        "export_trace": lambda path: attnviz.export_trace(explanation.trace, path),
        "export_layers": lambda path: attnviz.export_layers(explanation.layers, path),
    }
    for name, write in writers.items():
        for given in (tmp_path / "x.html/", f"{tmp_path}/x.npz/", f"{tmp_path}/x.json/."):
            with pytest.raises(AttnvizError, match=r"^path='.*' names a folder \(it ends in"):
                write(str(given) + ("/" if isinstance(given, Path) else ""))
            assert list(tmp_path.iterdir()) == [], name


@pytest.mark.slow  # one training step: about 0.3 s
def test_a_training_history_refuses_a_trailing_separator(tmp_path: Path) -> None:
    from attnviz.api import train as training

    trained = training.train("reverse", steps=1, until=None)
    with pytest.raises(AttnvizError, match=r"^path='.*h\.npz/' names a folder"):
        trained.save_history(f"{tmp_path}/h.npz/")
    assert list(tmp_path.iterdir()) == []
