"""What each command of the README and of docs/*.md must print and write: the table the
end-to-end documentation test reads (tests/e2e/test_readme.py), keyed by the command as a page
writes it (normalised by shlex), with the pages' own pasted output where they have some."""

from __future__ import annotations

import json
import re
import shlex
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from docs_pages import text_block

from e2e import worksheet_expected as sheets

IT = "The animal didn't cross the street because it was too tired"
IT_ARG = shlex.quote(IT)  # as a command, normalised, writes it
DOG_ARG = shlex.quote("A dog ate the food because it was hungry")
SAMPLES = "sample_embeddings"


# -- what each command must print and write --------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What a documented command must print: ``says`` (parts of stdout, each within one line),
    ``notes`` (stderr lines before its ``wrote`` lines) and ``writes`` (the files it reports, in
    order; each is checked for its format and size); ``then`` checks what its page says of a
    file's contents."""

    says: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    then: Callable[[Path], None] | None = None  # more to check in the folder it ran in


def slides(*names: str, folder: str = "slides") -> tuple[str, ...]:
    return tuple(f"{folder}/{name}.{kind}" for name in names for kind in ("svg", "png"))


def _has_step_6b(page: Path) -> None:
    """The page holds steps 5, 6 and 6b only, 6b with its blocks, as docs/modern.md says."""
    html = page.read_text(encoding="utf-8")
    assert "Step 6b · FlashAttention's softmax" in html and "Block 1 of 4" in html
    assert "Step 4 ·" not in html


def _offers_both_modes(page: Path) -> None:
    """The page offers What if (a random layer) and Try it, one question per step and head and
    the output's once, as docs/page.md says."""
    html = page.read_text(encoding="utf-8")
    data = json.loads(html.split('id="attnviz-data">')[1].split("</script>")[0])
    assert data["whatif"]["available"] and data["whatif"]["sizes"]["n"] == 6
    assert data["tryit"]["available"] and len(data["tryit"]["questions"]) == 2 * 5 + 1


def _slider_steps(name: str, count: int, *labels: str) -> Callable[[Path], None]:
    """The page ``name`` has ``count`` steps on its slider, among them ``labels``, as
    docs/generate.md says."""

    def check(folder: Path) -> None:
        page = (folder / name).read_text(encoding="utf-8")
        assert f'type="range" id="step" min="0" max="{count - 1}"' in page
        assert f'"label":"Step {count} of {count}: ' in page
        for label in labels:
            assert f'"label":"{label}"' in page

    return check


def same_numbers_bit_for_bit(folder: Path) -> None:
    """again.npz, made with four-heads.npz's weights, holds its numbers exactly."""
    with np.load(folder / "four-heads.npz") as before, np.load(folder / "again.npz") as after:
        assert before.files == after.files
        for key in before.files:
            if key != "config":  # which says where the weights came from
                np.testing.assert_array_equal(before[key], after[key])


def every_layer_with_its_biases(folder: Path) -> None:
    with zipfile.ZipFile(folder / "minilm.npz") as archive:
        assert "b_O.npy" in archive.namelist()
    with np.load(folder / "minilm.npz") as saved:
        assert saved["weights"].shape == (6, 12, 5, 5) and saved["X"].shape == (6, 5, 384)
        assert saved["b_Q"].shape == (6, 12, 32) and saved["b_O"].shape == (6, 384)
        assert saved["weights"].dtype == np.float64


