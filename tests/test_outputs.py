"""A run's outputs are all or nothing: Ctrl-C, a full disk on the second file, a failed rename,
modes kept, names as long as the file system allows (issue 13, §2); and attnviz.outputs, which
checks every output path before any work and names per-head files."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

import attnviz.files.writing
from attnviz.cli import run
from attnviz.errors import ExitStatus, OutputProblem
from attnviz.files import atomic_write, staged_writes
from attnviz.options import TraceOptions

from support import examples, listing, one_error_line, steps_spec

SENTENCE = "I am good"


def disk_full(temporary: Path) -> None:
    temporary.write_bytes(b"half of a fi")
    raise OSError(28, "No space left on device")


# -- Ctrl-C (SIGTERM and SIGHUP, in a fresh process: tests/e2e/test_signals.py) --------------


@pytest.mark.slow
def test_ctrl_c_between_two_outputs_changes_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "main.png").write_bytes(b"old picture")
    before = listing(tmp_path)

    def interrupted(handle: object, **arrays: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", interrupted)
    argv = ["heatmap", SENTENCE, "-o", str(tmp_path / "main.png")]
    assert run([*argv, "--export", str(tmp_path / "t.npz")]) == ExitStatus.INTERRUPTED
    assert listing(tmp_path) == before


# -- several outputs: all or nothing ------------------------------------------------------------


@pytest.mark.slow
def test_a_full_disk_on_the_export_leaves_the_picture_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "main.png").write_bytes(b"old picture")
    (tmp_path / "t.npz").write_bytes(b"old export")
    before = listing(tmp_path)
    monkeypatch.setattr(np, "savez", lambda handle, **arrays: disk_full(Path(handle.name)))
    argv = ["heatmap", SENTENCE, "-o", str(tmp_path / "main.png")]
    assert run([*argv, "--export", str(tmp_path / "t.npz")]) == ExitStatus.CANNOT_WRITE
    one_error_line(capsys.readouterr().err, "t.npz", "No space left on device")
    assert listing(tmp_path) == before


@pytest.mark.slow
def test_a_failing_per_head_picture_leaves_no_folder_and_no_picture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_savefig = Figure.savefig
    calls = []

    def third_fails(self: Figure, path: Path, **options: object) -> None:
        calls.append(path)
        if len(calls) == 3:
            disk_full(Path(path))
        real_savefig(self, path, **options)

    monkeypatch.setattr(Figure, "savefig", third_fails)
    argv = ["heatmap", SENTENCE, "-o", str(tmp_path / "main.png")]
    status = run([*argv, "--per-head", str(tmp_path / "heads"), "--heads", "4"])
    assert status == ExitStatus.CANNOT_WRITE and len(calls) == 3
    one_error_line(capsys.readouterr().err, "head_2.png", "No space left")
    assert list(tmp_path.iterdir()) == []  # the folder it made is gone again


@pytest.mark.slow
def test_explain_writes_svg_html_and_export_together_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = {"svg": "l.svg", "html": "l.html", "export": "t.json"}
    outputs = {option: str(tmp_path / name) for option, name in outputs.items()}
    argv = ["explain", SENTENCE, *(f"--{k}={v}" for k, v in outputs.items())]
    assert run(argv) == 0
    written = capsys.readouterr().err.splitlines()
    assert written == [f"wrote {path}" for path in outputs.values()]  # once all are in place
    before = listing(tmp_path)
    real_write_text = Path.write_text

    def html_fails(self: Path, text: str, *args: object, **kwargs: object) -> int:
        if "<html" in text.lower()[:200]:
            disk_full(self)
        return real_write_text(self, text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", html_fails)
    assert run([*argv, "--seed", "3"]) == ExitStatus.CANNOT_WRITE
    one_error_line(capsys.readouterr().err, "l.html")
    assert listing(tmp_path) == before


@pytest.mark.slow
def test_slides_and_an_export_fail_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(np, "savez", lambda handle, **arrays: disk_full(Path(handle.name)))
    argv = [
        "explain",
        SENTENCE,
        "--steps",
        steps_spec("tokens"),
        "--slides",
        str(tmp_path / "deck"),
    ]
    assert run([*argv, "--export", str(tmp_path / "t.npz")]) == ExitStatus.CANNOT_WRITE
    assert list(tmp_path.iterdir()) == []


def test_a_rename_that_fails_puts_back_the_files_already_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, third = (tmp_path / name for name in ("a.txt", "b.txt", "new.txt"))
    first.write_bytes(b"old a")
    second.write_bytes(b"old b")
    before = listing(tmp_path)
    real_replace = os.replace
    renames = []

    def third_rename_fails(source: str | Path, target: str | Path) -> None:
        renames.append(target)
        if len(renames) == 3:
            raise OSError(5, "Input/output error")
        real_replace(source, target)

    monkeypatch.setattr(attnviz.files.writing.os, "replace", third_rename_fails)
    with pytest.raises(OutputProblem, match="Input/output error; no output was changed"):
        with staged_writes():
            atomic_write(third, lambda path: path.write_bytes(b"new"))
            atomic_write(first, lambda path: path.write_bytes(b"new a"))
            atomic_write(second, lambda path: path.write_bytes(b"new b"))
    assert listing(tmp_path) == before  # new.txt removed, a.txt put back, no backup left


def test_without_hard_links_an_existing_file_is_replaced_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    existing, new = tmp_path / "a.txt", tmp_path / "n.txt"
    existing.write_bytes(b"old a")
    renames: list[Path] = []
    real_replace = os.replace

    def first_rename_fails(source: str | Path, target: str | Path) -> None:
        renames.append(Path(target))
        if len(renames) == 1:
            raise OSError(5, "Input/output error")
        real_replace(source, target)

    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(attnviz.files.writing.os, "link", no_links)
    monkeypatch.setattr(attnviz.files.writing.os, "replace", first_rename_fails)
    with pytest.raises(OutputProblem, match="no output was changed"), staged_writes():
        atomic_write(existing, lambda path: path.write_bytes(b"new a"))
        atomic_write(new, lambda path: path.write_bytes(b"new n"))
    assert renames == [new]  # the file that cannot be put back waits until last
    assert listing(tmp_path) == {"a.txt": b"old a"}
    with staged_writes():
        atomic_write(existing, lambda path: path.write_bytes(b"new a"))
        atomic_write(new, lambda path: path.write_bytes(b"new n"))
    assert listing(tmp_path) == {"a.txt": b"new a", "n.txt": b"new n"}


def test_outputs_are_renamed_only_when_the_block_ends(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    with staged_writes():
        atomic_write(target, lambda path: path.write_bytes(b"whole"))
        assert not target.exists()
    assert listing(tmp_path) == {"out.txt": b"whole"}
    with pytest.raises(RuntimeError), staged_writes():
        atomic_write(target, lambda path: path.write_bytes(b"other"))
        raise RuntimeError("a bug after the write")
    assert listing(tmp_path) == {"out.txt": b"whole"}


@pytest.mark.slow
@settings(max_examples=examples(200))
@given(
    outputs=st.lists(
        st.tuples(st.sampled_from(["a.png", "b.npz", "c.json", "d.svg"]), st.booleans()),
        min_size=1,
        max_size=4,
        unique_by=lambda output: output[0],
    ),
    failure=st.one_of(
        st.none(), st.tuples(st.sampled_from(["write", "rename", "interrupt"]), st.integers(0, 4))
    ),
    mode=st.sampled_from([0o600, 0o640, 0o664]),
)
def test_outputs_change_all_together_or_not_at_all(
    outputs: list[tuple[str, bool]], failure: tuple[str, int] | None, mode: int
) -> None:
    """Any outputs, some replacing files, with a failure at any write or rename: afterwards
    either every output is new (each replaced file keeping its mode) or the folder is exactly
    as it was, modes included, with no temporary or backup left."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for output, exists in outputs:
            if exists:
                (folder / output).write_bytes(b"old " + output.encode())
                (folder / output).chmod(mode)
        before = {path.name: (path.read_bytes(), path.stat().st_mode) for path in folder.iterdir()}
        kind, at = failure or ("none", -1)
        real_replace, calls = os.replace, []

        def replace(source: str | Path, target: str | Path) -> None:
            calls.append(target)
            if kind == "rename" and len(calls) == at + 1:
                raise OSError(5, "Input/output error")
            real_replace(source, target)

        def write(index: int, output: str) -> Callable[[Path], None]:
            def writing(temporary: Path) -> None:
                temporary.write_bytes(b"new " + output.encode())
                if kind == "write" and index == at:
                    raise OSError(28, "No space left on device")
                if kind == "interrupt" and index == at:
                    raise KeyboardInterrupt

            return writing

        failed = True
        with patch.object(attnviz.files.writing.os, "replace", replace):
            try:
                with staged_writes():
                    for index, (output, _) in enumerate(outputs):
                        atomic_write(folder / output, write(index, output))
                failed = False
            except (OutputProblem, KeyboardInterrupt):
                pass
        after = {path.name: (path.read_bytes(), path.stat().st_mode) for path in folder.iterdir()}
        if failed:
            assert after == before
        else:
            assert sorted(after) == sorted(output for output, _ in outputs)
            for output, exists in outputs:
                content, output_mode = after[output]
                assert content == b"new " + output.encode()
                if exists:
                    assert output_mode & 0o777 == mode


