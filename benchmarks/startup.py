"""Cold start-up of ``attnviz explain "I am good"`` as a ratio to its floor, measured side by side.

The floor is ``python -c "import numpy, typer"``: the least any numpy + Typer command can cost on
this machine. A second reference is the smallest command built from attnviz's stack: a Typer app
that draws one array from ``np.random.default_rng`` and prints it with a Rich Console; the gap
between it and ``attnviz explain`` is what attnviz itself adds (its modules and 17 tables). All
commands run alternately, each in a fresh process, and ratios of medians are reported, so a slow
or busy machine slows them alike. Target: explain / floor <= 1.45.

Measure an ordinary install (``pip install .``): an editable install (``pip install -e .``) adds
an import hook that costs start-up time of its own, and the script says so when it sees one.

    python benchmarks/startup.py            # 21 runs of each, prints the table
    python benchmarks/startup.py --quick    # 1 run, no warm-up: checks it works, judges nothing

``--rows FILE`` also writes the headline figures for ``benchmarks/run.py``'s combined table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from table import Row, judge, milliseconds, write_rows

TARGET_RATIO = 1.45


def attnviz_command() -> list[str]:
    """The installed console script next to this Python, else ``python -m attnviz``."""
    script = Path(sys.executable).with_name("attnviz")
    if script.exists():
        return [str(script)]
    found = shutil.which("attnviz")
    return [found] if found else [sys.executable, "-m", "attnviz"]


MINIMAL_STACK_APP = """
import numpy as np
import typer

app = typer.Typer()


@app.command()
def explain(sentence: str, seed: int = 0) -> None:
    from rich.console import Console

    Console().print(str(np.random.default_rng(seed).normal(size=(3, 8)).round(2)))


@app.command()
def other(value: int = 0) -> None:
    pass


app()
"""

FLOOR = "floor: python -c 'import numpy, typer'"
MINIMAL = "minimal Typer + Rich + np.random command"
HELP = "attnviz --help"
EXPLAIN = 'attnviz explain "I am good"'


def commands(minimal_app: Path) -> dict[str, list[str]]:
    return {
        FLOOR: [sys.executable, "-c", "import numpy, typer"],
        MINIMAL: [sys.executable, str(minimal_app), "explain", "x"],
        HELP: [*attnviz_command(), "--help"],
        EXPLAIN: [*attnviz_command(), "explain", "I am good"],
    }


def is_editable_install() -> bool:
    try:
        direct_url = metadata.distribution("attnviz").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return False
    return bool(direct_url and json.loads(direct_url).get("dir_info", {}).get("editable"))


def wall_time(command: list[str]) -> float:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    # Bytecode as an install has it: pip compiles every module it installs, numpy's and Typer's
    # as attnviz's, but an editable install's modules are compiled on first import, and with
    # PYTHONDONTWRITEBYTECODE set (as some machines and containers do) on every import, which
    # would measure Python's compiler instead of attnviz. The warm-up run writes them.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def measure(runs: int, *, warm: bool = True) -> dict[str, float]:
    """Median wall time of each command over ``runs`` rounds, commands interleaved per round."""
    with tempfile.TemporaryDirectory() as folder:
        minimal_app = Path(folder) / "minimal_app.py"
        minimal_app.write_text(MINIMAL_STACK_APP, encoding="utf-8")
        to_run = commands(minimal_app)
        for command in to_run.values() if warm else ():  # warm the file cache and .pyc files
            wall_time(command)
        times: dict[str, list[float]] = {name: [] for name in to_run}
        for _ in range(runs):
            for name, command in to_run.items():
                times[name].append(wall_time(command))
    return {name: statistics.median(values) for name, values in times.items()}


def headline_rows(medians: dict[str, float], *, quick: bool) -> list[Row]:
    floor = medians[FLOOR]

    def row(name: str, figure: str, target: bool) -> Row:
        ratio = medians[name] / floor
        return Row(
            figure=figure,
            measured=milliseconds(medians[name]),
            floor=milliseconds(floor),
            ratio=f"{ratio:.2f}×",
            target=f"<= {TARGET_RATIO}×" if target else "",
            verdict=judge(ratio <= TARGET_RATIO, quick=quick) if target else "",
        )

    return [
        row(EXPLAIN, "start-up: `explain` / `import numpy, typer`", target=True),
        row(HELP, "start-up: `--help` / `import numpy, typer`", target=False),
        row(MINIMAL, "start-up: minimal Typer+Rich app / same floor", target=False),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 run; report without judging")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--rows", type=Path, help="also write the headline figures here (JSON)")
    args = parser.parse_args()
    if is_editable_install():
        print("note: attnviz is an editable install; its import hook inflates the figures below")
    # A quick run judges nothing: one cold round runs every command once, as a check that each
    # still starts; the warm-up and the medians are for figures someone reads.
    medians = measure(1, warm=False) if args.quick else measure(args.runs)
    floor = medians[FLOOR]
    print(f"{'command':45} {'median':>9} {'ratio':>7}")
    for name, seconds in medians.items():
        print(f"{name:45} {seconds * 1000:7.0f}ms {seconds / floor:6.2f}×")
    ratio = medians[EXPLAIN] / floor
    verdict = "within" if ratio <= TARGET_RATIO else "OVER"
    print(f"explain / floor = {ratio:.2f} ({verdict} the {TARGET_RATIO}× target)")
    if args.rows:
        write_rows(headline_rows(medians, quick=args.quick), args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
