"""How attnviz reaches matplotlib: imported once without reading the person's matplotlibrc
files, and every figure made with matplotlib's default settings, one thread at a time.

A matplotlibrc in the working folder, in $MATPLOTLIBRC or in $MPLCONFIGDIR holds settings for
the person's own plots; attnviz's pictures are laid out in inches and points of their own, so
a user's ``text.usetex: True`` (which would run LaTeX on sentence text), ``figure.dpi: 1e6``
or a file that is not UTF-8 must not reach them. matplotlib is also not thread-safe: two
threads measuring text with one FreeType font corrupt the heap. So every drawing function
runs inside ``drawing()`` (or is decorated with ``@draws``): a process-wide lock, and
matplotlib's defaults in an ``rc_context`` (the person's own figures keep their settings).

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import ParamSpec, TypeVar

from attnviz.serial import COMPUTING

_Parameters = ParamSpec("_Parameters")
_Result = TypeVar("_Result")

#: Held while attnviz builds, measures or saves a figure. Re-entrant: a figure's save calls
#: the functions that measure its text.
_DRAWING = COMPUTING  # one lock for computing and drawing: no two locks to take in turn
#: How many drawing() blocks the thread holding _DRAWING is in (changed only while holding it).
_depth = 0

#: attnviz's own settings on top of matplotlib's defaults: SVG clip-path ids hashed with a
#: fixed salt, so that the same figure gives the same bytes.
_OWN_SETTINGS = {"svg.hashsalt": "attnviz"}


@contextmanager
def drawing() -> Iterator[None]:
    """While attnviz draws: no other thread of attnviz draws, and matplotlib's settings are its
    defaults (none of a matplotlibrc's) with attnviz's own, restored afterwards."""
    global _depth
    with _DRAWING:
        if _depth:  # inside a drawing already (a figure's save measures its text)
            yield
            return
        import_matplotlib()
        from matplotlib import style

        _depth += 1
        try:
            with style.context(["default", _OWN_SETTINGS]):
                yield
        finally:
            _depth -= 1


def draws(function: Callable[_Parameters, _Result]) -> Callable[_Parameters, _Result]:
    """``function`` run inside ``drawing()``."""

    @functools.wraps(function)
    def inside(*args: _Parameters.args, **kwargs: _Parameters.kwargs) -> _Result:
        with drawing():
            return function(*args, **kwargs)

    return inside


def import_matplotlib() -> None:
    """Import matplotlib, the first time, with its bundled matplotlibrc in place of the
    person's: $MATPLOTLIBRC points at it while matplotlib reads its settings, and a
    matplotlibrc in the working folder (read before any other) is stepped around by importing
    from matplotlib's own data folder. An invalid $MPLBACKEND (matplotlib refuses to import
    with one) is left out; attnviz draws on the Agg canvas, never through pyplot's backend."""
    if "matplotlib" in sys.modules:
        return
    with _DRAWING:
        if "matplotlib" in sys.modules:
            return
        spec = find_spec("matplotlib")
        if spec is None or spec.origin is None:
            import matplotlib  # noqa: F401  (not installed: its own ImportError says so)

            return
        data = Path(spec.origin).parent / "mpl-data"
        backend = os.environ.get("MPLBACKEND")
        with (
            _environment(MATPLOTLIBRC=str(data / "matplotlibrc"), MPLBACKEND=None),
            _away_from(data, when=os.path.isfile("matplotlibrc")),
        ):
            import matplotlib
        if backend:
            try:
                matplotlib.rcParams["backend"] = backend
            except (ValueError, KeyError):  # not a backend: pyplot falls back to its default
                pass


@contextmanager
def _environment(**variables: str | None) -> Iterator[None]:
    """``variables`` set (None: unset) in os.environ for a while, then as they were."""
    before = {name: os.environ.get(name) for name in variables}
    try:
        for name, value in variables.items():
            _set_variable(name, value)
        yield
    finally:
        for name, value in before.items():
            _set_variable(name, value)


def _set_variable(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextmanager
def _away_from(folder: Path, *, when: bool) -> Iterator[None]:
    """The working folder moved to ``folder`` for a while (``when`` true), then back to the
    one it was, by its file descriptor where the system has one (a folder renamed meanwhile
    is still found). Moving it affects every thread, so it happens only when a matplotlibrc is
    in the working folder, once, while matplotlib is imported."""
    if not when:
        yield
        return
    if hasattr(os, "fchdir"):
        here = os.open(".", os.O_RDONLY)
        try:
            os.chdir(folder)
            try:
                yield
            finally:
                os.fchdir(here)
        finally:
            os.close(here)
    else:
        back = os.getcwd()
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(back)
