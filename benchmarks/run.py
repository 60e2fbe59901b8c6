"""Every benchmark, one after another, then one table of their headline figures.

Runs ``startup.py``, ``heatmap.py``, ``trace.py`` and ``model.py`` (which reports model mode as
not installed when the extra ``attnviz[model]`` or the model package is missing), each in its
own process with its own printout, and then prints every headline figure with the floor it was
measured against in the same run, their ratio, the target and the verdict.

    python benchmarks/run.py                  # full runs: about five minutes on 2 cores
    python benchmarks/run.py --quick          # CI: each benchmark once, judges nothing
    python benchmarks/run.py --reference-python /tmp/hfvenv/bin/python   # passed to model.py

Exits 0 when every benchmark ran, whatever the timings; 1 when one of them failed.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from table import Row, format_table, processor, read_rows

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("startup", "heatmap", "trace", "model", "train")


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each benchmark once; judge nothing")
    parser.add_argument("--reference-python", help="passed to model.py: torch and transformers")
    args = parser.parse_args()
    rows: list[Row] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        for name in BENCHMARKS:
            print(f"== {name}", flush=True)
            rows_file = Path(folder) / f"{name}.json"
            command = [sys.executable, str(HERE / f"{name}.py"), "--rows", str(rows_file)]
            if args.quick:
                command.append("--quick")
            if name == "model" and args.reference_python:
                command += ["--reference-python", args.reference_python]
            if subprocess.run(command, check=False).returncode != 0:
                failed.append(name)
                continue
            rows += read_rows(rows_file)
    print(f"\n== all benchmarks ({versions()})")
    print(format_table(rows))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
