"""The focus view's new numbers, each recomputed independently from the run's ``--export``:
what each word adds after W_O (‖w·f‖ and its share), the worked contribution, the rows that look
most at their own word, and the rollout through the layers below; and its sentences, read
against those numbers, for random weights, cross-attention, MiniLM, the tiny GPT-2 and coref.

The recomputation uses numpy on the exported arrays only: f_h(x_j) = (x_j·W_V^h + b_V^h)·W_O^h,
from X, W_V, b_V and W_O (not the exported V), the rollout as its formula says.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.labels import occurrence_labels
from attnviz.lesson.steps import step_number

from support import CliRunner, needs_model

runner = CliRunner()
IT = "The animal didn't cross the street because it was too tired"
FOCUS = str(step_number("focus"))  # the focus view, as the table numbers it
TINY_GPT2 = str(Path(__file__).resolve().parent.parent / "model" / "tiny_gpt2")
HEADINGS = ["weight", "‖w·f‖", "share"]
BAR_CHARACTERS = "█▏▎▍▌▋▊▉"
CAVEAT = "A caution: a high weight shows where the vector of 'it'"
MIXTURES = "From layer 2 on, each row's words are the outputs of the layers below"


class Exported(NamedTuple):
    stdout: str
    arrays: dict[str, np.ndarray]


def explained(tmp_path: Path, *arguments: str, width: int = 100) -> Exported:
    """stdout of ``attnviz ARGUMENTS --export`` and the arrays it exported."""
    path = tmp_path / "run.npz"
    result = runner.invoke(
        app, [*arguments, "--export", str(path)], env={"COLUMNS": str(width), "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.stderr
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    return Exported(result.stdout, arrays)


def layer_arrays(arrays: dict[str, np.ndarray], layer: int | None) -> dict[str, np.ndarray]:
    """One layer's arrays (from 1) of a model's export; the arrays themselves for one layer."""
    if layer is None:
        return arrays
    return {k: v[layer - 1] if v.ndim and k not in ("tokens",) else v for k, v in arrays.items()}


def transformed_norms(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """‖f_h(x_j)‖ = ‖(x_j·W_V^h + b_V^h)·W_O^h‖ for every head and key.  -> [h, n_k]"""
    x = arrays.get("X_source", arrays["X"])
    values = np.einsum("jm,hmk->hjk", x, arrays["W_V"])
    if "b_V" in arrays:
        values = values + arrays["b_V"][:, np.newaxis]
    n_heads, d_k = arrays["W_V"].shape[0], arrays["W_V"].shape[-1]
    rows = arrays["W_O"].reshape(n_heads, d_k, -1)
    return np.linalg.norm(np.einsum("hjk,hkd->hjd", values, rows), axis=-1)


def focus_part(stdout: str) -> str:
    return stdout[stdout.index("─ Focus: where does") :]


def bar_numbers(line: str) -> list[float] | None:
    """The numbers of a line of bars (a label, then bars and numbers only), else None."""
    parts = line.split()
    if not parts or line.startswith(" "):
        return None
    numbers = [p for p in parts[1:] if re.fullmatch(r"\d+\.\d+", p)]
    bars = [p for p in parts[1:] if set(p) <= set(BAR_CHARACTERS)]
    if not numbers or len(numbers) + len(bars) != len(parts) - 1:
        return None  # a sentence, not a line of bars
    return [float(number) for number in numbers]


def bars_of(section: str, heading: str) -> dict[str, list[float]]:
    """The numbers on each line of the paired bars under ``heading`` ("Head 2"), after the
    line naming their columns: label -> [first number, …] (the bar characters left out)."""
    start = re.search(rf"\n{re.escape(heading)}( · [^\n]+)?\n", section)  # "Head 1 · mixed"
    assert start is not None, heading
    lines = section[start.start() :].splitlines()[2:]
    top = next(
        i for i in range(len(lines) - 1) if lines[i].startswith(" ") and bar_numbers(lines[i + 1])
    )
    found: dict[str, list[float]] = {}
    for line in lines[top + 1 :]:
        numbers = bar_numbers(line)
        if numbers is None:
            break
        found[line.split()[0]] = numbers
    return found


def close(printed: float, value: float, decimals: int = 2) -> bool:
    """``printed`` is ``value`` rounded to ``decimals`` (ties either way)."""
    return abs(printed - value) <= 0.5 * 10.0**-decimals + 1e-9


def check_contributions(
    section: str, arrays: dict[str, np.ndarray], query: int, heads: list[int]
) -> None:
    """Every head's bars: weight, ‖w·f‖ and share of each word, as recomputed."""
    keys = occurrence_labels([str(t) for t in arrays.get("source_tokens", arrays["tokens"])])
    lengths = transformed_norms(arrays)
    for head in heads:
        weights = arrays["weights"][head, query]
        norms = weights * lengths[head]
        shares = norms / norms.sum()
        bars = bars_of(section, f"Head {head + 1}")
        assert bars, head
        for label, (weight, norm, share) in bars.items():
            j = keys.index(label)
            assert close(weight, weights[j]), (head, label)
            assert close(norm, norms[j]), (head, label, norm, norms[j])
            assert close(share, shares[j]), (head, label, share, shares[j])


