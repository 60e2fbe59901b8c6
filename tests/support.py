"""Helpers shared by the tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

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


def has_model_extra() -> bool:
    """Whether attnviz[model] can be imported (ATTNVIZ_WITHOUT_EXTRA=1 makes it fail)."""
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


#: Marks a test that runs a pretrained model: skipped without the extra attnviz[model].
needs_model = pytest.mark.skipif(not has_model_extra(), reason="needs the extra attnviz[model]")