# -- modes and names ----------------------------------------------------------------------------


def test_a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path: Path) -> None:
    private = tmp_path / "private.npz"
    assert run(["explain", SENTENCE, "--export", str(private)]) == 0
    private.chmod(0o600)
    old = private.read_bytes()
    assert run(["explain", SENTENCE, "--seed", "4", "--export", str(private)]) == 0
    assert private.read_bytes() != old
    assert private.stat().st_mode & 0o777 == 0o600
    fresh = tmp_path / "fresh.json"
    assert run(["explain", SENTENCE, "--export", str(fresh)]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask


def name_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255


@pytest.mark.slow
def test_a_name_as_long_as_the_file_system_allows_is_written(tmp_path: Path) -> None:
    longest = min(name_max(tmp_path), 254)
    picture = tmp_path / ("p" * (longest - 4) + ".png")
    export = tmp_path / ("e" * (longest - 4) + ".npz")
    argv = ["heatmap", SENTENCE, "-o", str(picture), "--export", str(export)]
    assert run(argv) == 0
    assert sorted(listing(tmp_path)) == sorted([picture.name, export.name])


@pytest.mark.parametrize("option", ["-o", "--export", "--per-head", "--slides"])
def test_a_name_too_long_is_one_line_before_any_work(
    tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    long_name = "n" * (name_max(tmp_path) + 45)
    extension = {"-o": ".png", "--export": ".npz"}.get(option, "")
    argv = {
        "-o": ["heatmap", SENTENCE],
        "--export": ["explain", SENTENCE],
        "--per-head": ["heatmap", SENTENCE, "-o", str(tmp_path / "x.png")],
        "--slides": ["explain", SENTENCE],
    }[option]
    status = run([*argv, option, str(tmp_path / (long_name + extension))])
    assert status == ExitStatus.BAD_INPUT  # the name given is the problem, as issue 13 asks
    captured = capsys.readouterr()
    one_error_line(captured.err, option, "bytes long", f"at most {name_max(tmp_path)}")
    assert captured.out == ""  # refused before the lesson was printed
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_not_replaced_by_an_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipe = tmp_path / "pipe.png"
    os.mkfifo(pipe)
    assert run(["heatmap", SENTENCE, "-o", str(pipe)]) == ExitStatus.CANNOT_WRITE
    one_error_line(capsys.readouterr().err, "pipe.png is not a regular file")
    assert [path.name for path in tmp_path.iterdir()] == ["pipe.png"]


# -- attnviz.outputs: paths checked before any work, named the same way each time ------------


def test_images_and_exports_take_only_their_extensions(tmp_path: Path) -> None:
    from attnviz.outputs import check_export, check_image

    assert [check_image(tmp_path / f"h{ext}") for ext in (".png", ".svg", ".pdf")] == [
        ".png",
        ".svg",
        ".pdf",
    ]
    assert check_export(tmp_path / "t.json") == ".json"
    with pytest.raises(OutputProblem, match="--per-head"):
        check_image(tmp_path / "h.gif", "--per-head")
    with pytest.raises(OutputProblem, match="--export"):
        check_export(tmp_path / "t.png")


def test_a_folder_output_is_refused_when_it_is_a_file_and_made_when_missing(
    tmp_path: Path,
) -> None:
    from attnviz.outputs import check_folder, make_folder

    (tmp_path / "taken").write_text("x", encoding="utf-8")
    with pytest.raises(OutputProblem, match="--slides .*taken is a file, not a folder; give a"):
        check_folder(tmp_path / "taken", "--slides")
    with pytest.raises(OutputProblem):
        check_folder(tmp_path / "no" / "such" / "heads", "--per-head")  # its parent is missing
    check_folder(tmp_path / "heads", "--per-head")
    assert not (tmp_path / "heads").exists()  # checking makes nothing
    make_folder(tmp_path / "heads")
    assert (tmp_path / "heads").is_dir()


def test_per_head_files_are_numbered_from_1_and_zero_padded_to_sort() -> None:
    from attnviz.outputs import per_head_paths

    folder = Path("heads")
    assert per_head_paths(folder, [0, 1], 2, ".png") == [
        folder / "head_1.png",
        folder / "head_2.png",
    ]
    assert per_head_paths(folder, [0, 11], 12, ".svg") == [
        folder / "head_01.svg",
        folder / "head_12.svg",
    ]


def test_a_random_layer_is_exported_as_it_is(tmp_path: Path) -> None:
    from attnviz.core import trace_with_options
    from attnviz.outputs import write_export

    trace = trace_with_options("I am good", TraceOptions(heads=2, seed=0)).trace
    write_export([trace], tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz") as saved:
        assert saved["weights"].shape == (2, 3, 3)  # no layer axis
        np.testing.assert_array_equal(saved["weights"], trace.weights)


# -- two outputs of one run that are one file: refused before any work --------------------------

SAME_FILE = [
    (["heatmap", SENTENCE, "-o", "ph/head_1.png", "--per-head", "ph"], "--per-head ph writes"),
    (["heatmap", SENTENCE, "-o", "head_1.png", "--per-head", "."], "--per-head . writes"),
    (["heatmap", SENTENCE, "-o", "HEAD_02.png", "--per-head", "./"], "--per-head . writes"),
    (["cross", SENTENCE, "Je vais bien", "-o", "a.svg", "--svg", "a.svg"], "the same file"),
    (["cross", SENTENCE, "Je vais bien", "-o", "./a.svg", "--svg", "ph/../a.svg"], "the same"),
    (["explain", SENTENCE, "--svg", "s/01-title.svg", "--slides", "s"], "--slides s writes"),
    (["explain", SENTENCE, "--svg", "sl/01-title.svg", "--slides", "s"], "--slides s writes"),
    (["cross", SENTENCE, "Je vais bien", "-o", "s/02-tokens.png", "--slides", "s"], "--slides"),
    (["train", "previous", "--save", "m", "--history", "m/weights.npz"], "--save m writes"),
]


@pytest.mark.parametrize(("argv", "said"), SAME_FILE)
def test_two_outputs_that_are_one_file_are_refused_before_any_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    for folder in ("ph", "s", "m"):
        (tmp_path / folder).mkdir()
    (tmp_path / "sl").symlink_to("s")
    before = listing(tmp_path)
    assert run(argv) == ExitStatus.CANNOT_WRITE
    captured = capsys.readouterr()
    one_error_line(captured.err, said)
    assert captured.out == ""  # before the lesson, the training or a picture
    assert listing(tmp_path) == before


def test_a_file_beside_a_folder_option_but_not_one_of_its_names_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from attnviz.outputs import FolderOutput, check_apart, per_head_folder
    from attnviz.render.slides.layout import SLIDE_FILE

    slides_folder = FolderOutput(tmp_path, "--slides", SLIDE_FILE)
    check_apart([(tmp_path / "all.png", "--output")], [per_head_folder(tmp_path, ".png")])
    check_apart([(tmp_path / "head_1.svg", "--output")], [per_head_folder(tmp_path, ".png")])
    check_apart([(tmp_path / "lesson.svg", "--svg")], [slides_folder, None])
    check_apart([(tmp_path / "a.svg", "--svg"), (None, "--html")])
    with pytest.raises(OutputProblem, match="--svg .*a.svg and --output .*a.svg are the same"):
        check_apart([(tmp_path / "a.svg", "--svg"), (tmp_path / "x" / ".." / "a.svg", "--output")])


def test_the_same_output_staged_twice_is_refused(tmp_path: Path) -> None:
    """The last line of defence, should a command's check have missed a pair."""
    with pytest.raises(OutputProblem, match="written twice in one run"):
        with staged_writes() as outputs:
            outputs.write(tmp_path / "a.svg", lambda path: path.write_text("one"))
            outputs.write(tmp_path / "." / "a.svg", lambda path: path.write_text("two"))
    assert list(tmp_path.iterdir()) == []


# -- folder options: a dangling link, and links among the files they write ----------------------


@pytest.mark.parametrize("option", ["--slides", "--per-head"])
def test_a_dangling_folder_link_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    folder = tmp_path / "deck"
    folder.symlink_to(tmp_path / "missing")
    command = "heatmap" if option == "--per-head" else "explain"
    argv = [command, SENTENCE, option, str(folder), "-o", str(tmp_path / "all.png")]
    if command == "explain":
        argv = argv[:-2]
    assert run(argv) == ExitStatus.CANNOT_WRITE
    captured = capsys.readouterr()
    one_error_line(captured.err, "deck is a symbolic link to", "which does not exist")
    assert captured.out == "" and [path.name for path in tmp_path.iterdir()] == ["deck"]


def test_a_link_among_a_folders_files_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deck = tmp_path / "deck"
    deck.mkdir()
    (tmp_path / "notes.txt").write_text("kept", encoding="utf-8")
    (deck / "02-tokens.png").symlink_to("../notes.txt")
    assert run(["explain", SENTENCE, "--slides", str(deck)]) == ExitStatus.CANNOT_WRITE
    captured = capsys.readouterr()
    one_error_line(captured.err, "02-tokens.png is a symbolic link", "remove it or give another")
    assert captured.out == "" and (tmp_path / "notes.txt").read_text(encoding="utf-8") == "kept"


def test_a_folder_link_to_a_folder_is_written_through(tmp_path: Path) -> None:
    from attnviz.outputs import check_folder, make_folder

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    check_folder(tmp_path / "link", "--per-head")
    make_folder(tmp_path / "link")
    assert (tmp_path / "link").is_symlink()


def test_making_a_folder_where_a_dangling_link_is_fails_in_one_sentence(tmp_path: Path) -> None:
    from attnviz.outputs import make_folder

    (tmp_path / "deck").symlink_to(tmp_path / "missing")
    with pytest.raises(OutputProblem, match="a file or a broken link is there"):
        make_folder(tmp_path / "deck")


# -- a standard error that cannot be written (in a fresh process: e2e/test_output_paths.py) ----


class FullStream:
    """A standard error on a full disk."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")

    def isatty(self) -> bool:
        return False


@pytest.mark.slow
def test_a_full_standard_error_does_not_fail_a_run_that_wrote_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stderr", FullStream())
    picture = tmp_path / "it.png"
    assert run(["heatmap", SENTENCE, "-o", str(picture)]) == ExitStatus.SUCCESS
    assert picture.read_bytes().startswith(b"\x89PNG")
    assert run(["explain", SENTENCE, "--heads", "0"]) == ExitStatus.BAD_INPUT


def test_a_folder_by_a_per_head_name_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ph" / "head_2.png").mkdir(parents=True)
    argv = ["heatmap", SENTENCE, "-o", str(tmp_path / "all.png"), "--per-head"]
    assert run([*argv, str(tmp_path / "ph")]) == ExitStatus.CANNOT_WRITE
    one_error_line(capsys.readouterr().err, "head_2.png is a folder where a file is to be")
    assert not (tmp_path / "all.png").exists()


def test_a_path_through_a_file_or_to_a_fifo_is_named_for_what_it_is(tmp_path: Path) -> None:
    """The message says what the path is: a file where a folder should be, a FIFO, a device,
    or no name at all."""
    from attnviz.errors import OutputProblem
    from attnviz.files import check_output_path
    from attnviz.outputs import check_folder

    (tmp_path / "notes.txt").write_text("mine")
    os.mkfifo(tmp_path / "pipe")
    cases = [
        (lambda: check_output_path(tmp_path / "notes.txt" / "x.png", (".png",), "--output"),
         "notes.txt is a file, not a folder"),
        (lambda: check_output_path(Path(""), (".png",), "--output"), "names no file"),
        (lambda: check_folder(tmp_path / "pipe", "--slides"), "is a FIFO (named pipe)"),
        (lambda: check_folder(Path("/dev/null"), "--slides"), "is a device"),
    ]  # fmt: skip
    for call, expected in cases:
        with pytest.raises(OutputProblem, match=expected.replace("(", r"\(").replace(")", r"\)")):
            call()
    assert (tmp_path / "notes.txt").read_text() == "mine"
