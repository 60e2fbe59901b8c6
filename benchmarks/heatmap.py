"""Heatmap pictures: a cold ``attnviz heatmap`` as a ratio to its floor, and a 512-word render.

1. Cold ``attnviz heatmap "The animal didn't cross the street because it was too tired"
   --heads 8 --d-model 64 -o FILE.png`` against its floor: a minimal matplotlib script (numpy,
   ``matplotlib.figure.Figure`` on the Agg canvas, no pyplot) that draws the same 8 imshow panels
   of 11 × 11 weights with the words as tick labels and saves a PNG of the same size at the same
   150 dpi. Both run alternately, each in a fresh process, and the ratio of the medians is
   reported. Target: heatmap / floor <= 1.3. Three more commands, run in the same rounds, show
   where the difference goes: the floor that also prints each weight in its cell, as attnviz
   does for up to 12 words, and the imports alone, with and without Typer, Rich and attnviz.
2. A 512-word heatmap (8 heads, d_model 64) rendered in one warm process with
   ``attnviz.render.heatmap.save_heatmap``, against the same floor script drawing 8 panels of
   512 × 512 with as many word labels; it also counts the texts drawn in the cells (none are
   expected beyond 12 words).

    python benchmarks/heatmap.py              # 11 rounds of the cold commands, 5 renders of 512
    python benchmarks/heatmap.py --quick      # one of each: checks that it works, judges nothing
    python benchmarks/heatmap.py --images DIR # keep the pictures in DIR to look at them

``--rows FILE`` also writes the headline figures for ``benchmarks/run.py``'s combined table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from startup import attnviz_command
from table import Row, judge, milliseconds, write_rows

TARGET_RATIO = 1.3
SENTENCE = "The animal didn't cross the street because it was too tired"
DPI = 150  # attnviz's PNG resolution; the floor saves at the same

FLOOR_SCRIPT = '''
import sys

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def draw(path, words, width, height, step, print_weights):
    """8 panels of n x n softmax rows, every step-th word as a tick label, saved as a PNG.

    The panels take the top two thirds of the picture, about as large as attnviz's, whose
    focus panel takes the rest; fonts of 10 and 9 points, as attnviz's for 11 words.
    """
    n = len(words)
    weights = np.random.default_rng(0).dirichlet(np.ones(n), size=(8, n))
    figure = Figure(figsize=(width, height), dpi=150)
    FigureCanvasAgg(figure)
    shown = range(0, n, step)
    labels = [words[i] for i in shown]
    grid = {"left": 0.05, "right": 0.92, "bottom": 0.3, "top": 0.95}
    for head, axes in enumerate(figure.subplots(2, 4, gridspec_kw=grid).flat):
        axes.imshow(weights[head], cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        axes.set_xticks(shown, labels=labels, rotation=90, fontsize=10)
        axes.set_yticks(shown, labels=labels, fontsize=10)
        if print_weights:
            for (row, column), value in np.ndenumerate(weights[head]):
                axes.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=9)
    figure.savefig(path, dpi=150)


if __name__ == "__main__":
    path, width, height, step, print_weights, *words = sys.argv[1:]
    draw(path, words, float(width), float(height), int(step), print_weights == "1")
'''

IMPORT_MATPLOTLIB = (
    "import numpy; from matplotlib.figure import Figure; "
    "from matplotlib.backends.backend_agg import FigureCanvasAgg"
)
IMPORT_ALL = IMPORT_MATPLOTLIB + "; import attnviz.cli, attnviz.core, attnviz.render.heatmap"

ATTNVIZ = "attnviz heatmap, 8 heads × 11 words"
FLOOR = "floor: matplotlib, 8 panels + word labels"
FLOOR_VALUES = "floor + each weight printed in its cell"
IMPORTS = "imports: numpy, matplotlib Figure + Agg"
IMPORTS_ALL = "imports: the same + attnviz (Typer, Rich)"

LARGE_SCRIPT = """
import json, statistics, sys, time
from pathlib import Path
from attnviz.core import trace_with_options
from attnviz.render.heatmap import build_figure, plan_layout, save_heatmap
from attnviz.selection import select