def check_worked_contribution(
    section: str, arrays: dict[str, np.ndarray], query: int, heads: list[int]
) -> None:
    """The worked contribution of each head's top word: its terms are the recomputed w and
    ‖f‖, its total the row's, and the arithmetic holds at the digits shown."""
    keys = occurrence_labels([str(t) for t in arrays.get("source_tokens", arrays["tokens"])])
    lengths = transformed_norms(arrays)
    found = re.findall(
        r"\n  ‖w·f\(x_(\S+)\)‖ = (\d+\.\d+)×(\d+\.\d+) = (\d+\.\d+)\n"
        r"  (\d+\.\d+) / (\d+\.\d+) = (\d+\.\d+)\n",
        section,
    )
    assert len(found) == len(heads), found
    for head, (label, w, f, norm, norm_again, total, share) in zip(heads, found, strict=True):
        j = keys.index(label)
        weights = arrays["weights"][head, query]
        assert j == int(np.argmax(weights))  # the head's top word
        assert close(float(w), weights[j], len(w.split(".")[1]))
        assert close(float(f), lengths[head, j], len(f.split(".")[1]))
        assert norm == norm_again
        assert close(float(norm), weights[j] * lengths[head, j], len(norm.split(".")[1]))
        row_total = float(weights @ lengths[head])
        assert close(float(total), row_total, len(total.split(".")[1]))
        assert close(float(share), weights[j] * lengths[head, j] / row_total)
        # By hand, at the digits shown.
        assert close(float(w) * float(f), float(norm), len(norm.split(".")[1]))
        assert close(float(norm) / float(total), float(share))


def own_word_counts(
    arrays: dict[str, np.ndarray], heads: list[int], padding: int = 0
) -> tuple[int, int]:
    """Rows (of ``heads``) whose largest weight is on their own word, and rows counted: those
    with two keys or more to choose from and one largest weight (no tie)."""
    weights = arrays["weights"][heads]
    n = weights.shape[-1] - padding
    rows = [
        (h, i)
        for h in range(len(heads))
        for i in range(n)
        if (weights[h, i, :n] > 0).sum() >= 2 and (weights[h, i] == weights[h, i].max()).sum() == 1
    ]
    count = sum(int(weights[h, i, i] >= weights[h, i].max()) for h, i in rows)
    return count, len(rows)


def rollout_row(arrays: dict[str, np.ndarray], layer: int, query: int) -> np.ndarray:
    """Row ``query`` of R_layer: Â_l = ½·mean_h A_l + ½·I renormalised, R_l = Â_l·R_(l−1)."""
    result = None
    for weights in arrays["weights"][:layer]:
        mixed = 0.5 * weights.mean(axis=0) + 0.5 * np.eye(weights.shape[-1])
        mixed /= mixed.sum(axis=1, keepdims=True)
        result = mixed if result is None else mixed @ result
    assert result is not None
    return result[query]


