"""Every benchmark, one after another, then one table of their headline figures.

Runs ``startup.py``, ``heatmap.py``, ``trace.py``, ``model.py``, ``train.py`` and
``generate.py`` (model.py and generate.py report model mode as not installed when the extra
``attnviz[model]`` or the model package is missing), each in its
own process with its own printout, and then prints every headline figure with the floor it was
measured against in the same run, their ratio, the target and the verdict.

    python benchmarks/run.py                  # full runs: about five minutes on 2 cores
    python benchmarks/run.py --quick          # CI: each benchmark once, judges nothing
    python benchmarks/run.py --reference-python /tmp/hfvenv/bin/python   # passed to model.py

With ``--quick`` two benchmarks run at a time (one per core of a 2-core machine), each
printout held until it finishes and printed in the order above: a quick run judges nothing, so
what its timings lose to sharing the cores costs nothing, and it takes half the time. The full
runs stay one at a time, alone on the machine.

Exits 0 when every benchmark ran, whatever the timings; 1 when one of them failed.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

from table import Row, format_table, processor, read_rows

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("startup", "heatmap", "trace", "model", "train", "generate")


def versions() -> str:
    """The machine and the versions the figures depend on, for the line above the table."""
    found = []
    for package in ("numpy", "matplotlib", "typer", "rich"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} missing")
    cores = os.cpu_count()
    return f"{processor()}, {cores} cores, Python {platform.python_version()}, " + ", ".join(found)


def run_benchmark(name: str, rows_file: Path, args: argparse.Namespace) -> tuple[str, bool]:
    """One benchmark in its own process: its printout and whether it succeeded. A quick run
    holds the printout to print it whole; a full run prints as it goes."""
    command = [sys.executable, str(HERE / f"{name}.py"), "--rows", str(rows_file)]
    if args.quick:
        command.append("--quick")
    if name in ("model", "generate") and args.reference_python:
        command += ["--reference-python", args.reference_python]
    if not args.quick:
        print(f"== {name}", flush=True)
        return "", subprocess.run(command, check=False).returncode == 0
    out = subprocess.run(command, check=False, capture_output=True, text=True)
    return f"== {name}\n{out.stdout}{out.stderr}", out.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each benchmark once; judge nothing")
    parser.add_argument("--reference-python", help="passed to model.py: torch and transformers")
    args = parser.parse_args()
    rows: list[Row] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        files = {name: Path(folder) / f"{name}.json" for name in BENCHMARKS}
        with ThreadPoolExecutor(max_workers=2 if args.quick else 1) as pool:
            runs = [pool.submit(run_benchmark, name, files[name], args) for name in BENCHMARKS]
            for name, future in zip(BENCHMARKS, runs, strict=True):
                printout, succeeded = future.result()  # in order, whichever finished first
                print(printout, end="", flush=True)
                if succeeded:
                    rows += read_rows(files[name])
                else:
                    failed.append(name)
    print(f"\n== all benchmarks ({versions()})")
    print(format_table(rows))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
