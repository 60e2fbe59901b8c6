"""Figures drawn whatever surrounds them: several threads at once, and a person's matplotlib
settings (matplotlibrc files in the three places matplotlib reads one, rcParams changed in the
process) that must not reach attnviz's pictures.

The threads and the rc files run in fresh Python processes: a heap corrupted by two threads
aborts the process (exit 134), which a subprocess reports as a failed exit code instead of
killing pytest, and matplotlib reads its rc file once, when first imported.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import attnviz as attnviz_package

PNG = b"\x89PNG\r\n\x1a\n"

THREADS_SCRIPT = r"""
import io, sys, threading
from pathlib import Path
import attnviz
from attnviz.render.notebook.cell import trace_html

folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
shown = attnviz.explain("The cat sat because it was tired", focus="it")
failures = []

def heatmaps(number):
    try:
        for round in range(2 * rounds):
            buffer = io.BytesIO()
            attnviz.heatmap(shown).savefig(buffer, format="png")
            (folder / f"heatmap-{number}-{round}.png").write_bytes(buffer.getvalue())
    except BaseException as error:
        failures.append(repr(error))

def lines(number):
    try:
        for round in range(rounds):
            buffer = io.BytesIO()
            attnviz.heatmap(shown, style="lines").savefig(buffer, format="png")
            (folder / f"lines-{number}-{round}.png").write_bytes(buffer.getvalue())
            assert "data:image/png;base64," in shown._repr_html_()
    except BaseException as error:
        failures.append(repr(error))

