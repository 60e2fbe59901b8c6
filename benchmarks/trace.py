"""Time and peak memory of one multi-head attention trace, for 16 to 2048 tokens.

The math is called directly, ``attnviz.attention.multi_head_attention`` with
``AttentionConfig(d_model=512, n_heads=8)`` (the paper's base sizes) and seeded random X and
weights, because the command line stops at 512 tokens. Every n runs in a fresh process, so the
peak resident memory (``ru_maxrss``) belongs to that n alone. The floor is the same process
after the imports and after making X and the weights, just before the call; the peak above it
is what the trace costs. ``tracemalloc`` gives the peak of the arrays the call allocates, from
a second call in the same process. The trace keeps scores, scaled scores and weights, three
[h, n, n] float64 arrays: 3 · 8 · n² · 8 bytes, 768 MB at n = 2048, the part no implementation
that keeps every intermediate can avoid. Targets at n = 2048: under 2 s and under 1.5 GB.
Measure on an idle machine: while another process holds a core, OpenBLAS's two threads wait on
each other and a 16-token trace can take hundreds of milliseconds instead of about 8.

    python benchmarks/trace.py            # 16, 128, 512, 2048 tokens, 5 processes each
    python benchmarks/trace.py --quick    # 16 and 128 tokens, once: checks it works, judges nothing

``--rows FILE`` also writes the headline figures for ``benchmarks/run.py``'s combined table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from table import Row, judge, megabytes, write_rows

SIZES = (16, 128, 512, 2048)
QUICK_SIZES = (16, 128)
TARGET_TOKENS = 2048
TARGET_SECONDS = 2.0
TARGET_KB = 1.5 * 1024 * 1024  # 1.5 GB, in ru_maxrss's kilobytes
D_MODEL, N_HEADS = 512, 8

WORKER = """
import json, resource, sys, time, tracemalloc
import numpy as np
from attnviz.attention import multi_head_attention
from attnviz.config import AttentionConfig
from attnviz.weights import random_weights

n_tokens = int(sys.argv[1])
config = AttentionConfig(d_model=int(sys.argv[2]), n_heads=int(sys.argv[3]))
x = np.random.default_rng(1).standard_normal((n_tokens, config.d_model))
weights = random_weights(config, np.random.default_rng(0))
tokens = [f"w{i}" for i in range(n_tokens)]
floor_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
trace = multi_head_attention(tokens, x, weights, config=config)
seconds = time.perf_counter() - start
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
del trace
tracemalloc.start()
trace = multi_head_attention(tokens, x, weights, config=config)
traced_bytes = tracemalloc.get_traced_memory()[1]
print(json.dumps({"seconds": seconds, "floor_kb": floor_kb, "peak_kb": peak_kb,
                  "traced_bytes": traced_bytes}))
"""


def run_worker(n_tokens: int) -> dict[str, float]:
    command = [sys.executable, "-c", WORKER, str(n_tokens), str(D_MODEL), str(N_HEADS)]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def measure(sizes: tuple[int, ...], rounds: int) -> dict[int, dict[str, float]]:
    """Medians over ``rounds`` fresh processes per size, the sizes interleaved in each round."""
    results: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n_tokens in sizes:
            results[n_tokens].append(run_worker(n_tokens))
    return {
        n_tokens: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for n_tokens, runs in results.items()
    }


def kept_kb(n_tokens: int) -> float:
    """Kilobytes of the three [h, n, n] float64 arrays the trace keeps."""
    return 3 * N_HEADS * n_tokens**2 * 8 / 1024


def report(medians: dict[int, dict[str, float]], *, quick: bool) -> list[Row]:
    """Print the table and the verdicts; return the headline rows."""
    print(f"d_model {D_MODEL}, {N_HEADS} heads; each n in a fresh process (MB = 1024² bytes)")
    header = ("tokens", "time", "peak RSS", "floor", "above floor", "tracemalloc", "n² arrays")
    print(
        f"{header[0]:>6} {header[1]:>9} {header[2]:>9} " + " ".join(f"{h:>11}" for h in header[3:])
    )
    rows = []
    for n_tokens, result in medians.items():
        above = result["peak_kb"] - result["floor_kb"]
        print(
            f"{n_tokens:>6} {result['seconds'] * 1000:7.1f}ms {megabytes(result['peak_kb']):>9} "
            f"{megabytes(result['floor_kb']):>11} {megabytes(above):>11} "
            f"{megabytes(result['traced_bytes'] / 1024):>11} {megabytes(kept_kb(n_tokens)):>11}"
        )
        judged = n_tokens == TARGET_TOKENS
        seconds_ok = result["seconds"] < TARGET_SECONDS
        memory_ok = result["peak_kb"] < TARGET_KB
        rows += [
            Row(
                figure=f"trace: {n_tokens} tokens, time",
                measured=f"{result['seconds'] * 1000:.1f} ms",
                target=f"< {TARGET_SECONDS:.0f} s" if judged else "",
                verdict=judge(seconds_ok, quick=quick) if judged else "",
            ),
            Row(
                figure=f"trace: {n_tokens} tokens, peak RSS / before the call",
                measured=megabytes(result["peak_kb"]),
                floor=megabytes(result["floor_kb"]),
                ratio=f"+{megabytes(above)}",
                target="< 1.5 GB" if judged else "",
                verdict=judge(memory_ok, quick=quick) if judged else "",
            ),
        ]
        if judged:
            print(
                f"{n_tokens} tokens: {result['seconds']:.2f} s "
                f"({'within' if seconds_ok else 'OVER'} the {TARGET_SECONDS:.0f} s target), "
                f"peak {megabytes(result['peak_kb'])} "
                f"({'within' if memory_ok else 'OVER'} the 1.5 GB target)"
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 and 128 tokens once; no verdict")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per size")
    parser.add_argument("--rows", type=Path, help="also write the headline figures here (JSON)")
    args = parser.parse_args()
    sizes = QUICK_SIZES if args.quick else SIZES
    rows = report(measure(sizes, 1 if args.quick else args.runs), quick=args.quick)
    if args.rows:
        write_rows(rows, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
