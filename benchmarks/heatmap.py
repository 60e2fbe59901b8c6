"""Heatmap pictures: each cold ``attnviz heatmap`` as a ratio to a minimal matplotlib script.

Every floor is a script that imports numpy and matplotlib (``Figure`` on the Agg canvas, no
pyplot), draws the same imshow panels of softmax rows into a picture of the size attnviz drew,
with the words as tick labels, and saves a PNG at the same 150 dpi. Commands run alternately,
each in a fresh process, for a number of rounds, and the ratios of the medians are reported:

1. ``heatmap "<it sentence>" --heads 8 --d-model 64``: 8 panels of 11 × 11 with a weight printed
   in every cell, against the floor without the weights (target <= 1.5×) and against the floor
   that prints them one ``Text`` per cell, as matplotlib's examples do (target <= 1.2×).
2. ``heatmap "<it sentence>"`` (2 heads, the default): against the 2-panel floor (<= 1.3×).
3. ``heatmap "<it sentence>" --model minilm --all-layers`` (with the model extra): against the
   floor drawing the 72 panels, one Axes each, without labels (target <= 1.5×, or 1.5 s).
4. ``heatmap "I am good" --pad-to 512`` and 512 words with ``--causal``: wall time and peak
   memory (targets: under 10 s and 1 GB).

    python benchmarks/heatmap.py              # 11 rounds
    python benchmarks/heatmap.py --quick      # one of each, 64 words for the long two, two at a
                                              # time: checks that it works, judges nothing
    python benchmarks/heatmap.py --images DIR # keep the pictures in DIR to look at them

``--rows FILE`` also writes the headline figures for ``benchmarks/run.py``'s combined table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from startup import attnviz_command
from table import Row, judge, megabytes, milliseconds, write_rows

SENTENCE = "The animal didn't cross the street because it was too tired"
DPI = 150  # attnviz's PNG resolution; the floors save at the same
QUICK_WORDS = 64  # the long pictures' length in a quick run

FLOOR_SCRIPT = '''
import sys

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def draw(path, words, width, height, rows, columns, labels, print_weights):
    """rows x columns panels of n x n softmax rows, each word as a tick label (or none), saved
    as a PNG of width x height inches at 150 dpi; with print_weights, a Text per cell."""
    n = len(words)
    weights = np.random.default_rng(0).dirichlet(np.ones(n), size=(rows * columns, n))
    figure = Figure(figsize=(width, height), dpi=150)
    FigureCanvasAgg(figure)
    grid = {"left": 0.06, "right": 0.92, "bottom": 0.12, "top": 0.92}
    panels = figure.subplots(rows, columns, gridspec_kw=grid, squeeze=False).flat
    for head, axes in enumerate(panels):
        axes.imshow(weights[head], cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        if labels:
            axes.set_xticks(range(n), labels=words, rotation=90, fontsize=10)
            axes.set_yticks(range(n), labels=words, fontsize=10)
        else:
            axes.set_xticks([])
            axes.set_yticks([])
        if print_weights:
            for (row, column), value in np.ndenumerate(weights[head]):
                axes.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=8)
    figure.savefig(path, dpi=150)


if __name__ == "__main__":
    path, width, height, rows, columns, labels, print_weights, *words = sys.argv[1:]
    draw(path, words, float(width), float(height), int(rows), int(columns), labels == "1",
         print_weights == "1")
'''

#: The peak resident memory of a command, from the kernel's accounting of a child process.
PEAK_MEMORY = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def has_model() -> bool:
    return all(importlib.util.find_spec(name) for name in ("safetensors", "tokenizers"))


def png_size(path: Path) -> tuple[int, int]:
    """Width and height in pixels, from the PNG's IHDR chunk (bytes 16-24)."""
    with path.open("rb") as file:
        header = file.read(24)
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def wall_time(command: list[str]) -> float:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    start = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    return time.perf_counter() - start


class Comparison:
    """One attnviz command and the floors it is compared with, sized after its picture."""

    def __init__(self, name: str, arguments: list[str], folder: Path) -> None:
        self.name = name
        self.picture = folder / f"{name}.png"
        self.command = [*attnviz_command(), "heatmap", *arguments, "-o", str(self.picture)]
        self.folder = folder

    def floor(
        self, grid: tuple[int, int], words: list[str], labels: bool, values: bool
    ) -> list[str]:
        width, height = (pixels / DPI for pixels in png_size(self.picture))
        rows, columns = grid
        out = self.folder / f"{self.name}-floor-{rows}x{columns}-{int(values)}.png"
        flags = [str(rows), str(columns), str(int(labels)), str(int(values))]
        script = self.folder / "floor.py"
        return [sys.executable, str(script), str(out), str(width), str(height), *flags, *words]


