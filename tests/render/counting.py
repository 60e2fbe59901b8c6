"""Counting the work of measuring text, without a clock."""

from __future__ import annotations

import pytest
import rich.cells

import attnviz.render.text


class Measured:
    """Counts the characters rich's cell_len is given: the work of cutting, without a clock."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.characters = 0
        real = rich.cells.cell_len

        def counting(text: str, *args: object) -> int:
            self.characters += len(text)
            return real(text)

        monkeypatch.setattr(rich.cells, "cell_len", counting)
        monkeypatch.setattr(attnviz.render.text, "cell_len", counting)
