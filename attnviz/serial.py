"""One computation of attnviz at a time in a process, whatever thread asks.

numpy's matrix products run in OpenBLAS, which has its own threads; two Python threads that
call it at once with products of different sizes (a GGUF model's run beside MiniLM's) can leave
every BLAS thread waiting on the others, the process spinning and never finishing. attnviz's
public functions therefore take one re-entrant lock, the same one drawing takes
(attnviz.render.figures.settings): a second thread waits for the first to finish, and a
function calling another of them inside goes on. Threads still get every answer; they get them
one after another, at the speed of one.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

#: Held while attnviz computes or draws; re-entrant, so explain() inside heatmap() goes on.
COMPUTING = threading.RLock()

_Parameters = ParamSpec("_Parameters")
_Result = TypeVar("_Result")


def one_at_a_time(function: Callable[_Parameters, _Result]) -> Callable[_Parameters, _Result]:
    """``function`` run while holding COMPUTING."""

    @functools.wraps(function)
    def holding(*args: _Parameters.args, **kwargs: _Parameters.kwargs) -> _Result:
        with COMPUTING:
            return function(*args, **kwargs)

    return holding