def timed(commands: dict[str, list[str]], workers: int) -> dict[str, float]:
    """The wall time of each command, ``workers`` of them at a time (more than one only in a
    quick run, which judges nothing: sharing the cores slows each, and saves half the wait)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        times = pool.map(wall_time, commands.values())
        return dict(zip(commands, times, strict=True))


def measure(folder: Path, rounds: int, *, warm: bool, workers: int = 1) -> dict[str, float]:
    """Median wall time of each command over ``rounds`` rounds, commands interleaved per round;
    each floor is sized after the picture attnviz drew in the same round."""
    (folder / "floor.py").write_text(FLOOR_SCRIPT, encoding="utf-8")
    words = SENTENCE.split()
    eight = Comparison("eight", [SENTENCE, "--heads", "8", "--d-model", "64"], folder)
    two = Comparison("two", [SENTENCE], folder)
    comparisons = [eight, two]
    model = Comparison("grid", [SENTENCE, "--model", "minilm", "--all-layers"], folder)
    if has_model():
        comparisons.append(model)
    times: dict[str, list[float]] = {}
    for round_number in range(-1 if warm else 0, rounds):  # round -1 warms the file cache
        measured = timed({c.name: c.command for c in comparisons}, workers)
        pieces = ["[CLS]", *words[:2], "didn", "'", "t", *words[3:], "[SEP]"]  # 15 pieces
        floors = {
            "eight floor": eight.floor((2, 4), words, labels=True, values=False),
            "eight floor + values": eight.floor((2, 4), words, labels=True, values=True),
            "two floor": two.floor((1, 2), words, labels=True, values=False),
        }
        if has_model():
            floors["grid floor"] = model.floor((6, 12), pieces, labels=False, values=False)
        measured |= timed(floors, workers)
        if round_number >= 0:
            for name, seconds in measured.items():
                times.setdefault(name, []).append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}


def measure_long(folder: Path, words: int = 512) -> dict[str, tuple[float, float]]:
    """Wall time (s) and peak memory (KB) of the two long pictures (512 words but in a quick
    run, whose 64 take the same code path: padding, the causal mask, a picture of n × n)."""
    many = " ".join(f"w{k}" for k in range(words))
    commands = {
        "pad": ["I am good", "--pad-to", str(words)],
        "causal": [many, "--causal"],
    }
    found = {}
    for name, arguments in commands.items():
        command = [
            *attnviz_command(),
            "heatmap",
            *arguments,
            "-o",
            str(folder / f"{name}-{words}.png"),
        ]
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", PEAK_MEMORY, *command],
            check=True,
            capture_output=True,
            text=True,
        )
        found[name] = (time.perf_counter() - start, float(out.stdout.split()[-1]))
    return found


def report(
    medians: dict[str, float], long: dict[str, tuple[float, float]], *, quick: bool, words: int
) -> list[Row]:
    """Print the figures; return the headline rows."""
    for name, seconds in sorted(medians.items()):
        print(f"{name:28} {seconds * 1000:7.0f} ms")
    rows = []

    def ratio_row(figure: str, measured: str, floor: str, target: float) -> None:
        ratio = medians[measured] / medians[floor]
        rows.append(
            Row(
                figure=figure,
                measured=milliseconds(medians[measured]),
                floor=milliseconds(medians[floor]),
                ratio=f"{ratio:.2f}×",
                target=f"<= {target}×",
                verdict=judge(ratio <= target, quick=quick),
            )
        )

    ratio_row("heatmap: 8 heads × 11 words / floor, no values", "eight", "eight floor", 1.5)
    ratio_row("heatmap: 8 heads × 11 words / floor + values", "eight", "eight floor + values", 1.2)
    ratio_row("heatmap: default, 2 heads / floor", "two", "two floor", 1.3)
    if "grid" in medians:
        ratio = medians["grid"] / medians["grid floor"]
        within = ratio <= 1.5 or medians["grid"] <= 1.5
        rows.append(
            Row(
                figure="heatmap: minilm --all-layers / 72-panel floor",
                measured=milliseconds(medians["grid"]),
                floor=milliseconds(medians["grid floor"]),
                ratio=f"{ratio:.2f}×",
                target="<= 1.5× or 1.5 s",
                verdict=judge(within, quick=quick),
            )
        )
    labels = (("pad", f'"I am good" --pad-to {words}'), ("causal", f"{words} words --causal"))
    for name, label in labels:
        seconds, peak = long[name]
        rows.append(
            Row(
                figure=f"heatmap {label}: time",
                measured=f"{seconds:.1f} s",
                target="< 10 s",
                verdict=judge(seconds < 10, quick=quick),
            )
        )
        rows.append(
            Row(
                figure=f"heatmap {label}: peak memory",
                measured=megabytes(peak),
                target="< 1 GB",
                verdict=judge(peak < 1024 * 1024, quick=quick),
            )
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run each; report, judge nothing")
    parser.add_argument("--runs", type=int, default=11, help="rounds of the cold commands")
    parser.add_argument("--images", type=Path, help="keep the pictures in this folder")
    parser.add_argument("--rows", type=Path, help="also write the headline figures here (JSON)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.images or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        if args.quick:
            medians = measure(folder, 1, warm=False, workers=2)
        else:
            medians = measure(folder, args.runs, warm=True)
        words = QUICK_WORDS if args.quick else 512
        long = measure_long(folder, words)
    rows = report(medians, long, quick=args.quick, words=words)
    if args.rows:
        write_rows(rows, args.rows)
    if not args.quick:
        print(json.dumps({row.figure: row.ratio or row.measured for row in rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
