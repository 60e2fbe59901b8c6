"""How much work a command may ask for, estimated from the sizes before any of it is done.

Each limit is a constant with why it is that size and the way round it; each ``check_*`` raises
AttnvizError with one sentence naming the estimate, the limit and what to change, before the
arrays are computed, the slides drawn or the export written. The command line and the Python
API call the same checks, so both refuse alike. Plain Python: no numpy, no Rich.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from attnviz.errors import AttnvizError, OutputProblem, option, spelled


class Shaped(Protocol):
    """An array, as far as its size is concerned (numpy's, without importing numpy)."""

    @property
    def size(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...


class Traced(Protocol):
    """A trace, as far as its export's size is concerned (attnviz.trace.AttentionTrace)."""

    @property
    def tokens(self) -> tuple[str, ...]: ...
    def arrays(self) -> Mapping[str, Shaped]: ...


#: float64, the precision of every array a trace keeps.
BYTES_PER_NUMBER = 8

#: The most memory a trace's arrays may take, estimated as trace_numbers() × 8 bytes. Computing
#: them takes about twice that at the peak (temporaries), so a trace stays under about 2 GB;
#: 2048 heads on 500 words would need 12.5 GB and ran out of memory. For scale: the paper's 8
#: heads (d_model 512) on a 512-token sentence take 80 MB. The way round: fewer heads, or a
#: shorter sentence.
MAX_TRACE_BYTES = 1_000_000_000

#: The most random numbers ``attnviz scaling`` draws in one run, over every d_k and the divisor
#: experiment together (about 3 s on one core; the default run draws 15 million). 4096 sizes of
#: d_k from 1 to 4096 at 400 queries × 16 keys would draw 54 billion, for hours.
MAX_SCALING_NUMBERS = 150_000_000

#: The most sizes ``--dk`` lists: a row each in the table; powers of two from 1 to 4096 are 13.
MAX_D_K_SIZES = 64

#: The most slides ``--slides`` writes (each an .svg and a .png, so twice as many files). A
#: slide is drawn in about a quarter of a second and takes up to about 0.6 MB: 150 slides are at
#: most 300 files, about 90 MB and 40 s. The paper's 8 heads on a 40-word sentence are 127; 32
#: heads on 3 words were 164, and 2048 heads would be about 10,000.
MAX_SLIDES = 150

#: The most bytes a slide is taken to hold, .svg and .png together: the largest measured (a
#: table of shaded cells) is 0.48 MB of PNG and 0.12 MB of SVG.
SLIDE_BYTES = 600_000

#: The most bytes an .npz export writes (8 a number, float64): writing holds the layers stacked
#: and made float64 beside the run, about twice this more. A 481-word MiniLM run is 494 MB;
#: SmolLM2 at 510 tokens wrote 2.4 GB and peaked at 4.6 GB. The way round: a shorter text, or
#: the layer alone (attnviz.export_trace(shown.trace, …)).
MAX_EXPORT_BYTES = 1_000_000_000

#: The most bytes a number takes in a JSON export: float64's longest shortest-repr,
#: "-2.2250738585072014e-308", is 24 characters, then ", " between numbers.
JSON_BYTES_PER_NUMBER = 26


# -- traces -------------------------------------------------------------------------------------


def trace_numbers(
    n_queries: int, n_keys: int, d_model: int, n_heads: int, n_kv_heads: int | None = None
) -> int:
    """How many numbers one layer's trace keeps: scores, scaled and weights [h, n_q, n_k]; X,
    the projections, Z, concat and output (with room for E, PE and rotated q, k) at most ten
    [n, d_model]; W_Q, W_K, W_V, W_O at most four [d_model, d_model]."""
    n = max(n_queries, n_keys)
    del n_kv_heads  # G ≤ h: shared key/value heads only shrink W_K, W_V, K and V
    return 3 * n_heads * n_queries * n_keys + 10 * n * d_model + 4 * d_model * d_model


def check_trace(
    n_queries: int,
    n_keys: int,
    d_model: int,
    n_heads: int,
    n_kv_heads: int | None = None,
    *,
    layers: int = 1,
    heads_fixed: bool = False,
) -> None:
    """Refuse a trace whose arrays would take more than MAX_TRACE_BYTES, before computing it,
    naming the most heads this sentence allows (unless ``heads_fixed``: a model's or a weights
    file's heads, which no option changes)."""
    needed = layers * trace_numbers(n_queries, n_keys, d_model, n_heads, n_kv_heads)
    if needed * BYTES_PER_NUMBER <= MAX_TRACE_BYTES:
        return
    budget = MAX_TRACE_BYTES // BYTES_PER_NUMBER // layers
    rest = 10 * max(n_queries, n_keys) * d_model + 4 * d_model * d_model
    most = (budget - rest) // (3 * n_queries * n_keys)
    # The most heads that fit and divide d_model (each head takes d_k = d_model / h columns).
    fewer = range(0 if heads_fixed else min(most, n_heads - 1), 0, -1)
    fitting = next((h for h in fewer if d_model % h == 0), 0)
    way = f"{option('heads', fitting)} or fewer, or " if fitting else ""
    tokens = f"{n_queries} × {n_keys} tokens" if n_queries != n_keys else f"{n_queries} tokens"
    raise AttnvizError(
        f"{n_heads} heads on {tokens} (d_model {d_model}) would take about "
        f"{size_text(needed * BYTES_PER_NUMBER)} of memory, 3 matrices of heads × tokens² each; "
        f"attnviz computes at most {size_text(MAX_TRACE_BYTES)}: use {way}a shorter sentence."
    )


def check_result(step: str, shape: Sequence[int], itemsize: int) -> None:
    """Refuse one step of the math (softmax, a projection, …) whose result would take more than
    MAX_TRACE_BYTES, before numpy allocates it: the arrays given may be broadcast views of a
    few bytes (np.broadcast_to) that stand for terabytes."""
    needed = itemsize
    for size in shape:
        needed *= int(size)
    if needed > MAX_TRACE_BYTES:
        raise AttnvizError(
            f"{step}: the result, {list(shape)}, would take {size_text(needed)} of memory; attnviz "
            f"computes at most {size_text(MAX_TRACE_BYTES)} at once: give smaller arrays."
        )


# -- the lesson ---------------------------------------------------------------------------------

#: The most heads the lesson tells, each with its five steps: 256 heads of a short sentence take
#: about 8 s to print (2048 took minutes, before a line was printed).
MAX_LESSON_HEADS = 256

#: The most numbers the lesson's per-head tables hold before eliding, heads × queries × keys:
#: each table is measured whole to size its columns, so 64 heads of 500 words (16 million)
#: take about 35 s. The way round: one head, or a shorter sentence.
MAX_LESSON_NUMBERS = 16_000_000


def check_lesson(n_heads_shown: int, n_queries: int, n_keys: int, n_heads_by_rows: int = 0) -> None:
    """Refuse a lesson of more than MAX_LESSON_HEADS heads (in full, or by the focus word's
    rows), or whose per-head tables hold more than MAX_LESSON_NUMBERS numbers, before it is
    written."""
    numbers = n_heads_shown * n_queries * n_keys + n_heads_by_rows * (n_queries + n_keys)
    one_head = f"{option('head', 1)} {option('full', True)}"
    heads = n_heads_shown + n_heads_by_rows
    if heads > MAX_LESSON_HEADS:
        raise AttnvizError(
            f"The lesson would tell {heads} heads, each in five steps; it tells at most "
            f"{MAX_LESSON_HEADS}: show one head ({one_head}) or use fewer heads."
        )
    if numbers > MAX_LESSON_NUMBERS:
        tokens = f"{n_queries} × {n_keys}" if n_queries != n_keys else f"{n_queries}²"
        raise AttnvizError(
            f"The lesson of {n_heads_shown} heads on {tokens} tokens would lay out {numbers:,} "
            f"numbers in each step's tables (heads × tokens²); it lays out at most "
            f"{MAX_LESSON_NUMBERS:,}: show one head ({one_head}), or use fewer heads or a "
            "shorter sentence."
        )


# -- heatmaps -----------------------------------------------------------------------------------

#: The most weights a heatmap command draws as cells, over every panel of every picture (heads ×
#: queries × keys, twice with --per-head, which draws each head again): 64 heads of 400 words in
#: one picture (10 million) take 18 s and 1 GB, and as 64 pictures more about 100 s more.
MAX_PICTURE_NUMBERS = 12_000_000


def check_pictures(n_panels: int, n_queries: int, n_keys: int, *, per_head: bool) -> None:
    """Refuse heatmaps drawing more than MAX_PICTURE_NUMBERS cells, before any is drawn."""
    cells = n_panels * n_queries * n_keys * (2 if per_head else 1)
    if cells <= MAX_PICTURE_NUMBERS:
        return
    again = f" (twice with {option('per_head')})" if per_head else ""
    raise AttnvizError(
        f"{n_panels} heads of {n_queries} × {n_keys} weights would draw {cells:,} cells{again}; "
        f"a heatmap draws at most {MAX_PICTURE_NUMBERS:,}: draw one head "
        f"({option('head', 1)}), or use fewer heads or a shorter sentence."
    )


#: The most memory drawing one --all-layers picture may take, estimated by grid_bytes(): the
#: figure's artists and its canvas, about 1.6 MB a panel and 400 bytes a cell of each panel's
#: (at least 64 × 64 cells: a panel is never drawn smaller). SmolLM2's 270 panels on 128 tokens
#: took 2.2 GB, and about 1.9 GB measured on 120 words; MiniLM's 72 on 120 words 0.4 GB. The
#: way round: --layer N (one layer's heads), or a shorter text.
MAX_GRID_BYTES = 1_500_000_000

#: Bytes of drawing per panel and per cell of the layers × heads picture (see MAX_GRID_BYTES).
GRID_PANEL_BYTES = 1_600_000
GRID_CELL_BYTES = 400
GRID_LEAST_TOKENS = 64


def grid_bytes(n_layers: int, n_heads: int, n_tokens: int) -> int:
    """Memory drawing a layers × heads picture of n_tokens² panels takes, at most."""
    panels = n_layers * n_heads
    side = max(n_tokens, GRID_LEAST_TOKENS)
    return panels * (GRID_PANEL_BYTES + GRID_CELL_BYTES * side * side)


def check_grid_memory(n_layers: int, n_heads: int, n_tokens: int) -> None:
    """Refuse a layers × heads picture estimated past MAX_GRID_BYTES, before it is drawn."""
    needed = grid_bytes(n_layers, n_heads, n_tokens)
    if needed <= MAX_GRID_BYTES:
        return
    fitting = next(
        (
            n
            for n in range(n_tokens - 1, 0, -1)
            if grid_bytes(n_layers, n_heads, n) <= MAX_GRID_BYTES
        ),
        0,
    )
    shorter = f", or shorten the text (about {fitting} tokens fit)" if fitting else ""
    raise AttnvizError(
        f"{option('all_layers')} would draw {n_layers} layers × {n_heads} heads of {n_tokens} × "
        f"{n_tokens} weights, about {size_text(needed)} of memory to draw; attnviz draws at most "
        f"{size_text(MAX_GRID_BYTES)}: draw one layer's heads with {option('layer', metavar='N')} "
        f"instead of {option('all_layers')}{shorter}."
    )


#: The most cells a comparison picture (compare -o) draws, each with its weight written in it:
#: panels × 2 rows × the aligned words. 20 heads of 400 words (16,000 cells) took 102 s and
#: 3.2 GB; the README's pictures draw 48 and 150.
MAX_COMPARE_CELLS = 3_000


def check_compare_picture(n_heads: int, n_slots: int, *, path: Path | str) -> None:
    """Refuse, before the report is printed, a comparison picture of more than
    MAX_COMPARE_CELLS cells: ``n_heads`` panels (--top's, or fewer) of two rows of ``n_slots``."""
    cells = n_heads * 2 * n_slots
    if cells <= MAX_COMPARE_CELLS:
        return
    fits = MAX_COMPARE_CELLS // (2 * n_slots)
    fix = (
        f"draw fewer heads with {option('top', fits)} or use shorter sentences"
        if fits
        else "use shorter sentences"
    )
    raise OutputProblem(
        f"{shortened(str(path))} would draw {n_heads} heads × 2 rows × {n_slots} words, "
        f"{cells:,} cells with their weights; a comparison picture draws at most "
        f"{MAX_COMPARE_CELLS:,}: {fix}."
    )


# -- attnviz scaling ----------------------------------------------------------------------------


def scaling_numbers(d_ks: Sequence[int], n_keys: int, n_queries: int) -> int:
    """Random numbers the d_k experiment draws: for each d_k, n_queries queries and
    n_queries × n_keys keys of d_k components (the queries are the smaller part: counted once
    more per key to stay an upper bound)."""
    return n_queries * (n_keys + 1) * sum(d_ks)


def divisor_numbers(lengths: Sequence[int], d_k: int, n_queries: int) -> int:
    """Random numbers the divisor experiment draws: n_queries × (longest length + 1) × d_k."""
    return n_queries * (max(lengths, default=0) + 1) * d_k


POWERS = "d_ks=[1, 4, 16, 64, 256, 1024, 4096]"


def check_scaling(d_ks: Sequence[int], *, n_keys: int, n_queries: int, divisor: int = 0) -> None:
    """Refuse more than MAX_D_K_SIZES sizes, or a run drawing more than MAX_SCALING_NUMBERS
    random numbers (``divisor``: what the divisor experiment adds), before drawing any."""
    if len(d_ks) > MAX_D_K_SIZES:
        raise AttnvizError(
            f"{option('d_ks')} lists {len(d_ks):,} sizes; give at most {MAX_D_K_SIZES} (powers "
            f"of two show the effect: {spelled('--dk 1,4,16,64,256,1024,4096', POWERS)})."
        )
    drawn = scaling_numbers(d_ks, n_keys, n_queries) + divisor
    if drawn > MAX_SCALING_NUMBERS:
        raise AttnvizError(
            f"{n_queries:,} queries × {n_keys:,} keys over d_k summing to {sum(d_ks):,}"
            f"{' and the divisor experiment' if divisor else ''} would draw {drawn:,} random "
            f"numbers; keep it under {MAX_SCALING_NUMBERS:,} with fewer or smaller sizes, or "
            f"fewer {option('queries')} or {option('keys')}."
        )


def check_divisor(lengths: Sequence[int], *, d_k: int, n_queries: int) -> None:
    """Refuse a divisor experiment drawing more than MAX_SCALING_NUMBERS random numbers."""
    drawn = divisor_numbers(lengths, d_k, n_queries)
    if drawn > MAX_SCALING_NUMBERS:
        raise AttnvizError(
            f"{n_queries:,} queries × {max(lengths):,} keys × d_k {d_k} would draw {drawn:,} "
            f"random numbers; keep it under {MAX_SCALING_NUMBERS:,} with fewer "
            f"{option('queries')}."
        )


# -- slides -------------------------------------------------------------------------------------


def fewest_slides(n_heads_in_full: int, per_head_steps: int, n_heads_by_rows: int = 0) -> int:
    """The fewest slides a lesson can make: a slide per head shown in full for each of the
    ``per_head_steps`` shown (the lesson's table counts them: lesson.steps.per_head_numbers),
    and one for each head that gives the focus word's rows when any per-head step is shown
    (continued slides only add to it), before the lesson is written."""
    return n_heads_in_full * per_head_steps + (n_heads_by_rows if per_head_steps else 0)


def check_slide_count(count: int, *, at_least: bool = False) -> None:
    """Refuse more than MAX_SLIDES slides (``at_least``: ``count`` is the fewest there can be),
    before any is drawn."""
    if count <= MAX_SLIDES:
        return
    slides = f"at least {count:,}" if at_least else f"{count:,}"
    raise OutputProblem(
        f"{option('slides')} would write {slides} slides ({2 * count:,} files, about "
        f"{size_text(count * SLIDE_BYTES)}); attnviz writes at most {MAX_SLIDES}: show fewer "
        f"{option('steps')}, fewer heads or a shorter sentence."
    )


# -- exports ------------------------------------------------------------------------------------


def json_export_bytes(numbers: int, rows: int) -> int:
    """At most how many bytes a JSON export of ``numbers`` numbers in ``rows`` innermost lists
    takes (the words and the config aside): JSON_BYTES_PER_NUMBER a number, 4 a list."""
    return numbers * JSON_BYTES_PER_NUMBER + rows * 4


def check_export_size(traces: Sequence[Traced], path: Path | str) -> None:
    """Refuse an export of ``traces`` (every layer written, as for a model) that attnviz could
    not read back (JSON) or larger than MAX_EXPORT_BYTES (.npz), before it is computed: see
    check_json_size."""
    arrays = [array for trace in traces for array in trace.arrays().values()]
    check_json_size(arrays, traces[0].tokens, path, layers=len(traces))


def check_json_size(
    arrays: Iterable[Shaped], tokens: Sequence[str], path: Path | str, *, layers: int = 1
) -> None:
    """Refuse a JSON export larger than the JSON files attnviz reads (files.MAX_JSON_BYTES),
    estimated from the arrays' shapes (json_export_bytes, an upper bound) before the text is
    made; an .npz export (8 bytes a number) larger than MAX_EXPORT_BYTES (check_npz_size)."""
    from attnviz.files import MAX_JSON_BYTES

    suffix = Path(path).suffix.lower()
    if suffix not in (".json", ".npz"):
        return
    numbers = rows = 0
    for array in arrays:
        numbers += array.size
        rows += array.size // array.shape[-1] if array.ndim and array.shape[-1] else 1
    # Each word at most 12 bytes a character (a \uXXXX pair), twice (tokens and provenance);
    # each layer's config and provenance a few kilobytes.
    extra = 24 * sum(len(token) + 4 for token in tokens) + 20_000 * layers
    if suffix == ".npz":
        check_npz_size(numbers, extra, path, layers=layers)
        return
    estimate = json_export_bytes(numbers, rows) + extra
    if estimate > MAX_JSON_BYTES:
        npz = npz_export_bytes(numbers, extra)
        way = f"export as .npz instead (8 bytes a number, {size_text(npz)})"
        if npz > MAX_EXPORT_BYTES:
            way = (
                f"shorten the text (as .npz, {size_text(npz)}, it is past the "
                f"{size_text(MAX_EXPORT_BYTES)} attnviz writes too)"
            )
        raise OutputProblem(
            f"{option('export')} {Path(path).name}: {numbers:,} numbers as JSON would take up to "
            f"{size_text(estimate)}, more than the {size_text(MAX_JSON_BYTES)} attnviz reads back; "
            f"{way}."
        )


# -- notebooks ----------------------------------------------------------------------------------

#: The most bytes of a lesson page a notebook cell embeds (Page._repr_html_, the page escaped
#: into its frame); a larger page is not embedded, a note saying how to save it whole instead.
#: A notebook keeps every output in its .ipynb file, and Jupyter's default output rate limit
#: (1 MB a second over 3 s) drops larger ones: SmolLM2's page at 510 tokens would be 40 MB
#: there. The notebook view of an explanation stays under about 1 MB by eliding its tables
#: (render/notebook/cell.py); a page cannot elide its numbers, which are what a click shows, so its
#: bound is the MiniLM page of the seeds' sentence (2.3 MB framed) with room to spare.
MAX_NOTEBOOK_PAGE_BYTES = 3_000_000


def npz_export_bytes(numbers: int, extra: int) -> int:
    """At most how many bytes an .npz export of ``numbers`` numbers takes: 8 a number (float64),
    ``extra`` for the words and the config, and each array's zip and .npy headers."""
    return numbers * BYTES_PER_NUMBER + extra + 4_096 * 32


def check_npz_size(numbers: int, extra: int, path: Path | str, *, layers: int = 1) -> None:
    """Refuse an .npz export of more than MAX_EXPORT_BYTES, before any array is stacked or
    made float64 for it."""
    estimate = npz_export_bytes(numbers, extra)
    if estimate <= MAX_EXPORT_BYTES:
        return
    every = f"every one of {layers} layers" if layers > 1 else "the layer"
    alone = spelled("", " or export one layer (attnviz.export_trace(shown.trace, …))")
    raise OutputProblem(
        f"{option('export')} {Path(path).name}: {numbers:,} numbers of {every} would write "
        f"about {size_text(estimate)} and hold about {size_text(2 * estimate)} more while writing; "
        f"attnviz writes at most {size_text(MAX_EXPORT_BYTES)}: shorten the text{alone}."
    )


#: The most characters of a value given that a message repeats: a value of 100,000 digits is
#: shown by its start and its length, not echoed whole.
MAX_ECHO = 40


def shortened(text: str, most: int = MAX_ECHO) -> str:
    """``text`` as a message repeats it: whole up to ``most`` characters, else its start, an
    ellipsis and how long it was."""
    if len(text) <= most:
        return text
    return f"{text[: most - 10]}… ({len(text):,} characters)"


def size_text(size: float) -> str:
    """2.4 MB, 13.5 GB: decimal units, as the limits above are written."""
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError  # unreachable: the loop returns at TB
