"""Shared test set-up: a fixed terminal width and no colour, so output is the same everywhere."""

from __future__ import annotations

import os
import sys

import pytest

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
