"""The package in fresh processes, where import order is real: ``import attnviz`` loads none of
its modules, and ``attnviz.lesson`` is the function whichever of its submodules came first; and
the console script's end (_attnviz_command.end_process), which only a process can show."""

from __future__ import annotations

import subprocess
import sys

IMPORT_ORDERS = """
import sys
import attnviz
loaded = sorted(m for m in sys.modules if m.startswith(("attnviz.", "numpy", "rich")))
print("LOADED", loaded)
import attnviz.lesson.blocks
from attnviz.api.lesson import lesson as function
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
    assert result.stdout.strip() == "True attnviz.api.lesson"


ENDING = """
import atexit, sys, threading
import _attnviz_command

atexit.register(lambda: print("atexit ran", flush=False))
sys.stdout.write("buffered, not flushed\\n")
if sys.argv[1] == "thread":
    threading.Thread(target=lambda: (__import__("time").sleep(0.3), print("thread done"))).start()
_attnviz_command.end_process(7)
print("returned")
sys.exit(9)
"""


def test_the_process_ends_with_its_output_flushed_and_atexit_run() -> None:
    result = subprocess.run(
        [sys.executable, "-c", ENDING, "alone"], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout) == (7, "buffered, not flushed\natexit ran\n")


def test_a_thread_still_running_leaves_the_exit_to_python() -> None:
    result = subprocess.run(
        [sys.executable, "-c", ENDING, "thread"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 9
    assert result.stdout.splitlines() == [
        "buffered, not flushed",
        "returned",
        "thread done",
        "atexit ran",
    ]
