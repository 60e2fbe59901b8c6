"""One rule for an empty path (an unset shell variable, most often): every path option of every
command, found in the Typer app (so a new one is covered), and every path argument of the API,
refuses "" by its name in one sentence, exit 4 for what is read and 5 for what is written,
before any work and with nothing written; never the working folder, silently."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer

import attnviz
from attnviz.api import train as training
from attnviz.cli import build_app
from attnviz.errors import AttnvizError, ExitStatus

from support import CliRunner

runner = CliRunner()

READ, WRITE = ExitStatus.BAD_FILE, ExitStatus.CANNOT_WRITE
#: What each command needs besides the option tried (heatmap's and page's -o: required).
ARGUMENTS = {
    "explain": ["I am good"],
    "heatmap": ["I am good", "-o", "heatmap.png"],
    "page": ["I am good", "-o", "page.html"],
    "cross": ["a b", "c d"],
    "heads": ["I am good"],
    "compare": ["a b", "a c"],
    "scaling": [],
    "demo": [],
    "train": ["previous", "--steps", "2"],
    "generate": ["a b c a"],
    "lens": ["a b c a"],
    "exercise": [],
}
#: The options that name something to read: the rest name something written.
READ_OPTIONS = {"--embeddings", "--weights", "--model", "--answers"}


def path_options() -> list[tuple[str, str]]:
    """Every (command, option) of the app that takes a path: a parser named "path" (as --help
    shows it, PATH), or --model, a model's name or folder."""
    group: Any = typer.main.get_command(build_app())  # Typer's own vendored click
    found = []
    for name, command in group.commands.items():
        for parameter in command.params:
            text = type(parameter.type).__name__ == "StringParamType"
            takes_path = parameter.type.name == "path" or (parameter.name == "model" and text)
            if parameter.param_type_name == "option" and takes_path:
                found.append((name, parameter.opts[0]))
    return found


PATH_OPTIONS = path_options()


def test_every_path_option_is_found() -> None:
    found = set(PATH_OPTIONS)
    assert {("heatmap", "--output"), ("heatmap", "--per-head"), ("explain", "--slides")} <= found
    assert {("train", "--save"), ("explain", "--model"), ("cross", "--weights")} <= found
    assert len(found) > 30
    assert {command for command, _ in found} <= ARGUMENTS.keys()  # a new command: add it above


@pytest.mark.parametrize(("command", "flag"), PATH_OPTIONS)
def test_an_empty_path_option_is_refused_by_name_and_nothing_is_written(
    command: str, flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(build_app(command), [command, *ARGUMENTS[command], flag, ""])
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {flag} '' is empty: it names no "), lines[0]
    assert result.exit_code == (READ if flag in READ_OPTIONS else WRITE)
    assert not result.stdout  # before any work
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--per-head", "--slides"])
def test_a_dot_is_still_the_working_folder(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    command = "heatmap" if flag == "--per-head" else "explain"
    extra = ["-o", str(tmp_path / "all.svg")] if command == "heatmap" else []
    result = runner.invoke(build_app(command), [command, "I am good", *extra, flag, "."])
    assert result.exit_code == 0, result.stderr
    assert any(path.suffix == ".svg" and path.name != "all.svg" for path in tmp_path.iterdir())


def trained() -> training.Trained:
    return training.train(training.make_task("previous"), steps=2)


API_CALLS: dict[str, tuple[Callable[[], object], ExitStatus, str]] = {
    "explain embeddings": (lambda: attnviz.explain("I am good", embeddings=""), READ, "embeddings"),
    "explain weights": (lambda: attnviz.explain("I am good", weights=""), READ, "weights"),
    "explain model": (lambda: attnviz.explain("I am good", model=""), READ, "model"),
    "cross embeddings": (lambda: attnviz.cross("a b", "c d", embeddings=""), READ, "embeddings"),
    "cross weights": (lambda: attnviz.cross("a b", "c d", weights=""), READ, "weights"),
    "compare model": (lambda: attnviz.compare("a b", "a c", model=""), READ, "model"),
    "compare weights": (lambda: attnviz.compare("a b", "a c", weights=""), READ, "weights"),
    "ablate model": (lambda: attnviz.ablate("a b", model=""), READ, "model"),
    "load_trace": (lambda: attnviz.load_trace(""), READ, "path"),
    "load_weights": (lambda: attnviz.load_weights(""), READ, "path"),  # type: ignore[arg-type]
    "load_embeddings": (
        lambda: attnviz.load_embeddings("", ["a"]),  # type: ignore[arg-type]
        READ,
        "path",
    ),
    "page save": (lambda: attnviz.page(attnviz.explain("I am good")).save(""), WRITE, "path"),
    "export_trace": (
        lambda: attnviz.export_trace(attnviz.explain("I am good").trace, ""),
        WRITE,
        "path",
    ),
    "export_layers": (
        lambda: attnviz.export_layers([attnviz.explain("I am good").trace], ""),
        WRITE,
        "path",
    ),
    "Trained.save": (lambda: trained().save(""), WRITE, "folder"),
    "Trained.save_history": (lambda: trained().save_history(""), WRITE, "path"),
}


@pytest.mark.parametrize("name", sorted(API_CALLS))
def test_an_empty_path_argument_is_refused_by_name(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call, status, keyword = API_CALLS[name]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AttnvizError) as refused:
        call()
    assert str(refused.value).startswith(f'{keyword}="" is empty: it names no ')
    assert refused.value.exit_status == status
    assert list(tmp_path.iterdir()) == []
