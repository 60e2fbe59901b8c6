"""The step-by-step lesson in the terminal: Rich tables and sentences drawn from an AttentionTrace.

Nothing here computes attention; every number comes from the trace. Words are printed as
``rich.text.Text`` (markup is never parsed) after ``printable()`` (control characters escaped).
Colour is added only as styles, so NO_COLOR and a piped stdout give plain text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.rule import Rule
from rich.segment import Segment
from rich.text import Span, Text

from attnviz.attention import softmax_parts
from attnviz.scaling import ScalingRow
from attnviz.tokens import Focus, printable
from attnviz.trace import AttentionTrace

_SUBSCRIPT_DIGITS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")

# matplotlib's viridis at nine evenly spaced points: perceptually uniform and colour-blind safe,
# the same map the heatmaps use, hard-coded so the terminal path never imports matplotlib.
_VIRIDIS = (
    (0x44, 0x01, 0x54),
    (0x47, 0x2C, 0x7A),
    (0x3B, 0x51, 0x8B),
    (0x2C, 0x71, 0x8E),
    (0x21, 0x90, 0x8D),
    (0x27, 0xAD, 0x81),
    (0x5C, 0xC8, 0x63),
    (0xAA, 0xDC, 0x32),
    (0xFD, 0xE7, 0x25),
)

ELLIPSIS = "…"
MASKED = "−∞"  # a masked score: set to minus infinity before the softmax
MAX_LABEL_WIDTH = 10  # a longer word is cut to this many cells in headers and row labels
MAX_TABLE_ROWS = 32  # more rows are elided in the middle; --export has every number
BAR_WIDTH = 24
MAX_UNBROKEN_GROUP = 40  # a bracketed group up to this many cells is kept on one line


def subscript(number: int) -> str:
    """``12`` -> ``₁₂``, for head numbers in names such as Q₁ and W_Q₂."""
    return str(number).translate(_SUBSCRIPT_DIGITS)


def format_number(value: float, decimals: int) -> str:
    """Fixed-point text with no negative zero (-0.001 at 2 decimals prints as 0.00); scientific
    notation from a million up, so a huge value never needs a column wider than the screen."""
    if np.isinf(value):
        return MASKED if value < 0 else "∞"
    if abs(value) >= 1e6:
        return f"{value:.{decimals}e}"
    text = f"{value:.{decimals}f}"
    if text.startswith("-") and float(text) == 0.0:
        text = text[1:]
    return text


def weight_style(weight: float, color_system: str | None = "truecolor") -> str:
    """How a cell holding ``weight`` in [0, 1] is shaded, for the terminal's colour system.

    truecolor: a viridis background (as in the heatmaps) with black or white text, whichever
    reads better. 256 colours: the 24-step grey ramp, which stays monotone where viridis would
    be rounded to unrelated palette colours. 16 colours: no background at all (the 16 colours
    carry no order), but dim for weights under 0.1, bold from 0.3 and reversed from 0.6.
    No colour: no style.
    """
    weight = min(max(weight, 0.0), 1.0)
    if color_system is None:
        return ""
    if color_system == "256":
        grey = round(weight * 23)
        return f"{'black' if grey > 11 else 'white'} on color({232 + grey})"
    if color_system != "truecolor":
        if weight >= 0.6:
            return "bold reverse"
        return "bold" if weight >= 0.3 else ("dim" if weight < 0.1 else "")
    position = weight * (len(_VIRIDIS) - 1)
    low = int(np.floor(position))
    high = min(low + 1, len(_VIRIDIS) - 1)
    fraction = position - low
    red, green, blue = (
        round(a + (b - a) * fraction) for a, b in zip(_VIRIDIS[low], _VIRIDIS[high], strict=True)
    )
    # Relative luminance decides black or white text (WCAG's coefficients).
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    foreground = "black" if luminance > 120 else "white"
    return f"{foreground} on #{red:02x}{green:02x}{blue:02x}"


def fit_label(word: str, width: int = MAX_LABEL_WIDTH) -> str:
    """A label cut to ``width`` cells with an ellipsis, keeping an occurrence suffix (":2")."""
    text = printable(word)
    if cell_len(text) <= width:
        return text
    stem, colon, number = text.rpartition(":")
    suffix = f"{ELLIPSIS}:{number}" if colon and stem and number.isdigit() else ELLIPSIS
    if suffix != ELLIPSIS:
        text = stem
    while text and cell_len(text) + cell_len(suffix) > width:
        text = text[:-1]
    return text + suffix


def occurrence_labels(tokens: Sequence[str]) -> list[str]:
    """Words as labels, numbered where a word repeats: the:1 … the:2, as --focus the:2 names it."""
    counts: dict[str, int] = {}
    for token in tokens:
        counts[token.casefold()] = counts.get(token.casefold(), 0) + 1
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        key = token.casefold()
        if counts[key] == 1:
            labels.append(token)
        else:
            seen[key] = seen.get(key, 0) + 1
            labels.append(f"{token}:{seen[key]}")
    return labels


def _pad_left(text: str, width: int) -> str:
    return text.rjust(width) if text.isascii() else " " * (width - cell_len(text)) + text


def _pad_right(text: str, width: int) -> str:
    return text.ljust(width) if text.isascii() else text + " " * (width - cell_len(text))


def _kept_indices(count: int, keep: int, must: int | None = None) -> list[int | None]:
    """Indices 0..count-1, or about ``keep`` of them from both ends with None marking each gap.

    ``must`` (the row of the word being followed) stays visible even inside the gap.
    """
    if keep >= count:
        return list(range(count))
    head = (keep + 1) // 2
    tail = keep - head
    if must is None or must < head or must >= count - tail:
        return [*range(head), None, *range(count - tail, count)]
    return [*range(head - 1), None, must, None, *range(count - tail + 1, count)]


class Matrix(NamedTuple):
    """What a matrix table shows: numbers, labels and a title."""

    values: np.ndarray  # [rows, columns]
    title: str
    row_labels: Sequence[str]
    column_labels: Sequence[str]
    shade: bool = False  # colour each cell by its value in [0, 1] (attention weights)
    row_sums: bool = False  # add a Σ column (softmax rows sum to 1)
    keep_row: int | None = None  # a row that must stay visible when rows are elided
    masked: np.ndarray | None = None  # [rows, columns] bool: cells shown as −∞ (masked scores)


class Block(NamedTuple):
    """Lines of text of a known width, ready to print or to set beside another block."""

    lines: list[Text]
    width: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        # The layout is final: emit each line's segments as they are, skipping Rich's
        # word-wrapping pass, which would only cost time.
        plain = console.color_system is None  # styles would be dropped: skip computing them
        for line in self.lines:
            if plain:
                yield Segment(line.plain)
            else:
                yield from line.render(console)
            yield Segment.line()


COLUMN_GAP = 2  # spaces between the columns of a matrix


def matrix_block(
    matrix: Matrix,
    decimals: int,
    max_width: int,
    *,
    with_row_labels: bool = True,
    color_system: str | None = "truecolor",
) -> Block:
    """A titled table of ``matrix`` at most ``max_width`` cells wide.

    ``with_row_labels=False`` leaves out the words at the left, for a table set to the right of
    another with the same rows.

    Columns that do not fit (and rows past MAX_TABLE_ROWS) are elided in the middle with "…";
    the title always carries the full shape, so nothing is wrapped into unreadable columns.
    The layout is computed here rather than by rich.table, which is an order of magnitude
    slower and would dominate the start-up time of ``attnviz explain``.
    """
    n_rows, n_columns = matrix.values.shape
    rows = _kept_indices(n_rows, MAX_TABLE_ROWS, matrix.keep_row)
    shown_rows = [r for r in rows if r is not None]
    cells = {
        column: [
            MASKED
            if matrix.masked is not None and matrix.masked[r, column]
            else format_number(float(matrix.values[r, column]), decimals)
            for r in shown_rows
        ]
        for column in range(n_columns)
    }
    labels = {column: fit_label(matrix.column_labels[column]) for column in range(n_columns)}
    widths = {
        column: max(cell_len(labels[column]), max(map(len, cells[column])))
        for column in range(n_columns)
    }
    row_labels = {r: fit_label(matrix.row_labels[r]) if with_row_labels else "" for r in shown_rows}
    label_width = max(cell_len(label) for label in row_labels.values()) if with_row_labels else 0
    sums = [format_number(float(matrix.values[r].sum()), decimals) for r in shown_rows]
    sum_width = max(len(x) for x in sums) + COLUMN_GAP if matrix.row_sums else 0

    def total_width(columns: list[int | None]) -> int:
        return (
            label_width
            + sum(COLUMN_GAP + (1 if c is None else widths[c]) for c in columns)
            + sum_width
        )

    keep = n_columns
    columns = _kept_indices(n_columns, keep)
    if total_width(columns) > max_width:
        # Drop columns from the middle until the rest fits; first and last always stay.
        while keep > 2 and total_width(_kept_indices(n_columns, keep)) > max_width:
            keep -= 1
        columns = _kept_indices(n_columns, keep)
    elided = None in columns or None in rows

    title = Text(matrix.title, style="bold")
    title.append(f"  [{n_rows} × {n_columns}]", style="dim")
    if elided:
        title.append("  middle elided, --export has all", style="dim")
    gap = " " * COLUMN_GAP
    header = Text(" " * label_width, style="bold")
    for column in columns:
        header.append(
            gap + (ELLIPSIS if column is None else _pad_left(labels[column], widths[column]))
        )
    if matrix.row_sums:
        header.append(gap + _pad_left("Σ", sum_width - COLUMN_GAP))
    width = total_width(columns)
    lines = [title, header, Text("─" * width)]
    for row in rows:
        if row is None:
            lines.append(Text(ELLIPSIS))
            continue
        # One string per line plus style spans: appending cell by cell to a rich Text costs
        # several times more, and this runs for every cell of every table.
        position = shown_rows.index(row)
        parts = [_pad_right(row_labels[row], label_width)]
        spans = [Span(0, len(parts[0]), "bold")]
        offset = len(parts[0])
        for column in columns:
            cell = (
                ELLIPSIS if column is None else _pad_left(cells[column][position], widths[column])
            )
            parts.append(gap + cell)
            offset += COLUMN_GAP
            if matrix.shade and column is not None:
                value = float(matrix.values[row, column])
                spans.append(Span(offset, offset + len(cell), weight_style(value, color_system)))
            offset += len(cell)
        if matrix.row_sums:
            total = gap + _pad_left(sums[position], sum_width - COLUMN_GAP)
            parts.append(total)
            spans.append(Span(offset, offset + len(total), "dim"))
        lines.append(Text("".join(parts), spans=spans))
    return Block(lines=lines, width=max(width, title.cell_len))


def wrap(text: Text, width: int) -> list[Text]:
    """``text`` in lines of at most ``width`` cells, broken at spaces outside brackets.

    A vector [0.12, -0.34], a shape [n, d_k] or a result "= 0.78" stays whole on its line,
    and an indented line (a worked example) continues two cells further in, so a formula never
    restarts at the left margin. No line ends in spaces: piped output has no trailing blanks.
    """
    text = text.copy()
    text.rstrip()  # trailing spaces alone must not make a line "too long"
    plain = text.plain
    width = max(width, 1)
    if cell_len(plain) <= width:
        return [text]
    indent = len(plain) - len(plain.lstrip(" "))
    if indent and indent + 2 > width:  # no room for the indent and a wide character: drop it
        text = text[indent:]
        plain, indent = text.plain, 0
    # Continuation lines keep two cells for text (a wide character), however narrow the
    # terminal, so every pass of the loop below moves forward.
    hang = min(indent + 2, width - 2) if indent else 0
    # Spaces inside a short bracketed group (a vector, a shape, "(11 tokens)") are not broken
    # at; a long parenthesis of prose is, like the text around it.
    protected = [False] * len(plain)
    opened: list[int] = []
    for position, char in enumerate(plain):
        if char in "([{":
            opened.append(position)
        elif char in ")]}" and opened:
            start = opened.pop()
            if cell_len(plain[start : position + 1]) <= MAX_UNBROKEN_GROUP:
                protected[start : position + 1] = [True] * (position + 1 - start)
    anywhere = [p for p, char in enumerate(plain) if char == " " and p > indent]
    outside = [p for p in anywhere if not protected[p] and plain[p - 1] != "="]  # "= 0.78" too
    cuts: list[int] = []
    start, room = 0, width
    while cell_len(plain[start:]) > room:
        fits = [b for b in outside if start < b and cell_len(plain[start:b]) <= room]
        fits = fits or [b for b in anywhere if start < b and cell_len(plain[start:b]) <= room]
        cut = fits[-1] if fits else _hard_cut(plain, start, room)
        cuts.append(cut)
        start = cut
        while start < len(plain) and plain[start] == " ":
            start += 1
        cuts.append(start)
        room = width - hang
    lines = text.divide(cuts)[::2]  # even pieces are the lines, odd ones the spaces between
    wrapped = []
    for number, line in enumerate(lines):
        line.rstrip()
        if line.plain.strip():  # a line of only the indent, on a terminal narrower than it
            wrapped.append(Text(" " * hang) + line if number else line)
    return wrapped or [Text()]


def _hard_cut(plain: str, start: int, room: int) -> int:
    """Where a line with no space to break at must be cut to fit ``room`` cells."""
    end = start + 1
    while end < len(plain) and cell_len(plain[start : end + 1]) <= room:
        end += 1
    return end


def side_by_side(blocks: Sequence[Block], gap: int, max_width: int) -> list[Block]:
    """Blocks in one row when they fit ``max_width``, else each on its own."""
    if sum(b.width for b in blocks) + gap * (len(blocks) - 1) > max_width:
        return list(blocks)
    height = max(len(b.lines) for b in blocks)
    lines = []
    for index in range(height):
        line = Text()
        for position, block in enumerate(blocks):
            part = block.lines[index] if index < len(block.lines) else Text()
            line.append_text(part)
            if position < len(blocks) - 1:
                line.append(" " * (block.width - part.cell_len + gap))
        lines.append(line)
    return [Block(lines=lines, width=sum(b.width for b in blocks) + gap * (len(blocks) - 1))]


class ExplainView(NamedTuple):
    """What ``explain`` shows of a trace."""

    heads: tuple[int, ...]  # heads to show, numbered from 0 here (printed from 1)
    focus: Focus | None = None
    decimals: int = 2
    show_weights: bool = False
    hidden_special: bool = False  # [CLS]/[SEP] were left out of the trace shown
    merged_words: bool = False  # a model's word pieces were merged into words for display
    causal: bool = False  # the trace was computed with a causal mask
    # Called between steps with the next step's title; returns False to stop (--step pacing).
    pause: Callable[[str], bool] | None = None
    # When tokens are hidden from the tables, the trace as computed and, for each shown token,
    # its position there: the worked examples sum over every token, hidden ones included.
    full: AttentionTrace | None = None
    visible: tuple[int, ...] = ()


class _Lesson:
    """Prints the lesson for one trace; each method is one step of the explanation."""

    def __init__(self, trace: AttentionTrace, console: Console, view: ExplainView) -> None:
        self.trace = trace
        self.console = console
        self.width = console.width  # Rich recomputes it on every call; once is enough
        self.pending: list[RenderableType] = []  # printed together by flush(): one render pass
        self.started = False  # a step has been shown (no pause before the first)
        self.view = view
        self.tokens = occurrence_labels([printable(token) for token in trace.tokens])
        self.example = view.focus.index if view.focus is not None else 0
        # The worked examples add up over every token as computed, hidden ones included.
        self.source = view.full if view.full is not None else trace
        self.source_tokens = occurrence_labels([printable(t) for t in self.source.key_tokens])
        self.keys = (
            occurrence_labels([printable(t) for t in trace.key_tokens])
            if trace.is_cross
            else self.tokens
        )
        self.to_source = view.visible if view.full is not None else tuple(range(trace.n_tokens))
        # Keys are the same tokens in self-attention; cross-attention's source is never hidden.
        self.key_to_source = (
            tuple(range(len(trace.key_tokens))) if trace.is_cross else self.to_source
        )

    # -- helpers -------------------------------------------------------------------------------

    def number(self, value: float) -> str:
        return format_number(float(value), self.view.decimals)

    def exact(self, value: float) -> str:
        """A number in a worked example: at least 2 decimals, or 1 / 2 = 0 would read as wrong."""
        return format_number(float(value), max(self.view.decimals, 2))

    def term(self, value: float) -> str:
        """A number as a factor: negative numbers in parentheses."""
        text = self.exact(value)
        return f"({text})" if text.startswith("-") else text

    def bias(self, name: str, head: str = "") -> str:
        """ " + b_Q₁" in a formula when the trace has biases (a pretrained model), else ""."""
        return f" + b_{name}{head}" if self.trace.has_biases else ""

    def emit(self, renderable: RenderableType) -> None:
        self.pending.append(renderable)

    def blank(self) -> None:
        self.pending.append(Text())

    def flush(self) -> None:
        """Print what has been emitted since the last flush, in one call."""
        if self.pending:
            self.console.print(Group(*self.pending))
            self.pending = []

    def say(self, *parts: str | Text) -> None:
        for line in wrap(Text.assemble(*parts), self.width):
            self.emit(line)

    def table(self, matrix: Matrix) -> Block:
        return matrix_block(
            self.keeping_example(matrix),
            self.view.decimals,
            self.width,
            color_system=self.console.color_system,
        )

    def keeping_example(self, matrix: Matrix) -> Matrix:
        """Rows of words keep the worked example's word visible when rows are elided."""
        if matrix.row_labels is self.tokens:
            return matrix._replace(keep_row=self.example)
        return matrix

    def show(self, block: Block) -> None:
        self.emit(block)

    def side_by_side(self, matrices: Sequence[Matrix]) -> None:
        """Tables with the same rows in one row, words only at the left, when that fits;
        else one under the other, each with its words."""
        decimals = self.view.decimals
        row = [
            matrix_block(
                self.keeping_example(m),
                decimals,
                self.width,
                with_row_labels=index == 0,
                color_system=self.console.color_system,
            )
            for index, m in enumerate(matrices)
        ]
        arranged = side_by_side(row, gap=3, max_width=self.width)
        if len(arranged) > 1:
            arranged = [self.table(m) for m in matrices]
        for position, block in enumerate(arranged):
            if position:
                self.blank()
            self.show(block)

    def step(self, number: int, title: str) -> None:
        self.wait(f"Step {number} · {title}")
        self.blank()
        self.emit(Text(f"Step {number} · {title}", style="bold cyan"))

    def wait(self, coming: str) -> None:
        """With --step: show what is ready, then wait for the teacher before ``coming``."""
        if self.view.pause is None or not self.started:
            self.started = True
            return
        self.flush()
        if not self.view.pause(coming):
            raise _Stopped

    def vector(self, values: np.ndarray, limit: int = 8) -> str:
        shown = [self.number(v) for v in values]
        if len(shown) > limit:
            shown = [*shown[: limit // 2], ELLIPSIS, *shown[-(limit // 2) :]]
        return "[" + ", ".join(shown) + "]"

    def key(self, index: int) -> str:
        """The word of key (column) ``index``: a source word in cross-attention."""
        return self.keys[index]

    def word(self, index: int) -> str:
        return self.tokens[index]

    def dims(self, count: int) -> list[str]:
        return [str(i) for i in range(1, count + 1)]

    # -- the lesson ----------------------------------------------------------------------------

    def render(self) -> None:
        self.header()
        self.tokens_and_embeddings()
        self.flush()
        for head in self.view.heads:
            self.head(head)
            self.flush()
        self.concat_and_project()
        self.flush()
        if self.view.focus is not None:
            self.wait("Focus")
            self.focus_section(self.view.focus)
            self.flush()

    def header(self) -> None:
        trace = self.trace
        kind = "cross-attention (encoder–decoder)" if trace.is_cross else "self-attention"
        self.emit(Text(f"attnviz · multi-head {kind}, step by step", style="bold"))
        self.say(
            Text("Z = softmax(Q·Kᵀ / √d_k) · V", style="bold"),
            " for each head, then Concat(Z₁ … Z_h) · W_O",
        )
        if trace.is_cross:
            self.say(
                "Source (keys and values): ",
                Text(" ".join(printable(t) for t in trace.key_tokens), style="italic"),
                f"  ({len(trace.key_tokens)} tokens)",
            )
        self.say(
            "Target (queries): " if trace.is_cross else "Sentence: ",
            Text(" ".join(printable(token) for token in trace.tokens), style="italic"),
            f"  ({trace.n_tokens} token{'s' if trace.n_tokens != 1 else ''})",
        )
        self.say(
            f"Sizes: d_model = {trace.d_model}, h = {trace.n_heads} head"
            f"{'' if trace.n_heads == 1 else 's'}, "
            f"d_k = d_model / h = {trace.d_k}"
        )
        self.say("Embeddings: ", Text(printable(trace.embeddings_source)))
        self.say("Weights: ", Text(printable(trace.weights_source)))
        if trace.weights_source.startswith("random"):
            self.say(
                Text(
                    "Note: the weights are random, not learned. The patterns below come from "
                    "random numbers, not from training: they show how attention is computed, "
                    "not what a trained model attends to.",
                    style="yellow",
                )
            )
        if trace.has_biases:
            self.say(
                "In the model this attention is one sublayer, with biases: Q = X·W_Q + b_Q and so "
                "on. Its output is added back to X and normalised, h' = LayerNorm(X + output); a "
                "feed-forward block, GELU(h'·W₁ + b₁)·W₂ + b₂, is added and normalised the same "
                "way to give the next layer's X."
            )
        if self.view.hidden_special:
            self.say(
                Text(
                    "Note: [CLS] and [SEP] are left out of the tables. The weights were computed "
                    "with them, so a row's weights can sum to less than 1.",
                    style="yellow",
                )
            )

    def tokens_and_embeddings(self) -> None:
        trace = self.trace
        if trace.has_biases:
            self.step(1, "Word pieces and X, this layer's input")
            pieces = (
                f"{trace.n_tokens} words (--words: each row is the mean of the rows of the word "
                "pieces the model saw, and a word's weight column the sum of its pieces')"
                if self.view.merged_words
                else f"{trace.n_tokens} word pieces"
            )
            self.say(
                f"The model's tokenizer splits the sentence into word pieces, with [CLS] first "
                f"and [SEP] last; shown here: {pieces}. Row i of X is what this layer receives: "
                f"{trace.embeddings_source}. "
                f"X has shape [n, d_model] = [{trace.n_tokens}, {trace.d_model}]."
            )
        elif trace.is_cross and trace.X_source is not None:
            self.step(1, "Tokens and embeddings of both sentences")
            self.say(
                "Cross-attention, as in a translation model's decoder: each target word asks "
                "(its query comes from X, the target's embeddings) and the source words answer "
                "(their keys and values come from X_source, the encoder's side). "
                f"X is [n_target, d_model] = [{trace.n_tokens}, {trace.d_model}], X_source "
                f"[n_source, d_model] = [{len(self.keys)}, {trace.d_model}]."
            )
            self.show(
                self.table(Matrix(trace.X_source, "X_source", self.keys, self.dims(trace.d_model)))
            )
            self.blank()
        else:
            self.step(1, "Tokens and embeddings X")
            self.say(
                f"The sentence is split into {trace.n_tokens} tokens. Each token becomes one row "
                f"of X, its embedding: a vector of d_model = {trace.d_model} numbers. "
                f"X has shape [n, d_model] = [{trace.n_tokens}, {trace.d_model}]."
            )
        self.show(self.table(Matrix(trace.X, "X", self.tokens, self.dims(trace.d_model))))

    def head(self, head: int) -> None:
        trace = self.trace
        h = subscript(head + 1)

        def b(name: str) -> str:
            return self.bias(name, h)

        self.blank()
        self.emit(Rule(Text(f"Head {head + 1} of {trace.n_heads}", style="bold magenta")))
        q, k, v = trace.Q[head], trace.K[head], trace.V[head]
        i = self.example
        key_order = np.argsort(-trace.weights[head, i], kind="stable")
        j = int(key_order[0])

        self.step(2, f"Queries, keys and values of head {head + 1}")
        self.say(
            f"Head {head + 1} projects X with its own matrices W_Q{h}, W_K{h}, W_V{h}, each "
            f"[d_model, d_k] = [{trace.d_model}, {trace.d_k}]: Q{h} = X·W_Q{h}{b('Q')}, "
            + (
                f"[n_target, d_k] = [{trace.n_tokens}, {trace.d_k}]; K{h} = X_source·W_K{h}, "
                f"V{h} = X_source·W_V{h}, [n_source, d_k] = [{len(self.keys)}, {trace.d_k}]. "
                if trace.is_cross
                else f"K{h} = X·W_K{h}{b('K')}, V{h} = X·W_V{h}{b('V')}, each [n, d_k] = "
                f"[{trace.n_tokens}, {trace.d_k}]. "
            )
            + "A query asks what a word is looking for, a key says what it offers, a value is "
            "what it passes on."
        )
        if self.view.show_weights:
            self.side_by_side(
                [
                    Matrix(w[head], f"W_{name}{h}", self.dims(trace.d_model), self.dims(trace.d_k))
                    for name, w in (("Q", trace.W_Q), ("K", trace.W_K), ("V", trace.W_V))
                ]
            )
            self.blank()
        x_kv = "X_source" if trace.is_cross else "X"
        queries = Matrix(q, f"Q{h} = X·W_Q{h}{b('Q')}", self.tokens, self.dims(trace.d_k))
        keys = Matrix(k, f"K{h} = {x_kv}·W_K{h}{b('K')}", self.keys, self.dims(trace.d_k))
        values = Matrix(v, f"V{h} = {x_kv}·W_V{h}{b('V')}", self.keys, self.dims(trace.d_k))
        if trace.is_cross:  # queries have the target's rows, keys and values the source's
            self.show(self.table(queries))
            self.blank()
            self.side_by_side([keys, values])
        else:
            self.side_by_side([queries, keys, values])

        self.step(3, "Raw scores Q·Kᵀ")
        self.say(
            "score[i, j] = q_i · k_j: how well the query of word i (row) matches the key of "
            "word j (column). For example (worked with the unrounded numbers, so multiplying the "
            "rounded ones by hand can differ in the last digit; --decimals 4 shows more):"
        )
        self.say(
            "  ",
            Text(
                self.dot_product(
                    q[i], k[j], trace.scores[head, i, j], f"q_{self.word(i)} · k_{self.key(j)}"
                ),
                style="green",
            ),
        )
        self.show(
            self.table(
                Matrix(trace.scores[head], f"scores{h} = Q{h}·K{h}ᵀ", self.tokens, self.keys)
            )
        )

        sqrt_d_k = float(np.sqrt(trace.d_k))
        self.step(4, f"Scale by √d_k = √{trace.d_k} = {self.number(sqrt_d_k)}")
        self.say(
            f"A dot product of d_k = {trace.d_k} terms grows with d_k (its variance is about "
            "d_k), which would push the softmax towards one-hot rows with vanishing gradients. "
            "Dividing by √d_k keeps the scores' variance near 1. For example:"
        )
        self.say(
            "  ",
            Text(
                f"{self.number(trace.scores[head, i, j])} / {self.number(sqrt_d_k)} = "
                f"{self.number(trace.scaled[head, i, j])}",
                style="green",
            ),
        )
        masked = trace.mask is not None and not trace.mask.all()
        if masked:
            self.say(Text(self.mask_sentence(), style="yellow"))
        self.show(
            self.table(
                Matrix(
                    trace.scaled[head],
                    f"scaled{h} = scores{h} / √d_k" + (", masked" if masked else ""),
                    self.tokens,
                    self.keys,
                    masked=trace.masked if masked else None,
                )
            )
        )

        self.step(5, "Softmax: attention weights")
        source_i, source_j = self.to_source[i], self.key_to_source[j]
        row = self.source.scaled[head, source_i]
        if self.source.mask is not None:
            row = np.where(self.source.mask[source_i], row, -np.inf)
        self.say(
            "Each row becomes positive weights that sum to 1: w_ij = exp(s_ij) / Σ_j' exp(s_ij'). "
            "(attnviz subtracts the row's maximum first, which changes nothing but keeps exp() "
            f"from overflowing.) Row {self.word(i)!r}, column {self.key(j)!r}:"
        )
        self.say(
            "  ",
            Text(
                self.softmax_example(row, source_j, float(trace.weights[head, i, j])),
                style="green",
            ),
        )
        self.show(
            self.table(
                Matrix(
                    trace.weights[head],
                    f"weights{h} = softmax(scaled{h})",
                    self.tokens,
                    self.keys,
                    shade=True,
                    row_sums=True,
                )
            )
        )

        self.step(6, f"Z{h} = weights{h}·V{h}")
        self.say(
            "Each word's output is the weighted sum of all value vectors, with its row of "
            f"weights: z_i = Σ_j w_ij·v_j. Z{h} has shape [n, d_k] = "
            f"[{trace.n_tokens}, {trace.d_k}]. For example:"
        )
        self.say("  ", Text(self.weighted_sum(head, i), style="green"))
        self.show(
            self.table(
                Matrix(trace.Z[head], f"Z{h} = weights{h}·V{h}", self.tokens, self.dims(trace.d_k))
            )
        )

    def concat_and_project(self) -> None:
        trace = self.trace
        self.blank()
        self.emit(Rule(Text("All heads", style="bold magenta")))
        self.step(7, "Concatenate the heads and project with W_O")
        blocks = ", ".join(
            f"{head * trace.d_k + 1}–{(head + 1) * trace.d_k} are Z{subscript(head + 1)}"
            for head in range(min(trace.n_heads, 4))
        )
        if trace.n_heads > 4:
            blocks += ", …"
        self.say(
            f"The {trace.n_heads} heads' outputs are put side by side: Concat = [Z₁ | … | Z_h], "
            f"shape [n, h·d_k] = [{trace.n_tokens}, {trace.n_heads * trace.d_k}] "
            f"(columns {blocks}). "
            f"W_O [h·d_k, d_model] = [{trace.n_heads * trace.d_k}, {trace.d_model}] mixes them "
            f"back into d_model = {trace.d_model} columns: output = Concat·W_O{self.bias('O')}, "
            "the layer's "
            "result for each word."
        )
        if self.view.heads != tuple(range(trace.n_heads)):
            self.say(
                Text("(Concat always uses every head, also those not shown above.)", style="dim")
            )
        self.show(
            self.table(
                Matrix(
                    trace.concat,
                    "Concat = [Z₁ | … | Z_h]",
                    self.tokens,
                    self.dims(trace.concat.shape[1]),
                )
            )
        )
        if self.view.show_weights:
            self.blank()
            self.show(
                self.table(
                    Matrix(
                        trace.W_O, "W_O", self.dims(trace.W_O.shape[0]), self.dims(trace.d_model)
                    )
                )
            )
        self.blank()
        self.show(
            self.table(
                Matrix(
                    trace.output,
                    f"output = Concat·W_O{self.bias('O')}",
                    self.tokens,
                    self.dims(trace.d_model),
                )
            )
        )

    def focus_section(self, focus: Focus) -> None:
        trace = self.trace
        self.blank()
        name = printable(focus.label)
        self.emit(Rule(Text(f"Focus: where does {name!r} look?", style="bold magenta")))
        self.say(
            f"Row {name!r} of each head's weights, largest first: the share of each word's value "
            f"vector in the output z of {name!r}."
        )
        for head in self.view.heads:
            weights = trace.weights[head, focus.index]
            order = np.argsort(-weights, kind="stable")
            self.blank()
            self.say(Text(f"Head {head + 1}", style="bold"))
            shown = order[:12]
            label_width = max(cell_len(fit_label(self.keys[index])) for index in shown)
            lines = []
            for index in shown:
                line = Text(_pad_right(fit_label(self.keys[index]), label_width) + " ")
                line.append_text(bar(float(weights[index])))
                line.append(" " + self.number(weights[index]))
                lines.append(line)
            self.show(Block(lines=lines, width=max(line.cell_len for line in lines)))
            if len(order) > len(shown):
                rest = float(weights[order[len(shown) :]].sum())
                more = len(order) - len(shown)
                self.say(
                    f"{ELLIPSIS} {more} more word{'s' if more != 1 else ''}, "
                    f"together {self.number(rest)}"
                )
            if self.view.full is not None:
                hidden = 1.0 - float(weights.sum())
                self.say(f"(hidden [CLS] and [SEP], together {self.number(hidden)})")
            self.say(Text(self.weighted_sum(head, focus.index, limit=12), style="green"))

    # -- worked examples -----------------------------------------------------------------------

    def dot_product(self, left: np.ndarray, right: np.ndarray, score: float, name: str) -> str:
        """q·k written out term by term; the result is the trace's score, not recomputed."""
        terms = [f"{self.term(a)}×{self.term(b)}" for a, b in zip(left, right, strict=True)]
        if len(terms) > 6:
            terms = [*terms[:3], ELLIPSIS, terms[-1]]
            name += f" ({len(left)} terms)"
        return f"{name} = {' + '.join(terms)} = {self.exact(score)}"

    def softmax_example(self, row: np.ndarray, j: int, weight: float) -> str:
        """One weight as exp(shifted) / Σ exp(shifted), from the same pieces softmax() uses.

        ``row`` is a full row as computed, hidden tokens included, so the sum is the real one.
        """
        shifted, exponentials, total = softmax_parts(row)
        exps = [f"exp({self.exact(s)})" for s in shifted]
        if len(exps) > 5:
            exps = [*exps[:2], ELLIPSIS, exps[-1]]
        hidden = self.hidden_note()
        return (
            f"exp({self.exact(shifted[j])}) / ({' + '.join(exps)}{hidden}) = "
            f"{self.exact(exponentials[j])} / {self.exact(total[0])} = {self.exact(weight)}"
        )

    def mask_sentence(self) -> str:
        """Why some scores are −∞: the causal mask, the padding mask, or both."""
        causal = self.view.causal
        padded = "[PAD]" in self.trace.tokens and bool(self.trace.masked.any())
        parts = []
        if causal:
            parts.append(
                "Causal mask (decoder self-attention): word i may look only at itself and the "
                "words before it, so every later word is masked."
            )
        if padded:
            parts.append(
                "Padding mask: the [PAD] tokens only make the sentence a fixed length, so no word "
                "may look at them; their columns are masked and get zero weight."
            )
        return " ".join(parts) + " A masked score is set to −∞ before the softmax, and exp(−∞) = 0."

    def hidden_note(self) -> str:
        """Said inside a sum that runs over tokens the tables do not show."""
        if self.view.full is None:
            return ""
        hidden = [
            self.source_tokens[p]
            for p in range(len(self.source.key_tokens))
            if p not in self.key_to_source
        ]
        return f", {' and '.join(hidden)} included" if hidden else ""

    def weighted_sum(self, head: int, i: int, limit: int = 6) -> str:
        """z_i = Σ_j w_ij·v_j, largest weights first; the result is the trace's Z row.

        The sum runs over every token as computed, hidden ones ([CLS], [SEP]) included.
        """
        source, si = self.source, self.to_source[i]
        weights = source.weights[head, si]
        order = np.argsort(-weights, kind="stable")
        terms = [f"{self.exact(weights[j])}·v_{self.source_tokens[j]}" for j in order[:limit]]
        if len(order) > limit:
            rest = float(weights[order[limit:]].sum())
            terms.append(
                f"{ELLIPSIS} ({len(order) - limit} more, weights summing to {self.exact(rest)})"
            )
        z = source.Z[head, si]
        return f"z_{self.word(i)} = {' + '.join(terms)} = {self.vector(z)}"


def bar(weight: float, width: int = BAR_WIDTH) -> Text:
    """A horizontal bar of ``weight`` × ``width`` cells, in eighths of a cell."""
    eighths = round(min(max(weight, 0.0), 1.0) * width * 8)
    full, remainder = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[remainder].strip()
    text = Text("█" * full + partial, style="cyan")
    text.append(" " * (width - full - len(partial)))
    return text


class _Stopped(Exception):
    """The teacher pressed q at a --step pause."""


def render_explain(trace: AttentionTrace, console: Console, view: ExplainView) -> None:
    """Print the whole step-by-step lesson for ``trace`` on ``console``."""
    try:
        _Lesson(trace, console, view).render()
    except _Stopped:
        console.print(Text("(stopped)", style="dim"))


def render_heads(
    layers: Sequence[AttentionTrace],
    focus: Focus,
    console: Console,
    *,
    per_target: int = 3,
    top: int = 20,
) -> None:
    """Where the focus word's attention goes in every (layer, head): the heads for each target
    word, and each head's favourite target. Numbers are the focus row of each head's weights."""
    from attnviz.heads import top_heads_per_target, top_target_per_head

    first = layers[0]
    labels = occurrence_labels([printable(token) for token in first.tokens])
    name = printable(focus.label)
    n_layers, n_heads = len(layers), first.n_heads
    source = printable(first.weights_source.rsplit(", layer", 1)[0])
    lines: list[Text] = [
        Text(f"attnviz · where does {name!r} look, in every head", style="bold"),
        Text(
            f"Weights: {source}; {n_layers} layer{'s' if n_layers != 1 else ''} × {n_heads} heads. "
            f"Each number is the weight {name!r} gives a word in one head (row {name!r} of that "
            "head's softmax weights; L = layer, H = head, from 1)."
        ),
        Text(),
        Text(f"The heads in which {name!r} looks most at each word", style="bold cyan"),
    ]
    ranking = top_heads_per_target(layers, focus.index, per_target)
    label_width = max(cell_len(fit_label(label)) for label in labels)
    by_strength = sorted(ranking, key=lambda target: -ranking[target][0].weight)
    for target in by_strength:
        cells = "   ".join(
            f"{'L' + str(link.layer) + ' H' + str(link.head):<7} {format_number(link.weight, 2)}"
            for link in ranking[target]
        )
        lines.append(Text(f"  {_pad_right(fit_label(labels[target]), label_width)}  {cells}"))
    links = top_target_per_head(layers, focus.index)
    shown = links[:top]
    lines += [
        Text(),
        Text(
            f"Each head's favourite word for {name!r}, strongest first"
            + (f" (top {len(shown)} of {len(links)})" if len(links) > len(shown) else ""),
            style="bold cyan",
        ),
    ]
    for link in shown:
        head = f"L{link.layer} H{link.head}"
        lines.append(
            Text(
                f"  {head:<7} {_pad_right(fit_label(labels[link.target]), label_width)}  "
                f"{format_number(link.weight, 2)}"
            )
        )
    if first.weights_source.startswith("random"):
        lines.append(
            Text(
                "Note: these weights are random, not learned; use --model for a trained model.",
                style="yellow",
            )
        )
    console.print(Group(*(part for line in lines for part in wrap(line, console.width))))


def render_scaling(rows: Sequence[ScalingRow], console: Console, *, n_keys: int) -> None:
    """The √d_k experiment as a table: each statistic without and with the scaling."""
    from math import log

    flat = log(n_keys)
    header = ("d_k", "Var(q·k)", "÷√d_k", "max w", "÷√d_k", "entropy", "÷√d_k", "‖∂w/∂s‖", "÷√d_k")
    table = [list(header)]
    for row in rows:
        u, s = row.unscaled, row.scaled
        table.append(
            [
                str(row.d_k),
                format_number(u.score_variance, 1),
                format_number(s.score_variance, 2),
                format_number(u.max_weight, 2),
                format_number(s.max_weight, 2),
                format_number(u.entropy, 2),
                format_number(s.entropy, 2),
                format_number(u.gradient, 3),
                format_number(s.gradient, 3),
            ]
        )
    widths = [max(cell_len(line[c]) for line in table) for c in range(len(header))]
    lines: list[Text] = [
        Text("attnviz · why divide by √d_k", style="bold"),
        Text(
            f"For each d_k, random queries and keys with unit-variance components (seeded); each "
            f"query scores {n_keys} keys. Without scaling, q·k has variance d_k, so the softmax "
            "turns one-hot: its largest weight goes to 1, its entropy to 0 (flat would be "
            f"ln {n_keys} = {flat:.2f}), and its gradient ‖∂w/∂s‖ to 0, so learning stalls. "
            "Divided by √d_k, the variance stays near 1 and nothing changes with d_k."
        ),
        Text(),
    ]
    for index, line in enumerate(table):
        text = "  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True))
        lines.append(Text(text, style="bold" if index == 0 else ""))
        if index == 0:
            lines.append(Text("─" * cell_len(text)))
    lines += [
        Text(),
        Text(
            "Dividing the scores by √d_k is a softmax temperature: softmax(s / T) with T = √d_k. "
            "A higher temperature spreads the weights; T = √d_k is exactly the one that undoes "
            "the growth of q·k with d_k."
        ),
    ]
    console.print(Group(*(part for line in lines for part in wrap(line, console.width))))