def test_random_weights_contributions_worked_example_and_own_word_rows(tmp_path: Path) -> None:
    run = explained(tmp_path, "explain", IT, "--focus", "it", "--steps", FOCUS, "--full")
    section = focus_part(run.stdout)
    it = list(run.arrays["tokens"]).index("it")
    check_contributions(section, run.arrays, it, [0, 1])
    check_worked_contribution(section, run.arrays, it, [0, 1])
    count, total = own_word_counts(run.arrays, [0, 1])
    focus_count = sum(int(np.argmax(run.arrays["weights"][h, it]) == it) for h in range(2))
    # 3 of the 22 rows tie at their top ("The" and "the" share one key) and do not count.
    assert (count, total, focus_count) == (0, 19, 0)
    said = " ".join(section.split())
    assert (
        f"Counted here: {count} of {total} rows (2 heads shown × 11 tokens; rows with one key to "
        "choose or a tie for the largest weight left out; 0%) put their largest weight on their "
        f"own word, and 'it' does in {focus_count} of 2 heads; with random weights that says "
        "nothing about what trained attention does." in said
    )
    assert "not a rule" not in said  # random weights: nothing concluded
    brief = focus_part(explained(tmp_path, "explain", IT, "--focus", "it", "--steps", FOCUS).stdout)
    assert "Counted here" not in brief  # by default the random count is left out
    assert "share of each word's value vector" not in run.stdout
    assert "A weight w_ij only mixes" in said
    # Random weights: no model, no layers below, no caution about a trained model's rows.
    assert "Rollout" not in section and CAVEAT not in said and MIXTURES not in said


def test_cross_attention_contributions_come_from_the_source_words(tmp_path: Path) -> None:
    run = explained(
        tmp_path, "cross", "I am good", "je suis bon", "--focus", "suis", "--steps", FOCUS, "--full"
    )
    section = focus_part(run.stdout)
    check_contributions(section, run.arrays, 1, [0, 1])
    check_worked_contribution(section, run.arrays, 1, [0, 1])
    said = " ".join(section.split())
    # Head 2 weighs 'good' most, but 'I' adds most: the sentence says so with the numbers.
    lengths = transformed_norms(run.arrays)[1]
    assert (
        "The largest weight, 0.57 on 'good', is not the largest contribution: 'I' adds more "
        f"(share 0.63 against 0.14) because f(x_I) is longer: ‖f(x_I)‖ = {lengths[0]:.2f} "
        f"against ‖f(x_good)‖ = {lengths[2]:.2f}" in said
    )
    assert "Counted here" not in said and "Rollout" not in said  # self-attention only


def test_the_columns_fit_80_and_100_columns_plain() -> None:
    for width in (80, 100):
        result = runner.invoke(
            app,
            ["explain", IT, "--focus", "it", "--steps", FOCUS],
            env={"COLUMNS": str(width), "NO_COLOR": "1"},
        )
        assert result.exit_code == 0
        assert "\x1b" not in result.stdout
        lines = result.stdout.splitlines()
        assert max(len(line) for line in lines) <= width
        assert all(line == line.rstrip() for line in lines)
        header = next(line for line in lines if line.split() == HEADINGS)
        row = lines[lines.index(header) + 1]
        # The names stand over their columns: the weight over its bar, ‖w·f‖ over its number.
        assert header.index("weight") == row.index("█")
        norm_end = header.index("‖w·f‖") + len("‖w·f‖")
        assert re.fullmatch(r"\d+\.\d\d", row[norm_end - 4 : norm_end])


