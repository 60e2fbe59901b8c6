"""Every public function of attnviz given hostile values — None, True, text, np.matrix, object,
complex and float16 arrays, 0-d and empty arrays, NaN and ∞, whole numbers of 400 digits, wrong
shapes, broadcast views of terabytes — returns a right result or raises AttnvizError of one
short line, under a memory limit, and no warning leaks (pytest runs with warnings as errors).
Then attnviz.api.train's arguments and files, its docstring examples, and the length of every
message that lists words."""

from __future__ import annotations

import doctest
import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_api_misuse import bounded

import attnviz
from attnviz.errors import LISTED_CHARACTERS, AttnvizError, listed

with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix warns when made
    MATRIX = np.matrix([[1.0, 2.0], [3.0, 4.0]])

#: A view of 8 bytes that stands for 2⁴⁴ numbers (128 TiB as float64).
HUGE = np.broadcast_to(np.zeros(1), (1 << 22, 1 << 22))
HUGE_3D = np.broadcast_to(np.zeros(1), (1 << 10, 1 << 12, 1 << 12))

HOSTILE: list[tuple[str, object]] = [
    ("None", None),
    ("True", True),
    ("text", "abc"),
    ("huge int", 10**400),
    ("nan", float("nan")),
    ("inf", float("inf")),
    ("matrix", MATRIX),
    ("masked", np.ma.masked_array(np.ones((2, 3, 3)), mask=np.zeros((2, 3, 3), dtype=bool))),
    ("object array", np.array([[[1, 2], [3, 4]]], dtype=object)),
    ("complex array", np.ones((2, 3, 3)) * 1j),
    ("bool array", np.ones((2, 3, 3), dtype=bool)),
    ("float16 array", np.ones((2, 3, 3), dtype=np.float16)),
    ("0-d array", np.array(1.0)),
    ("empty array", np.ones((2, 0, 3))),
    ("nan array", np.full((2, 3, 3), np.nan)),
    ("inf array", np.full((2, 3, 3), np.inf)),
    ("wrong shape", np.ones((5, 7))),
    ("huge broadcast", HUGE),
    ("huge broadcast 3-d", HUGE_3D),
    ("numpy int", np.int64(4)),
]

GOOD = np.ones((2, 3, 4))
W = np.ones((2, 8, 4))
CONFIG = attnviz.AttentionConfig()
WEIGHTS = attnviz.random_weights(CONFIG, np.random.default_rng(0))
X = np.ones((3, 8))


def _with_keyword(keyword: str) -> Callable[[Any], object]:
    """multi_head_attention with the hostile value as ``keyword``."""
    return lambda v: attnviz.multi_head_attention(["a"] * 3, X, WEIGHTS, **{keyword: v})


