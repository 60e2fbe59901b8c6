"""The suite's own marks (tests/conftest.py): which tests a run of CI leaves to the full run, and
which depend on the optional extra."""

from __future__ import annotations

from pathlib import Path

import tomllib
from conftest import (
    E2E,
    EXTRA_ALSO,
    PLAIN_RUN,
    TESTS,
    _what_functions_say,
    functions_only_in_the_full_run,
    selects_no_e2e_test,
)


def test_a_function_marked_full_in_every_case_is_named() -> None:
    cases = [
        ("tests/a.py::test_widths[1]", False),
        ("tests/a.py::test_widths[4]", True),
        ("tests/a.py::test_models[coref]", True),
        ("tests/a.py::test_models[coref-word]", True),
        ("tests/a.py::test_plain", False),
        ("tests/b.py::test_one", True),
    ]
    assert functions_only_in_the_full_run(cases) == [
        "tests/a.py::test_models",
        "tests/b.py::test_one",
    ]
    assert functions_only_in_the_full_run(cases[:2]) == []


def test_a_function_that_names_the_extra_is_found_by_its_first_line(tmp_path: Path) -> None:
    test_file = tmp_path / "test_x.py"
    test_file.write_text(
        "import pytest\n"
        "\n"
        "@pytest.mark.slow\n"
        "def test_with():\n"
        "    assert has_model_extra()\n"
        "\n"
        "def test_without():\n"
        "    pass\n",
        encoding="utf-8",
    )
    assert _what_functions_say(test_file) == (False, {3: True})  # its decorator's line
    assert _what_functions_say(TESTS / "test_api.py") == (True, {})  # in EXTRA_ALSO
    assert TESTS / "model" in EXTRA_ALSO


def test_the_plain_run_that_skips_collecting_e2e_is_pyproject_s_and_selects_no_e2e_test() -> None:
    """conftest.py leaves tests/e2e uncollected only under PLAIN_RUN, so PLAIN_RUN must be the
    marker expression a plain `pytest -q` passes, and that expression must take no e2e test."""
    pyproject = tomllib.loads((TESTS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = pyproject["tool"]["pytest"]["ini_options"]["addopts"]
    assert addopts[addopts.index("-m") + 1] == PLAIN_RUN
    assert "not e2e" in PLAIN_RUN.split(" and ") and " or " not in PLAIN_RUN
    assert selects_no_e2e_test(PLAIN_RUN)
    assert E2E.is_dir() and any(E2E.glob("test_*.py"))


def test_e2e_is_left_uncollected_only_by_an_expression_that_leaves_out_every_e2e_test() -> None:
    """scripts/check's run without the extra leaves tests/e2e uncollected too; an expression
    that could still take an e2e test collects it."""
    check = (TESTS.parent / "scripts" / "check").read_text(encoding="utf-8")
    assert '-m "extra and not browser and not e2e$but"' in check
    for but in ("", " and not full"):
        assert selects_no_e2e_test(f"extra and not browser and not e2e{but}")
    for takes_some in (
        "",
        "not full",
        "slow or e2e",
        "e2e",
        "not slow or not e2e",
        "not (e2e and slow)",
        "extra and not browser",
        "not e2e_like and extra",
    ):
        assert not selects_no_e2e_test(takes_some), takes_some