folder, runs, floor_script = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
words = (sys.argv[4].split() * 512)[:512]
trace = trace_with_options(words, d_model=64, n_heads=8).trace
selection = select(trace)  # every head; "it", the default focus word, when the words have it
heads = selection.heads
figure = build_figure(trace, selection)  # also warms the font and colour caches
cell_texts = sum(len(axes.texts) for axes in figure.axes)  # axes.text: the printed weights
word_labels = sum(
    1 for axes in figure.axes for text in axes.get_xticklabels() + axes.get_yticklabels()
    if text.get_text() and text.get_visible()
)
width, height = figure.get_size_inches()
floor = {"__name__": "floor"}
exec(compile(floor_script.read_text(), str(floor_script), "exec"), floor)
step = plan_layout(trace.tokens, len(heads), len(heads)).x.step
times = {"attnviz": [], "floor": []}
for _ in range(runs):
    start = time.perf_counter()
    save_heatmap(trace, selection, folder / "attnviz-512.png")
    times["attnviz"].append(time.perf_counter() - start)
    start = time.perf_counter()
    floor["draw"](folder / "floor-512.png", words, width, height, step, False)
    times["floor"].append(time.perf_counter() - start)
print(json.dumps({
    "attnviz": statistics.median(times["attnviz"]),
    "floor": statistics.median(times["floor"]),
    "cell_texts": cell_texts,
    "word_labels": word_labels,
    "label_step": step,
}))
"""


def png_size(path: Path) -> tuple[int, int]:
    """Width and height in pixels, from the PNG's IHDR chunk (bytes 16-24)."""
    with path.open("rb") as file:
        header = file.read(24)
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def describe_png(path: Path) -> str:
    width, height = png_size(path)
    return f"{width}×{height} px, {path.stat().st_size / 1024:.0f} KB"


def wall_time(command: list[str]) -> float:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def floor_command(script: Path, out: Path, inches: tuple[float, float], values: bool) -> list[str]:
    width, height = inches
    flags = ["1", str(int(values))]  # label every word; print the weights or not
    return [
        sys.executable,
        str(script),
        str(out),
        str(width),
        str(height),
        *flags,
        *SENTENCE.split(),
    ]


def measure_cold(folder: Path, rounds: int, *, warm: bool) -> dict[str, float]:
    """Median wall time of each command over ``rounds`` rounds, commands interleaved per round.

    attnviz runs first in each round; the floor draws a figure of the size of its picture.
    """
    script = folder / "floor.py"
    script.write_text(FLOOR_SCRIPT, encoding="utf-8")
    attnviz_png = folder / "attnviz.png"
    heatmap = [
        *attnviz_command(),
        "heatmap",
        SENTENCE,
        "--heads",
        "8",
        "--d-model",
        "64",
        "-o",
        str(attnviz_png),
    ]
    times: dict[str, list[float]] = {
        name: [] for name in (ATTNVIZ, FLOOR, FLOOR_VALUES, IMPORTS, IMPORTS_ALL)
    }
    for round_number in range(-1 if warm else 0, rounds):  # round -1 warms the file cache
        elapsed = wall_time(heatmap)
        pixels = png_size(attnviz_png)
        inches = (pixels[0] / DPI, pixels[1] / DPI)
        commands = {
            FLOOR: floor_command(script, folder / "floor.png", inches, values=False),
            FLOOR_VALUES: floor_command(script, folder / "floor-values.png", inches, values=True),
            IMPORTS: [sys.executable, "-c", IMPORT_MATPLOTLIB],
            IMPORTS_ALL: [sys.executable, "-c", IMPORT_ALL],
        }
        others = {name: wall_time(command) for name, command in commands.items()}
        if round_number >= 0:
            times[ATTNVIZ].append(elapsed)
            for name, seconds in others.items():
                times[name].append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}