#: Each public function, called with the hostile value in one argument, good ones elsewhere.
CALLS: dict[str, Callable[[Any], object]] = {
    "softmax": lambda v: attnviz.softmax(v),
    "scale_scores(scores)": lambda v: attnviz.scale_scores(v, 4),
    "scale_scores(d_k)": lambda v: attnviz.scale_scores(GOOD, v),
    "attention_scores(q)": lambda v: attnviz.attention_scores(v, GOOD),
    "attention_scores(k)": lambda v: attnviz.attention_scores(GOOD, v),
    "weigh_values(weights)": lambda v: attnviz.weigh_values(v, GOOD[:, :, :3]),
    "weigh_values(v)": lambda v: attnviz.weigh_values(np.ones((2, 3, 3)), v),
    "concat_heads": lambda v: attnviz.concat_heads(v),
    "project(x)": lambda v: attnviz.project(v, W),
    "project(w)": lambda v: attnviz.project(X, v),
    "project(b)": lambda v: attnviz.project(X, W, v),
    "project_out(concat)": lambda v: attnviz.project_out(v, np.ones((8, 8))),
    "project_out(w_o)": lambda v: attnviz.project_out(X, v),
    "project_out(b_o)": lambda v: attnviz.project_out(X, np.ones((8, 8)), v),
    "multi_head_attention(x)": lambda v: attnviz.multi_head_attention(["a"] * 3, v, WEIGHTS),
    "multi_head_attention(tokens)": lambda v: attnviz.multi_head_attention(v, X, WEIGHTS),
    "multi_head_attention(weights)": lambda v: attnviz.multi_head_attention(["a"] * 3, X, v),
    **{
        f"multi_head_attention({keyword})": _with_keyword(keyword)
        for keyword in (
            "provenance",
            "config",
            "mask",
            "rope",
            "positional_encoding",
            "source_tokens",
            "source_x",
        )
    },
    "trace_attention(tokens)": lambda v: attnviz.trace_attention(v),
    "trace_attention(embeddings)": lambda v: attnviz.trace_attention("a b c", embeddings=v),
    "trace_attention(weights)": lambda v: attnviz.trace_attention("a b c", weights=v),
    "trace_attention(config)": lambda v: attnviz.trace_attention("a b c", config=v),
    "AttentionConfig(d_model)": lambda v: attnviz.AttentionConfig(v),
    "AttentionConfig(n_heads)": lambda v: attnviz.AttentionConfig(8, v),
    "AttentionConfig(seed)": lambda v: attnviz.AttentionConfig(8, 2, v),
    "AttentionWeights": lambda v: attnviz.AttentionWeights(v, W, W, np.ones((8, 8))),
    "random_weights(config)": lambda v: attnviz.random_weights(v, np.random.default_rng()),
    "random_weights(rng)": lambda v: attnviz.random_weights(CONFIG, v),
    "random_embeddings(tokens)": lambda v: attnviz.random_embeddings(v, 8, 0),
    "random_embeddings(d_model)": lambda v: attnviz.random_embeddings(["a"], v, 0),
    "random_embeddings(seed)": lambda v: attnviz.random_embeddings(["a"], 8, v),
    "load_embeddings(path)": lambda v: attnviz.load_embeddings(v, ["a"]),
    "load_embeddings(tokens)": lambda v: attnviz.load_embeddings("x.json", v),
    "load_weights": lambda v: attnviz.load_weights(v),
    "load_trace": lambda v: attnviz.load_trace(v),
    "export_trace(trace)": lambda v: attnviz.export_trace(v, "never.npz"),
    "export_trace(path)": lambda v: attnviz.export_trace(attnviz.explain("a b").trace, v),
    "export_layers": lambda v: attnviz.export_layers(v, "never.npz"),
    "tokenize": lambda v: attnviz.tokenize(v),
    "divisor_rows(lengths)": lambda v: attnviz.divisor_rows(v),
    "divisor_rows(d_k)": lambda v: attnviz.divisor_rows([4], d_k=v),
    "explain(sentence)": lambda v: attnviz.explain(v),
    "explain(heads)": lambda v: attnviz.explain("a b", heads=v),
    "explain(seed)": lambda v: attnviz.explain("a b", seed=v),
    "explain(focus)": lambda v: attnviz.explain("a b", focus=v),
    "explain(embeddings)": lambda v: attnviz.explain("a b", embeddings=v),
    "cross": lambda v: attnviz.cross(v, "a b"),
    "compare": lambda v: attnviz.compare("it a", v),
    "lesson": lambda v: attnviz.lesson(v),
    "lesson(decimals)": lambda v: attnviz.lesson(attnviz.explain("a b"), decimals=v),
    "heatmap": lambda v: attnviz.heatmap(v),
    "heads": lambda v: attnviz.heads(v),
    "page": lambda v: attnviz.page(v),
    "scaling": lambda v: attnviz.scaling(v),
    "scaling(keys)": lambda v: attnviz.scaling([4], keys=v),
    "ablate": lambda v: attnviz.ablate(v, model="coref"),
    "generate": lambda v: attnviz.generate(v),
    "lens": lambda v: attnviz.lens(v),
    "exercise": lambda v: attnviz.exercise(v),
    "exercise(kind)": lambda v: attnviz.exercise("a b", kind=v),
    "exercise(seed)": lambda v: attnviz.exercise("a b", seed=v),
    "lens(focus)": lambda v: attnviz.lens("a b", focus=v),
    "lens(top)": lambda v: attnviz.lens("a b", top=v),
    "generate(model)": lambda v: attnviz.generate("a b", model=v),
    "generate(tokens)": lambda v: attnviz.generate("a b", tokens=v),
    "generate(temperature)": lambda v: attnviz.generate("a b", temperature=v),
    "generate(top_p)": lambda v: attnviz.generate("a b", top_p=v),
}


