"""Property-based tests: any Unicode sentence, any sizes, seeds and option combinations.

Three properties, checked on examples Hypothesis makes up (and shrinks when one fails):
  * the command line never shows a traceback (run() returns, never raises): it exits 0, or with
    a named code (2 usage, 3 bad input, 4 bad file, 5 cannot write) after one ``error:`` line on
    stderr, and never lets a control character through to the terminal;
  * every trace it can compute keeps the invariants of attention: shapes, weights that are
    probabilities summing to 1 per row, zeros where masked, and Z, Concat and the output equal
    to the products they are defined as;
  * a word-vector or weights file cut short or corrupted, or whose headers claim other sizes
    (a zip entry expanding to gigabytes, an .npy array larger than its file), loads, or is
    refused with a message naming it, and nothing else; so is what is not a regular file (a
    FIFO, a device, a folder, a broken link), at once.

HYPOTHESIS_PROFILE=ci (set by scripts/check) runs the ci profile's count of each (conftest.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import tempfile
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from attnviz.cli import run
from attnviz.core import trace_cross, trace_with_options
from attnviz.embeddings import OutOfVocabulary, load_embeddings
from attnviz.errors import AttnvizError, ExitStatus, FileProblem
from attnviz.options import TraceOptions
from attnviz.trace_files import load_trace
from attnviz.weights import load_weights

from support import examples

NAMED_EXIT_CODES = {int(status) for status in ExitStatus} - {int(ExitStatus.INTERRUPTED)}
WORDS = ["it", "the", "animal", "street", "I", "am", "good", "[red]x[/]", "東京", "é", "👍🏽"]
HOSTILE = ["\x1b[2J", "\x07", "\x08", "\r", "\x00", "\u202e", "\u200b", "\x9b", "\ufeff"]

sentences = st.one_of(
    st.text(max_size=40),  # any Unicode, mostly unlike a sentence
    st.lists(st.sampled_from(WORDS + HOSTILE), max_size=12).map(" ".join),  # like one
    st.binary(max_size=30).map(os.fsdecode),  # what argv holds when its bytes are not UTF-8
)
small_ints = st.integers(-2, 6).map(str)
size_options = st.fixed_dictionaries(
    {},
    optional={
        "--heads": st.sampled_from(["1", "2", "3", "4", "0", "-1", "x"]),
        "--d-model": st.sampled_from(["1", "4", "6", "8", "12", "16", "0", "99999", "2.5"]),
        "--seed": st.one_of(st.integers(-3, 2**70).map(str), st.just("nope")),
    },
)
view_options = st.fixed_dictionaries(
    {},
    optional={
        "--head": small_ints,
        "--decimals": st.integers(-1, 10).map(str),
        "--focus": st.one_of(st.sampled_from(WORDS), st.text(max_size=6)),
        "--pad-to": st.integers(-1, 20).map(str),
        "--top": small_ints,
        "--keys": small_ints,
        "--dk": st.sampled_from(["4,16", "1", "0", "", "a,b", "5000"]),
    },
)
flags = st.lists(st.sampled_from(["--show-weights", "--causal", "--step"]), unique=True)
exports = st.sampled_from([None, "trace.npz", "trace.json", "trace.csv", "no/such/folder/t.npz"])
COMMAND_OPTIONS = {
    "explain": {"--head", "--decimals", "--focus", "--pad-to", "--show-weights", "--causal"},
    "cross": {"--head", "--decimals", "--focus", "--show-weights", "--causal"},
    "heads": {"--focus", "--top"},
    "scaling": {"--keys", "--dk"},
}


def invoke(argv: list[str]) -> tuple[int, str, str]:
    """Run the real entry point, as the console script does, capturing what it prints."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = run(argv)
    return status, out.getvalue(), err.getvalue()


def terminal_controls(text: str) -> set[str]:
    return {
        char
        for char in text
        if char != "\n" and unicodedata.category(char) in ("Cc", "Cf", "Cs") and char != "\u200d"
    }


