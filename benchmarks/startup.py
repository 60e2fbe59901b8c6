"""Cold start-up of ``attnviz explain "I am good"`` as a ratio to its floor, measured side by side.

The floor is ``python -c "import numpy, typer"``: the least any numpy + Typer command can cost on
this machine. Both commands run alternately, each in a fresh process, and the ratio of the
medians is reported, so a slow or busy machine slows both alike. Target: ratio <= 1.3.

    python benchmarks/startup.py            # 21 runs of each, prints the table
    python benchmarks/startup.py --quick    # 3 runs, checks that it works, asserts nothing
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_RATIO = 1.3


def attnviz_command() -> list[str]:
    """The installed console script next to this Python, else ``python -m attnviz``."""
    script = Path(sys.executable).with_name("attnviz")
    if script.exists():
        return [str(script)]
    found = shutil.which("attnviz")
    return [found] if found else [sys.executable, "-m", "attnviz"]


COMMANDS = {
    "floor: python -c 'import numpy, typer'": [sys.executable, "-c", "import numpy, typer"],
    "attnviz --help": [*attnviz_command(), "--help"],
    'attnviz explain "I am good"': [*attnviz_command(), "explain", "I am good"],
}


def wall_time(command: list[str]) -> float:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def measure(runs: int) -> dict[str, float]:
    """Median wall time of each command over ``runs`` rounds, commands interleaved per round."""
    for command in COMMANDS.values():  # warm the file cache and .pyc files once
        wall_time(command)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, command in COMMANDS.items():
            times[name].append(wall_time(command))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs; report without judging")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    medians = measure(3 if args.quick else args.runs)
    floor = next(iter(medians.values()))
    print(f"{'command':45} {'median':>9} {'ratio':>7}")
    for name, seconds in medians.items():
        print(f"{name:45} {seconds * 1000:7.0f}ms {seconds / floor:6.2f}×")
    ratio = medians['attnviz explain "I am good"'] / floor
    verdict = "within" if ratio <= TARGET_RATIO else "OVER"
    print(f"explain / floor = {ratio:.2f} ({verdict} the {TARGET_RATIO}× target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