@pytest.fixture(autouse=True)
def in_empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


#: Every function with every hostile value; the plain run takes the fifth of them where
#: (function + value) % 5 == 0, which still meets each function with several values and each
#: value with several functions. The rest are marked slow: scripts/check runs them all.
EVERY_CALL_WITH_EVERY_VALUE = [
    pytest.param(
        function,
        value_label,
        value,
        id=f"{function}-{value_label}",
        marks=() if (i + j) % 5 == 0 else pytest.mark.slow,
    )
    for j, (value_label, value) in enumerate(HOSTILE)
    for i, function in enumerate(CALLS)
]


@pytest.mark.parametrize("function, value_label, value", EVERY_CALL_WITH_EVERY_VALUE)
def test_a_hostile_argument_is_one_attnviz_error(
    function: str, value_label: str, value: object, tmp_path: Path
) -> None:
    call = CALLS[function]
    try:
        with bounded():
            call(value)
    except AttnvizError as error:
        message = str(error)
        assert "\n" not in message and 0 < len(message) < 400, message
        assert "array([" not in message, message  # an array by its shape, never its repr
    assert list(tmp_path.iterdir()) == [], "nothing written"


def test_every_public_function_meets_hostile_values() -> None:
    functions = {name for name in attnviz.__all__ if callable(getattr(attnviz, name))}
    records = {"AttnvizError", "ExitStatus", "Embeddings", "Provenance", "Explanation"}
    called = {label.split("(")[0] for label in CALLS}
    assert functions - records - {"AttentionTrace"} <= called


def test_softmax_masks_minus_infinity_and_refuses_what_has_no_softmax() -> None:
    weights = attnviz.softmax(np.array([[0.0, -np.inf], [1.0, 1.0]]))
    assert weights.tolist() == [[1.0, 0.0], [0.5, 0.5]]
    for scores, says in (
        ([[np.inf, 1.0]], r"\+∞.*row \[0\]"),
        ([[1.0, 2.0], [-np.inf, -np.inf]], r"row of −∞ only .*row \[1\]"),
        ([[1.0, np.nan]], r"NaN.*row \[0\]"),
    ):
        with pytest.raises(AttnvizError, match=says):
            attnviz.softmax(np.array(scores))


def test_a_broadcast_view_is_refused_before_numpy_allocates_it() -> None:
    with (
        bounded(),
        pytest.raises(AttnvizError, match=r"\[4194304, 4194304\], would take 140\.7 TB"),
    ):
        attnviz.softmax(HUGE)


def test_biases_of_the_wrong_shape_are_named() -> None:
    with pytest.raises(AttnvizError, match=r"b has shape \[3, 5\]; it must be \[2, 4\]"):
        attnviz.project(X, W, np.ones((3, 5)))
    with pytest.raises(AttnvizError, match=r"b_o has shape \[3\]; it must be \[8\]"):
        attnviz.project_out(X, np.ones((8, 8)), np.ones(3))
    projected = attnviz.project(X.astype(np.float32), W.astype(np.float32), np.ones((2, 4)))
    assert np.array_equal(projected, np.full((2, 3, 4), 9.0))


def test_a_mask_of_numbers_is_refused() -> None:
    with pytest.raises(AttnvizError, match="mask=<ndarray of float64, shape \\[3, 3\\]>"):
        attnviz.multi_head_attention(["a"] * 3, X, WEIGHTS, mask=np.ones((3, 3)))


