"""The blockwise step, the softmax a block of keys at a time as FlashAttention computes it: off
unless --steps names it, its numbers the trace's, its worked examples true by hand at the digits
shown, and o/l said equal to the z step's z with both numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz
from attnviz.cli import app
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.lesson.blocks import Heading, Matrix, Pause, Worked
from attnviz.lesson.examples import rounds_to
from attnviz.lesson.options import LessonOptions, parse_steps
from attnviz.lesson.steps import STEPS, in_order, label, numbered, optional_numbers, step_number
from attnviz.selection import ViewOptions, select

from support import CliRunner, examples, needs_model, one_error_line, paper_keys
from support import written_lesson as lesson

IT = "The animal didn't cross the street because it was too tired"
Z, BLOCKWISE = label("z"), label("blockwise")  # e.g. "6" and "6b", as the table labels them
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def step_blocks(shown: attnviz.Explanation, **options: object) -> list[object]:
    """The lesson with --steps blockwise, from its Pause on."""
    chosen = LessonOptions(steps="blockwise", **options)  # type: ignore[arg-type]
    blocks = lesson(shown.trace, shown.selection, chosen)
    start = next(i for i, b in enumerate(blocks) if isinstance(b, Pause))
    return blocks[start:]


def worked_lines(blocks: list[object]) -> list[str]:
    return [block.text for block in blocks if isinstance(block, Worked)]


def holds_by_hand(line: str) -> None:
    """Each piece of arithmetic a worked line writes out gives, from the numbers as printed,
    the result it prints."""
    line = " ".join(line.split())
    factor = re.fullmatch(
        r"m = max\((\S+), (\S+)\) = (\S+); "
        r"exp\(m_old − m_new\) = exp\((\S+) − \(?(\S+?)\)?\) = (\S+)",
        line,
    )
    if factor is not None:
        m_old, block_max, m_new, m_old_again, m_new_again, printed = factor.groups()
        assert float(m_new) == max(float(m_old), float(block_max)), line
        assert (m_old, m_new) == (m_old_again, m_new_again), line
        assert rounds_to(np.exp(float(m_old) - float(m_new)), printed), line
        return
    *_, expression, result = line.split(" = ")
    if "…" in expression:
        return  # an elided sum is not worked by hand
    assert re.fullmatch(r"[-0-9.×/+() ]+", expression), line
    assert rounds_to(eval(expression.replace("×", "*")), result), line  # noqa: S307


def test_the_step_is_off_unless_named() -> None:
    trace = attnviz.explain(IT).trace
    every = lesson(trace, select(trace, ViewOptions(focus="it")))
    assert not [b for b in every if isinstance(b, Pause) and b.key == "blockwise"]
    assert "blockwise" not in [step.key for step in numbered(STEPS).values()]
    labels = [(name, step.key) for _, name, step in in_order(STEPS) if paper_keys([step.key])]
    z = labels.index((Z, "z"))  # labelled after the step before it, Z's
    assert labels[z : z + 3] == [(Z, "z"), (BLOCKWISE, "blockwise"), (str(int(Z) + 1), "output")]
    assert BLOCKWISE == f"{Z}b"
    assert (
        parse_steps("blockwise")
        == parse_steps("BlockWise")
        == {optional_numbers(STEPS)["blockwise"]}
    )
    assert optional_numbers(STEPS)["blockwise"] not in parse_steps(f"1-{step_number('focus')}")


def test_steps_blockwise_shows_the_step_alone_after_the_header() -> None:
    code, stdout, stderr = run("explain", IT, "--steps", f"{Z},blockwise", "--heads", "1")
    assert code == 0, stderr
    headings = [line for line in stdout.splitlines() if line.startswith("Step ")]
    assert headings == [
        f"Step {Z} · Z₁ = weights₁·V₁, the head's output",
        f"Step {BLOCKWISE} · FlashAttention's softmax, a block of keys at a time: 'it' in head 1",
    ]
    assert "One head, a block of keys at a time" in stdout
    said = " ".join(stdout.split())
    assert "the n × n matrix of scores and weights is never stored" in said
    assert "each block of K and V is read from memory once" in said
    assert "The result is exact, not an approximation" in said
    assert "its 11 keys in 4 blocks of 3, the last of 2 (--block 3, the default for 11 keys" in said


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sentence", "options", "decimals"),
    [
        (IT, {}, 2),
        (IT, {"causal": True}, 2),
        (IT, {"pad_to": 16, "seed": 4}, 3),
        ("I am good", {"seed": 7}, 0),
        (IT, {"heads": 4, "d_model": 16, "seed": 2}, 1),
    ],
)
def test_every_number_is_the_traces_and_every_worked_line_holds_by_hand(
    sentence: str, options: dict[str, object], decimals: int
) -> None:
    shown = attnviz.explain(sentence, **options)  # type: ignore[arg-type]
    trace = shown.trace
    query, head = shown.selection.focus.index if shown.selection.focus else 0, 0
    for block in (None, 1, 2, 5):
        blocks = step_blocks(shown, decimals=decimals, block=block)
        lines = worked_lines(blocks)
        assert len(lines) >= 3
        for line in lines:
            holds_by_hand(line)
        tables = [b for b in blocks if isinstance(b, Matrix) and b.title.startswith("Block ")]
        scores = np.concatenate([t.values[:, 0] for t in tables])
        expected = np.where(trace.masked[query], -np.inf, trace.scaled[head, query])
        np.testing.assert_allclose(scores, expected, atol=1e-12)
        final = next(b for b in blocks if isinstance(b, Matrix) and b.title.startswith("m, "))
        np.testing.assert_allclose(
            final.values[-1, 3:] / final.values[-1, 2], trace.Z[head, query], atol=1e-12
        )
        rows = next(b for b in blocks if isinstance(b, Matrix) and b.title.startswith("The row"))
        np.testing.assert_allclose(rows.values, trace.weights[[head, head], query], atol=1e-12)


def test_it_says_o_over_l_is_the_z_step_s_z_with_both_numbers() -> None:
    shown = attnviz.explain(IT)
    trace = shown.trace
    blocks = step_blocks(shown)
    said = " ".join(" ".join(s.text for s in b.spans) for b in blocks if hasattr(b, "spans"))
    z = ", ".join(f"{x:.2f}" for x in trace.Z[0, 7])
    assert f"o/l = [{z}], and step {Z}'s z of 'it', its row of Z₁, is [{z}]: the same" in said
    gap = float(re.search(r"the largest difference (\S+)\.", said).group(1))  # type: ignore[union-attr]
    assert gap < 1e-15


def test_a_causal_row_says_which_block_is_wholly_masked() -> None:
    _, stdout, _ = run("explain", IT, "--steps", "blockwise", "--causal", "--block", "3")
    said = " ".join(stdout.split())
    assert "a block of masked keys only (block 4 here) leaves m, l and o as they were" in said
    assert "Block 4 of 4: keys 10 to 11, m = " in stdout


def test_the_worked_block_is_one_where_the_maximum_grows() -> None:
    lines = worked_lines(step_blocks(attnviz.explain(IT)))
    assert lines[0].startswith("m = max(1.13, 1.59) = 1.59;")
    assert "exp(1.13 − 1.59) = 0.63" in lines[0]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--steps", "blockwise", "--block", "0"], "--block 0: give the number of keys in a block"),
        (["--steps", "blockwise", "--block", "-3"], "--block -3: give the number of keys"),
        (["--steps", "blockwise", "--block", "x"], "'x' is not a valid int"),
        (
            ["--block", "4"],
            "--block 4 is for the blockwise step, shown only when named: add --steps blockwise",
        ),
        (["--steps", "5,blockwse"], "'blockwse' is neither a step number nor a range of them, nor"),
    ],
)
def test_bad_blocks_are_refused_in_one_line(
    args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from attnviz.cli import run as main_entry

    status = main_entry(["explain", IT, *args])
    out, err = capsys.readouterr()
    assert status in (ExitStatus.BAD_INPUT, ExitStatus.USAGE), err
    one_error_line(err, fragment)
    assert out == ""


def test_the_page_takes_block_with_the_blockwise_step_only() -> None:
    code, _, stderr = run("page", IT, "-o", "x.html", "--block", "3")
    assert code == ExitStatus.BAD_INPUT and "--block 3 is for the blockwise step" in stderr


def test_the_python_api_takes_block_and_steps() -> None:
    shown = attnviz.explain(IT)
    text = attnviz.lesson(shown, steps="blockwise", block=2)
    assert (
        f"Step {BLOCKWISE} · " in text
        and "its 11 keys in 6 blocks of 2, the last of 1 (block=2)" in " ".join(text.split())
    )
    with pytest.raises(
        AttnvizError, match=r'^block=2 is for the blockwise step.*steps="blockwise"'
    ):
        attnviz.lesson(shown, block=2)
    for bad in (0, True, 2.5):
        with pytest.raises(AttnvizError, match="give the number of keys in a block"):
            attnviz.lesson(shown, steps="blockwise", block=bad)  # type: ignore[arg-type]


def test_one_block_is_the_plain_softmax() -> None:
    text = attnviz.lesson(attnviz.explain(IT), steps="blockwise", block=50)
    assert "in one block (block=50): the plain softmax; a smaller block shows" in " ".join(
        text.split()
    )


@pytest.mark.slow
@needs_model
@pytest.mark.parametrize("model", ["minilm", "tests/model/tiny_gpt2", "coref"])
def test_models_rows_a_block_at_a_time(model: str) -> None:
    shown = attnviz.explain(IT, model=model)
    trace = shown.trace
    blocks = step_blocks(shown)
    for line in worked_lines(blocks):
        holds_by_hand(line)
    said = " ".join(" ".join(s.text for s in b.spans) for b in blocks if hasattr(b, "spans"))
    gap = float(re.search(r"the largest difference (\S+)\.", said).group(1))  # type: ignore[union-attr]
    assert gap < (1e-12 if trace.Z.dtype == np.float64 else 1e-5)
    headings = [b.text for b in blocks if isinstance(b, Heading) and b.level == "step"]
    assert headings == [
        f"Step {BLOCKWISE} · FlashAttention's softmax, a block of keys at a time: 'it' in head 1"
    ]


@pytest.mark.slow
@settings(deadline=None, max_examples=examples(300))
@given(
    seed=st.integers(0, 2**32),
    decimals=st.integers(0, 5),
    block=st.one_of(st.none(), st.integers(1, 13)),
    causal=st.booleans(),
    focus=st.sampled_from(["animal", "it", "tired", "street"]),
)
def test_worked_lines_hold_by_hand_for_any_seed_block_and_decimals(
    seed: int, decimals: int, block: int | None, causal: bool, focus: str
) -> None:
    shown = attnviz.explain(IT, seed=seed, causal=causal, focus=focus)
    blocks = step_blocks(shown, decimals=decimals, block=block)
    lines = worked_lines(blocks)
    assert len(lines) >= 3
    for line in lines:
        holds_by_hand(line)
