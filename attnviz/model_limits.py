"""How much a model run costs, estimated from its sizes before any weight is read or any layer
runs: time as layer passes and multiply-adds, memory as the traces it keeps; refused past
MAX_RUN_SECONDS or MAX_RUN_BYTES with one sentence naming the estimate and the way round
(a shorter text, ``--layer N`` for an ablation, float32). attnviz.model.run calls
check_model_run once the text is tokenized; a command says what it asks of the run (two runs
held at once, an ablation, an export) with ``planned``. Plain Python: no numpy, no Rich.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from attnviz.errors import AttnvizError, option
from attnviz.limits import check_json_size, size_text, trace_numbers

#: The most work a model run may ask for, estimated before any layer runs: 60 s on a slow
#: machine. A forward pass of SmolLM2-135M (30 layers) on 512 tokens is about 7 s of it;
#: ``heads --ablate`` runs the layers again from each head's layer on, 4,185 layer passes for
#: SmolLM2, about 40 s on the seeds' sentence and 15 minutes at 510 tokens. The way round:
#: ``--layer N`` (one layer's heads ablated), or a shorter text.
MAX_RUN_SECONDS = 60

#: The most memory a model run may hold beside its weights, estimated as text_bytes(): every
#: layer's trace (three [h, n, n] matrices and about ten [n, d_model] a layer) times the runs
#: held at once (two for compare and page --compare), and one layer's temporaries. SmolLM2 at
#: 510 tokens takes about 1.2 GB of them in float32; two such runs (page --compare) took 2.7 GB
#: in all. The weights are checked against the memory left as they are read (model.tensors).
MAX_RUN_BYTES = 2_000_000_000

#: The speed the time estimates assume: multiply-adds a second of numpy's float32 products on
#: a slow or busy machine (one quiet core did 13 to 23 G a second on MiniLM's and SmolLM2's
#: layers at 500 tokens, CPU time), and the fixed cost of one layer on one sentence (its
#: Python, RoPE tables, norms and small products: about 5 ms of SmolLM2's layer on 12 tokens).
#: So estimated, SmolLM2's ablation of the seeds' sentence is 42 s; it took 21 s of one quiet
#: core and 77 s on a busy machine, and 314 s at 240 tokens, estimated 407 s.
MULTIPLY_ADDS_PER_SECOND = 10e9
SECONDS_PER_LAYER_PASS = 0.005

#: What reading a checkpoint holds for a moment besides the run's arrays (its header, the rows
#: read from its token table, the tokenizer's answer): MiniLM peaks 45 MB above its arrays on a
#: 12-token sentence, then frees it.
FIXED_RUN_BYTES = 48_000_000


@dataclass(frozen=True)
class ModelSizes:
    """The sizes a model run's cost follows, from its config and the sentence's tokens, known
    before any weight is read."""

    name: str  # the model, as messages name it
    n_layers: int
    n_heads: int
    n_kv_heads: int  # G: shared key/value heads (h for BERT and GPT-2)
    d_model: int
    d_ff: int  # the feed-forward block's inner width (0: none, the toy model)
    n_tokens: int  # padding included
    ffn_matrices: int = 2  # W_1 and W_2; 3 for Llama's gate, up and down
    number_bytes: int = 4  # float32; 8 for float64
    # Every layer's feed-forward weights held for the run (False: a GGUF file's layers, read
    # as the run reaches them, one at a time).
    ffn_kept: bool = True

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads


class Work(NamedTuple):
    """What a command asks of a model run beyond one forward pass."""

    what: str = ""  # the command, for the message ("heads --ablate"); "" for a plain run
    runs: int = 1  # forward passes whose traces are held at once (compare: 2)
    ablated: bool = False  # each head's layer and those after it run again, head by head
    layer: int | None = None  # with ``ablated``: the one layer whose heads are (from 1)
    export: Path | None = None  # --export: every layer written there (.npz or .json)


#: One forward pass, what a command asks unless it says otherwise.
ONE_RUN = Work()

_PLANNED: ContextVar[Work | None] = ContextVar("attnviz_planned_work", default=None)


@contextmanager
def planned(work: Work) -> Iterator[None]:
    """While a command makes its runs: each model run is checked as ``work`` (compare's two
    runs are held at once, so each is checked as two)."""
    token = _PLANNED.set(work)
    try:
        yield
    finally:
        _PLANNED.reset(token)


def planned_work() -> Work:
    """The work the command being run asked for (a plain forward pass unless ``planned``)."""
    return _PLANNED.get() or ONE_RUN


def layer_multiply_adds(sizes: ModelSizes) -> int:
    """Multiply-adds of one layer on n tokens: the projections n·d·(2·d + 2·G·d_k) (W_Q, W_O;
    W_K, W_V of G heads), the feed-forward block n·d·m·d_ff, and the scores and weighted
    values 2·h·n²·d_k."""
    s, n = sizes, sizes.n_tokens
    projections = n * s.d_model * (2 * s.d_model + 2 * s.n_kv_heads * s.d_k)
    feed_forward = n * s.d_model * s.ffn_matrices * s.d_ff
    return projections + feed_forward + 2 * s.n_heads * n * n * s.d_k


def ablation_layer_passes(n_layers: int, n_heads: int, layer: int | None = None) -> int:
    """Layers run again by an ablation: for each head of layer l, layers l … L; every layer's
    heads (h·L(L+1)/2), or layer ``layer``'s alone (h·(L − layer + 1))."""
    if layer is not None:
        return n_heads * (n_layers - layer + 1)
    return n_heads * n_layers * (n_layers + 1) // 2


