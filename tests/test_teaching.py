"""What the lesson says is true for the numbers it prints: the √d_k argument and its
assumption, the sublayer around attention, shapes as computed, and the concepts a class asks
about, each where it arises."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.trace_files import load_trace

from support import CliRunner, needs_model, step

runner = CliRunner()
IT = "The animal didn't cross the street because it was too tired"
TINY_GPT2 = str(Path(__file__).resolve().parent / "model" / "tiny_gpt2")


@cache  # the same command prints the same lesson: several tests read one
def lesson(*args: str) -> str:
    """All of the text (--full): these tests read every explanation, with every head."""
    result = runner.invoke(app, [*args, "--full"], env={"COLUMNS": "3000"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["explain", IT],
        pytest.param(["explain", IT, "--preset", "paper", "--head", "3"], marks=pytest.mark.slow),
        ["explain", IT, "--causal", "--head", "2"],
        ["cross", "I am good", "Je vais bien"],
    ],
)
def test_the_scaling_step_states_the_assumption_and_prints_this_heads_true_variances(
    args: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.npz"
    out = lesson(*args, "--export", str(path))
    trace = load_trace(path)[0]
    assert "keeps the scores' variance near 1" not in out  # untrue for attnviz's random weights
    assert "the paper's assumption" in out and "variance d_k" in out
    found = re.findall(
        r"Head (\d+) of .*?Here q and k have components of variance ([\d.]+) and ([\d.]+), "
        r"and this head's (\d+) scores(?: \([^)]*\))? have variance ([\d.]+), the scaled "
        r"ones ([\d.]+) \(= [\d.]+ / (\d+);",
        " ".join(out.split()),
    )
    assert found
    allowed = ~trace.masked if trace.mask is not None else np.ones(trace.scores.shape[1:], bool)
    for head, q_variance, k_variance, count, raw, scaled, d_k in found:
        h = int(head) - 1
        scores = trace.scores[h][allowed]
        assert int(count) == scores.size and int(d_k) == trace.d_k
        assert float(q_variance) == pytest.approx(np.var(trace.Q[h]), abs=0.006)
        assert float(k_variance) == pytest.approx(np.var(trace.K[h]), abs=0.006)
        assert float(raw) == pytest.approx(np.var(scores), abs=0.006)
        assert float(scaled) == pytest.approx(np.var(scores / np.sqrt(trace.d_k)), abs=0.006)
    # The random weights break the assumption on purpose, and the lesson says by how much: in
    # expectation, and for this head's own W_Q and W_K, which a sample of embeddings confirms.
    assert "in expectation over its random weights" in out and "variance 2" in out
    own = re.findall(
        r"give q components of variance ([\d.]+), k ([\d.]+) and scaled scores of two words "
        r"([\d.]+)",
        out,
    )
    assert len(own) == len(found)  # one for each head shown
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((2, 20_000, trace.d_model))
    for (head, *_), (q_said, k_said, scaled_said) in zip(found, own, strict=True):
        h = int(head) - 1
        q, k = x @ trace.W_Q[h], y @ trace.W_K[h]
        assert float(q_said) == pytest.approx(q.var(), rel=0.05)
        assert float(k_said) == pytest.approx(k.var(), rel=0.05)
        sampled = ((q * k).sum(axis=1) / np.sqrt(trace.d_k)).var()
        assert float(scaled_said) == pytest.approx(sampled, rel=0.1)


def test_the_random_weights_give_q_and_k_components_of_variance_about_2() -> None:
    """The sentence above is about the weights attnviz draws: check it over many seeds."""
    from attnviz.config import AttentionConfig
    from attnviz.weights import random_weights

    config = AttentionConfig(d_model=64, n_heads=4)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 64))
    weights = random_weights(config, np.random.default_rng(1))
    q = x @ weights.W_Q[0]
    k = x @ weights.W_K[0]
    assert np.var(q) == pytest.approx(2.0, rel=0.25) and np.var(k) == pytest.approx(2.0, rel=0.25)


@pytest.mark.slow
def test_the_output_step_calls_the_output_the_attention_sublayers_and_names_what_follows() -> None:
    for out in (lesson("explain", "I am good"), lesson("cross", "I am good", "Je vais bien")):
        assert "the layer's result" not in out
        assert "the attention sublayer's output" in out
        assert "residual connection" in out and "LayerNorm(X + output)" in out
        assert "feed-forward block" in out
        assert "different representation subspaces" in out  # why several heads, once
        assert out.count("different representation subspaces") == 1


def test_one_head_has_no_why_several_heads() -> None:
    assert "Why several heads" not in lesson("explain", "I am good", "--heads", "1")


def test_d_v_is_named_where_v_has_its_shape() -> None:
    out = lesson("explain", "I am good")
    assert "d_v equals d_k = 4" in out and "Z₁ has shape [n, d_v] = [3, 4]" in out


def test_weights_are_non_negative_and_masked_ones_exactly_zero() -> None:
    assert "positive weights" not in lesson("explain", "I am good")
    assert "non-negative weights" in lesson("explain", "I am good")
    causal = lesson("explain", "I am good", "--causal")
    assert "a masked pair's weight is exactly 0" in causal


def test_the_masks_say_why_they_exist() -> None:
    causal = lesson("explain", "I am good", "--causal")
    assert "predict each next word" in causal and "every position of a sentence at once" in causal
    padded = lesson("explain", "I am good", "--pad-to", "5")
    assert "different lengths are computed together in one batch" in padded


def test_cross_says_its_embeddings_stand_in_for_the_decoder_and_encoder_states() -> None:
    out = lesson("cross", "I am good", "Je vais bien")
    assert "the target's embeddings" in out and "stand in for those two" in out
    assert "encoder's final output" in out and "decoder's previous sublayer" in out


def test_hidden_padding_is_counted_and_shapes_stay_as_computed() -> None:
    out = lesson("explain", "I am good", "--pad-to", "5", "--hide-special")
    assert "(5 tokens, 3 shown)" in out
    assert "X has shape [n, d_model] = [5, 8] (3 rows shown)" in out
    assert "They are masked and get no weight, so the rows still sum to 1." in out


def test_help_says_what_each_command_draws() -> None:
    assert "keys and values from SOURCE" in runner.invoke(app, ["--help"]).stdout
    scaling = runner.invoke(app, ["scaling", "--help"]).stdout
    assert "embeddings" not in scaling and "random q and k" in scaling


@pytest.mark.slow
@needs_model
def test_hide_special_states_the_computed_shape_and_the_rows_shown() -> None:
    out = lesson("explain", "-m", "minilm", IT, "--hide-special", "--head", "1")
    # 13 pieces: [CLS], the, animal, didn, ', t, cross, the, street, …, tired, [SEP]
    assert "(15 word pieces, 13 shown)" in out
    assert "X has shape [n, d_model] = [15, 384] (13 rows shown)" in out
    assert "[13, 384]" not in out
    assert (
        "Q₁ = X·W_Q₁ + b_Q₁, K₁ = X·W_K₁ + b_K₁, V₁ = X·W_V₁ + b_V₁, each [n, d_k] = [15, 32]"
        in out
    )


@pytest.mark.slow
@needs_model
def test_cls_and_sep_are_explained_once_with_this_heads_share() -> None:
    out = lesson("explain", "-m", "minilm", IT, "--head", "1")
    assert out.count("[CLS] and [SEP] are added to every input") == 1
    share = re.search(r"the sentence's words give them ([\d.]+) of their weight", out)
    assert share is not None
    from attnviz.model.run import trace_model

    layer = trace_model(IT, "minilm").trace.layers[-1]
    real = list(range(1, len(layer.tokens) - 1))
    expected = layer.weights[0][np.ix_(real, [0, len(layer.tokens) - 1])].sum(1).mean()
    assert float(share.group(1)) == pytest.approx(expected, abs=0.006)
    gpt2 = lesson("explain", "-m", TINY_GPT2, IT, "--head", "1")
    assert "[CLS] and [SEP] are added" not in gpt2  # GPT-2 adds no special tokens


@pytest.mark.slow
@needs_model
def test_lowercasing_is_said_only_when_it_changes_a_word_shown() -> None:
    # The note is the header's: one head's lesson is enough to read it.
    cafe = lesson("explain", "-m", "minilm", "The Café is good", "--head", "1")
    assert "lowercases the sentence" in cafe and "'The' is 'the' in the tables" in cafe
    assert "lowercases" not in lesson("explain", "-m", "minilm", "the cafe is good", "--head", "1")
    words = lesson("explain", "-m", "minilm", "The Café", "--words", "--head", "1")
    assert "'The' is 'the' in the worked examples" in words  # the tables show words as written


@pytest.mark.slow
@needs_model
def test_the_output_step_in_model_mode_names_the_models_own_sublayer() -> None:
    bert = lesson("explain", "-m", "minilm", "I am good", "--head", "1")
    assert "added back to X and normalised, LayerNorm(X + output)" in bert
    gpt2 = lesson("explain", "-m", TINY_GPT2, "I am good", "--head", "1")
    assert "residual stream, h' = h + output" in gpt2


def test_the_scaling_step_leaves_padding_rows_out_and_says_which_rows_it_measured(
    tmp_path: Path,
) -> None:
    out = " ".join(lesson("explain", "I am good", "--pad-to", "5", "--hide-special").split())
    plain = " ".join(lesson("explain", "I am good").split())
    # The padding rows are filler and the [PAD] keys masked: the 9 scores of the 3 words, as
    # without padding, are what is left of 25.
    found = re.search(
        r"this head's 9 scores \(the \[PAD\] rows and columns left out\) have variance ([\d.]+)",
        out,
    )
    unpadded = re.search(r"this head's 9 scores have variance ([\d.]+)", plain)
    assert found is not None and unpadded is not None
    assert found.group(1) == unpadded.group(1)
    assert "÷N" in out


@pytest.mark.slow
def test_the_scaling_step_says_when_small_embeddings_make_the_rows_flat() -> None:
    sample = Path(__file__).resolve().parent.parent / "sample_embeddings" / "minilm384d.txt"
    out = " ".join(
        lesson("explain", "--embeddings", str(sample), "A dog ate the food", "--head", "1").split()
    )
    assert "embeddings of variance 1 (such as its random ones)" in out
    assert "the softmax rows come out nearly flat" in out
    scaling = out.split(f"Step {step('scaled')} ·")[1].split(f"Step {step('weights')} ·")[0]
    assert "0.00 /" not in scaling.split("For example")[0]
    assert "nearly flat" not in lesson("explain", "A dog ate the food")


def test_the_z_line_claims_no_rounded_vector_and_its_first_number_adds_up() -> None:
    out = lesson("explain", "I am good", "--focus", "I")
    z_lines = [line.strip() for line in out.splitlines() if line.strip().startswith("z_I ")]
    assert z_lines and all("[" not in line for line in z_lines)
    assert sum(line.strip().startswith("z_I[1] = ") for line in out.splitlines()) == 4


def test_hidden_tokens_are_named_for_the_softmax_sums_and_the_sigma_column() -> None:
    out = " ".join(lesson("explain", "I am good", "--pad-to", "5", "--hide-special").split())
    assert "The Σ column adds the unrounded weights" in out
    assert "every sum runs over all keys as computed, [PAD] included" in out
    assert "included)" not in out  # no note inside the formula's parentheses


@pytest.mark.slow
@needs_model
def test_an_untrained_checkpoint_is_called_random_everywhere(tmp_path: Path) -> None:
    out = lesson("explain", "-m", TINY_GPT2, "The animal didn't cross", "--head", "1")
    assert "pretrained" not in out and "trained model's" not in out
    assert "tiny_gpt2 (random, untrained checkpoint)" in out
    assert "the weights are random, not learned" in out
    from attnviz.model.run import trace_model
    from attnviz.render.figures.titles import weights_phrase

    origin = trace_model("The animal", TINY_GPT2).trace.layers[0].provenance.weights
    assert not origin.trained and origin.is_random and not origin.is_drawn
    assert weights_phrase(origin).endswith("not a trained model")
    path = tmp_path / "t.npz"
    lesson("explain", "-m", TINY_GPT2, "The animal", "--export", str(path))
    assert not load_trace(path)[0].provenance.weights.trained  # the export keeps it


@pytest.mark.slow
@needs_model
def test_with_words_the_cls_sep_share_is_over_the_rows_shown() -> None:
    from attnviz.model.run import trace_model
    from attnviz.selection import ViewOptions, select

    sentence = "The zookeeper said it, unbelievably."
    out = " ".join(lesson("explain", "-m", "minilm", sentence, "--words", "--head", "1").split())
    share = re.search(r"the sentence's words give them ([\d.]+) of their weight", out)
    assert share is not None
    layer = trace_model(sentence, "minilm").trace.layers[-1]
    selection = select(layer, ViewOptions(words=True))
    columns = [selection.column_words.index("[CLS]"), selection.column_words.index("[SEP]")]
    rows = [i for i, word in enumerate(selection.row_words) if word not in ("[CLS]", "[SEP]")]
    merged = selection.pairs(layer.weights[0], total=True)
    assert float(share.group(1)) == pytest.approx(
        merged[np.ix_(rows, columns)].sum(1).mean(), abs=0.006
    )
    assert "shown as 5 words, [CLS] and [SEP]" in out  # "it," and "unbelievably." are words


@pytest.mark.slow
@needs_model
def test_merged_tables_say_so_in_their_titles() -> None:
    merged = lesson("explain", "-m", "minilm", "The zookeeper slept.", "--words", "--head", "1")
    assert "weights₁ = softmax(scaled₁), pieces merged into words" in merged
    # Nothing merged (every word one piece): the titles are the formulas alone.
    single = lesson("explain", "-m", "minilm", "The cat slept", "--words", "--hide-special")
    assert "pieces merged into words" not in single
