"""`attnviz train` in a terminal: the training live, a frame per snapshot (step, loss, held-out
accuracy and the step it was measured at, the loss so far as a small curve, and each probe's
focus row in every layer as bars that sharpen: each as wide as its word, two lines tall, its
weight under it, big enough for the back of a classroom), paced so that a class can follow; or,
piped or with NO_COLOR, a plain line every few steps. Then what was learned (train.report's
sentences). Every line fits the console's width: a sentence too long for it goes on under
itself, and a plain line's answers go on the next line."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnviz.arrays import FloatArray
from attnviz.labels import percent
from attnviz.train import report
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Probe, Task

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.text import Text

BLOCKS = " ▁▂▃▄▅▆▇█"  # eighths of a line, from none to all of it
CURVE = "▁▂▃▄▅▆▇█"
#: A word's column on the live view: at least this many cells wide, so that its bar is too
#: (the width of "1.00", its weight at most), and one cell apart from the next.
NARROWEST = 4
#: Lines a bar is tall: 2 lines, 16 steps of height; 1 when a frame would not fit the screen.
BAR_LINES = 2
#: The live view's labels ("L1", "L2H3") and the plain lines' continuation, in cells.
LABEL = 4


def bar(weight: float, line: int, lines: int = 1) -> str:
    """Line ``line`` (0: the top) of a bar ``lines`` lines tall for ``weight`` in [0, 1]: a
    block of eighths, full below the bar's height, empty above it."""
    eighths = round(max(0.0, min(1.0, weight)) * 8 * lines)
    from_bottom = lines - 1 - line
    return BLOCKS[max(0, min(8, eighths - 8 * from_bottom))]


def loss_curve(losses: Sequence[float], width: int) -> str:
    """The losses so far as one line of blocks, highest loss the tallest, at most ``width``
    characters (the history sampled evenly when longer, from the first loss to the last; the
    last alone in one character; nothing in none)."""
    if not losses or width < 1:
        return ""
    if width == 1:
        losses = losses[-1:]
    elif len(losses) > width:
        losses = [losses[round(i * (len(losses) - 1) / (width - 1))] for i in range(width)]
    top, bottom = max(losses), min(losses)
    span = top - bottom or 1.0
    return "".join(CURVE[round((loss - bottom) / span * (len(CURVE) - 1))] for loss in losses)


def answer_weights(task: Task, snapshot: Snapshot) -> list[str]:
    """Each probe's last-layer weight on the answer: L2 "it"→animal 0.97."""
    last = f"L{task.n_layers} "
    return [
        f"{last}{report.quoted(p.words[p.focus])}→{p.words[p.answer]} {rows[-1, 0, p.answer]:.2f}"
        for p, rows in zip(task.probes, snapshot.rows, strict=True)
    ]


def live_view(console: Console) -> bool:
    """Frames redrawn in place at a terminal with colour; plain lines otherwise."""
    return console.is_terminal and not console.no_color


class TrainingView:
    """Shows snapshots as they come: live frames at a terminal, plain lines otherwise."""

    LINE_EVERY = 10  # steps between plain lines

    def __init__(
        self, console: Console, task: Task, *, pace: float, steps: int | None = None
    ) -> None:
        """A snapshot comes after every step."""
        self.console, self.task = console, task
        self.live_view = live_view(console)
        # The whole run on screen for about ``pace`` seconds: a step's share of it.
        # ``steps`` asked for, or about as many as the task usually takes; past them it runs at
        # full speed, so a run never stays on screen much longer than ``pace``.
        self.paced_steps = steps or task.typical_steps
        self.frame_seconds = pace / self.paced_steps if self.live_view else 0.0
        self.losses: list[float] = []
        self._live: Live | None = None
        self._shown = time.perf_counter()

    def __enter__(self) -> TrainingView:
        if self.live_view:
            from rich.live import Live

            self._live = Live(console=self.console, auto_refresh=False, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)

    def show(self, snapshot: Snapshot) -> None:
        self.losses.append(snapshot.loss)
        if self._live is None:
            if snapshot.step % self.LINE_EVERY == 0:
                self.print_plain(snapshot)
            return
        paced = snapshot.step <= self.paced_steps
        wait = self.frame_seconds - (time.perf_counter() - self._shown) if paced else 0.0
        if wait > 0:
            time.sleep(wait)
        self._live.update(self.frame(snapshot), refresh=True)
        self._shown = time.perf_counter()

    def last(self, snapshot: Snapshot) -> None:
        """The final snapshot, in plain mode too (unless its line was just printed)."""
        if self._live is None and snapshot.step % self.LINE_EVERY != 0:
            self.print_plain(snapshot)

    def print_plain(self, snapshot: Snapshot) -> None:
        for line in plain_lines(snapshot, answer_weights(self.task, snapshot), self.console.width):
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def frame(self, snapshot: Snapshot) -> RenderableType:
        """The live view of ``snapshot``, in the console's width; its bars two lines tall, or
        one when two would make the frame taller than the screen."""
        from rich.console import Group
        from rich.text import Text

        from attnviz.render.terminal.text import wrap

        width = self.console.width
        head = Text.assemble(
            ("step ", "dim"),
            (f"{snapshot.step:>4}", "bold"),
            ("   loss ", "dim"),
            (f"{snapshot.loss:6.3f}", "bold"),
            ("   held-out ", "dim"),
            (
                percent(snapshot.accuracy),
                "bold green" if snapshot.accuracy >= 0.99 else "bold",
            ),
            (f" (at step {snapshot.measured})", "dim"),
        )
        # "loss " and the curve, one cell short of the edge; left out when no block would fit.
        curve = Text.assemble(("loss ", "dim"), (loss_curve(self.losses, width - 6), "cyan"))
        curves = [curve] if width > 6 else []
        for bar_lines in range(BAR_LINES, 0, -1):
            lines = [*wrap(head, width), *curves]
            for probe, rows in zip(self.task.probes, snapshot.rows, strict=True):
                lines.append(Text(""))
                lines.extend(probe_lines(self.task, probe, rows, width, bar_lines))
            if len(lines) <= self.console.height:
                break
        return Group(*lines)