# -- attnviz.api.train -------------------------------------------------------------------------


TRAINING_MISUSES: list[tuple[dict[str, Any], str]] = [
    ({"seed": "x"}, 'seed="x": give a whole number'),
    ({"seed": True}, "seed=True: give a whole number"),
    ({"seed": 1.0}, "seed=1.0: give a whole number"),
    ({"seed": -1}, "seed=-1: give a seed of 0 or more"),
    ({"steps": "10"}, 'steps="10": give a whole number'),
    ({"steps": 2.5}, "steps=2.5: give a whole number"),
    ({"steps": False}, "steps=False: give a whole number"),
    ({"steps": 10**400}, "steps=a number of about 401 digits"),
    ({"steps": 0}, "give 1 to 20,000 steps"),
    ({"until": "x"}, 'until="x": give a number'),
    ({"until": True}, "until=True: give a number"),
    ({"until": float("nan")}, "until=nan: give a held-out accuracy"),
    ({"until": 10**400}, "until=a number of about 401 digits"),
    ({"on_snapshot": 1}, "on_snapshot=1: give a function"),
    ({"history": "no"}, "history='no': give True or False"),
    ({"readout": 1}, "readout=1: choose pointer or word"),
    ({"readout": np.array(["a", "b"])}, "readout=<ndarray of <U1, shape \\[2\\]>"),
    ({"task": None}, "There is no task None"),
    ({"task": np.array(["reverse"])}, "There is no task <ndarray"),
]


@pytest.mark.parametrize(("arguments", "says"), TRAINING_MISUSES, ids=lambda v: str(v)[:30])
def test_training_misuse_names_the_keyword(arguments: dict[str, Any], says: str) -> None:
    from attnviz.api.train import train

    task = arguments.pop("task", "reverse")
    with bounded(), pytest.raises(AttnvizError) as refused:
        train(task, **arguments)
    message = str(refused.value)
    assert "\n" not in message and len(message) < 400
    assert re.search(says, message), message


@pytest.fixture(scope="module")
def trained() -> Any:
    from attnviz.api.train import train

    return train("reverse", steps=np.int64(2), seed=np.int32(1), until=np.float32(0.5))


def test_numpy_numbers_train_as_python_ones(trained: Any) -> None:
    from attnviz.api.train import train

    assert (trained.steps, trained.seed, type(trained.seed)) == (2, 1, int)
    again = train("reverse", steps=2, seed=1, until=0.5)
    assert trained.findings.accuracy == again.findings.accuracy


@pytest.mark.parametrize(
    ("save", "says"),
    [
        (lambda t: t.save(None), "folder=None"),
        (lambda t: t.save(""), "names no folder"),
        (lambda t: t.save(123), "folder=123"),
        (lambda t: t.save_history(None), "path=None"),
        (lambda t: t.save_history(""), "names no file"),
        (lambda t: t.save_history("h.txt"), "unknown extension '.txt'; use .npz"),
        (lambda t: t.save_history("h"), "unknown extension '\\(none\\)'"),
    ],
    ids=["save(None)", "save('')", "save(123)", "history(None)", "history('')", ".txt", "none"],
)
def test_saving_nowhere_or_under_another_name_is_refused(
    trained: Any, tmp_path: Path, save: Callable[[Any], None], says: str
) -> None:
    with pytest.raises(AttnvizError, match=says):
        save(trained)
    assert list(tmp_path.iterdir()) == []