@pytest.mark.slow  # each example runs the command line: 100 in CI (the ci profile's 300 took 30 s)
@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    command=st.sampled_from(sorted(COMMAND_OPTIONS)),
    sentence=sentences,
    second=sentences,
    sizes=size_options,
    view=view_options,
    chosen_flags=flags,
    export=exports,
)
def test_the_command_line_never_shows_a_traceback(
    command: str,
    sentence: str,
    second: str,
    sizes: dict[str, str],
    view: dict[str, str],
    chosen_flags: list[str],
    export: str | None,
) -> None:
    allowed = COMMAND_OPTIONS[command]
    argv = [command]
    if command != "scaling":
        argv.append(sentence)
        if command == "cross":
            argv.append(second)
        for option, value in sizes.items():
            argv += [option, value]
    elif "--seed" in sizes:
        argv += ["--seed", sizes["--seed"]]
    for option, value in view.items():
        if option in allowed:
            argv += [option, value]
    argv += [flag for flag in chosen_flags if flag in allowed or flag == "--step"]
    with tempfile.TemporaryDirectory() as folder:
        if export is not None and command in ("explain", "cross"):
            argv += ["--export", str(Path(folder) / export)]
        status, stdout, stderr = invoke(argv)
        assert status in NAMED_EXIT_CODES, (status, argv, stderr)
        assert terminal_controls(stdout + stderr) == set(), argv
        lines = stderr.splitlines()
        assert all(line.startswith(("error: ", "note: ", "wrote ")) for line in lines), stderr
        if status == ExitStatus.SUCCESS:
            assert stdout.strip(), argv
            assert not any(line.startswith("error: ") for line in lines), stderr
            if export is not None and export.endswith(".npz") and "--export" in argv:
                with np.load(Path(folder) / export) as saved:
                    np.testing.assert_allclose(saved["weights"].sum(-1), 1.0, atol=1e-9)
        else:
            assert lines and lines[-1].startswith("error: "), (argv, stderr)
            assert sum(line.startswith("error: ") for line in lines) == 1, stderr
            # A failed run writes nothing: no export, no temporary file left behind.
            assert list(Path(folder).iterdir()) == []


