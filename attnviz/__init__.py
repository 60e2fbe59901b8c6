"""attnviz: every number of transformer multi-head self-attention, step by step.

>>> import attnviz
>>> shown = attnviz.explain("I am good")
>>> shown.trace.weights.sum(axis=-1).round(12).tolist()   # every softmax row sums to 1
[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]

``explain``, ``cross``, ``lesson``, ``heatmap``, ``page``, ``heads``, ``compare`` and
``scaling`` are the command line's commands as functions (attnviz.api, attnviz.comparing,
attnviz.paging), and ``ablate`` is ``heads --ablate`` (attnviz.ablating); the step functions and
``trace_attention`` are the math underneath.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# The commands' functions, bound now: every command's path imports attnviz.api anyway, and
# ``lesson`` must be the function, not the subpackage attnviz.lesson that importing binds here.
from attnviz.api import cross, explain, heads, heatmap, lesson, scaling

if TYPE_CHECKING:
    from attnviz.ablating import ablate
    from attnviz.attention import (
        attention_scores,
        concat_heads,
        multi_head_attention,
        project,
        project_out,
        scale_scores,
        softmax,
        weigh_values,
    )
    from attnviz.comparing import compare
    from attnviz.config import AttentionConfig
    from attnviz.core import trace_attention
    from attnviz.divisors import divisor_rows
    from attnviz.embeddings import Embeddings, load_embeddings, random_embeddings
    from attnviz.errors import AttnvizError, ExitStatus
    from attnviz.explanation import Explanation
    from attnviz.paging import page
    from attnviz.provenance import Provenance
    from attnviz.tokens import tokenize
    from attnviz.trace import AttentionTrace
    from attnviz.trace_files import export_layers, export_trace, load_trace
    from attnviz.weights import AttentionWeights, load_weights, random_weights


#: Each public name and the module that defines it, imported when the name is first used:
#: `attnviz explain` starts without loading the model runner, the trainer or the pictures.
_PUBLIC: dict[str, str] = {
    "ablate": "attnviz.ablating",
    "attention_scores": "attnviz.attention",
    "concat_heads": "attnviz.attention",
    "multi_head_attention": "attnviz.attention",
    "project": "attnviz.attention",
    "project_out": "attnviz.attention",
    "scale_scores": "attnviz.attention",
    "softmax": "attnviz.attention",
    "weigh_values": "attnviz.attention",
    "compare": "attnviz.comparing",
    "AttentionConfig": "attnviz.config",
    "trace_attention": "attnviz.core",
    "divisor_rows": "attnviz.divisors",
    "Embeddings": "attnviz.embeddings",
    "load_embeddings": "attnviz.embeddings",
    "random_embeddings": "attnviz.embeddings",
    "AttnvizError": "attnviz.errors",
    "ExitStatus": "attnviz.errors",
    "Explanation": "attnviz.explanation",
    "page": "attnviz.paging",
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


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


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
    "explain",
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