HEADER = "attnviz · multi-head self-attention, step by step"
RANDOM = ("Embeddings: seeded random vectors (seed 0)", "Weights: random (seed 0)")
I_AM_GOOD = (HEADER, "Sentence: I am good  (3 tokens)", *RANDOM)
DEFAULT_SIZES = "Sizes: d_model = 8, h = 2 heads, d_k = d_model / h = 4"
EVERY_STEP = tuple(f"Step {n} · " for n in range(1, 8))
NO_PAUSE = "note: --step pauses only at a terminal; going on without pausing."
MINILM_LAST = "Weights: all-MiniLM-L6-v2 (pretrained), layer 6 of 6"
MINILM_SIZES = "Sizes: d_model = 384, h = 12 heads, d_k = d_model / h = 32"
TINY_GPT2 = "Weights: tiny_gpt2 (random, untrained checkpoint), layer 2 of 2"
CROSS = "attnviz · multi-head cross-attention (encoder–decoder), step by step"
SOURCE_TARGET = (
    "Source (keys and values): I am good  (3 tokens)",
    "Target (queries): Je vais bien  (3 tokens)",
)
DEMO = tuple(
    f"{n} · {title}"
    for n, title in enumerate(
        [
            '"I am good", step by step',
            '"it" with random weights',
            "coref: a model trained to point",
            "coref-word: the right answer, attention elsewhere",
            "Training coref, live",
        ],
        start=1,
    )
)
SCALING = text_block("docs/scaling.md", "# `attnviz scaling`")
EXERCISE = text_block("docs/exercise.md", "# `attnviz exercise`")
HELD = text_block(
    "docs/generate.md",
    "## A sliding cache, keeping or dropping the first token (`--window`, `--keep-first`)",
)
LIGHTHOUSE = (
    "The old lighthouse keeper climbed the stairs every evening. He lit the lamp, wrote in his "
    "log, and watched the ships pass by the rocks. One winter night a storm came, and the waves "
    "rose higher than the tower itself. The keeper held on to the railing and kept the light "
    "burning until morning, when the sea was calm again and the fishing boats returned safely "
    "to the harbour."
)
SCALING_GRADIENTS = text_block("docs/scaling.md", "# `attnviz scaling`", 1)
WIDE_ARG = shlex.quote("The animal didn't cross the street because it was too wide")
TRAIN_START = ('Task coref: which noun "it" is, decided by the adjective after it.',)
TRAIN = ("docs/train.md", "# `attnviz train TASK`")
TRAINED = text_block(*TRAIN, 1)
#: The parts of the pasted summary that are the same on every machine (not the seconds).
TRAINED_SAYS = tuple(
    line for line in TRAINED if line and line != "…" and "s of training" not in line
) + tuple(
    re.match(r"Trained \d+ steps in", line)[0]  # type: ignore[index]
    for line in TRAINED
    if "s of training" in line
)
EXPLAIN_STEP = text_block(*TRAIN, 2)
HEADS_PAGE = ("docs/heads.md", "# `attnviz heads SENTENCE`")
HEADS = text_block(*HEADS_PAGE)[1:]  # its title line is the page's own
ABLATE = tuple(text_block(*HEADS_PAGE, 1))
COMPARE = ("docs/compare.md", "# `attnviz compare A B`")
HONEST = ("docs/reading.md", "# Reading attention honestly")
#: docs/modern.md's latent step, but for the rounding differences it states: measured in the run,
#: their digits depend on the order in which the machine's BLAS adds.
LATENT_STEP = tuple(
    line
    for line in text_block("docs/modern.md", "## Multi-head latent attention (DeepSeek-V2, V3)")
    if line and not re.search(r"\de-\d", line)
)
#: docs/modern.md's latent step with rotary positions, but for the differences it measures.
LATENT_ROPE_STEP = tuple(
    line
    for line in text_block(
        "docs/modern.md", "### With rotary positions: DeepSeek's decoupled RoPE key"
    )
    if line and not re.search(r"\de-\d", line)
)
HONEST_FOCUS = tuple(text_block(*HONEST))  # the focus view of layer 6, head 12
HONEST_WORKED = tuple(text_block(*HONEST, 1))  # one contribution worked out
COMPARE_COREF = tuple(line for line in text_block(*COMPARE) if line)
COMPARE_MINILM = tuple(line for line in text_block(*COMPARE, 1) if line)
LESSON_SLIDES = (
    "01-title", "02-tokens", "03-head1-qkv", "04-head1-scores", "05-head1-scaled",
    "06-head1-weights", "07-head1-z", "08-head2-rows", "09-output",
)  # fmt: skip