@pytest.mark.slow
@settings(deadline=None)
@given(
    sentence=sentences,
    n_heads=st.integers(1, 4),
    d_k=st.integers(1, 6),
    seed=st.integers(0, 2**64),
    causal=st.booleans(),
    extra_padding=st.one_of(st.none(), st.integers(0, 5)),
    scale=st.sampled_from([1.0, 1e-6, 1e6, 0.0]),
)
def test_every_trace_keeps_the_invariants_of_attention(
    sentence: str,
    n_heads: int,
    d_k: int,
    seed: int,
    causal: bool,
    extra_padding: int | None,
    scale: float,
) -> None:
    d_model = n_heads * d_k
    try:
        from attnviz.tokens import tokenize

        tokens = tokenize(sentence)
    except AttnvizError:
        assume(False)
        return
    n_real = len(tokens)
    embeddings = np.random.default_rng(seed).standard_normal((n_real, d_model)) * scale
    pad_to = None if extra_padding is None else n_real + extra_padding
    trace = trace_with_options(
        tokens,
        TraceOptions(heads=n_heads, seed=seed, causal=causal, pad_to=pad_to),
        embeddings=embeddings,
    ).trace
    n = trace.n_tokens
    h = n_heads
    assert trace.tokens[:n_real] == tuple(tokens) and n == (pad_to or n_real)
    assert trace.Q.shape == trace.K.shape == trace.V.shape == trace.Z.shape == (h, n, d_k)
    assert trace.scores.shape == trace.scaled.shape == trace.weights.shape == (h, n, n)
    assert trace.concat.shape == (n, d_model) and trace.output.shape == (n, d_model)
    for name in ("Q", "K", "V", "scores", "scaled", "weights", "Z", "concat", "output"):
        assert np.isfinite(getattr(trace, name)).all(), name
    # Weights are probabilities: non-negative, each row summing to 1.
    assert (trace.weights >= 0).all()
    np.testing.assert_allclose(trace.weights.sum(-1), 1.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(trace.scaled, trace.scores / np.sqrt(d_k), rtol=1e-12, atol=0)
    if trace.mask is not None:
        assert (trace.weights[:, ~trace.mask] == 0).all()
        if causal:
            assert not np.triu(trace.mask, 1).any()
        if pad_to is not None:
            assert not trace.mask[:, n_real:].any()
    else:
        assert not causal and pad_to is None
    # Z, Concat and the output are exactly what they are defined as.
    tolerance = {"rtol": 1e-9, "atol": 1e-9 * max(1.0, float(np.abs(trace.V).max()))}
    np.testing.assert_allclose(trace.Z, trace.weights @ trace.V, **tolerance)
    np.testing.assert_array_equal(trace.concat, np.concatenate(list(trace.Z), axis=-1))
    out_scale = max(1.0, float(np.abs(trace.concat).max()) * float(np.abs(trace.W_O).max()))
    np.testing.assert_allclose(
        trace.output, trace.concat @ trace.W_O, rtol=1e-9, atol=1e-9 * out_scale * d_model
    )
    # Each z_i lies in the convex hull of the value vectors: between their least and greatest.
    slack = 1e-9 * max(1.0, float(np.abs(trace.V).max()))
    assert (trace.Z <= trace.V.max(axis=1, keepdims=True) + slack).all()
    assert (trace.Z >= trace.V.min(axis=1, keepdims=True) - slack).all()


@pytest.mark.slow
@settings(deadline=None)
@given(source=sentences, target=sentences, seed=st.integers(0, 1000))
def test_cross_attention_rows_are_over_the_source_words(
    source: str, target: str, seed: int
) -> None:
    try:
        trace = trace_cross(source, target, TraceOptions(seed=seed)).trace
    except AttnvizError:
        return  # an empty or too-long side: refused with a message, which is the point
    n_target, n_source = len(trace.tokens), len(trace.key_tokens)
    assert trace.weights.shape == (trace.n_heads, n_target, n_source)
    np.testing.assert_allclose(trace.weights.sum(-1), 1.0, rtol=0, atol=1e-9)


def valid_files() -> dict[str, bytes]:
    """One good file of each format, for the fuzzer to cut and corrupt."""
    vocabulary = {"the": [1.0, 2.0], "cat": [3.0, -4.0]}
    files: dict[str, bytes] = {
        ".txt": b"the 1 2\ncat 3 -4\n",
        ".json": json.dumps(vocabulary).encode(),
    }
    for extension, save in ((".npy", np.save), (".npz", np.savez), ("z.npz", np.savez_compressed)):
        buffer = io.BytesIO()
        if extension == ".npy":
            save(buffer, np.array(list(vocabulary.values())))
        else:
            save(
                buffer,
                words=np.array(list(vocabulary)),
                vectors=np.array(list(vocabulary.values())),
            )
        files[extension] = buffer.getvalue()
    return files


VALID_FILES = valid_files()


def claiming(content: bytearray, size: int) -> bytearray:
    """``content`` with its headers claiming ``size``: every zip entry's uncompressed size (in
    the local and central headers), or the rows of an .npy header's shape."""
    if content.startswith(b"PK"):
        for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
            start = content.find(signature)
            while start >= 0:
                content[start + offset : start + offset + 4] = (size % 2**32).to_bytes(4, "little")
                start = content.find(signature, start + 4)
    elif content.startswith(b"\x93NUMPY\x01\x00"):
        length = int.from_bytes(content[8:10], "little")
        header = bytes(content[10 : 10 + length]).rstrip(b" \n")
        header = header.replace(b"(2, 2)", f"({size}, 2)".encode())
        if len(header) < length:
            content[10 : 10 + length] = header.ljust(length - 1) + b"\n"
    return content


@st.composite
def damaged_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid file cut short, with bytes overwritten, replaced by random bytes, or with headers
    that claim other sizes (from nothing to terabytes)."""
    kind = draw(st.sampled_from(sorted(VALID_FILES)))
    content = bytearray(VALID_FILES[kind])
    damage = draw(st.sampled_from(["cut", "overwrite", "random", "sizes"]))
    if damage == "sizes":
        size = draw(st.one_of(st.sampled_from([0, 1, 2**31 - 1, 2**32 - 1]), st.integers(0, 2**40)))
        content = claiming(content, size)
    elif damage == "cut":
        content = content[: draw(st.integers(0, len(content)))]
    elif damage == "overwrite":
        for _ in range(draw(st.integers(1, 8))):
            content[draw(st.integers(0, len(content) - 1))] = draw(st.integers(0, 255))
    else:
        content = bytearray(draw(st.binary(max_size=200)))
    return (".npz" if kind == "z.npz" else kind), bytes(content)


@pytest.mark.slow
@settings(deadline=None)
@given(damaged=damaged_files())
def test_a_damaged_file_loads_or_is_refused_with_a_message_never_a_crash(
    damaged: tuple[str, bytes],
) -> None:
    extension, content = damaged
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"vectors{extension}"
        path.write_bytes(content)
        try:
            embeddings = load_embeddings(path, ["the", "cat"], oov=OutOfVocabulary.random)
        except FileProblem as problem:
            assert path.name in problem.message
        else:
            assert embeddings.X.shape[0] == 2 and np.isfinite(embeddings.X).all()
        if extension in (".npz", ".json"):
            try:
                load_weights(path)
            except FileProblem as problem:
                assert path.name in problem.message


@pytest.mark.slow  # draws a figure for each of its 60 examples
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sentence=sentences,
    sizes=size_options,
    extra=st.lists(
        st.sampled_from(
            [
                ["--style", "lines"],
                ["--style", "grid"],
                ["--cmap", "magma"],
                ["--cmap", "no-such-map"],
                ["--causal"],
                ["--pad-to", "9"],
                ["--head", "2"],
                ["--focus", "it"],
                ["--per-head", "heads"],
            ]
        ),
        max_size=3,
    ),
    name=st.sampled_from(["out.png", "out.svg", "out.pdf", "out.gif"]),
)
def test_heatmap_never_shows_a_traceback_and_writes_whole_files_or_none(
    sentence: str, sizes: dict[str, str], extra: list[list[str]], name: str
) -> None:
    """Fewer examples: each draws a figure, about a second."""
    with tempfile.TemporaryDirectory() as folder:
        argv = ["heatmap", sentence, "-o", str(Path(folder) / name)]
        for option, value in sizes.items():
            argv += [option, value]
        for option in extra:
            argv += [str(Path(folder) / part) if part == "heads" else part for part in option]
        if any(option == ["--per-head", "heads"] for option in extra):
            (Path(folder) / "heads").mkdir()
        status, stdout, stderr = invoke(argv)
        assert status in NAMED_EXIT_CODES, (status, argv, stderr)
        assert terminal_controls(stdout + stderr) == set(), argv
        written = sorted(p.name for p in Path(folder).rglob("*") if p.is_file())
        if status == ExitStatus.SUCCESS:
            assert name in written
            assert (Path(folder) / name).stat().st_size > 0
        else:
            assert written == [], (argv, stderr)
        assert not [n for n in written if n.endswith(".tmp")]


NOT_FILES = [
    "fifo",
    "link to a fifo",
    "/dev/zero",
    "link to /dev/zero",
    "folder",
    "link to a folder",
    "broken link",
    "loop of links",
]


def not_a_file(folder: Path, kind: str, extension: str) -> Path:
    """Something under a file's name that is not a regular file."""
    path = Path("/dev/zero") if kind == "/dev/zero" else folder / f"input{extension}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind.startswith(("link", "broken", "loop")):
        target = {
            "link to a fifo": folder / "fifo",
            "link to /dev/zero": Path("/dev/zero"),
            "link to a folder": folder / "folder",
            "broken link": folder / "nothing",
            "loop of links": path,
        }[kind]
        if kind == "link to a fifo":
            os.mkfifo(target)
        elif kind == "link to a folder":
            target.mkdir()
        path.symlink_to(target)
    return path


def took_too_long(signal_number: int, frame: object) -> None:
    raise TimeoutError("a loader blocked or read without end")


@given(
    kind=st.sampled_from(NOT_FILES),
    extension=st.sampled_from([".txt", ".vec", ".npy", ".npz", ".json"]),
    loader=st.sampled_from(["embeddings", "weights", "trace"]),
)
def test_what_is_not_a_regular_file_is_refused_at_once_with_its_name(
    kind: str, extension: str, loader: str
) -> None:
    load = {
        "embeddings": lambda path: load_embeddings(path, ["the", "cat"]),
        "weights": load_weights,
        "trace": load_trace,
    }[loader]
    previous = signal.signal(signal.SIGALRM, took_too_long)
    signal.alarm(10)  # a FIFO opened for reading would block: fail instead of hanging
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = not_a_file(Path(folder), kind, extension)
            with pytest.raises(FileProblem) as refused:
                load(path)
            assert str(path) in refused.value.message
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
