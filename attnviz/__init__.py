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

from attnviz.ablating import ablate
from attnviz.api import cross, explain, heads, heatmap, lesson, scaling
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


def __getattr__(name: str) -> str:
    """``attnviz.__version__``, read from the installed package's metadata when asked for:
    importlib.metadata costs the command's start-up 25 ms, which only --version needs."""
    if name == "__version__":
        from importlib.metadata import version

        return version("attnviz")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
