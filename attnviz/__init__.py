"""attnviz: every number of transformer multi-head self-attention, step by step.

>>> import attnviz
>>> trace = attnviz.explain("I am good")
>>> trace.weights.sum(axis=-1).round(12).tolist()   # every softmax row sums to 1
[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]

``explain``, ``cross``, ``lesson`` and ``heatmap`` are the command line's commands as functions
(attnviz.api); the step functions and ``trace_attention`` are the math underneath.
"""

from attnviz.api import cross, explain, heatmap, lesson, page
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
from attnviz.config import AttentionConfig
from attnviz.core import trace_attention
from attnviz.embeddings import Embeddings, load_embeddings, random_embeddings
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.provenance import Provenance
from attnviz.tokens import tokenize
from attnviz.trace import AttentionTrace, export_trace, load_trace
from attnviz.weights import AttentionWeights, load_weights, random_weights

__version__ = "0.1.0"

__all__ = [
    "AttentionConfig",
    "AttentionTrace",
    "AttentionWeights",
    "AttnvizError",
    "Embeddings",
    "ExitStatus",
    "__version__",
    "attention_scores",
    "concat_heads",
    "cross",
    "explain",
    "export_trace",
    "heatmap",
    "lesson",
    "page",
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