@needs_model
@pytest.mark.slow
def test_minilm_layer_6_head_12_cls_is_a_no_op_and_the_rollout_follows_the_layers(
    tmp_path: Path,
) -> None:
    run = explained(
        tmp_path, "explain", IT, "-m", "minilm", "--head", "12", "--focus", "it", "--full"
    )
    arrays = layer_arrays(run.arrays, 6)
    section = focus_part(run.stdout)
    it = list(run.arrays["tokens"]).index("it")
    check_contributions(section, arrays, it, [11])
    check_worked_contribution(section, arrays, it, [11])
    said = " ".join(section.split())
    lengths = transformed_norms(arrays)[11]
    weights = arrays["weights"][11, it]
    total = float(weights @ lengths)
    share = weights[0] * lengths[0] / total
    assert (f"{weights[0]:.2f}", f"{share:.2f}") == ("0.15", "0.01")  # as the issue says
    assert (
        f"'[CLS]' has weight 0.15 but a share of 0.01 because f(x_[CLS]) is short: "
        f"‖f(x_[CLS])‖ = {lengths[0]:.2f} against {total:.2f}, the row's mean ‖f‖ weighted by "
        "w (its total), so the weight parked on '[CLS]' is close to a no-op" in said
    )
    # Own-word rows of the one head shown, and of "it".
    count, rows = own_word_counts(arrays, [11])
    focus_count = int(np.argmax(weights) == it)
    assert (
        f"Counted here: {count} of {rows} rows (1 head shown × 15 word pieces; "
        f"{100 * count / rows:.0f}%) put their largest weight on their own word, and 'it' does "
        f"in {focus_count} of 1 head: in this head it is not a rule." in said
    )
    # The rollout to layer 6 beside layer 6's mean weights.
    rolled = rollout_row(run.arrays, 6, it)
    mean = arrays["weights"][:, it].mean(axis=0)
    keys = occurrence_labels([str(t) for t in run.arrays["tokens"]])
    bars = bars_of(section, "Rollout to layer 6")
    assert len(bars) == 12 and list(bars)[0] == "[CLS]"
    for label, (layer_weight, rollout) in bars.items():
        j = keys.index(label)
        assert close(layer_weight, mean[j]) and close(rollout, rolled[j]), label
    assert "It follows the weights only and ignores the value vectors, W_O" in said
    assert "nothing below" not in said
    # Said once each: the rows are mixtures (before any row), the caution (in the focus view).
    assert run.stdout.count(MIXTURES) == 1
    assert run.stdout.index(MIXTURES) < run.stdout.index(f"Step {step_number('tokens')} ·")
    assert said.count(CAVEAT) == 1


@needs_model
@pytest.mark.slow
def test_minilm_layer_1_rollout_is_its_own_mean_halved_plus_half_on_itself(
    tmp_path: Path,
) -> None:
    run = explained(
        tmp_path, "explain", "I am good", "-m", "minilm", "--layer", "1", "--focus", "am", "--full"
    )
    section = focus_part(run.stdout)
    am = list(run.arrays["tokens"]).index("am")
    assert "At layer 1 there is nothing below to follow: R_1 is Â_1" in " ".join(section.split())
    expected = 0.5 * run.arrays["weights"][0][:, am].mean(axis=0) + 0.5 * np.eye(5)[am]
    keys = occurrence_labels([str(t) for t in run.arrays["tokens"]])
    for label, (_, rollout) in bars_of(section, "Rollout to layer 1").items():
        assert close(rollout, expected[keys.index(label)]), label
    assert MIXTURES not in run.stdout  # layer 1 reads the embeddings themselves


@needs_model
@pytest.mark.slow
def test_gpt2_untrained_gets_the_numbers_but_not_the_caution(tmp_path: Path) -> None:
    run = explained(tmp_path, "explain", IT, "-m", TINY_GPT2, "--focus", "it", "--full")
    arrays = layer_arrays(run.arrays, 2)
    section = focus_part(run.stdout)
    it = [str(t).strip() for t in run.arrays["tokens"]].index("it")
    check_worked_contribution(section, arrays, it, [0, 1, 2, 3])
    count, rows = own_word_counts(arrays, [0, 1, 2, 3])  # causal: the first row counts
    said = " ".join(section.split())
    assert f"Counted here: {count} of {rows} rows (4 heads shown ×" in said
    assert "with random weights that says nothing" in said  # an untrained checkpoint
    rolled = rollout_row(run.arrays, 2, it)
    assert rolled[it + 1 :].max() == 0  # causal: nothing from later words
    assert "Rollout to layer 2" in section
    assert CAVEAT not in " ".join(section.split())  # an untrained checkpoint


