"""Shared test set-up: a fixed terminal width and no colour, so output is the same everywhere."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

# Property-based tests: 100 examples each by default, 2,000 in CI (scripts/check sets
# HYPOTHESIS_PROFILE=ci), where the examples are derandomized so that every CI run checks the
# same ones. Tests that give their own max_examples keep it. No deadline: a slow shared machine
# must not turn into a failure.
settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=2000, deadline=None, derandomize=True, database=None, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# ATTNVIZ_WITHOUT_EXTRA=1 runs the suite as if attnviz[model] were not installed: the imports of
# safetensors and tokenizers fail, the model tests skip, and everything else must still pass.
if os.environ.get("ATTNVIZ_WITHOUT_EXTRA") == "1":
    sys.modules["safetensors"] = None  # type: ignore[assignment]
    sys.modules["tokenizers"] = None  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees a 100-column terminal without colour, whatever runs the tests."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "dumb")
