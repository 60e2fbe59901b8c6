"""Size, build time and peak memory of ``attnviz page`` for long sentences, the time headless
Chromium takes to draw it, and the size of the notebook display of a long trace.

Each page is built by the installed command in a fresh process (``ru_maxrss`` of that child is
its peak memory), from ordinary English: 117 words make 128 MiniLM word pieces with [CLS] and
[SEP], 470 words make 512, the model's limit; random mode takes 512 words (without the
punctuation, which it counts as tokens). Chromium (Debian's,
through its chromedriver: scripts/install-browser) opens each page and the time until it says
it is drawn (``document.body.dataset.ready``) is reported. Targets: 128 pieces, at most 4 MB
and 3 s; 512 pieces, at most 16 MB and 10 s, under 1 GB, open in under 5 s; a notebook display
under about 1 MB. Build time includes loading the model and running it, which the page cannot
shorten: the model's run alone is reported beside it.

    python benchmarks/page.py            # every case, once each (about a minute on 2 cores)
    python benchmarks/page.py --quick    # 128 pieces only, no browser: checks it works
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import attnviz_command  # noqa: E402  (the script next to this Python)

PARAGRAPH = (
    "The old man walked slowly along the river because the morning was cold and the market in "
    "the town would open soon. His daughter had asked him to buy bread, fresh fish and a small "
    "bag of apples for the children, who were waiting at home with their mother. On the way he "
    "met a friend from school, and they talked about the weather, the price of wheat and the "
    "long winter that everyone said was coming to the valley this year. "
)
MB = 1_000_000

#: (name, words, extra options, size target MB, build target s, memory target MB)
CASES = (
    ("minilm, 128 pieces", 117, ("-m", "minilm"), 4, 3, None),
    ("minilm, 512 pieces", 470, ("-m", "minilm"), 16, 10, 1000),
    ("random, 512 words", 512, (), 16, 10, 1000),
)

MODEL_RUN = """
import sys, time, attnviz
start = time.perf_counter()
attnviz.explain(sys.argv[1], model="minilm")
print(time.perf_counter() - start)
"""

MEASURED = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

NOTEBOOK = """
import sys, attnviz
print(len(attnviz.explain(sys.argv[1], model="minilm")._repr_html_().encode()))
"""


def words(count: int, *, punctuation: bool = True) -> str:
    """``count`` words of PARAGRAPH; without its commas and full stops, which random mode
    counts as tokens of their own."""
    text = " ".join((PARAGRAPH * (count // 60 + 1)).split()[:count])
    return text if punctuation else text.replace(",", "").replace(".", "")


def build(sentence: str, options: tuple[str, ...], out: Path) -> tuple[float, float]:
    """Seconds and peak megabytes of ``attnviz page`` in a child process of its own (a wrapper
    reports its one child's ru_maxrss, so each case's peak is its own)."""
    start = time.perf_counter()
    command = [*attnviz_command(), "page", sentence, *options, "-o", str(out)]
    wrapped = [sys.executable, "-c", MEASURED, *command]
    result = subprocess.run(wrapped, check=True, capture_output=True, text=True)
    return time.perf_counter() - start, int(result.stdout.split()[-1]) / 1024


def open_seconds(path: Path) -> float | None:
    """Seconds from asking headless Chromium for the page to its being drawn; None without
    Chromium."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    try:
        from browser import CHROMEDRIVER, CHROMIUM, new_driver
    except ImportError:
        return None
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        return None
    with tempfile.TemporaryDirectory() as profile:
        driver = new_driver(profile)
        try:
            start = time.perf_counter()
            driver.get(path.as_uri())
            while driver.execute_script("return document.body.dataset.ready") != "true":
                if time.perf_counter() - start > 60:
                    return float("inf")
                time.sleep(0.02)
            return time.perf_counter() - start
        finally:
            driver.quit()


def verdict(value: float | None, target: float | None) -> str:
    if value is None or target is None:
        return ""
    return f"≤ {target:g}: {'yes' if value <= target else 'NO'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="128 pieces only, no browser")
    args = parser.parse_args()
    cases = CASES[:1] if args.quick else CASES
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for name, count, options, size_target, time_target, memory_target in cases:
            out = Path(folder) / f"{count}.html"
            sentence = words(count, punctuation=bool(options))
            seconds, peak = build(sentence, options, out)
            size = out.stat().st_size / MB
            opened = None if args.quick else open_seconds(out)
            print(
                f"{name}: {size:.1f} MB ({verdict(size, size_target)}), built in {seconds:.1f} s "
                f"({verdict(seconds, time_target)}), peak {peak:.0f} MB "
                f"({verdict(peak, memory_target)})"
                + (
                    ""
                    if opened is None
                    else f", drawn by Chromium in {opened:.1f} s ({verdict(opened, 5)})"
                ),
                flush=True,
            )
            results.append(
                {
                    "case": name,
                    "mb": size,
                    "seconds": seconds,
                    "peak_mb": peak,
                    "open_seconds": opened,
                }
            )
        if not args.quick:
            run = subprocess.run(
                [sys.executable, "-c", MODEL_RUN, words(470)],
                check=True,
                capture_output=True,
                text=True,
            )
            print(f"of which the model's run of 512 pieces alone: {float(run.stdout):.1f} s")
            shown = subprocess.run(
                [sys.executable, "-c", NOTEBOOK, words(470)],
                check=True,
                capture_output=True,
                text=True,
            )
            notebook = int(shown.stdout) / MB
            print(f"notebook display of 512 pieces: {notebook:.2f} MB ({verdict(notebook, 1)})")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