@pytest.mark.slow
def test_coref_a_trained_toy_gets_the_caution_once_and_the_rollout(tmp_path: Path) -> None:
    run = explained(tmp_path, "explain", IT, "-m", "coref", "--focus", "it", "--full")
    section = focus_part(run.stdout)
    said = " ".join(section.split())
    assert said.count(CAVEAT) == 1
    it = list(run.arrays["tokens"]).index("it")
    rolled = rollout_row(run.arrays, 2, it)
    keys = occurrence_labels([str(t) for t in run.arrays["tokens"]])
    for label, (_, rollout) in bars_of(section, "Rollout to layer 2").items():
        assert close(rollout, rolled[keys.index(label)]), label
    assert "beside layer 2's row (its only head)" in said
    assert run.stdout.count(MIXTURES) == 1


def test_when_every_row_looks_most_at_itself_the_note_says_so_and_no_more() -> None:
    import dataclasses

    import attnviz
    from attnviz.lesson.blocks import Paragraph
    from attnviz.lesson.options import LessonOptions

    from support import written_lesson as lesson

    shown = attnviz.explain("I am good", focus="I")
    own = np.full((2, 3, 3), 0.1) + 0.7 * np.eye(3)  # every row's largest weight on itself
    # As if trained: with random weights the count concludes nothing.
    weights_origin = shown.trace.provenance.weights._replace(seed=None, model="a model")
    provenance = shown.trace.provenance._replace(weights=weights_origin)
    trace = dataclasses.replace(shown.trace, weights=own, provenance=provenance)
    blocks = lesson(trace, shown.selection, LessonOptions(steps=FOCUS))
    said = " ".join(
        "".join(span.text for span in block.spans)
        for block in blocks
        if isinstance(block, Paragraph)
    )
    assert (
        "Here all 6 rows counted (2 heads shown × 3 tokens) do, 'I' in every head that counts: "
        "true of these heads, not a rule of attention." in said
    )
    assert "Counted here" not in said and "so it is not a rule" not in said


