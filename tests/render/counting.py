"""Counting the work of measuring text, without a clock."""

from __future__ import annotations

import pytest
import rich.cells

import attnviz.render.terminal.text


class Measured:
    """Counts the characters rich's cell_len and the wrapping's own measures are given: the
    work of cutting, without a clock."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.characters = 0
        real = rich.cells.cell_len

        def counting(text: str, *args: object) -> int:
            self.characters += len(text)
            return real(text)

        monkeypatch.setattr(rich.cells, "cell_len", counting)
        monkeypatch.setattr(attnviz.render.terminal.text, "cell_len", counting)
        # The wrapping's own measure: a text's characters looked at once, its widths added up.
        real_width = attnviz.render.terminal.text.cell_width
        additive = attnviz.render.terminal.text._AdditiveWidths
        real_of = additive.of.__func__

        def counting_width(text: str) -> int:
            self.characters += len(text)
            return real_width(text)

        def counting_of(cls: type, plain: str) -> object:
            self.characters += len(plain)
            return real_of(cls, plain)

        monkeypatch.setattr(attnviz.render.terminal.text, "cell_width", counting_width)
        monkeypatch.setattr(additive, "of", classmethod(counting_of))
