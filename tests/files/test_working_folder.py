"""A working folder deleted while the shell was in it: every relative path, read or written, by
every option of every command and every path argument of the API, gets one sentence naming the
working folder (exit 4 to read, 5 to write), before any work and with nothing written.

The cases run in one fresh Python process whose working folder is removed after it starts (as
`cd d && rmdir ../d && attnviz …` does); the installed command itself, once, in a shell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.errors import ExitStatus

from support import installed_attnviz

GONE = "the working folder no longer exists"
READ, WRITE = int(ExitStatus.BAD_FILE), int(ExitStatus.CANNOT_WRITE)

#: Each command line, its exit status, and the option the line names.
COMMAND_LINES = [
    (["heatmap", "I am good", "-o", "x.png"], WRITE, "--output x.png"),
    (["heatmap", "I am good", "-o", "{abs}/x.png", "--export", "x.json"], WRITE, "--export"),
    (["heatmap", "I am good", "-o", "{abs}/x.png", "--per-head", "ph"], WRITE, "--per-head"),
    (["explain", "I am good", "--export", "x.npz"], WRITE, "--export x.npz"),
    (["explain", "I am good", "--svg", "x.svg"], WRITE, "--svg x.svg"),
    (["explain", "I am good", "--html", "x.html"], WRITE, "--html x.html"),
    (["explain", "I am good", "--slides", "slides"], WRITE, "--slides slides"),
    (["cross", "a b", "c d", "-o", "x.png"], WRITE, "--output x.png"),
    (["cross", "a b", "c d", "--slides", "s", "--export", "{abs}/x.npz"], WRITE, "--slides"),
    (["page", "I am good", "-o", "x.html"], WRITE, "--output x.html"),
    (["compare", "a b", "a c", "-o", "x.png"], WRITE, "--output x.png"),
    (["scaling", "-o", "x.png"], WRITE, "--output x.png"),
    (["train", "previous", "--save", "m"], WRITE, "--save m"),
    (["train", "previous", "--animate", "a.gif"], WRITE, "--animate a.gif"),
    (["train", "previous", "--history", "h.npz"], WRITE, "--history h.npz"),
    (["explain", "I am good", "--embeddings", "e.npz"], READ, "e.npz"),
    (["explain", "I am good", "--weights", "w.npz"], READ, "w.npz"),
    (["explain", "I am good", "--model", "./m"], READ, "--model ./m"),
    (["heads", "I am good", "-m", "."], READ, "--model ."),
    (["cross", "a b", "c d", "--weights", "w.json"], READ, "w.json"),
]

#: Each API call, the exception's exit status, and what its message names.
API_CALLS = [
    ("attnviz.explain('I am good', embeddings='e.npz')", READ, "e.npz"),
    ("attnviz.explain('I am good', weights='w.npz')", READ, "w.npz"),
    ("attnviz.explain('I am good', model='./m')", READ, "model"),
    ("attnviz.load_trace('t.npz')", READ, "t.npz"),
    ("attnviz.load_weights('w.npz')", READ, "w.npz"),
    ("attnviz.page(attnviz.explain('I am good')).save('p.html')", WRITE, "p.html"),
    ("attnviz.export_trace(attnviz.explain('I am good').trace, 't.json')", WRITE, "t.json"),
    ("training.train(training.make_task('previous'), steps=2).save('m')", WRITE, "m"),
    ("training.train(training.make_task('previous'), steps=2).save_history('h.npz')", WRITE, "h"),
]

SCRIPT = r"""
import json, os, sys, warnings
import attnviz
from attnviz.api import train as training
from attnviz.cli import run

cases = json.loads(sys.argv[1])
os.rmdir(os.getcwd())  # the working folder, gone
warnings.simplefilter("ignore")
for index, arguments in enumerate(cases["command_lines"]):
    print(f"CASE {index}", file=sys.stderr, flush=True)
    status = run(arguments)
    print(f"STATUS {index} {status}", file=sys.stderr, flush=True)
for index, call in enumerate(cases["api_calls"]):
    try:
        eval(call)
    except attnviz.AttnvizError as error:
        print(f"API {index} {int(error.exit_status)} {error}", file=sys.stderr, flush=True)
    except BaseException as error:
        print(f"API {index} raised {error!r}", file=sys.stderr, flush=True)
    else:
        print(f"API {index} accepted", file=sys.stderr, flush=True)
"""


@pytest.fixture(scope="module")
def gone_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The cases' stderr, run in a working folder removed first, and the absolute folder
    some of them also write in (which must stay empty)."""
    base = tmp_path_factory.mktemp("gone")
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    work = base / "work"
    work.mkdir()
    lines = [
        [part.replace("{abs}", str(elsewhere)) for part in line] for line, _, _ in COMMAND_LINES
    ]
    cases = {"command_lines": lines, "api_calls": [call for call, _, _ in API_CALLS]}
    environment = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    environment.pop("PYTHONWARNINGS", None)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(cases)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    assert not work.exists()
    return result.stderr, elsewhere


@pytest.mark.slow
@pytest.mark.parametrize(
    ("index", "status", "named"),
    [(index, status, named) for index, (_, status, named) in enumerate(COMMAND_LINES)],
    ids=[" ".join(line) for line, _, _ in COMMAND_LINES],
)
def test_a_command_line_names_the_gone_working_folder_in_one_line(
    gone_run: tuple[str, Path], index: int, status: int, named: str
) -> None:
    stderr, elsewhere = gone_run
    said = stderr.split(f"CASE {index}\n")[1].split(f"STATUS {index} ")
    lines = said[0].splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), said[0]
    assert GONE in lines[0] and named in lines[0]
    assert int(said[1].split()[0]) == status
    assert list(elsewhere.iterdir()) == []  # refused before the work: nothing written


@pytest.mark.slow
@pytest.mark.parametrize(
    ("index", "status", "named"),
    [(index, status, named) for index, (_, status, named) in enumerate(API_CALLS)],
    ids=[call for call, _, _ in API_CALLS],
)
def test_an_api_call_names_the_gone_working_folder(
    gone_run: tuple[str, Path], index: int, status: int, named: str
) -> None:
    line = next(line for line in gone_run[0].splitlines() if line.startswith(f"API {index} "))
    assert line.startswith(f"API {index} {status} ") and GONE in line and named in line, line


@pytest.mark.slow
def test_the_installed_command_in_a_removed_folder(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    command = (
        f"cd {folder} && rmdir ../d && exec {installed_attnviz()} heatmap 'I am good' -o x.png"
    )
    result = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120)
    assert result.returncode == ExitStatus.CANNOT_WRITE
    assert result.stderr.splitlines() == [
        f"error: --output x.png: {GONE} (deleted or moved while the shell was in it); cd to a "
        "folder that exists, or give an absolute path."
    ]
