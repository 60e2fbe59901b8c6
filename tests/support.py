"""Helpers shared by the tests."""

from __future__ import annotations

from collections.abc import Sequence

from attnviz.selection import Selection, select
from attnviz.tokens import Focus
from attnviz.trace import AttentionTrace


def shown(
    trace: AttentionTrace, heads: Sequence[int] | None = None, focus: Focus | None = None
) -> Selection:
    """The whole trace with exactly these heads (from 0; default every head) and this focus word
    (default none), as a view of it."""
    every = tuple(range(trace.n_heads))
    return select(trace)._replace(heads=tuple(every if heads is None else heads), focus=focus)
