"""`attnviz train` in a terminal: the training live, a frame per snapshot (step, loss, held-out
accuracy, the loss so far as a small curve, and each probe's focus row in every layer as bars
that sharpen), paced so that a class can follow; or, piped or with NO_COLOR, a plain line every
few steps. Then what was learned (train.report's sentences)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnviz.arrays import FloatArray
from attnviz.train import report
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Probe, Task

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.text import Text

BLOCKS = " ▁▂▃▄▅▆▇█"  # a weight w in [0, 1] as BLOCKS[round(8·w)]
CURVE = "▁▂▃▄▅▆▇█"


def bar(weight: float) -> str:
    return BLOCKS[max(0, min(8, round(8 * weight)))]


def loss_curve(losses: Sequence[float], width: int) -> str:
    """The losses so far as one line of blocks, highest loss the tallest, at most ``width``
    characters (the history sampled evenly when longer)."""
    if not losses:
        return ""
    if len(losses) > width:
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
                line = report.progress(
                    snapshot.step,
                    snapshot.loss,
                    snapshot.accuracy,
                    answer_weights(self.task, snapshot),
                )
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)
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
            line = report.progress(
                snapshot.step, snapshot.loss, snapshot.accuracy, answer_weights(self.task, snapshot)
            )
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def frame(self, snapshot: Snapshot) -> RenderableType:
        from rich.console import Group
        from rich.text import Text

        width = self.console.width
        head = Text.assemble(
            ("step ", "dim"),
            (f"{snapshot.step:>4}", "bold"),
            ("   loss ", "dim"),
            (f"{snapshot.loss:6.3f}", "bold"),
            ("   held-out accuracy ", "dim"),
            (
                report.percent(snapshot.accuracy),
                "bold green" if snapshot.accuracy >= 0.99 else "bold",
            ),
        )
        curve = Text.assemble(("loss ", "dim"), (loss_curve(self.losses, width - 6), "cyan"))
        parts: list[RenderableType] = [head, curve]
        for probe, rows in zip(self.task.probes, snapshot.rows, strict=True):
            parts.append(Text(""))
            parts.extend(probe_lines(self.task, probe, rows, width))
        return Group(*parts)


def probe_lines(task: Task, probe: Probe, rows: FloatArray, width: int) -> list[Text]:
    """The probe's words, and under each word its weight in the focus row of every layer: a bar
    that grows with the weight, then the weight (bars alone when the numbers would not fit in
    ``width`` columns).  rows: [layers, heads, n]"""
    from rich.text import Text

    numbers = 4 + sum(max(len(word), 5) + 1 for word in probe.words) <= width
    widths = [(max(len(word), 5) if numbers else len(word)) + 1 for word in probe.words]
    words = Text("    ")
    for index, (word, cell) in enumerate(zip(probe.words, widths, strict=True)):
        style = "bold underline" if index == probe.focus else ""
        words.append(word.ljust(cell), "bold green" if index == probe.answer else style)
    lines = [words]
    n_layers, n_heads, _ = rows.shape
    for layer in range(n_layers):
        for head in range(n_heads):
            label = f"L{layer + 1}" + (f"H{head + 1}" if n_heads > 1 else "")
            line = Text(label.ljust(4), "dim")
            for index, cell in enumerate(widths):
                weight = float(rows[layer, head, index])
                line.append(bar(weight), "green" if index == probe.answer else "yellow")
                shown = f"{weight:.2f}".removeprefix("0") if numbers else ""
                line.append(shown.ljust(cell - 1), "dim" if weight < 0.1 else "")
            lines.append(line)
    focus, answer = (
        report.quoted(probe.words[probe.focus]),
        report.quoted(probe.words[probe.answer]),
    )
    lines.append(Text("    " + report.answer_legend(task, focus, answer), "dim"))
    return lines


def print_lines(console: Console, lines: Sequence[str], style: str = "") -> None:
    """Sentences as they are, never read as markup (words come from the task and the person)."""
    from rich.text import Text

    from attnviz.render.text import wrap

    for line in lines:
        for piece in wrap(Text(line, style), console.width):
            console.print(piece, soft_wrap=True)