EXPECTED: dict[str, Expected] = {
    "attnviz explain 'I am good'": Expected(
        (*I_AM_GOOD, DEFAULT_SIZES, *EVERY_STEP, "Head 2 of 2")
    ),
    "attnviz explain 'Thinking Machines' --preset paper": Expected(
        (
            "Sentence: Thinking Machines  (2 tokens)",
            "d_model = 512, h = 8 heads, d_k = d_model / h = 64",
            "Step 4 · Scale by √d_k = √64 = 8.00",
            "Head 8 of 8",
        )
    ),  # fmt: skip
    "attnviz explain 'I am good' --d-model 12 --heads 3 --seed 7": Expected(
        (
            "d_model = 12, h = 3 heads, d_k = d_model / h = 4",
            "Embeddings: seeded random vectors (seed 7)",
            "Weights: random (seed 7)",
            "Head 3 of 3",
        )
    ),  # fmt: skip
    f"attnviz explain {IT_ARG} --head 2": Expected(
        (
            f"Sentence: {IT}  (11 tokens)",
            "Head 2 of 2",
            "Step 6 · Z₂ = weights₂·V₂",
            "Focus: where does 'it' look?",
        )
    ),  # fmt: skip
    "attnviz explain 'the cat saw the dog' --focus the:2": Expected(
        (
            "Sentence: the cat saw the dog  (5 tokens)",
            "Focus: where does 'the:2' look?",
            "cat   ████████",
        )
    ),
    "attnviz explain 'I am good' --decimals 4 --show-weights": Expected(
        ("Step 4 · Scale by √d_k = √4 = 2.0000", "W_Q₁  [8 × 4]", "I     -0.5636  -0.0893  -1.2244")
    ),
    "attnviz explain 'I am good' --export trace.npz": Expected(I_AM_GOOD, writes=("trace.npz",)),
    "attnviz explain 'I am good' --step": Expected((*I_AM_GOOD, *EVERY_STEP), notes=(NO_PAUSE,)),
    "attnviz explain 'I am good' --steps 4-6": Expected(
        (
            *I_AM_GOOD,
            "Step 4 · Scale by √d_k",
            "Step 5 · Softmax",
            "Step 6 · Z₁ = weights₁·V₁",
            "Head 2 of 2 · the row of 'I'",
        )
    ),
    "attnviz explain 'I am good' --svg lesson.svg --html lesson.html": Expected(
        I_AM_GOOD, writes=("lesson.svg", "lesson.html")
    ),
    "attnviz explain 'I am good' --slides slides": Expected(
        I_AM_GOOD, writes=slides(*LESSON_SLIDES)
    ),
    f"attnviz explain {IT_ARG} --steps 3,5 --slides animal-slides": Expected(
        ("Step 3 · Raw scores Q·Kᵀ", "Step 5 · Softmax: attention weights"),
        writes=slides(
            "01-title",
            "02-head1-scores",
            "03-head1-weights",
            "04-head2-rows",
            folder="animal-slides",
        ),
    ),  # fmt: skip
    "attnviz explain 'Je vais bien' --causal --head 1": Expected(
        (
            "scaled₁ = scores₁ / √d_k, masked  [3 × 3]",
            "Je     0.17     −∞    −∞",
            "A masked score is set to −∞ before the softmax, and exp(−∞) = 0.",
        )
    ),  # fmt: skip
    "attnviz explain 'I am good' --pad-to 5 --head 1": Expected(
        (
            "Sentence: I am good [PAD] [PAD]  (5 tokens)",
            "scaled₁ = scores₁ / √d_k, masked  [5 × 5]",
            "I        -0.65  -0.44   0.39       −∞       −∞",
        )
    ),  # fmt: skip
    "attnviz heatmap 'The cat sat on the mat' --causal --pad-to 8 -o masked.png": Expected(
        writes=("masked.png",)
    ),
    "attnviz explain --model minilm 'I am good' --pad-to 8 --head 1": Expected(
        (
            "Sentence: I am good  (8 word pieces)",
            MINILM_LAST,
            "scaled₁ = scores₁ / √d_k, masked  [8 × 8]",
        )
    ),
    f"attnviz heatmap {IT_ARG} -o it.png": Expected(writes=("it.png",)),
    "attnviz heatmap 'I am good' -o good.png --per-head heads/": Expected(
        writes=("good.png", "heads/head_1.png", "heads/head_2.png")
    ),
    f"attnviz heatmap {DOG_ARG} -o dog.pdf --cmap cividis": Expected(writes=("dog.pdf",)),
    f"attnviz heatmap {IT_ARG} --heads 8 --d-model 64 -o it8.png": Expected(writes=("it8.png",)),
    f"attnviz heatmap {IT_ARG} --scale row -o rows.png": Expected(writes=("rows.png",)),
    f"attnviz heatmap --style lines {IT_ARG} -o lines.png": Expected(writes=("lines.png",)),
    f"attnviz heatmap --style lines -m minilm {IT_ARG} --layer 6 --head 12 "
    "-o lines_l6h12.png": Expected(writes=("lines_l6h12.png",)),
    "attnviz page 'I am good' -o page.html": Expected(writes=("page.html",)),
    f"attnviz page {IT_ARG} --steps 5,6,blockwise -o flash.html": Expected(
        writes=("flash.html",), then=lambda folder: _has_step_6b(folder / "flash.html")
    ),
    f"attnviz page -m minilm {IT_ARG} -o it.html": Expected(writes=("it.html",)),
    f"attnviz page -m minilm {IT_ARG} --layer 6 --open-head 12 -o it12.html": Expected(
        writes=("it12.html",)
    ),
    f"attnviz page -m coref {IT_ARG} --compare {WIDE_ARG} -o tired-wide.html": Expected(
        writes=("tired-wide.html",)
    ),
    "attnviz page 'The cat sat because it was tired' --compare 'The cat sat because it was wide' "
    "-o pair.html": Expected(writes=("pair.html",)),
    "attnviz page 'The cat sat on the mat' --causal --pad-to 8 --focus sat "
    "-o masked.html": Expected(writes=("masked.html",)),
    "attnviz page 'The cat sat on the mat' --causal -o whatif.html": Expected(
        writes=("whatif.html",), then=lambda folder: _offers_both_modes(folder / "whatif.html")
    ),
    "attnviz page 'The cat sat on the mat' --causal -o tryit.html": Expected(
        writes=("tryit.html",), then=lambda folder: _offers_both_modes(folder / "tryit.html")
    ),
    f"attnviz explain --model minilm {IT_ARG} --layer 6 --head 12": Expected(
        (
            f"Sentence: {IT}  (15 word pieces)",
            MINILM_SIZES,
            MINILM_LAST,
            "Head 12 of 12",
            "animal ██████████▍      0.65   4.06  ██████████████   0.87",
        )
    ),  # fmt: skip
    f"attnviz explain --model minilm {DOG_ARG} --layer 4 --head 2 --hide-special": Expected(
        (
            "Sentence: A dog ate the food because it was hungry  (11 word pieces, 9 shown)",
            "Weights: all-MiniLM-L6-v2 (pretrained), layer 4 of 6",
            "dog    ████████▌        0.53   2.07  ███████████      0.69",
        )
    ),  # fmt: skip
    f"attnviz heatmap --model minilm {IT_ARG} --layer 6 --head 12 -o it_l6h12.png": Expected(
        writes=("it_l6h12.png",)
    ),
    f"attnviz heatmap --model minilm {DOG_ARG} --all-layers -o dog_grid.png": Expected(
        writes=("dog_grid.png",)
    ),
    "attnviz explain --model minilm 'I am good' --head 1 --dtype float64 "
    "--export minilm.npz": Expected(
        ("Sentence: I am good  (5 word pieces)", MINILM_LAST),
        writes=("minilm.npz",),
        then=every_layer_with_its_biases,
    ),
    f"attnviz explain --model tests/model/tiny_gpt2 {IT_ARG} --head 1": Expected(
        (
            f"Sentence: {IT}  (28 word pieces)",
            TINY_GPT2,
            "Note: the weights are random, not learned.",
            "Step 7 · Concatenate the heads and project with W_O",
            "Focus: where does 'it' look?",
        )
    ),  # fmt: skip
    f"attnviz heatmap --model tests/model/tiny_gpt2 {IT_ARG} --all-layers --words "
    "-o gpt2_grid.png": Expected(writes=("gpt2_grid.png",)),
    "attnviz cross 'I am good' 'Je vais bien' --focus vais": Expected(
        (
            CROSS,
            *SOURCE_TARGET,
            "Step 1 · Tokens and embeddings of both sentences",
            "Focus: where does 'vais' look?",
        )
    ),
    "attnviz cross 'I am very good' 'Je vais bien' --head 1 -o cross.png "
    "--export cross.npz": Expected(
        (CROSS, "Source (keys and values): I am very good  (4 tokens)", "Head 1 of 2"),
        writes=("cross.png", "cross.npz"),
    ),
    "attnviz cross 'I am good' 'Je vais bien' --steps 5 --svg cross.svg": Expected(
        (CROSS, *SOURCE_TARGET, "Step 5 · Softmax: attention weights"), writes=("cross.svg",)
    ),
    "attnviz demo": Expected(
        (*DEMO, "'it' gives its largest weight to '[CLS]' in 53", "specificity +0.46")
    ),
    "attnviz demo --step": Expected(DEMO, notes=(NO_PAUSE,)),
    f"attnviz heads --model minilm {IT_ARG} --ablate --top 8": Expected(says=ABLATE),
    f"attnviz heads --model coref {IT_ARG} --ablate": Expected(
        says=(
            "L1 H1   mixed   tired            0.90   0.671    0.009",
            "L2 H1   mixed   animal          1.00*   0.537   0.000*",
            "* built in, not measured (see above).",
            "Built in, not measured: layer 2's head 1 IS coref's answer.",
        )
    ),
    f"attnviz heads --model minilm {IT_ARG}": Expected(
        ("attnviz · where does 'it' look, in every head", "6 layers × 12 heads", *HEADS)
    ),
    f"attnviz heads --model minilm --words {DOG_ARG}": Expected(
        ("6 layers × 12 heads", "dog      L4 H2   0.53  +0.30")
    ),
    f"attnviz heads {IT_ARG} --heads 4 --d-model 16": Expected(
        ("Weights: random (seed 0); 1 layer × 4 heads.", "because  L1 H4  0.76  +0.62")
    ),
    "attnviz generate 'j k l a b c d e a b' --tokens 3": Expected(
        (
            "attnviz generate: induction, 3 new tokens",
            "Token 1: ' c'",
            "c ████████████████████████ 1.000",
            "Token 3: ' e'",
            "j k l a b c d e a b c d e",
        )
    ),
    "attnviz generate -m smollm2 'The capital of France is' --tokens 12": Expected(
        ("Token 1: ' Paris'", "' Paris'   17.371  0.773", "The capital of France is Paris.")
    ),
    "attnviz generate -m smollm2 'The capital of France is' --tokens 8 --temperature 0.8 "
    "--top-k 40 --top-p 0.95 --seed 1": Expected(
        ("Token 1: ' Paris'", "Drawn: u = 0.5118.", "p (T=0.8)")
    ),
    "attnviz generate -m smollm2 'The capital of France is' --tokens 20 --export paris.npz": (
        Expected(
            ("SmolLM2-135M-Instruct (GGUF, 4-bit Q4_1), 20 new tokens",), writes=("paris.npz",)
        )
    ),
    "attnviz generate 'j k l a b c d e a b' --tokens 4 --page writing.html": Expected(
        ("Token 4: ' a'",), writes=("writing.html",), then=_slider_steps("writing.html", 5)
    ),
    "attnviz generate -m smollm2 'The capital of France is' --tokens 5 --page paris.html": (
        Expected(
            ("Token 1: ' Paris'",),
            writes=("paris.html",),
            then=_slider_steps("paris.html", 6, "Step 3 of 6: Token 2: '.'"),
        )
    ),
    f"attnviz generate -m smollm2 {shlex.quote(LIGHTHOUSE)} --tokens 2 --window 32 "
    "--keep-first 1 --sinks": Expected(tuple(HELD)),
    "attnviz lens 'j k l a b c d e a b'": Expected(
        tuple(text_block("docs/lens.md", "# `attnviz lens PROMPT`"))
    ),
    "attnviz lens -m smollm2 'The capital of France is' -o lens.png": Expected(
        ("layer 30: ' Paris' 0.773", "' Paris' is the top reading from layer 30 on"),
        writes=("lens.png",),
    ),
    "attnviz lens -m smollm2 'The capital of France is' --focus capital --top 3": Expected(
        ("the residual stream at ‘capital’",)
    ),
    "attnviz scaling": Expected(("attnviz · why divide by √d_k", *SCALING, *SCALING_GRADIENTS)),
    # docs/exercise.md: not at a terminal, the questions printed
    "attnviz exercise 'The cat sat on the mat' --kind scaled,softmax --count 2 --seed 3": Expected(
        tuple(line for line in EXERCISE if line.startswith(("Question ", "Answer ", "To check")))
    ),
    "attnviz exercise 'The cat sat on the mat' --positions rope --kind rope --count 2": Expected(
        ("Question 2 of 2 (rope)", "Rotary positions: '", "θ = ")
    ),
    "attnviz exercise 'The cat sat on the mat' --kv-heads 1 --kind cache,blockwise --count 2": (
        Expected(("Question 1 of 2 (cache)", "Question 2 of 2 (blockwise)", "Answer exactly."))
    ),
    "attnviz exercise --model coref --kind weight --count 1": Expected(
        ("Question 1 of 1 (weight)", "'animal'? Answer to 3 decimals", "raw scores q·k of 'it'")
    ),
    f"attnviz heatmap --model coref {IT_ARG} --focus it -o coref_tired.png": Expected(
        writes=("coref_tired.png",)
    ),
    f"attnviz heatmap --model coref {WIDE_ARG} --focus it -o coref_wide.png": Expected(
        writes=("coref_wide.png",)
    ),
    f"attnviz heatmap --model coref-word {IT_ARG} --focus it -o coref_word_tired.png": Expected(
        writes=("coref_word_tired.png",)
    ),
    f"attnviz heads --model coref-word {IT_ARG} --focus it": Expected(
        (
            "Weights: coref-word (trained by attnviz); 2 layers × 1 head.",
            "L1 H1  mixed  animal  1.00  0.00    0.00  +1.00",
            "L2 H1  mixed  too     1.00  0.00    0.25  +0.75",
        )
    ),
    f"attnviz compare --model coref {IT_ARG} {WIDE_ARG}": Expected(
        ("Weights: coref (trained by attnviz); 2 layers × 1 head", *COMPARE_COREF)
    ),
    f"attnviz compare --model minilm {IT_ARG} {WIDE_ARG} --top 5": Expected(
        ("Weights: all-MiniLM-L6-v2 (pretrained); 6 layers × 12 heads", *COMPARE_MINILM)
    ),
    f"attnviz compare --model coref {IT_ARG} {WIDE_ARG} -o compare.png": Expected(
        ("'it' moves from 'animal' to 'street' in layer 2, head 1 (TV 1.00)",),
        writes=("compare.png",),
    ),
    f"attnviz compare --model coref {IT_ARG} {WIDE_ARG} -o compare_coref.png": Expected(
        ("'it' moves from 'animal' to 'street' in layer 2, head 1 (TV 1.00)",),
        writes=("compare_coref.png",),
    ),
    f"attnviz compare --model minilm {IT_ARG} {WIDE_ARG} --top 5 -o compare_minilm.png": Expected(
        ("L4 H2   0.43  animal    0.64  [CLS]     0.36    yes",), writes=("compare_minilm.png",)
    ),
    f"attnviz explain --model minilm {IT_ARG} --layer 6 --head 12 --focus it --steps 8": Expected(
        (
            *HONEST_FOCUS,
            *HONEST_WORKED,
            "(The rollout of 'it' through the layers below, Abnar & Zuidema 2020: --full.)",
        )
    ),
    f"attnviz heatmap --model minilm {IT_ARG} --layer 6 --head 12 --measure contribution "
    "-o contribution_it.png": Expected(writes=("contribution_it.png",)),
    f"attnviz heatmap --model minilm {IT_ARG} --measure rollout -o rollout_it.png": Expected(
        writes=("rollout_it.png",)
    ),
    "attnviz explain 'I am good' --positions rope --kv-heads 1": Expected(
        (
            "Step 3 · Rotary positions: q and k of head 1 turned by their position",
            "q_I at 2 · k_good at 5 = 1.22;  at 7 and 10 = 1.22",
            "2·n·G·d_k = 2·3·1·4 = 24",
        )
    ),
    f"attnviz heatmap {IT_ARG} --heads 4 --kv-heads 2 -o gqa.png": Expected(writes=("gqa.png",)),
    f"attnviz explain {IT_ARG} --latent 6 --steps 3": Expected(LATENT_STEP),
    f"attnviz explain {IT_ARG} --latent 6 --positions rope --steps 3": Expected(LATENT_ROPE_STEP),
    "attnviz explain 'I am good' --latent 5 --positions rope": Expected(
        (
            "a cache keeps n·(d_c + d_rope) = 21 numbers",
            "Step 3 · Latent attention: K and V of head 1 made from one shared latent",
            "Step 5 · Scale by √(d_k + d_rope) = √6 = 2.45",
            "Step 8 · Concatenate the heads and project with W_O",
        )
    ),
    "attnviz explain 'I am good' --causal --window 2": Expected(
        (
            "Mask: causal, within a sliding window of W = 2: each token reads itself and at",
            "Step 2 · Sliding window W = 2: each token reads at most 2 keys",
            "  'good' reads: am, good",
            "In head 1, row 'good': the score of I (earlier, but outside the window) becomes",
        )
    ),
    f"attnviz explain {IT_ARG} --causal --window 4 --steps 2": Expected(
        (
            "Step 2 · Sliding window W = 4: each token reads at most 4 keys",
            "  'tired' reads: it, was, too, tired",
        )
    ),
    f"attnviz heatmap {IT_ARG} --causal --window 4 -o window.png": Expected(writes=("window.png",)),
    f"attnviz explain -m smollm2 {IT_ARG} --window 4 --steps 2": Expected(
        ("Step 2 · Sliding window W = 4: each token reads at most 4 keys",),
        notes=(
            "note: --window 4: every layer of SmolLM2-135M-Instruct (GGUF, 4-bit Q4_1) read only "
            "the 4 tokens up to each token (itself included), a window it was not trained with: "
            "an experiment, not what the model computes.",
        ),
    ),
    f"attnviz explain {IT_ARG} --steps blockwise": Expected(
        ("Step 6b · FlashAttention's softmax, a block of keys at a time: 'it' in head 1",)
    ),
    f"attnviz explain --model tests/model/tiny_llama {IT_ARG} --head 3": Expected(
        ("G = 2 key/value heads, each shared by", "Step 3 · Rotary positions")
    ),
    f"attnviz heatmap --model tests/model/tiny_qwen2 {IT_ARG} --all-layers -o qwen2_grid.png": (
        Expected(writes=("qwen2_grid.png",))
    ),
    f"attnviz explain -m smollm2 {IT_ARG}": Expected(
        (
            "Q4_1.gguf stores the model quantized: its attention weights W_Q, W_K",
            "W_O as 4-bit Q4_1, blocks of 32 numbers sharing a scale and a minimum.",
            "gets 0.67 of the weight of 'it' on average across the 9 heads of this layer",
        )
    ),
    f"attnviz explain -m tests/model/tiny_llama.gguf {IT_ARG} --head 1": Expected(
        ("G = 2 key/value heads",)
    ),
    "attnviz train coref": Expected((*TRAIN_START, *TRAINED_SAYS)),
    "attnviz train coref --readout word": Expected(
        (
            'Task coref-word: which noun "it" is, decided by the adjective after it.',
            'Readout: word: an output layer reads X at "it" after the last layer',
            "Right answer, attention elsewhere: an attention weight says where a word read",
        )
    ),
    "attnviz train reverse": Expected(
        (
            "Task reverse: each position gives the digit at the mirrored position (8 digits).",
            "Layer 1, head 1: mirror score",
        )
    ),
    "attnviz train induction --save induction_model": Expected(
        ("Layer 2, head 1: induction score",), writes=("induction_model",)
    ),
    "attnviz train coref --animate train_coref.gif --history history.npz": Expected(
        (*TRAIN_START, *TRAINED_SAYS[-1:]), writes=("history.npz", "train_coref.gif")
    ),
    "attnviz train coref --explain-step": Expected(
        ("attnviz · one training step, every number", *EXPLAIN_STEP)
    ),
    "attnviz scaling --dk 2,8,32,128,512,2048 --keys 32 -o scaling.png": Expected(
        ("each query scores 32", "2048     2060.2"), writes=("scaling.png",)
    ),
    "attnviz explain --embeddings sample_embeddings/toy8d.txt 'I am good'": Expected(
        ("Embeddings: word vectors from sample_embeddings/toy8d.txt",)
    ),
    f"attnviz explain --embeddings {SAMPLES}/toy8d.json {DOG_ARG}": Expected(
        ("Embeddings: word vectors from sample_embeddings/toy8d.json", "(9 tokens)")
    ),
    f"attnviz explain --embeddings {SAMPLES}/toy8d_vocab.npz "
    "'the cat jumped over the lazy dog'": Expected(
        ("Embeddings: word vectors from sample_embeddings/toy8d_vocab.npz", "(7 tokens)")
    ),
    "attnviz explain --embeddings sample_embeddings/i_am_good.npy 'I am good'": Expected(
        ("Embeddings: rows of sample_embeddings/i_am_good.npy",)
    ),
    f"attnviz explain --embeddings {SAMPLES}/toy8d.txt --oov random "
    "'I am tired and hungry'": Expected(
        ("Embeddings: word vectors from sample_embeddings/toy8d.txt",),
        notes=(
            "note: 1 word(s) not in toy8d.txt got seeded random vectors (--oov random, seed 0): "
            "'and'.",
        ),
    ),
    f"attnviz explain --embeddings {SAMPLES}/minilm384d.txt {DOG_ARG} --head 1": Expected(
        (
            "Embeddings: word vectors from sample_embeddings/minilm384d.txt",
            "d_model = 384, h = 2 heads, d_k = d_model / h = 192",
        )
    ),  # fmt: skip
    "attnviz explain 'The cat saw the dog' --positions sinusoidal": Expected(
        (
            "Embeddings: seeded random vectors (seed 0) + sinusoidal positional encoding",
            "PE (positions)  [5 × 8]",
            "X = E + PE  [5 × 8]",
        )
    ),  # fmt: skip
    "attnviz explain 'I am good' --heads 4 --d-model 16 --export four-heads.npz": Expected(
        ("d_model = 16, h = 4 heads",), writes=("four-heads.npz",)
    ),
    "attnviz explain 'I am good' --weights four-heads.npz --export again.npz": Expected(
        ("Weights: loaded from four-heads.npz",),
        writes=("again.npz",),
        then=same_numbers_bit_for_bit,
    ),
    "attnviz explain 'I am good' -m minilm --export m.npz": Expected(
        ("Sentence: I am good  (5 word pieces)", MINILM_LAST), writes=("m.npz",)
    ),
    "attnviz explain 'I am good' --weights m.npz --embeddings m.npz --layer 3": Expected(
        (
            "Weights: loaded from m.npz: all-MiniLM-L6-v2 (pretrained), layer 3 of 6",
            "Embeddings: rows of m.npz, layer 3's input",
        )
    ),  # fmt: skip
    # docs/worksheet.md
    "attnviz worksheet --hand --copies 3 --seed 7 -o sheet.pdf": Expected(
        writes=("sheet.pdf", "sheet-key.pdf"), then=sheets.pdf_sheets("sheet.pdf", 3)
    ),
    "attnviz worksheet --hand --paper letter -o sheet.html": Expected(
        writes=("sheet.html", "sheet-key.html"), then=sheets.letter_html
    ),
    "attnviz worksheet 'The cat sat because it was tired' --kind softmax,z --count 8"
    " -o homework.md": Expected(writes=("homework.md", "homework-key.md"), then=sheets.homework),
    "attnviz worksheet -m coref --kind weight,softmax --count 4 -o coref.pdf": Expected(
        writes=("coref.pdf", "coref-key.pdf"), then=sheets.pdf_sheets("coref.pdf", 1)
    ),
    "attnviz worksheet --hand --count 8 -o quiz.gift": Expected(
        writes=("quiz.gift",), then=sheets.gift_quiz
    ),
    "attnviz worksheet --hand --count 8 -o quiz.xml": Expected(
        writes=("quiz.xml",), then=sheets.xml_quiz
    ),
}

#: Files the pages' examples read, and the example before them that writes each.
WRITTEN_BEFORE = {
    "four-heads.npz": "attnviz explain 'I am good' --heads 4 --d-model 16 --export four-heads.npz",
    "m.npz": "attnviz explain 'I am good' -m minilm --export m.npz",
}