def measure_large(folder: Path, runs: int) -> dict[str, float]:
    """The 512-word render in one warm process, attnviz and the floor alternately."""
    script = folder / "floor.py"
    script.write_text(FLOOR_SCRIPT, encoding="utf-8")
    command = [sys.executable, "-c", LARGE_SCRIPT, str(folder), str(runs), str(script), SENTENCE]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def report(
    medians: dict[str, float],
    large: dict[str, float],
    pictures: dict[str, str],
    *,
    quick: bool,
) -> list[Row]:
    """Print the tables and the split of the difference; return the headline rows."""
    floor = medians[FLOOR]
    print(f"{'cold command':45} {'median':>9} {'ratio':>7}")
    for name in (FLOOR, FLOOR_VALUES, ATTNVIZ, IMPORTS, IMPORTS_ALL):
        print(f"{name:45} {medians[name] * 1000:7.0f}ms {medians[name] / floor:6.2f}×")
    ratio = medians[ATTNVIZ] / floor
    verdict = "within" if ratio <= TARGET_RATIO else "OVER"
    print(f"heatmap / floor = {ratio:.2f} ({verdict} the {TARGET_RATIO}× target)")
    values = medians[FLOOR_VALUES] - floor
    imports = medians[IMPORTS_ALL] - medians[IMPORTS]
    rest = medians[ATTNVIZ] - medians[FLOOR_VALUES] - imports
    n_words = len(SENTENCE.split())
    print(
        f"of the {(medians[ATTNVIZ] - floor) * 1000:.0f} ms above the floor: printing the "
        f"{8 * n_words**2} weights {values * 1000:.0f} ms, importing attnviz, Typer and Rich "
        f"{imports * 1000:.0f} ms, the rest (titles, colour bar, focus panel and its "
        f"{8 * n_words} weights, layout) {rest * 1000:.0f} ms"
    )
    for name, description in pictures.items():
        print(f"PNG {name}: {description}")
    print(
        f"512 words, warm process: attnviz {large['attnviz'] * 1000:.0f} ms, floor "
        f"{large['floor'] * 1000:.0f} ms ({large['attnviz'] / large['floor']:.2f}×); "
        f"{large['cell_texts']:.0f} texts in the cells, {large['word_labels']:.0f} word labels "
        f"(every {large['label_step']:.0f}th word)"
    )
    return [
        Row(
            figure="heatmap: cold, 8 heads × 11 words / matplotlib floor",
            measured=milliseconds(medians[ATTNVIZ]),
            floor=milliseconds(floor),
            ratio=f"{ratio:.2f}×",
            target=f"<= {TARGET_RATIO}×",
            verdict=judge(ratio <= TARGET_RATIO, quick=quick),
        ),
        Row(
            figure="heatmap: the same / floor + printed weights",
            measured=milliseconds(medians[ATTNVIZ]),
            floor=milliseconds(medians[FLOOR_VALUES]),
            ratio=f"{medians[ATTNVIZ] / medians[FLOOR_VALUES]:.2f}×",
        ),
        Row(
            figure="heatmap: 512 words, warm render / floor",
            measured=milliseconds(large["attnviz"]),
            floor=milliseconds(large["floor"]),
            ratio=f"{large['attnviz'] / large['floor']:.2f}×",
        ),
        Row(
            figure="heatmap: texts in the cells at 512 words",
            measured=f"{large['cell_texts']:.0f}",
            target="0",
            verdict=judge(large["cell_texts"] == 0, quick=quick),
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run each; report, judge nothing")
    parser.add_argument("--runs", type=int, default=11, help="rounds of the cold commands")
    parser.add_argument("--large-runs", type=int, default=5, help="renders of the 512 words")
    parser.add_argument("--images", type=Path, help="keep the pictures in this folder")
    parser.add_argument("--rows", type=Path, help="also write the headline figures here (JSON)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.images or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        medians = measure_cold(folder, 1 if args.quick else args.runs, warm=not args.quick)
        large = measure_large(folder, 1 if args.quick else args.large_runs)
        pictures = {
            "attnviz": describe_png(folder / "attnviz.png"),
            "floor": describe_png(folder / "floor.png"),
            "floor + weights": describe_png(folder / "floor-values.png"),
            "attnviz, 512 words": describe_png(folder / "attnviz-512.png"),
        }
    rows = report(medians, large, pictures, quick=args.quick)
    if args.rows:
        write_rows(rows, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
