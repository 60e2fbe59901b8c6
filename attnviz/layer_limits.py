"""Limits of a model's layers, checked as its settings are read and before its weights are:
how many layers it may have, the memory of every layer's trace, and what a command makes of
every layer (the ablation's reruns, the page, a picture of every layer). The limits of one
trace, the lesson and the files are in attnviz.limits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar

from attnviz.errors import AttnvizError, option
from attnviz.limits import MAX_PICTURE_NUMBERS, size_text, trace_numbers

# -- a model's layers ---------------------------------------------------------------------------

#: The most layers a model may have. Every command runs every layer, the page and the export
#: hold every one, and --ablate runs them again once per head: a file that claimed 20,000 layers
#: of a few bytes each ran for 32 s in 1.8 GB, and 2,000 made a 55 MB page. Far above the models
#: attnviz runs (all-MiniLM-L6-v2: 6, GPT-2: 12, Qwen2.5-0.5B: 24, SmolLM2-135M: 30) and twice the
#: largest published (Llama 3.1 405B: 126). No option changes a model's layers.
MAX_LAYERS = 256

#: The most memory a model's trace of every layer may take, estimated as layers ×
#: trace_numbers() × the bytes of a number in the dtype it is computed in, before the weights are
#: read. SmolLM2-135M (30 layers, 9 heads, d_model 576) on 512 tokens: 1.4 GB in float32 (1.3 GB
#: measured), 2.7 GB in float64. The way round: a shorter sentence, or float32.
MAX_MODEL_TRACE_BYTES = 3_000_000_000

#: The most layers --ablate runs again: each head of each layer l of L reruns layers l to L,
#: heads × L(L + 1)/2 in all. SmolLM2-135M: 9 × 465 = 4,185; all-MiniLM-L6-v2: 12 × 21 = 252.
MAX_ABLATION_LAYER_RUNS = 10_000

#: The most weights the page holds over every layer, layers × heads shown × rows × columns (each
#: layer's weights, contributions and rollout go into the page): SmolLM2-135M on 512 tokens
#: holds 71 million (a page of about 40 MB, a minute to write).
MAX_PAGE_NUMBERS = 80_000_000


def check_model_layers(n_layers: int, key: str = "") -> None:
    """Refuse a model of more than MAX_LAYERS layers, as its settings are read (``key``: the
    setting that gives them, for the message)."""
    if n_layers > MAX_LAYERS:
        raise AttnvizError(
            f"the model has {n_layers:,} layers{f' ({key})' if key else ''}; attnviz runs "
            f"models of at most {MAX_LAYERS} "
            "(all-MiniLM-L6-v2 has 6, SmolLM2-135M 30, the largest Llama 126): use a model with "
            "fewer layers"
        )


def check_model_trace(
    n_layers: int, n_tokens: int, d_model: int, n_heads: int, *, bytes_per_number: int
) -> None:
    """Refuse a model run whose trace of every layer would take more than
    MAX_MODEL_TRACE_BYTES, before its weights are read, naming the longest sentence that fits."""
    needed = n_layers * trace_numbers(n_tokens, n_tokens, d_model, n_heads) * bytes_per_number
    if needed <= MAX_MODEL_TRACE_BYTES:
        return
    fitting, above = 0, n_tokens  # the most tokens that fit: at least fitting, below above
    while above - fitting > 1:
        middle = (fitting + above) // 2
        numbers = n_layers * trace_numbers(middle, middle, d_model, n_heads)
        fitting, above = (
            (middle, above)
            if numbers * bytes_per_number <= MAX_MODEL_TRACE_BYTES
            else (fitting, middle)
        )
    cheaper = (
        f", or {option('dtype', 'float32')}"
        if bytes_per_number > 4
        and n_layers * trace_numbers(n_tokens, n_tokens, d_model, n_heads) * 4
        <= MAX_MODEL_TRACE_BYTES
        else ""
    )
    way = (
        f"use a shorter sentence (at most {fitting} tokens){cheaper}"
        if fitting
        else f"the model is too large for attnviz: use a smaller one{cheaper}"
    )
    raise AttnvizError(
        f"The model's {n_layers:,} layers of {n_heads:,} heads on {n_tokens} tokens (d_model "
        f"{d_model:,}) would take about {size_text(needed)} of memory, every layer's trace kept "
        f"(layers × heads × tokens²); attnviz computes at most {size_text(MAX_MODEL_TRACE_BYTES)}: "
        f"{way}."
    )


#: What a command will make of every layer of a model run, checked once the model's settings are
#: read and the sentence split, before any weight is read: (layers, heads, tokens) -> None, or
#: AttnvizError. Set by ``before_model_run`` (the page, a picture of every layer).
_BEFORE_MODEL_RUN: ContextVar[tuple[Callable[[int, int, int], None], ...]] = ContextVar(
    "attnviz_before_model_run", default=()
)


@contextmanager
def before_model_run(check: Callable[[int, int, int], None]) -> Iterator[None]:
    """While a command runs a model: ``check(layers, heads, tokens)`` is called before the
    model's weights are read (``check_model_run``), so that an output too large for every
    layer is refused before the run, not after it."""
    token = _BEFORE_MODEL_RUN.set((*_BEFORE_MODEL_RUN.get(), check))
    try:
        yield
    finally:
        _BEFORE_MODEL_RUN.reset(token)


def counted_before_run(
    check: Callable[[int, int, int, int], None] | None,
    every_token: bool,
    *,
    one_head: bool = False,
) -> AbstractContextManager[None]:
    """While a model runs for the page or a picture of every layer: ``check(layers, heads, rows,
    columns)`` before its weights are read, each token a row and a column, when the view shows
    ``every_token`` (--words and --hide-special show fewer, counted after the run)."""
    if check is None or not every_token:
        return nullcontext()
    return before_model_run(
        lambda n_layers, n_heads, n: check(n_layers, 1 if one_head else n_heads, n, n)
    )


def page_counted(
    fewer_rows: bool, one_head: bool, *, two_sentences: bool
) -> AbstractContextManager[None]:
    """counted_before_run for the page: check_page, or check_compared_page for a page of two
    sentences; after the run when the view shows ``fewer_rows`` than tokens (--words,
    --hide-special)."""
    check = check_compared_page if two_sentences else check_page
    return counted_before_run(check, not fewer_rows, one_head=one_head)


def check_model_run(
    n_layers: int, n_tokens: int, d_model: int, n_heads: int, *, bytes_per_number: int
) -> None:
    """Every budget of a model run, before its weights are read: its trace of every layer
    (check_model_trace), then what the command will make of it (before_model_run)."""
    check_model_trace(n_layers, n_tokens, d_model, n_heads, bytes_per_number=bytes_per_number)
    for check in _BEFORE_MODEL_RUN.get():
        check(n_layers, n_heads, n_tokens)


def check_ablation(n_layers: int, n_heads: int) -> None:
    """Refuse an ablation that would run more than MAX_ABLATION_LAYER_RUNS layers again."""
    runs = n_heads * n_layers * (n_layers + 1) // 2
    if runs > MAX_ABLATION_LAYER_RUNS:
        raise AttnvizError(
            f"{option('ablate')} would run {runs:,} layers again (each of the {n_heads:,} heads "
            f"of each of the {n_layers:,} layers reruns the layers from its own on); attnviz "
            f"runs at most {MAX_ABLATION_LAYER_RUNS:,}: use a model with fewer layers or heads."
        )


def check_page(n_layers: int, n_heads_shown: int, n_queries: int, n_keys: int) -> None:
    """Refuse a page holding more than MAX_PAGE_NUMBERS weights over its layers, before it is
    written (a model's page holds every layer)."""
    numbers = n_layers * n_heads_shown * n_queries * n_keys
    if numbers <= MAX_PAGE_NUMBERS:
        return
    layers = f"{n_layers:,} layers × " if n_layers > 1 else ""
    raise AttnvizError(
        f"The page would hold {numbers:,} weights ({layers}{n_heads_shown:,} heads × "
        f"{n_queries} × {n_keys} tokens); a page holds at most {MAX_PAGE_NUMBERS:,}: show one "
        f"head ({option('head', 1)}) or use a shorter sentence."
    )


def check_compared_page(n_layers: int, n_heads_shown: int, n_queries: int, n_keys: int) -> None:
    """check_page for a page of two sentences, each run's layers counted as both sentences'
    (the page holds A's and B's; each run is checked at its own length, before it)."""
    check_page(2 * n_layers, n_heads_shown, n_queries, n_keys)


def check_layer_pictures(n_layers: int, n_heads: int, n_queries: int, n_keys: int) -> None:
    """Refuse a picture of every layer and head drawing more than MAX_PICTURE_NUMBERS cells."""
    cells = n_layers * n_heads * n_queries * n_keys
    if cells <= MAX_PICTURE_NUMBERS:
        return
    raise AttnvizError(
        f"{option('all_layers')} would draw {n_layers:,} layers × {n_heads:,} heads of "
        f"{n_queries} × {n_keys} weights, {cells:,} cells; a heatmap draws at most "
        f"{MAX_PICTURE_NUMBERS:,}: draw one layer ({option('layer', metavar='N')} without "
        f"{option('all_layers')}) or use a shorter sentence."
    )
