"""The suite's own marks (tests/conftest.py): which tests a run of CI leaves to the full run, and
which depend on the optional extra."""

from __future__ import annotations

from pathlib import Path

from conftest import EXTRA_ALSO, TESTS, _what_functions_say, functions_only_in_the_full_run


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
