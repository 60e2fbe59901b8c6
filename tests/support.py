"""Helpers shared by the tests."""

from __future__ import annotations

import os
import shutil
import sys
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import typer
import typer.testing
from hypothesis import settings

from attnviz.lesson.blocks import Block
from attnviz.lesson.options import LessonOptions
from attnviz.results import Analyses
from attnviz.selection import Selection, select
from attnviz.tokens import Focus
from attnviz.trace import AttentionTrace

_click_commands: weakref.WeakKeyDictionary[typer.Typer, object] = weakref.WeakKeyDictionary()


def _click_command_once(app: typer.Typer) -> object:
    """The app as a click command, made once per app: Typer's test runner makes it again at
    every call, which reads every option of every command (about 20 ms for the whole app), and
    the suite invokes the app some five hundred times. A command holds no state between runs:
    click makes a new context for each."""
    if app not in _click_commands:
        _click_commands[app] = typer.main.get_command(app)
    return _click_commands[app]


# Typer's CliRunner.invoke looks the conversion up by this module-level name at every call.
typer.testing._get_command = _click_command_once  # type: ignore[assignment]
CliRunner = typer.testing.CliRunner


def examples(in_ci: int) -> int:
    """max_examples for a property test that sets its own: ``in_ci`` under HYPOTHESIS_PROFILE=ci
    (scripts/check), at most the default profile's count (conftest.py) in the plain run."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "ci":
        return in_ci
    return min(in_ci, settings.get_profile("default").max_examples)


def shown(
    trace: AttentionTrace, heads: Sequence[int] | None = None, focus: Focus | None = None
) -> Selection:
    """The whole trace with exactly these heads (from 0; default every head) and this focus word
    (default none), as a view of it."""
    every = tuple(range(trace.n_heads))
    return select(trace)._replace(heads=tuple(every if heads is None else heads), focus=focus)


def has_model_extra() -> bool:
    """Whether attnviz[model] can be imported (ATTNVIZ_WITHOUT_EXTRA=1 makes it fail)."""
    try:
        import gguf  # noqa: F401
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


#: Marks a test that runs a pretrained model: skipped without the extra attnviz[model].
needs_model = pytest.mark.skipif(not has_model_extra(), reason="needs the extra attnviz[model]")


def installed_attnviz() -> str:
    """The installed ``attnviz`` console script: the one beside this Python (a virtualenv's
    bin), else the one on PATH. The end-to-end tests run it as a person does."""
    beside = Path(sys.executable).with_name("attnviz")
    found = str(beside) if beside.is_file() else shutil.which("attnviz")
    if found is None:
        pytest.fail("the attnviz command is not installed: python -m pip install -e .")
    return found


def listing(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (temporaries included) and its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def one_error_line(stderr: str, *fragments: str) -> str:
    """The one line on stderr, an error naming every fragment, and no traceback."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def product_atol(a: np.ndarray, b: np.ndarray) -> float:
    """How far apart two evaluations of the product a·b may be, element by element, when they
    add each element's k terms in different orders: the trace's stacked product beside a
    test's ``a @ b``, another BLAS kernel (numpy's OpenBLAS picks one per CPU), another row of
    the same product (a kernel's tile edge). Each is within γ_k·Σ_k |a_ik·b_kj| of the exact
    sum, γ_k = k·u / (1 − k·u) with u = eps / 2 (Higham, Accuracy and Stability of Numerical
    Algorithms, 2nd ed., eq. 3.5), so two of them within 2·γ_k of the largest Σ_k |a_ik·b_kj|:
    a few ulps of the largest term times k, never more.  [..., n, k], [..., k, m] -> float"""
    k = a.shape[-1]
    unit = float(np.finfo(np.result_type(a, b)).eps) / 2
    return 2 * k * unit / (1 - k * unit) * float(np.max(np.abs(a) @ np.abs(b)))


def lesson_analyses(
    trace: AttentionTrace, selection: Selection, layers: Sequence[AttentionTrace] = ()
) -> Analyses | None:
    """What the lesson's focus view shows of the analyses, computed as the API computes them
    (attnviz.analysis.analyses.for_lesson); None when no word is followed."""
    from attnviz.analysis.analyses import for_lesson

    return None if selection.focus is None else for_lesson(layers, trace, selection)


def written_lesson(
    trace: AttentionTrace,
    selection: Selection,
    options: LessonOptions | None = None,
    *,
    layers: Sequence[AttentionTrace] = (),
) -> list[Block]:
    """attnviz.lesson.build.lesson with the analyses its focus view shows, as the API hands
    them to it."""
    from attnviz.lesson.build import lesson

    found = lesson_analyses(trace, selection, layers)
    return lesson(trace, selection, options, layers=layers, analyses=found)


def step(key: str, *, rope: bool = False) -> int:
    """The number of the step keyed ``key`` in the lessons without rotary positions (``rope``:
    in those with them), as the table numbers it: tests name steps by key, so that a new row
    renumbers them too."""
    from attnviz.lesson import steps as table

    found = table.in_order(table.STEPS, assume=("rope",) if rope else ())
    return next(number for number, _, row in found if row.key == key)


def steps_spec(*keys: str, rope: bool = False) -> str:
    """--steps' value for the steps keyed ``keys``: ``steps_spec("tokens", "weights")`` is "1,5"
    with the table as it is; an optional step by its key, as --steps names it ("5,blockwise");
    ``rope``: as the lessons with rotary positions number them."""
    from attnviz.lesson import steps as table

    optional = {row.key for row in table.STEPS if row.optional}
    return ",".join(key if key in optional else str(step(key, rope=rope)) for key in keys)


def paper_keys(keys: Sequence[str]) -> list[str]:
    """``keys`` without the steps that ATTNVIZ_TEST_EXTRA_STEP=1 adds (tests/extra_steps.py): a
    test of the table's own rows checks the lesson's steps as attnviz has them."""
    from extra_steps import ADDED

    return [key for key in keys if key not in ADDED]


def _extra_step_switched_on() -> bool:
    from extra_steps import switched_on

    return switched_on()


#: Marks a test of pasted output (goldens, the README's and the docs' output blocks): skipped
#: under ATTNVIZ_TEST_EXTRA_STEP=1, whose table has steps that output never had.
of_the_real_table = pytest.mark.skipif(
    _extra_step_switched_on(), reason="the documentation's pasted output is of the real table"
)
