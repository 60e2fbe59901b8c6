"""The package in fresh processes, where import order is real: ``import attnviz`` loads none of
its modules, and ``attnviz.lesson`` is the function whichever of its submodules came first."""

from __future__ import annotations

import subprocess
import sys

IMPORT_ORDERS = """
import sys
import attnviz
loaded = sorted(m for m in sys.modules if m.startswith(("attnviz.", "numpy", "rich")))
print("LOADED", loaded)
import attnviz.lesson.blocks
from attnviz.api import lesson as function
print("AFTER SUBMODULE", attnviz.lesson is function)
from attnviz import lesson
import attnviz.lesson.build, attnviz.lesson.writer
print("FROM IMPORT", lesson is function, attnviz.lesson is function)
"""


def test_import_attnviz_loads_nothing_and_lesson_stays_the_function() -> None:
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_ORDERS], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == [
        "LOADED []",
        "AFTER SUBMODULE True",
        "FROM IMPORT True True",
    ], result.stderr


def test_a_submodule_imported_first_leaves_lesson_the_function() -> None:
    code = (
        "import attnviz.lesson.steps, attnviz.lesson.options, attnviz\n"
        "import attnviz.api\n"
        "print(callable(attnviz.lesson), attnviz.lesson.__module__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True attnviz.api"
