"""attnviz: every number of transformer multi-head self-attention, step by step.

>>> import attnviz
>>> shown = attnviz.explain("I am good")
>>> shown.trace.weights.sum(axis=-1).round(12).tolist()   # every softmax row sums to 1
[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]

``explain``, ``cross``, ``lesson``, ``heatmap``, ``page``, ``heads``, ``compare``,
``scaling``, ``generate``, ``lens`` and ``exercise`` are the command line's commands as
functions (attnviz.api, a module each), and ``ablate`` is ``heads --ablate``
(attnviz.api.ablate); the step functions and ``trace_attention`` are the math underneath.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType

#: typing costs the command's start-up several ms and this module needs only its constant:
#: type checkers take any ``TYPE_CHECKING`` as true.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from attnviz.api.ablate import ablate
    from attnviz.api.compare import compare
    from attnviz.api.cross import cross
    from attnviz.api.divisors import divisor_rows
    from attnviz.api.exercise import exercise
    from attnviz.api.explain import explain
    from attnviz.api.explanation import Explanation
    from attnviz.api.generate import generate
    from attnviz.api.heads import heads
    from attnviz.api.heatmap import heatmap
    from attnviz.api.lens import lens
    from attnviz.api.lesson import lesson
    from attnviz.api.page import page
    from attnviz.api.scaling import scaling
    from attnviz.attention import multi_head_attention
    from attnviz.checked_steps import (
        attention_scores,
        concat_heads,
        project,
        project_out,
        scale_scores,
        softmax,
        weigh_values,
    )
    from attnviz.config import AttentionConfig
    from attnviz.core import trace_attention
    from attnviz.embeddings import Embeddings, load_embeddings, random_embeddings
    from attnviz.errors import AttnvizError, ExitStatus
    from attnviz.provenance import Provenance
    from attnviz.tokens import tokenize
    from attnviz.trace import AttentionTrace
    from attnviz.trace_files import export_layers, export_trace, load_trace
    from attnviz.weights import AttentionWeights, load_weights, random_weights


#: Each public name and the module that defines it, imported when the name is first used:
#: `attnviz explain` starts without loading the model runner, the trainer or the pictures, and
#: `import attnviz.errors` without loading the rest.
_PUBLIC: dict[str, str] = {
    "ablate": "attnviz.api.ablate",
    "compare": "attnviz.api.compare",
    "cross": "attnviz.api.cross",
    "divisor_rows": "attnviz.api.divisors",
    "exercise": "attnviz.api.exercise",
    "explain": "attnviz.api.explain",
    "Explanation": "attnviz.api.explanation",
    "generate": "attnviz.api.generate",
    "lens": "attnviz.api.lens",
    "heads": "attnviz.api.heads",
    "heatmap": "attnviz.api.heatmap",
    "lesson": "attnviz.api.lesson",
    "page": "attnviz.api.page",
    "scaling": "attnviz.api.scaling",
    "attention_scores": "attnviz.checked_steps",
    "concat_heads": "attnviz.checked_steps",
    "multi_head_attention": "attnviz.attention",
    "project": "attnviz.checked_steps",
    "project_out": "attnviz.checked_steps",
    "scale_scores": "attnviz.checked_steps",
    "softmax": "attnviz.checked_steps",
    "weigh_values": "attnviz.checked_steps",
    "AttentionConfig": "attnviz.config",
    "trace_attention": "attnviz.core",
    "Embeddings": "attnviz.embeddings",
    "load_embeddings": "attnviz.embeddings",
    "random_embeddings": "attnviz.embeddings",
    "AttnvizError": "attnviz.errors",
    "ExitStatus": "attnviz.errors",
    "Provenance": "attnviz.provenance",
    "tokenize": "attnviz.tokens",
    "AttentionTrace": "attnviz.trace",
    "export_layers": "attnviz.trace_files",
    "export_trace": "attnviz.trace_files",
    "load_trace": "attnviz.trace_files",
    "AttentionWeights": "attnviz.weights",
    "load_weights": "attnviz.weights",
    "random_weights": "attnviz.weights",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module when first asked for (then kept), a submodule
    (``attnviz.api``), or ``attnviz.__version__``, read from the installed package's metadata:
    importlib.metadata costs the command's start-up 25 ms, which only --version needs."""
    if name == "__version__":
        from importlib.metadata import version

        return version("attnviz")
    if name in _PUBLIC:
        value = getattr(import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    try:
        return import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as missing:
        if missing.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _SharedName:
    """A public function whose name a subpackage has too (``lesson`` and attnviz/lesson/,
    ``exercise`` and attnviz/exercise/).

    Importing a submodule sets the package's attribute of its name to it (importlib does so
    after every first import of ``attnviz.<name>``), which would hide the function. Set on the
    package's class, this data descriptor comes before the module's own dictionary: reading
    gives the function, whatever has been imported; the import system's setting of the
    submodule is let pass; any other value set (a test's monkeypatch) is kept."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, package: ModuleType | None, owner: type | None = None) -> Any:
        if package is None:
            return self
        value = vars(package).get(self.name)
        if value is None:
            value = getattr(import_module(_PUBLIC[self.name]), self.name)
            vars(package)[self.name] = value
        return value

    def __set__(self, package: ModuleType, value: Any) -> None:
        if value is not sys.modules.get(f"{__name__}.{self.name}"):
            vars(package)[self.name] = value

    def __delete__(self, package: ModuleType) -> None:
        vars(package).pop(self.name, None)


class _Package(ModuleType):
    """The attnviz package, with each public name that is also a submodule's kept a function."""

    lesson = _SharedName()
    exercise = _SharedName()


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    """The public names, the dunder names and the submodules imported so far; not this
    module's own helpers (sys, import_module, …)."""
    loaded = [name for name, value in globals().items() if isinstance(value, ModuleType)]
    dunders = [name for name in globals() if name.startswith("__")]
    return sorted({*__all__, *_PUBLIC, *dunders, *loaded, "__version__"} - {"sys"})


__all__ = [
    "AttentionConfig",
    "AttentionTrace",
    "AttentionWeights",
    "AttnvizError",
    "Embeddings",
    "ExitStatus",
    "Explanation",
    "__version__",
    "ablate",
    "attention_scores",
    "compare",
    "concat_heads",
    "cross",
    "divisor_rows",
    "exercise",
    "explain",
    "generate",
    "lens",
    "export_layers",
    "export_trace",
    "heads",
    "heatmap",
    "lesson",
    "page",
    "scaling",
    "load_embeddings",
    "load_trace",
    "load_weights",
    "multi_head_attention",
    "project",
    "project_out",
    "Provenance",
    "random_embeddings",
    "random_weights",
    "scale_scores",
    "softmax",
    "tokenize",
    "trace_attention",
    "weigh_values",
]