def test_save_keeps_a_folder_of_someone_elses_config(trained: Any, tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(AttnvizError, match="holds a config.json attnviz did not write"):
        trained.save(folder)
    assert (folder / "config.json").read_text() == '{"model_type": "bert"}'
    trained.save(tmp_path / "ours")
    trained.save(tmp_path / "ours")  # its own model is replaced
    assert json.loads((tmp_path / "ours" / "config.json").read_text())["task"] == "reverse"
    trained.save_history(tmp_path / "h.npz")
    assert np.load(tmp_path / "h.npz")


PUBLIC_MODULES = [
    "attnviz",
    "attnviz.api.train",
    "attnviz.tokens",
    "attnviz.api.compare",
    "attnviz.attention",
    "attnviz.errors",
    "attnviz.api.explain",
    "attnviz.api.cross",
    "attnviz.api.lesson",
    "attnviz.api.heatmap",
    "attnviz.api.heads",
    "attnviz.api.scaling",
    "attnviz.api.exercise",
    "attnviz.api.page",
    "attnviz.lesson.caveats",
]


@pytest.mark.slow
@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_docstring_example_of_a_public_module_runs(module: str) -> None:
    """The examples a person copies from ``help()``: each runs and shows what it says."""
    imported = __import__(module, fromlist=["_"])
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [test for test in finder.find(imported) if test.examples]
    for test in tests:
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0
    if module == "attnviz.api.train":
        assert results.attempted >= 3  # the module's own train("reverse") example


def test_the_training_example_names_a_function() -> None:
    import attnviz.api.train

    assert "from attnviz.api.train import train" in (attnviz.api.train.__doc__ or "")
    assert callable(attnviz.api.train.train)


# -- lists in messages ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_list_in_a_message_shows_a_few_and_counts_the_rest() -> None:
    words = [f"w{i:05d}" for i in range(100_000)]
    shown = listed(words, " ")
    assert shown.startswith("w00000 w00001") and shown.endswith("more")
    assert "… and 99," in shown and len(shown) < LISTED_CHARACTERS + 30
    assert listed(["x" * 10_000] * 3, form=repr).count("…") == 3
    assert listed(["a", "b"]) == "a, b"
    assert listed([]) == ""


def _toy(folder: Path, vocabulary: list[str], trained: Any) -> Path:
    trained.save(folder)
    config = json.loads((folder / "config.json").read_text())
    config["vocabulary"] = vocabulary
    config["classes"] = vocabulary
    config["probes"] = []
    (folder / "config.json").write_text(json.dumps(config))
    weights = dict(np.load(folder / "weights.npz"))
    weights["E"] = np.zeros((len(vocabulary), weights["E"].shape[1]), np.float32)
    weights["W_U"] = np.zeros((weights["W_U"].shape[0], len(vocabulary)), np.float32)
    np.savez(folder / "weights.npz", **weights)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(
    "vocabulary",
    [
        [f"w{i:05d}" for i in range(100_000)],
        [f"{i}" + "x" * 5_000 for i in range(200)],
    ],
    ids=["100,000 words", "long words"],
)
@pytest.mark.parametrize(
    "sentence",
    [
        "hello there",
        " ".join(f"unknown{i}" for i in range(400)),
        "y" * 9_000 + " z",
    ],
    ids=["two", "400 unknown", "a long word"],
)
def test_a_toy_models_refusal_is_short_whatever_its_vocabulary(
    trained: Any, tmp_path: Path, vocabulary: list[str], sentence: str
) -> None:
    folder = _toy(tmp_path / "m", vocabulary, trained)
    with pytest.raises(AttnvizError) as refused:
        attnviz.explain(sentence, model=str(folder))
    message = str(refused.value)
    assert "does not know" in message
    assert len(message) < 400 + len(str(folder)), message
    assert "\n" not in message


@pytest.mark.parametrize(
    "tokens",
    [[f"word{i}" for i in range(500)], ["a" * 5_000, "b" * 5_000, "c"]],
    ids=["500 tokens", "long tokens"],
)
def test_a_focus_words_refusal_is_short(tokens: list[str]) -> None:
    with pytest.raises(AttnvizError) as refused:
        attnviz.explain(" ".join(tokens), focus="absent")
    assert len(str(refused.value)) < 400, str(refused.value)


def test_compares_refusal_lists_a_few_shared_words() -> None:
    shared = " ".join(f"shared{i}" for i in range(200))
    with pytest.raises(AttnvizError, match="… and 1[0-9]{2} more") as refused:
        attnviz.compare(shared + " it", shared + " that", focus="it")
    assert len(str(refused.value)) < 400, str(refused.value)
