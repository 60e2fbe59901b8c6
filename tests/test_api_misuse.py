"""The Python API misused: every public function of attnviz (attnviz._PUBLIC and the commands'
functions) given arguments of the wrong kind, size or shape refuses them with an AttnvizError of
one sentence, never a TypeError from deep inside, a hang or a memory blow-up: each call runs
under a time limit and an address-space limit, and an endless iterator is refused, not read."""

from __future__ import annotations

import json
import re
import resource
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnviz
from attnviz.errors import AttnvizError

from support import needs_model

#: Time for one call: every refusal here comes before any work.
SECONDS = 10
#: Address space one call may add: a refusal allocates nothing; an endless list would.
EXTRA_BYTES = 1 << 30


@contextmanager
def bounded() -> Iterator[None]:
    """A time limit (SIGALRM raises) and an address-space limit above what the process holds."""

    def too_long(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {SECONDS} s")

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        in_use = int(statm.read().split()[0]) * resource.getpagesize()
    limit = in_use + EXTRA_BYTES
    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(SECONDS)
    if hard == resource.RLIM_INFINITY or limit < hard:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def shown() -> attnviz.Explanation:
    return attnviz.explain("I am good")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("misuse")
    (folder / "vectors.json").write_text(json.dumps({"i": [1.0, 2.0], "am": [3.0, 4.0]}))
    return folder


A = np.ones((2, 3, 3))
CONFIG = attnviz.AttentionConfig()
NOT_A_TRACE = "give a trace|takes a trace"

# (label, call, what the sentence must say): each call gets the explanation of "I am good" and
# a folder of files.
Call = Callable[[attnviz.Explanation, Path], object]
MISUSES: list[tuple[str, Call, str]] = [
    # explain / cross / compare / ablate: sentences, paths, numbers, choices
    ("explain(None)", lambda e, f: attnviz.explain(None), "give the sentence as a string"),
    ("explain(123)", lambda e, f: attnviz.explain(123), "give the sentence as a string"),
    ("explain(bytes)", lambda e, f: attnviz.explain(b"I am good"), "decode it first"),
    ("explain(list)", lambda e, f: attnviz.explain(["I", "am"]), "as a string"),
    (
        "explain(focus='am:²')",
        lambda e, f: attnviz.explain("I am good", focus="am:²"),
        "'am:²' is not in the sentence",
    ),
    (
        "explain(focus='am:١')",
        lambda e, f: attnviz.explain("I am good", focus="am:١"),
        "not in the sentence",
    ),
    (
        "explain(focus='am:9…9')",
        lambda e, f: attnviz.explain("I am good", focus="am:" + "9" * 5000),
        "at most 512 tokens",
    ),
    (
        "explain(focus=bytes)",
        lambda e, f: attnviz.explain("I am good", focus=b"am"),
        "give a string",
    ),
    (
        "explain(embeddings=123)",
        lambda e, f: attnviz.explain("I am good", embeddings=123),
        "give a file path",
    ),
    (
        "explain(embeddings=NUL)",
        lambda e, f: attnviz.explain("I am good", embeddings="a\x00.npy"),
        "NUL character",
    ),
    (
        "explain(embeddings=bytes)",
        lambda e, f: attnviz.explain("I am good", embeddings=b"x.npy"),
        "os.fsdecode",
    ),
    (
        "explain(weights=1.5)",
        lambda e, f: attnviz.explain("I am good", weights=1.5),
        "give a file path",
    ),
    (
        "explain(weights=NUL)",
        lambda e, f: attnviz.explain("I am good", weights="w\x00.npz"),
        "NUL character",
    ),
    (
        "explain(heads=10**5000)",
        lambda e, f: attnviz.explain("I am good", heads=10**5000),
        "far too large",
    ),
    (
        "explain(seed=10**5000)",
        lambda e, f: attnviz.explain("I am good", seed=10**5000),
        "at most 40 digits",
    ),
    (
        "explain(head=10**40)",
        lambda e, f: attnviz.explain("I am good", head=10**40),
        "far too large",
    ),
    ("explain(heads='2')", lambda e, f: attnviz.explain("I am good", heads="2"), "whole number"),
    ("explain(oov=[])", lambda e, f: attnviz.explain("I am good", oov=[]), "not a choice"),
    (
        "explain(positions=None)",
        lambda e, f: attnviz.explain("I am good", positions=None),
        "not a choice",
    ),
    (
        "explain(causal='yes')",
        lambda e, f: attnviz.explain("I am good", causal="yes"),
        "True or False",
    ),
    ("explain(model=123)", lambda e, f: attnviz.explain("I am good", model=123), "give a string"),
    (
        "explain(surrogate, model)",
        lambda e, f: attnviz.explain("I am \ud800 good", model="coref"),
        "lone surrogate, U.D800",
    ),
    ("cross(None, …)", lambda e, f: attnviz.cross(None, "Je suis"), "source=None"),
    ("cross(…, 123)", lambda e, f: attnviz.cross("I am", 123), "target=123"),
    (
        "cross(focus='suis:²')",
        lambda e, f: attnviz.cross("I am", "Je suis", focus="suis:²"),
        "not in the sentence",
    ),
    (
        "cross(embeddings=123)",
        lambda e, f: attnviz.cross("I am", "Je suis", embeddings=123),
        "give a file path",
    ),
    ("compare(None, …)", lambda e, f: attnviz.compare(None, "it is"), "sentence_a=None"),
    ("compare(…, bytes)", lambda e, f: attnviz.compare("it is", b"it"), "decode it first"),
    (
        "compare(focus='it:²')",
        lambda e, f: attnviz.compare("I am it", "it is", focus="it:²"),
        "not in",
    ),
    (
        "compare(weights=NUL)",
        lambda e, f: attnviz.compare("it is", "it was", weights="\x00"),
        "NUL character",
    ),
    ("ablate(None)", lambda e, f: attnviz.ablate(None, model="coref"), "sentence=None"),
    (
        "ablate(pad_to='3')",
        lambda e, f: attnviz.ablate("it was", model="coref", pad_to="3"),
        "whole number",
    ),
    # lesson / heatmap / heads / page / to_html / save: views of a trace
    ("lesson(None)", lambda e, f: attnviz.lesson(None), NOT_A_TRACE),
    (
        "lesson(steps=iter(range(10**9)))",
        lambda e, f: attnviz.lesson(e, steps=iter(range(10**9))),
        "more than 4,096 items",
    ),
    (
        "lesson(steps=endless)",
        lambda e, f: attnviz.lesson(e, steps=iter(int, 1)),
        "more than 4,096 items",
    ),
    ("lesson(steps=b'4')", lambda e, f: attnviz.lesson(e, steps=b"4"), "give step numbers"),
    ("lesson(steps={4: 1})", lambda e, f: attnviz.lesson(e, steps={4: 1}), "give step numbers"),
    ("lesson(steps=[10**5000])", lambda e, f: attnviz.lesson(e, steps=[10**5000]), "far too large"),
    ("lesson(steps='١-٣')", lambda e, f: attnviz.lesson(e, steps="١-٣"), "neither a step number"),
    ("lesson(decimals='2')", lambda e, f: attnviz.lesson(e, decimals="2"), "whole number"),
    ("lesson(width=None)", lambda e, f: attnviz.lesson(e, width=None), "width=None"),
    (
        "lesson(block=1.5)",
        lambda e, f: attnviz.lesson(e, steps="blockwise", block=1.5),
        "whole number",
    ),
    ("heatmap(None)", lambda e, f: attnviz.heatmap(None), NOT_A_TRACE),
    ("heatmap(cmap=None)", lambda e, f: attnviz.heatmap(e, cmap=None), "cmap=None: give a string"),
    ("heatmap(cmap=1)", lambda e, f: attnviz.heatmap(e, cmap=1), "give a string"),
    ("heatmap(style=None)", lambda e, f: attnviz.heatmap(e, style=None), "not a choice"),
    ("heatmap(measure=[])", lambda e, f: attnviz.heatmap(e, measure=[]), "not a choice"),
    ("heads(rank_by=None)", lambda e, f: attnviz.heads(e, rank_by=None), "not a choice"),
    ("heads(3)", lambda e, f: attnviz.heads(3), NOT_A_TRACE),
    ("page(None)", lambda e, f: attnviz.page(None), NOT_A_TRACE),
    (
        "page(decimals=None)",
        lambda e, f: attnviz.page(e, decimals=None),
        "out of range|whole number",
    ),
    (
        "page(steps=iter(range(10**9)))",
        lambda e, f: attnviz.page(e, steps=iter(range(10**9))),
        "more than 4,096",
    ),
    ("page().save(123)", lambda e, f: attnviz.page(e).save(123), "give a file path"),
    ("page().save(None)", lambda e, f: attnviz.page(e).save(None), "path=None"),
    ("page().save(NUL)", lambda e, f: attnviz.page(e).save(f / "a\x00.html"), "NUL character"),
    ("to_html(decimals='2')", lambda e, f: e.to_html(decimals="2"), "whole number"),
    ("to_html(decimals=None)", lambda e, f: e.to_html(decimals=None), "decimals=None"),
    # scaling / divisor_rows: lists and sizes
    ("generate(None)", lambda e, f: attnviz.generate(None), "give the sentence as a string"),
    ("generate(bytes)", lambda e, f: attnviz.generate(b"a b"), "decode it first"),
    ("generate('')", lambda e, f: attnviz.generate(" "), "The prompt is empty"),
    ("generate(tokens='3')", lambda e, f: attnviz.generate("a b", tokens="3"), "whole number"),
    ("generate(tokens=10**9)", lambda e, f: attnviz.generate("a b", tokens=10**9), "1 to 512"),
    (
        "generate(temperature='hot')",
        lambda e, f: attnviz.generate("a b", temperature="hot"),
        "give a number",
    ),
    ("generate(top_p=nan)", lambda e, f: attnviz.generate("a b", top_p=float("nan")), "top_p=nan"),
    ("generate(top_k=2.5)", lambda e, f: attnviz.generate("a b", top_k=2.5), "whole number"),
    ("generate(seed=-1)", lambda e, f: attnviz.generate("a b", seed=-1), "from 0"),
    ("generate(model=123)", lambda e, f: attnviz.generate("a b", model=123), "model's name"),
    ("generate(dtype='half')", lambda e, f: attnviz.generate("a b", dtype="half"), "float64"),
    ("generate(model=coref)", lambda e, f: attnviz.generate("a b", model="coref"), "not a decoder"),
    ("generate(window=0)", lambda e, f: attnviz.generate("a b", window=0), "window=0"),
    (
        "generate(keep_first=1)",
        lambda e, f: attnviz.generate("a b", keep_first=1),
        "give window=W too",
    ),
    ("generate(sinks='yes')", lambda e, f: attnviz.generate("a b", sinks="yes"), "True or False"),
    ("generate(lens=1)", lambda e, f: attnviz.generate("a b", lens=1), "True or False"),
    ("lens(None)", lambda e, f: attnviz.lens(None), "give the sentence as a string"),
    ("lens(top=0)", lambda e, f: attnviz.lens("a b", top=0), "top=0: show 1 to 20"),
    ("lens(focus=3)", lambda e, f: attnviz.lens("a b", focus=3), "focus=3: give a string"),
    ("lens(focus='z')", lambda e, f: attnviz.lens("a b", focus="z"), "not a token of the prompt"),
    ("scaling(None)", lambda e, f: attnviz.scaling(None), "give sizes"),
    ("scaling(123)", lambda e, f: attnviz.scaling(123), "give sizes"),
    ("scaling(b'4')", lambda e, f: attnviz.scaling(b"4"), "give sizes"),
    ("scaling('١٦')", lambda e, f: attnviz.scaling("١٦"), "not a whole number"),
    ("scaling('9…9')", lambda e, f: attnviz.scaling("-" + "9" * 5000), "1 or more"),
    (
        "scaling(iter(range(10**9)))",
        lambda e, f: attnviz.scaling(iter(range(10**9))),
        "more than 4,096",
    ),
    ("scaling(keys=None)", lambda e, f: attnviz.scaling(keys=None), "keys=None"),
    # exercise: its kinds, its seed, its sentence
    ("exercise(b'x')", lambda e, f: attnviz.exercise(b"x"), "decode it first"),
    ("exercise(kind='sum')", lambda e, f: attnviz.exercise("a b", kind="sum"), "no kind of"),
    ("exercise(kind='rope')", lambda e, f: attnviz.exercise("a b", kind="rope"), "positions="),
    ("exercise(kind=',')", lambda e, f: attnviz.exercise("a b", kind=","), "kind is empty"),
    ("exercise(seed=-1)", lambda e, f: attnviz.exercise("a b", seed=-1), "seed"),
    ("divisor_rows(endless)", lambda e, f: attnviz.divisor_rows(iter(int, 1)), "more than 4,096"),
    ("divisor_rows(d_k='64')", lambda e, f: attnviz.divisor_rows(d_k="64"), "whole number"),
    ("divisor_rows([10**9])", lambda e, f: attnviz.divisor_rows([10**9]), "at most 512 tokens"),
    (
        "divisor_rows(queries=10**5)",
        lambda e, f: attnviz.divisor_rows([512], d_k=4096, queries=100_000),
        "random numbers",
    ),
    # the layer's pieces: tokens, configs, embeddings, weights, traces and their files
    ("tokenize(None)", lambda e, f: attnviz.tokenize(None), "as a string"),
    ("tokenize(bytes)", lambda e, f: attnviz.tokenize(b"I am"), "decode it first"),
    ("trace_attention(123)", lambda e, f: attnviz.trace_attention(123), "list of strings"),
    ("trace_attention([1, 2])", lambda e, f: attnviz.trace_attention([1, 2]), "list of strings"),
    (
        "trace_attention(config=1)",
        lambda e, f: attnviz.trace_attention("I am", config=1),
        "AttentionConfig",
    ),
    (
        "trace_attention(embeddings=123)",
        lambda e, f: attnviz.trace_attention("I am", embeddings=123),
        "file path",
    ),
    (
        "trace_attention(embeddings=text)",
        lambda e, f: attnviz.trace_attention("I am", embeddings=np.full((2, 8), "a")),
        "real numbers",
    ),
    (
        "trace_attention(embeddings=dates)",
        lambda e, f: attnviz.trace_attention("I am", embeddings=np.zeros((2, 8), "datetime64[D]")),
        "real numbers",
    ),
    (
        "trace_attention(weights=123)",
        lambda e, f: attnviz.trace_attention("I am", weights=123),
        "file path",
    ),
    ("AttentionConfig(10**5000)", lambda e, f: attnviz.AttentionConfig(10**5000), "far too large"),
    ("AttentionConfig('8')", lambda e, f: attnviz.AttentionConfig("8"), "positive whole number"),
    ("load_embeddings(None)", lambda e, f: attnviz.load_embeddings(None, ["i"]), "path=None"),
    (
        "load_embeddings(tokens='i am')",
        lambda e, f: attnviz.load_embeddings(f / "vectors.json", "i am"),
        "list of strings",
    ),
    (
        "load_embeddings(oov='x')",
        lambda e, f: attnviz.load_embeddings(f / "vectors.json", ["i"], oov="x"),
        "not a choice",
    ),
    (
        "random_embeddings(None)",
        lambda e, f: attnviz.random_embeddings(None, 8, 0),
        "list of strings",
    ),
    (
        "random_embeddings(d_model=10**12)",
        lambda e, f: attnviz.random_embeddings(["a"], 10**12, 0),
        "d_model from 1",
    ),
    (
        "random_embeddings(seed=None)",
        lambda e, f: attnviz.random_embeddings(["a"], 8, None),
        "seed=None",
    ),
    ("load_weights(None)", lambda e, f: attnviz.load_weights(None), "path=None"),
    (
        "load_weights(layer='1')",
        lambda e, f: attnviz.load_weights(f / "w.npz", layer="1"),
        "whole number",
    ),
    (
        "random_weights(None, rng)",
        lambda e, f: attnviz.random_weights(None, np.random.default_rng()),
        "AttentionConfig",
    ),
    ("random_weights(config, 0)", lambda e, f: attnviz.random_weights(CONFIG, 0), "Generator"),
    (
        "AttentionWeights(None, …)",
        lambda e, f: attnviz.AttentionWeights(None, None, None, None),
        "W_Q holds None",
    ),
    ("AttentionWeights(text)", lambda e, f: attnviz.AttentionWeights(*"abcd"), "W_Q holds <U1"),
    ("load_trace(None)", lambda e, f: attnviz.load_trace(None), "path=None"),
    ("load_trace(123)", lambda e, f: attnviz.load_trace(123), "give a file path"),
    ("load_trace(NUL)", lambda e, f: attnviz.load_trace("t\x00.npz"), "NUL character"),
    ("export_trace(None, …)", lambda e, f: attnviz.export_trace(None, f / "x.npz"), "give a trace"),
    (
        "export_trace(explanation, …)",
        lambda e, f: attnviz.export_trace(e, f / "x.npz"),
        "give a trace",
    ),
    ("export_trace(…, 123)", lambda e, f: attnviz.export_trace(e.trace, 123), "give a file path"),
    ("export_trace(….txt)", lambda e, f: attnviz.export_trace(e.trace, f / "x.txt"), "not .txt"),
    (
        "export_layers([], …)",
        lambda e, f: attnviz.export_layers([], f / "x.npz"),
        "one or more traces",
    ),
    (
        "export_layers(trace, …)",
        lambda e, f: attnviz.export_layers(e.trace, f / "x.npz"),
        "give a list",
    ),
    (
        "export_layers(endless, …)",
        lambda e, f: attnviz.export_layers(iter(int, 1), f / "x.npz"),
        "more than 4,096",
    ),
    (
        "export_layers([1], …)",
        lambda e, f: attnviz.export_layers([1], f / "x.npz"),
        "traces\\[0\\]=1",
    ),
    # the math, one function per step
    ("softmax(None)", lambda e, f: attnviz.softmax(None), "numpy array"),
    ("softmax([[1, 2]])", lambda e, f: attnviz.softmax([[1.0, 2.0]]), "numpy array"),
    ("softmax(text)", lambda e, f: attnviz.softmax(np.array([["a", "b"]])), "real numbers"),
    ("scale_scores(d_k=0)", lambda e, f: attnviz.scale_scores(A, 0), "width of a head"),
    ("scale_scores(d_k='4')", lambda e, f: attnviz.scale_scores(A, "4"), "width of a head"),
    (
        "attention_scores(d_k differ)",
        lambda e, f: attnviz.attention_scores(np.ones((2, 3, 4)), np.ones((2, 3, 5))),
        "must be equal",
    ),
    (
        "attention_scores(3 heads, 2 shared)",
        lambda e, f: attnviz.attention_scores(np.ones((3, 3, 4)), np.ones((2, 3, 4))),
        "must divide",
    ),
    (
        "weigh_values(keys differ)",
        lambda e, f: attnviz.weigh_values(A, np.ones((2, 4, 4))),
        "must be equal",
    ),
    (
        "weigh_values(out=a list)",
        lambda e, f: attnviz.weigh_values(A, np.ones((2, 3, 5)), out=[[0.0]]),
        "give a numpy array to write into",
    ),
    (
        "weigh_values(out of another shape)",
        lambda e, f: attnviz.weigh_values(A, np.ones((2, 3, 5)), out=np.empty((2, 3, 4))),
        "out is an array of float64 .2, 3, 4.; the result is float64 .2, 3, 5.",
    ),
    (
        "weigh_values(out of float32, a float64 result)",
        lambda e, f: attnviz.weigh_values(
            A, np.ones((2, 3, 5)), out=np.empty((2, 3, 5), np.float32)
        ),
        "out is an array of float32",
    ),
    (
        "project(rows differ)",
        lambda e, f: attnviz.project(np.ones((3, 8)), np.ones((7, 2, 4))),
        "must be equal",
    ),
    ("project(None, None)", lambda e, f: attnviz.project(None, None), "numpy array"),
    (
        "project_out(rows differ)",
        lambda e, f: attnviz.project_out(np.ones((3, 8)), np.ones((7, 8))),
        "must be equal",
    ),
    ("concat_heads(2-d)", lambda e, f: attnviz.concat_heads(np.ones((3, 8))), "at least 3"),
    (
        "multi_head_attention(None, …)",
        lambda e, f: attnviz.multi_head_attention(None, None, None),
        "weights=None",
    ),
    (
        "multi_head_attention(rows differ)",
        lambda e, f: attnviz.multi_head_attention(
            ["a", "b"], np.ones((3, 8)), attnviz.random_weights(CONFIG, np.random.default_rng())
        ),
        "one row per token",
    ),
]


def test_every_public_function_is_misused_here() -> None:
    """Each function attnviz exports (not its records, enums and exception) has a misuse."""
    called = " ".join(label for label, _, _ in MISUSES)
    functions = {
        name
        for name in (*attnviz._PUBLIC, "explain", "cross", "lesson", "heatmap", "heads", "scaling")
        if callable(getattr(attnviz, name))
        and name not in {"AttnvizError", "ExitStatus", "Embeddings", "Provenance", "Explanation"}
        and name != "AttentionTrace"
    }
    assert {name for name in functions if f"{name}(" not in called} == set()
    assert len(MISUSES) >= 56


@pytest.mark.parametrize(("label", "call", "says"), MISUSES, ids=[m[0] for m in MISUSES])
def test_misuse_is_one_sentence_of_attnviz(
    label: str, call: Call, says: str, shown: attnviz.Explanation, files: Path
) -> None:
    with bounded(), pytest.raises(AttnvizError) as refused:
        call(shown, files)
    message = str(refused.value)
    assert "\n" not in message and len(message) < 400, message
    assert refused.value.args == (message,)
    assert re.search(says, message), message
    assert not list(files.glob("x.*")) and not list(files.glob("*.tmp")), "nothing written"


@needs_model
@pytest.mark.slow
def test_a_lone_surrogate_is_refused_before_the_model_tokenizer() -> None:
    with bounded(), pytest.raises(AttnvizError, match="lone surrogate, U\\+D800"):
        attnviz.explain("I am \ud800 good", model="minilm")