def layer_passes(sizes: ModelSizes, work: Work) -> int:
    """Layers run, each on every token: every layer once per run, and an ablation's."""
    again = ablation_layer_passes(sizes.n_layers, sizes.n_heads, work.layer) if work.ablated else 0
    return work.runs * sizes.n_layers + again


def run_seconds(sizes: ModelSizes, passes: int) -> float:
    """The time ``passes`` layer passes take at MULTIPLY_ADDS_PER_SECOND, with their fixed cost."""
    one = layer_multiply_adds(sizes) / MULTIPLY_ADDS_PER_SECOND + SECONDS_PER_LAYER_PASS
    return passes * one


def run_bytes(sizes: ModelSizes, work: Work = ONE_RUN) -> int:
    """Memory a run holds at its peak: each run's trace, every layer's scores, scaled and
    weights [h, n, n] and at most ten [n, d_model] (X, Q, K, V, Z, concat, output, rotated Q
    and K, the hidden state), the weights (four [d, d] and the feed-forward block's m·d·d_ff
    a layer), and one layer's temporaries (softmax's [h, n, n], the feed-forward block's
    [n, d_ff] twice); an ablation holds one more run's layers while it runs them again; and
    FIXED_RUN_BYTES for reading the checkpoint."""
    return weight_bytes(sizes) + text_bytes(sizes, work)


def weight_bytes(sizes: ModelSizes) -> int:
    """The weights a run holds: four [d, d] a layer, and the feed-forward block's m·d·d_ff a
    layer (one layer's when ``ffn_kept`` is False). They are checked against the memory left
    as each tensor is read (model.tensors), whatever the text."""
    s = sizes
    ffn_weights = s.ffn_matrices * s.d_model * s.d_ff
    weights = s.n_layers * (4 * s.d_model * s.d_model + (ffn_weights if s.ffn_kept else 0))
    return s.number_bytes * (weights + (0 if s.ffn_kept else ffn_weights))


def text_bytes(sizes: ModelSizes, work: Work = ONE_RUN) -> int:
    """What the run holds beside its weights, which grows with the text: every trace, one
    layer's temporaries and FIXED_RUN_BYTES (run_bytes)."""
    s, n = sizes, sizes.n_tokens
    trace = s.n_layers * (3 * s.n_heads * n * n + 10 * n * s.d_model)
    temporaries = 2 * s.n_heads * n * n + 2 * n * s.d_ff
    runs = work.runs + (1 if work.ablated else 0)
    return s.number_bytes * (runs * trace + temporaries) + FIXED_RUN_BYTES


