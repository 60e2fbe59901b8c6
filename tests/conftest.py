"""Shared test set-up: a fixed terminal width and no colour, so output is the same everywhere."""

from __future__ import annotations

import ast
import inspect
import os
import signal
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Property-based tests: 25 examples each in the plain developer run, 300 in CI (scripts/check
# sets HYPOTHESIS_PROFILE=ci), where the examples are derandomized so that every CI run checks
# the same ones: more examples there buy no new ones from run to run, only time (2,000 each
# took half of CI's time). Hypothesis tries the small and boundary values of each strategy
# first, and 300 is three times its own default. A test that needs its own count says
# support.examples(n): n in CI, at most 25 here. No deadline: a slow shared machine must not
# turn into a failure.
settings.register_profile("default", max_examples=25, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, derandomize=True, database=None, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

TESTS = Path(__file__).resolve().parent
E2E = TESTS / "e2e"

# A run started in the background by a shell without job control (`scripts/check &` in a script,
# as some CI runners start jobs) inherits SIGINT ignored, and so would every attnviz process the
# tests start: their Ctrl-C would do nothing. Ctrl-C at a terminal is what those tests are about,
# so the suite starts its processes as a terminal does, with Python's own handler here (a child
# gets the default disposition on exec).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# ATTNVIZ_WITHOUT_EXTRA=1 runs the suite as if attnviz[model] were not installed: the imports of
# safetensors, tokenizers and gguf fail, the model tests skip, and everything else must pass.
# scripts/check runs it on the tests marked extra (below): attnviz imports the extra only inside
# functions (test_architecture.py), so only a test that reaches model loading can tell the two
# installs apart.
if os.environ.get("ATTNVIZ_WITHOUT_EXTRA") == "1":
    sys.modules["safetensors"] = None  # type: ignore[assignment]
    sys.modules["tokenizers"] = None  # type: ignore[assignment]
    sys.modules["gguf"] = None  # type: ignore[assignment]


def with_an_extra_step() -> None:
    """ATTNVIZ_TEST_EXTRA_STEP=1 runs the suite with a plain step and an optional one added to
    the lesson's table (tests/extra_steps.py): every test names steps by key, so it must pass."""
    if os.environ.get("ATTNVIZ_TEST_EXTRA_STEP") == "1":
        import extra_steps

        extra_steps.install()


with_an_extra_step()


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees a 100-column terminal without colour, whatever runs the tests."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "dumb")


#: What a test says when what it checks depends on whether attnviz[model] is installed: a
#: branch on it, or the refusal that names it. (A test only skipped without the extra, by
#: needs_model, checks nothing there.)
EXTRA_WORDS = ("has_model_extra", "ATTNVIZ_WITHOUT_EXTRA", "attnviz[model]")
#: Tests marked extra whatever they say: the model package's own (checkpoints found or refused,
#: toy models that need no extra), and every command and public function in random mode, which
#: must work without the extra.
EXTRA_ALSO = (
    TESTS / "model",
    TESTS / "generation",
    TESTS / "test_api.py",
    TESTS / "test_properties.py",
    TESTS / "test_terminal.py",
)


def depends_on_the_extra(item: pytest.Item, said: dict[object, Any]) -> bool:
    """Whether ``item`` is marked extra: its file is in EXTRA_ALSO or its function's source says
    one of EXTRA_WORDS (``said`` keeps what each file's functions say, read once per file)."""
    if item.path not in said:
        said[item.path] = _what_functions_say(item.path)
    everything, by_line = said[item.path]
    if everything:
        return True
    function = getattr(item, "function", None)
    if not by_line or function is None:
        return False
    code = getattr(inspect.unwrap(function), "__code__", None)
    return code is not None and by_line.get(code.co_firstlineno, False)


def _what_functions_say(path: Path) -> tuple[bool, dict[int, bool]]:
    """(whether the whole file is marked, being in EXTRA_ALSO; for each function of the file
    that says one of EXTRA_WORDS, its first line (its first decorator's) -> True). A file that
    says none of the words is not parsed."""
    if any(path == also or also in path.parents for also in EXTRA_ALSO):
        return True, {}
    text = path.read_text(encoding="utf-8")
    if not any(word in text for word in EXTRA_WORDS):
        return False, {}
    lines = text.splitlines()
    by_line = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            source = "\n".join(lines[first - 1 : node.end_lineno])
            if any(word in source for word in EXTRA_WORDS):
                by_line[first] = True
    return False, by_line


def functions_only_in_the_full_run(cases: Iterable[tuple[str, bool]]) -> list[str]:
    """The test functions every case of which is marked full, from (node id, marked full) of
    each case: ``full`` marks the further cases of a grid (a width, a size, a second model),
    and CI (scripts/check without --full) must still run each function at one case at least."""
    full_by_function: dict[str, list[bool]] = {}
    for nodeid, full in cases:
        full_by_function.setdefault(nodeid.split("[")[0], []).append(full)
    return sorted(function for function, full in full_by_function.items() if all(full))


#: The plain run's marker expression (pyproject.toml's addopts): it takes no test under tests/e2e.
PLAIN_RUN = "not slow and not browser and not e2e"


def selects_no_e2e_test(markexpr: str) -> bool:
    """Whether the -m expression ``markexpr`` leaves out every test marked e2e: it is terms
    joined by "and" only (no "or", no parentheses), one of them "not e2e"."""
    if "(" in markexpr or ")" in markexpr:
        return False
    terms = [" ".join(term.split()) for term in markexpr.split(" and ")]
    return "not e2e" in terms and not any(" or " in f" {term} " for term in terms)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/e2e is not even collected by a run whose -m would deselect every test in it (the
    plain run's, PLAIN_RUN, and scripts/check's run without the extra): collecting them costs
    each worker about a second. Any other -m collects it as usual."""
    if collection_path == E2E and selects_no_e2e_test(config.option.markexpr):
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/e2e runs the installed command in fresh processes: marked e2e.
    A test whose checks depend on the extra attnviz[model] (depends_on_the_extra): extra.
    The browser tests: one xdist group. A test marked full in every case: refused."""
    only_full = functions_only_in_the_full_run(
        (item.nodeid, item.get_closest_marker("full") is not None) for item in items
    )
    if only_full and not any("::" in argument for argument in config.args):  # not one by name
        raise pytest.UsageError(
            "Marked full in every case, so CI never runs them: "
            + ", ".join(only_full)
            + "; keep at least one case of each without pytest.mark.full."
        )
    said: dict[object, Any] = {}
    # Only a -m that names extra selects by it: other runs (the plain one) skip reading sources.
    marks_extra = "extra" in config.option.markexpr
    in_e2e: dict[Path, bool] = {}  # Path.parents is slow enough to count over 5,000 tests
    for item in items:
        if item.path not in in_e2e:
            in_e2e[item.path] = E2E in item.path.parents
        if in_e2e[item.path]:
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("browser") is not None:
            # One Chromium at a time: with --dist loadgroup (scripts/check) every browser
            # test runs on one worker, one after another, while the others run the rest.
            item.add_marker(pytest.mark.xdist_group("browser"))
        if marks_extra and depends_on_the_extra(item, said):
            item.add_marker(pytest.mark.extra)


#: A plain test (not marked slow, browser or e2e) that takes longer than this, in setup and call
#: together, is named at the end of the run: a plain `pytest -q` must stay fast
#: (docs/development.md, "Tests"), so such a test is marked slow or made cheaper. It is reported,
#: never failed on: a busy machine can slow any test down.
PLAIN_TEST_SECONDS = 1.0
LONG_PLAIN_TESTS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Adds up each plain test's setup and call times (under xdist too: the reports come back)."""
    if report.when in ("setup", "call") and not {"slow", "browser", "e2e"} & set(report.keywords):
        LONG_PLAIN_TESTS[report.nodeid] = LONG_PLAIN_TESTS.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Names the plain tests over PLAIN_TEST_SECONDS, slowest first."""
    long = sorted(
        (
            (seconds, nodeid)
            for nodeid, seconds in LONG_PLAIN_TESTS.items()
            if seconds > PLAIN_TEST_SECONDS
        ),
        reverse=True,
    )
    if long:
        terminalreporter.write_sep(
            "=", f"plain tests over {PLAIN_TEST_SECONDS:g} s: mark them slow"
        )
        for seconds, nodeid in long:
            terminalreporter.write_line(f"{seconds:6.2f} s  {nodeid}")