threads = [threading.Thread(target=heatmaps, args=(n,)) for n in range(4)]
threads += [threading.Thread(target=lines, args=(n,)) for n in range(2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("\n".join(failures), file=sys.stderr)
sys.exit(1 if failures else 0)
"""


def python(script: str, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by this Python in a fresh process, in ``cwd``, with ``env`` added."""
    environment = {**os.environ, "COLUMNS": "100", **env}
    environment.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env=environment,
    )


@pytest.mark.slow  # a stress test in a fresh process: 4 threads of heatmaps, 2 of lines
@pytest.mark.parametrize("rounds", [1, pytest.param(3, marks=pytest.mark.full)])
def test_figures_drawn_by_several_threads_at_once_are_all_whole(
    rounds: int, tmp_path: Path
) -> None:
    """Each heatmap thread draws 2·rounds figures, each lines thread ``rounds``: 10 figures at
    once in CI, 30 in the full run."""
    result = python(THREADS_SCRIPT, str(tmp_path), str(rounds), cwd=tmp_path)
    assert result.returncode == 0, result.stderr  # 134 (SIGABRT) when the heap was corrupted
    pictures = sorted(tmp_path.glob("*.png"))
    assert len(pictures) == 4 * 2 * rounds + 2 * rounds
    sizes = {path.name.split("-")[0]: set() for path in pictures}
    for path in pictures:
        data = path.read_bytes()
        assert data.startswith(PNG) and data.endswith(b"IEND\xaeB`\x82"), path.name
        sizes[path.name.split("-")[0]].add(data[16:24])  # the PNG's width and height
    # Every heatmap the same size, every lines figure too: no thread's text measured wrongly.
    assert all(len(found) == 1 for found in sizes.values()), sizes


# -- a person's matplotlib settings ----------------------------------------------------------

#: Settings that would break or change attnviz's pictures: LaTeX run on the sentence, a
#: backend that does not exist, another format, a picture a million dots per inch, a font
#: family that changes every text width, a layout engine that moves the placed panels.
HOSTILE_SETTINGS = (
    b"text.usetex: True\n"
    b"backend: nonexistent\n"
    b"savefig.format: svg\n"
    b"figure.dpi: 1e6\n"
    b"savefig.dpi: 1e6\n"
    b"font.family: cursive\n"
    b"font.size: 100\n"
    b"figure.autolayout: True\n"
    b"savefig.bbox: tight\n"
    b"image.cmap: nonexistent\n"
)
RC_FILES = {
    "hostile-settings": HOSTILE_SETTINGS,
    "not-utf-8": b"text.usetex: True\n# \xff\xfe\xfa not UTF-8\nfigure.dpi: 1e6\n",
}

RC_SCRIPT = r"""
import sys
import attnviz
from attnviz.cli import run

status = run(["heatmap", "I am good", "-o", "cli.png"])
attnviz.heatmap(attnviz.explain("I am good")).savefig("api.png", format="png", dpi=150)
sys.exit(status)
"""


def rc_surroundings(tmp_path: Path, where: str, content: bytes) -> tuple[Path, dict[str, str]]:
    """The working folder to run in and the environment that make matplotlib find a
    matplotlibrc holding ``content`` ``where`` it looks: the working folder, $MATPLOTLIBRC
    (a file) or $MPLCONFIGDIR."""
    work = tmp_path / "work"
    work.mkdir()
    settings = tmp_path / "settings"
    settings.mkdir()
    (work if where == "cwd" else settings).joinpath("matplotlibrc").write_bytes(content)
    environment = {
        "cwd": {},
        "MATPLOTLIBRC": {"MATPLOTLIBRC": str(settings / "matplotlibrc")},
        "MPLCONFIGDIR": {"MPLCONFIGDIR": str(settings)},
    }[where]
    return work, environment


@pytest.fixture(scope="module")
def plain_picture(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """``attnviz heatmap "I am good"`` as drawn here, where no matplotlibrc is in the way."""
    from attnviz.cli import run

    output = tmp_path_factory.mktemp("plain") / "cli.png"
    assert run(["heatmap", "I am good", "-o", str(output)]) == 0
    return output.read_bytes()


#: Each place a matplotlibrc is read from, with each kind of file: CI runs each place and each
#: kind once (the diagonal), the full run every pair.
RC_CASES = [
    pytest.param(where, content, marks=() if (i + j) % 2 == 0 else pytest.mark.full)
    for i, where in enumerate(("cwd", "MATPLOTLIBRC", "MPLCONFIGDIR"))
    for j, content in enumerate(sorted(RC_FILES))
]


@pytest.mark.slow
@pytest.mark.parametrize(("where", "content"), RC_CASES)
def test_a_matplotlibrc_does_not_reach_the_pictures(
    tmp_path: Path, where: str, content: str, plain_picture: bytes
) -> None:
    work, environment = rc_surroundings(tmp_path, where, RC_FILES[content])
    result = python(RC_SCRIPT, cwd=work, **environment)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "wrote cli.png\n"  # no warning about the file, no traceback
    for name in ("cli.png", "api.png"):
        data = (work / name).read_bytes()
        assert data.startswith(PNG), name
        width = int.from_bytes(data[16:20], "big")
        assert 300 < width < 3000, (name, width)  # 150 dpi, not a million
    # The same picture, to the byte, as without the file: no font, size or layout of it.
    assert (work / "cli.png").read_bytes() == plain_picture


def test_settings_changed_in_the_process_do_not_reach_the_pictures_and_are_kept(
    tmp_path: Path, plain_picture: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    import matplotlib

    import attnviz
    from attnviz.cli import run

    changed = {"text.usetex": True, "font.size": 100.0, "figure.dpi": 1000.0}
    with matplotlib.rc_context(changed):
        assert run(["heatmap", "I am good", "-o", str(tmp_path / "cli.png")]) == 0
        figure = attnviz.heatmap(attnviz.explain("I am good"))
        assert all(matplotlib.rcParams[key] == value for key, value in changed.items())
    assert (tmp_path / "cli.png").read_bytes() == plain_picture
    assert not any(text.get_usetex() for text in figure.findobj(matplotlib.text.Text))


# -- one way in ------------------------------------------------------------------------------

#: matplotlib's types a drawing function receives: one made inside drawing() already.
DRAWN_ON = {"Axes", "Figure"}


def matplotlib_users() -> list[tuple[str, ast.FunctionDef]]:
    """Every function of attnviz that imports matplotlib, with its module's path."""
    package = Path(attnviz_package.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(inner, ast.ImportFrom)
                and (inner.module or "").partition(".")[0] == "matplotlib"
                or isinstance(inner, ast.Import)
                and any(alias.name.partition(".")[0] == "matplotlib" for alias in inner.names)
                for inner in ast.walk(node)
            ):
                found.append((str(path.relative_to(package.parent)), node))
    return found


@pytest.mark.slow
def test_matplotlib_is_reached_only_inside_drawing() -> None:
    """A function that imports matplotlib is decorated with @draws (the lock, attnviz's
    settings, and the first import without the person's matplotlibrc), or draws on an Axes or
    Figure that such a function made; else its import could be matplotlib's first, reading a
    matplotlibrc, or run in two threads at once."""
    users = matplotlib_users()
    assert len(users) > 10  # the scan finds them
    outside = [
        f"{path}: {node.name}"
        for path, node in users
        if path != "attnviz/render/figures/settings.py"
        and not any(ast.unparse(decorator) == "draws" for decorator in node.decorator_list)
        and not (
            node.args.args
            and ast.unparse(node.args.args[0].annotation or ast.Constant("")) in DRAWN_ON
        )
    ]
    assert outside == []