def test_the_api_lesson_and_the_command_show_the_same_rollout() -> None:
    import attnviz

    shown = attnviz.explain(IT, model="coref", focus="it")
    text = attnviz.lesson(shown, steps=FOCUS, width=100, full=True)
    result = runner.invoke(
        app,
        ["explain", IT, "-m", "coref", "--focus", "it", "--steps", FOCUS, "--full"],
        env={"COLUMNS": "100", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0
    rollout = text[text.index("Rollout to layer 2") :]
    assert rollout in result.stdout
    # Without the run's layers (a caller that gives only the trace) there is no rollout.
    from attnviz.lesson.blocks import Heading
    from attnviz.lesson.options import LessonOptions

    from support import written_lesson as lesson

    alone = lesson(shown.trace, shown.selection, LessonOptions(steps=FOCUS))
    assert not any(isinstance(b, Heading) and b.text.startswith("Rollout") for b in alone)


@needs_model
@pytest.mark.slow
def test_words_of_several_pieces_sum_their_pieces_and_the_focus_averages_its_rows(
    tmp_path: Path,
) -> None:
    sentence = "The zookeeper said it, unbelievably."
    run = explained(
        tmp_path, "explain", "-m", "minilm", sentence, "--words", "--focus", "zookeeper",
        "--head", "3", "--steps", FOCUS, "--full",
    )  # fmt: skip
    arrays = layer_arrays(run.arrays, 6)
    tokens = [str(t) for t in run.arrays["tokens"]]
    # A piece continues the word before it when nothing separates them in the sentence
    # ("##" pieces, and "it" + "," as written): the sentence's words, as a reader counts them.
    groups: list[list[int]] = []
    written, cursor = sentence.lower(), 0
    for position, token in enumerate(tokens):
        piece = token.removeprefix("##")
        start = -1 if token in ("[CLS]", "[SEP]") else written.find(piece, cursor)
        if start >= 0 and start == cursor and cursor > 0 and groups:
            groups[-1].append(position)
        else:
            groups.append([position])
        if start >= 0:
            cursor = start + len(piece)
    words = ["".join(tokens[p].removeprefix("##") for p in group) for group in groups]
    focus = groups[words.index("zookeeper")]
    weights = arrays["weights"][2][focus]  # [pieces of the focus word, keys]
    norms = weights * transformed_norms(arrays)[2]
    total = norms.sum(axis=1).mean()
    section = focus_part(run.stdout)
    # The labels are the sentence's words ("The"); the tokenizer lowercased the pieces.
    bars = {label.casefold(): numbers for label, numbers in bars_of(section, "Head 3").items()}
    assert len(bars) == len(words)
    for word, group in zip(words, groups, strict=True):
        label = word if len(word) <= 10 else word[:9] + "…"
        weight, norm, share = bars[label.casefold()]
        assert close(weight, weights[:, group].sum(axis=1).mean()), word
        assert close(norm, norms[:, group].sum(axis=1).mean()), word
        assert close(share, norms[:, group].sum(axis=1).mean() / total), word
    said = " ".join(section.split())
    assert "(its pieces', averaged by weight)" in said
    assert "'zoo' (the first piece of 'zookeeper') does in" in said
    assert "Row 'zookeeper' of R_6 (the mean of its pieces' rows)" in said


def test_the_length_of_f_is_worked_out_from_v_and_w_o(tmp_path: Path) -> None:
    """‖f(x_j)‖ = √(f₁² + … + f_d²) with f = v_j·W_O^(h): the printed sum of squares, its root
    and the printed length agree, and the length is that of the export's v_j·W_O^(h)."""
    run = explained(tmp_path, "explain", IT, "--focus", "it", "--steps", FOCUS, "--head", "all")
    said = re.findall(
        r"‖f\(x_(\S+)\)‖ = √\(f₁² \+ … \+ f_(\d+)²\) = √([\d.]+) = ([\d.]+), "
        r"f\(x_\S+\) = v_\S+·W_O\^\((\d+)\)",
        run.stdout,
    )
    assert len(said) == 2  # one per head
    tokens = [str(t) for t in run.arrays["tokens"]]
    d_k = run.arrays["W_Q"].shape[-1]
    for word, d_model, squares, length, head in said:
        h, j = int(head) - 1, tokens.index(word)
        f = run.arrays["V"][h, j] @ run.arrays["W_O"][h * d_k : (h + 1) * d_k]
        assert int(d_model) == f.size
        assert f"{float(squares) ** 0.5:.{len(length.split('.')[1])}f}" == length
        assert abs(float(length) - np.linalg.norm(f)) <= 0.5 * 10 ** -len(length.split(".")[1])


def test_a_very_long_word_is_named_cut_in_the_worked_examples() -> None:
    """q_…, k_… and z_… name a word by at most 40 cells: a tokenizer's special token of
    millions of characters printed whole in every line flooded the terminal."""
    import attnviz

    word = "x" * 500
    text = attnviz.lesson(attnviz.explain(f"I am {word}", focus=word), width=100)
    assert "q_" + "x" * 39 + "…" in text
    assert not any(name + "x" * 41 in text for name in ("q_", "k_", "z_"))


@pytest.mark.parametrize("command", ["explain", "heads"])
def test_a_focus_row_with_no_choice_is_not_counted_as_looking_at_itself(command: str) -> None:
    """Under the causal mask the first word's row has one key: its weight 1 on itself is no
    choice, and neither the lesson nor heads counts it as "looks most at its own word"."""
    args = [command, "it was here", "--causal", "--positions", "sinusoidal", "--focus", "it"]
    result = runner.invoke(
        app, [*args, *(["--full"] if command == "explain" else [])], env={"COLUMNS": "3000"}
    )
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "'it' counts in no head" in said or "The row of 'it' counts in none of the heads" in said
    assert "'it' does in" not in said and "The row of 'it' does so in" not in said
    assert "with random weights that says nothing" in said and "not a rule" not in said


@pytest.mark.parametrize("causal", [True, False])
def test_z_says_a_masked_value_vector_adds_nothing_only_under_a_mask(causal: bool) -> None:
    args = ["explain", "I am good", *(["--causal"] if causal else [])]
    result = runner.invoke(app, args, env={"COLUMNS": "3000"})
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert ("(a masked one, with weight 0, adds nothing)" in said) is causal
    assert "Each word's output is the weighted sum of all value vectors" in said