def plain_lines(snapshot: Snapshot, answers: Sequence[str], width: int) -> list[str]:
    """A snapshot as plain text in lines of at most ``width`` cells: its step, loss and held-out
    accuracy (with the step it was measured at, when that is an earlier one), then each answer
    weight, on the same line when they fit, else on lines of their own, indented."""
    from rich.text import Text

    from attnviz.render.terminal.text import cell_width, wrap

    head = report.progress(snapshot.step, snapshot.loss, snapshot.accuracy, [])
    if snapshot.measured != snapshot.step:
        head += f" (at step {snapshot.measured})"
    whole = "  ".join([head, *answers])
    if cell_width(whole) <= width:
        return [whole]
    lines, line = [head], ""
    for answer in answers:
        joined = f"{line}  {answer}" if line else " " * LABEL + answer
        if line and cell_width(joined) > width:
            lines.append(line)
            joined = " " * LABEL + answer
        line = joined
    lines.append(line)
    return [piece.plain for line in lines for piece in wrap(Text(line), width)]


def columns(words: Sequence[str], width: int) -> list[list[int]]:
    """The probe's positions in as few runs as fit ``width`` cells beside the labels, as even
    as they can be (8 and 8 letters, not 15 and 1), each word's column NARROWEST cells or its
    length, and one apart: a sentence too long for the screen goes on under itself rather than
    past its edge."""
    cells = [max(len(word), NARROWEST) + 1 for word in words]
    for count in range(1, len(words) + 1):
        size = -(-len(words) // count)  # ceil: runs of this many words, the last shorter
        runs = [
            list(range(start, min(start + size, len(words))))
            for start in range(0, len(words), size)
        ]
        if all(LABEL + sum(cells[index] for index in run) <= width for run in runs):
            return runs
    return [[index] for index in range(len(words))]  # a word wider than the screen: alone


def probe_lines(
    task: Task, probe: Probe, rows: FloatArray, width: int, bar_lines: int = BAR_LINES
) -> list[Text]:
    """The probe's words, and under each word its weight in the focus row of every layer: a bar
    as wide as the word's column and ``bar_lines`` lines tall, growing with the weight, the
    weight under it (in runs of words that fit ``width`` columns).  rows: [layers, heads, n]"""
    from rich.text import Text

    from attnviz.render.terminal.text import wrap

    n_layers, n_heads, _ = rows.shape
    lines = []
    for number, run in enumerate(columns(probe.words, width)):
        if number:
            lines.append(Text(""))  # a sentence going on under itself: apart from the bars above
        cells = [max(len(probe.words[index]), NARROWEST) + 1 for index in run]
        words = Text(" " * LABEL)
        for index, cell in zip(run, cells, strict=True):
            style = "bold underline" if index == probe.focus else ""
            word = probe.words[index]
            words.append(word, "bold green" if index == probe.answer else style)
            words.append(" " * (cell - len(word)))  # the padding not underlined
        words.rstrip()
        lines.append(words)
        for layer in range(n_layers):
            for head in range(n_heads):
                label = f"L{layer + 1}" + (f"H{head + 1}" if n_heads > 1 else "")
                weights = [float(rows[layer, head, index]) for index in run]
                for line in range(bar_lines):
                    drawn = Text(" " * LABEL)
                    for index, cell, weight in zip(run, cells, weights, strict=True):
                        colour = "green" if index == probe.answer else "yellow"
                        drawn.append(bar(weight, line, bar_lines) * (cell - 1), colour)
                        drawn.append(" ")
                    drawn.rstrip()
                    lines.append(drawn)
                numbers = Text(label.ljust(LABEL), "dim")
                for cell, weight in zip(cells, weights, strict=True):
                    shown = f"{weight:.2f}".removeprefix("0")
                    numbers.append(shown.ljust(cell), "dim" if weight < 0.1 else "")
                numbers.rstrip()
                lines.append(numbers)
    focus, answer = (
        report.quoted(probe.words[probe.focus]),
        report.quoted(probe.words[probe.answer]),
    )
    legend = Text(" " * LABEL + report.answer_legend(task, focus, answer), "dim")
    lines.extend(wrap(legend, width))
    return lines


def print_lines(console: Console, lines: Sequence[str], style: str = "") -> None:
    """Sentences as they are, never read as markup (words come from the task and the person)."""
    from rich.text import Text

    from attnviz.render.terminal.text import wrap

    for line in lines:
        for piece in wrap(Text(line, style), console.width):
            console.print(piece, soft_wrap=True)
