"""Shared test set-up: a fixed terminal width and no colour, so output is the same everywhere."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Property-based tests: 25 examples each in the plain developer run, 2,000 in CI (scripts/check
# sets HYPOTHESIS_PROFILE=ci), where the examples are derandomized so that every CI run checks
# the same ones. A test that needs its own count says support.examples(n): n in CI, at most 25
# here. No deadline: a slow shared machine must not turn into a failure.
settings.register_profile("default", max_examples=25, deadline=None)
settings.register_profile(
    "ci", max_examples=2000, deadline=None, derandomize=True, database=None, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

E2E = Path(__file__).resolve().parent / "e2e"

# A run started in the background by a shell without job control (`scripts/check &` in a script,
# as some CI runners start jobs) inherits SIGINT ignored, and so would every attnviz process the
# tests start: their Ctrl-C would do nothing. Ctrl-C at a terminal is what those tests are about,
# so the suite starts its processes as a terminal does, with Python's own handler here (a child
# gets the default disposition on exec).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# ATTNVIZ_WITHOUT_EXTRA=1 runs the suite as if attnviz[model] were not installed: the imports of
# safetensors, tokenizers and gguf fail, the model tests skip, and everything else must pass.
if os.environ.get("ATTNVIZ_WITHOUT_EXTRA") == "1":
    sys.modules["safetensors"] = None  # type: ignore[assignment]
    sys.modules["tokenizers"] = None  # type: ignore[assignment]
    sys.modules["gguf"] = None  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees a 100-column terminal without colour, whatever runs the tests."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "dumb")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/e2e runs the installed command in fresh processes: marked e2e."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)