def check_model_run(sizes: ModelSizes, work: Work | None = None) -> None:
    """Refuse a model run estimated past MAX_RUN_SECONDS or MAX_RUN_BYTES, before any weight is
    read or any layer run, naming the estimate and the way round it."""
    work = planned_work() if work is None else work
    s = sizes
    if work.ablated and work.layer is not None and not 1 <= work.layer <= s.n_layers:
        raise AttnvizError(
            f"{option('layer', work.layer)} does not exist; {s.name} has layers 1 to {s.n_layers}."
        )
    if work.export is not None:  # every layer's arrays, at most trace_numbers() a layer
        numbers = s.n_layers * trace_numbers(s.n_tokens, s.n_tokens, s.d_model, s.n_heads)
        held = _Counted(numbers, s.d_k)
        check_json_size([held], ["token"] * s.n_tokens, work.export, layers=s.n_layers)
    passes = layer_passes(s, work)
    seconds, memory = run_seconds(s, passes), text_bytes(s, work)
    if seconds <= MAX_RUN_SECONDS and memory <= MAX_RUN_BYTES:
        return
    fitting = _most_tokens(s, work)
    if seconds <= MAX_RUN_SECONDS and (not fitting or weight_bytes(s) > MAX_RUN_BYTES):
        # Memory past the limit for the model's own sizes (weights larger than the limit, or a
        # feed-forward block too wide for one token), not for the text's: its tensors are
        # checked against the memory left as they are read, and the one that does not fit is
        # named there (model.tensors).
        return
    what = f"{work.what} of {s.name}" if work.what else f"A run of {s.name}"
    if work.runs > 1:
        what += f" ({work.runs} runs held at once)"
    madds = passes * layer_multiply_adds(s)
    estimate = (
        f"{what} at {s.n_tokens} tokens needs about {passes:,} layer passes "
        f"({_count(madds)} multiply-adds, ≈ {_duration(seconds)}, {size_text(memory)} of memory "
        f"beside its {size_text(weight_bytes(s))} of weights)"
    )
    if seconds > MAX_RUN_SECONDS:
        stop = f"attnviz stops at {MAX_RUN_SECONDS} s of estimated work"
    else:
        stop = f"attnviz holds at most {size_text(MAX_RUN_BYTES)} beside the weights"
    ways = []
    if work.ablated and work.layer is None:
        one_layer = work._replace(layer=1)  # layer 1's heads: the costliest layer to ablate
        first = run_seconds(s, layer_passes(s, one_layer))
        layer_n = f"add {option('layer', metavar='N')} to ablate one layer's heads"
        if first <= MAX_RUN_SECONDS and memory <= MAX_RUN_BYTES:
            ways.append(f"{layer_n} (layer 1, the costliest, ≈ {_duration(first)})")
        elif fitting_one := _most_tokens(s, one_layer):
            ways.append(f"{layer_n} and shorten the text to about {_tokens(fitting_one)}")
    if s.number_bytes > 4 and text_bytes(replace(s, number_bytes=4), work) <= MAX_RUN_BYTES:
        ways.append(f"use {option('dtype', 'float32')}")
    ways.append(
        f"shorten the text (about {_tokens(fitting)} fit)" if fitting else "use a smaller model"
    )
    raise AttnvizError(f"{estimate}; {stop}: {' or '.join(ways)}.")


class _Counted(NamedTuple):
    """``numbers`` numbers in rows of ``width``, as an export's size is estimated (Shaped)."""

    numbers: int
    width: int

    @property
    def size(self) -> int:
        return self.numbers

    @property
    def ndim(self) -> int:
        return 2

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.numbers // self.width, self.width)


def _most_tokens(sizes: ModelSizes, work: Work) -> int:
    """The most tokens ``work`` fits in both limits (0: not even one)."""
    low, high = 0, sizes.n_tokens
    while low < high:
        middle = (low + high + 1) // 2
        trial = replace(sizes, n_tokens=middle)
        fits = run_seconds(trial, layer_passes(trial, work)) <= MAX_RUN_SECONDS
        if fits and text_bytes(trial, work) <= MAX_RUN_BYTES:
            low = middle
        else:
            high = middle - 1
    return low


def _tokens(count: int) -> str:
    """1 token, 25 tokens."""
    return f"{count} token{'' if count == 1 else 's'}"


def _count(number: float) -> str:
    """4.0 T, 310 G, 52 M: decimal units, as _size writes bytes."""
    for unit in ("", " thousand", " M", " G", " T"):
        if number < 1000 or unit == " T":
            return f"{number:,.0f}{unit}" if not unit else f"{number:.1f}{unit}"
        number /= 1000
    raise AssertionError  # unreachable: the loop returns at T


def _duration(seconds: float) -> str:
    """42 s, 7 min, 1.2 h."""
    if seconds < 100:
        return f"{seconds:.0f} s" if seconds >= 1 else "under a second"
    if seconds < 6000:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
