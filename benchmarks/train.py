"""`attnviz train` at full speed: training time to 99% held-out, the whole command from a cold
start, and peak memory, for each task, measured side by side with the start-up floor.

Each command runs alternately with the floor, ``python -c "import numpy, typer"``, each in a
fresh process, piped (so it never paces itself); medians are reported, and the whole command's
time also as a ratio to the floor, so a slow or busy machine shows as a slower floor. The
training time is the one the command prints ("in 0.10 s of training": the steps alone, not the
held-out checks after each step). Peak memory is the child's maximum resident set.

Targets: coref to 99% held-out (of every held-out sentence) in at most 1 s of training and the
whole command in at most 2.5 s; coref --readout word, the whole command in at most 3 s; reverse
in 0.2 s of training; induction in 6 s; each under 200 MB.

    python benchmarks/train.py            # 5 runs of each
    python benchmarks/train.py --quick    # 1 run, checks that it works, judges nothing
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from table import Row, judge, write_rows

FLOOR = [sys.executable, "-c", "import numpy, typer"]
#: name -> (arguments after `attnviz train`, training target in s, whole-command target in s)
CASES = {
    "coref": (["coref"], 1.0, 2.5),
    "coref --readout word": (["coref", "--readout", "word"], 3.0, 3.0),
    "reverse": (["reverse"], 0.2, None),
    "induction": (["induction"], 6.0, None),
}
MEMORY_TARGET_MB = 200


def attnviz() -> list[str]:
    script = Path(sys.executable).with_name("attnviz")
    if script.exists():
        return [str(script)]
    found = shutil.which("attnviz")
    return [found] if found else [sys.executable, "-m", "attnviz"]


def run(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak resident megabytes and standard output of one fresh process."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "100"},
    )
    assert child.stdout is not None
    output = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed: status {status}")
    return seconds, usage.ru_maxrss / 1024, output


def trained(output: str) -> tuple[int, float, float]:
    """Steps, seconds of training and held-out accuracy (%) from the command's summary."""
    found = re.search(
        r"Trained (\d+) steps in ([\d.]+) s of training: held-out accuracy ([\d.]+)%", output
    )
    if found is None:
        raise SystemExit("the summary line is missing from the output")
    return int(found[1]), float(found[2]), float(found[3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run each; judge nothing")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", type=Path, help="write the headline figures here (JSON)")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    floors: list[float] = []
    results: dict[str, list[tuple[float, float, str]]] = {name: [] for name in CASES}
    for _ in range(runs):
        for name, (arguments, _, _) in CASES.items():
            if not (args.quick and floors):  # a quick run's one floor is enough to print
                floors.append(run(FLOOR)[0])
            results[name].append(run([*attnviz(), "train", *arguments, "--pace", "0"]))
    floor = statistics.median(floors)
    rows = []
    print(f"{'task':22} {'steps':>5} {'training':>9} {'command':>8} {'ratio':>7} {'peak':>7}")
    for name, (_, train_target, command_target) in CASES.items():
        wall = statistics.median(r[0] for r in results[name])
        memory = max(r[1] for r in results[name])
        parsed = [trained(r[2]) for r in results[name]]
        training = statistics.median(p[1] for p in parsed)
        steps, accuracy = parsed[0][0], min(p[2] for p in parsed)
        print(
            f"{name:22} {steps:>5} {training:>8.2f}s {wall:>7.2f}s {wall / floor:>6.1f}× "
            f"{memory:>5.0f} MB  (held-out {accuracy}%)"
        )
        rows.append(
            Row(
                f"`attnviz train {name}`: training to 99% held-out ({steps} steps)",
                f"{training:.2f} s",
                target=f"<= {train_target:g} s",
                verdict=judge(training <= train_target and accuracy >= 99, quick=args.quick),
            )
        )
        if command_target is not None:
            rows.append(
                Row(
                    f"cold `attnviz train {name} --pace 0`, the whole command",
                    f"{wall:.2f} s",
                    floor=f"{floor * 1000:.0f} ms",
                    ratio=f"{wall / floor:.1f}×",
                    target=f"<= {command_target:g} s",
                    verdict=judge(wall <= command_target, quick=args.quick),
                )
            )
        rows.append(
            Row(
                f"`attnviz train {name}`: peak memory",
                f"{memory:.0f} MB",
                target=f"< {MEMORY_TARGET_MB} MB",
                verdict=judge(memory < MEMORY_TARGET_MB, quick=args.quick),
            )
        )
    print(f"floor, python -c 'import numpy, typer': {floor * 1000:.0f} ms (median)")
    if args.rows is not None:
        write_rows(rows, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
