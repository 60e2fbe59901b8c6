"""``attnviz heads``: every number it prints recomputed by hand, in numpy, from ``--export``
of the same run (random weights, MiniLM, the tiny GPT-2, the trained toy coref), and the
options and sentences around them."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.labels import fit_label, occurrence_labels
from attnviz.tokens import printable

from support import CliRunner, needs_model

IT = "The animal didn't cross the street because it was too tired"
TINY_GPT2 = str(Path(__file__).resolve().parents[1] / "model" / "tiny_gpt2")
runner = CliRunner()
ENV = {"COLUMNS": "80", "NO_COLOR": "1"}


class Export:
    """A run's weights [L, h, n, n], mask, tokens, special positions and padding, as read from
    its --export file with numpy alone."""

    def __init__(self, path: Path) -> None:
        with np.load(path) as saved:
            weights = saved["weights"].astype(np.float64)
            self.weights = weights if weights.ndim == 4 else weights[None]
            n = self.weights.shape[-1]
            self.allowed = saved["mask"].astype(bool) if "mask" in saved else np.ones((n, n), bool)
            self.tokens = [str(token) for token in saved["tokens"]]
            config = json.loads(str(saved["config"]))
        provenance = config["layers"][0] if "layers" in config else config["provenance"]
        self.special = tuple(provenance["special"])
        self.padding = int(provenance["masking"]["padding"])

    @property
    def n(self) -> int:
        return self.weights.shape[-1]

    def rows(self, leave_out: int | None = None) -> list[int]:
        """The rows with a choice (two keys or more), [PAD] rows and ``leave_out`` not."""
        return [
            r for r in range(self.n - self.padding) if self.allowed[r].sum() >= 2 and r != leave_out
        ]

    def baselines(self, layer: int, head: int, focus: int, j: int) -> tuple[float, float]:
        """(key, offset) for the focus row and key j, by the formulas of ``heads --help``."""
        a = self.weights[layer, head]
        if not self.allowed[focus, j]:
            return math.nan, math.nan
        others = self.rows(leave_out=focus)
        keys = [a[r, j] for r in others if self.allowed[r, j]]
        d = j - focus
        far = [a[r, r + d] for r in others if 0 <= r + d < self.n and self.allowed[r, r + d]]
        return (
            float(np.mean(keys)) if keys else math.nan,
            float(np.mean(far)) if far else math.nan,
        )

    def spec(self, layer: int, head: int, focus: int, j: int) -> float:
        key, offset = self.baselines(layer, head, focus, j)
        return float(self.weights[layer, head, focus, j] - np.fmax(key, offset))

    def head_type(self, layer: int, head: int) -> str:
        a, allowed, n = self.weights[layer, head], self.allowed, self.n
        rows = self.rows()

        def mean(pairs: list[tuple[int, int]]) -> float:
            values = [a[i, j] for i, j in pairs if 0 <= j < n and allowed[i, j]]
            return float(np.mean(values)) if values else math.nan

        real = n - self.padding
        closing = [p for p in self.special if 0 < p < real]
        last = max(closing) if closing else real - 1
        scores = {
            "previous-token": mean([(i, i - 1) for i in rows]),
            "next-token": mean([(i, i + 1) for i in rows]),
            "self": mean([(i, i) for i in rows]),
            "[CLS] sink" if 0 in self.special else "first-token sink": mean(
                [(i, 0) for i in rows if i != 0]
            ),
            "[SEP] sink" if closing else "last-token sink": mean(
                [(i, last) for i in rows if i != last]
            ),
        }
        typed = {kind: v for kind, v in scores.items() if v >= 0.5}
        if typed:
            return max(typed, key=lambda kind: typed[kind])
        entropies = []
        for i in rows:
            w = a[i][allowed[i]]
            w = w[w > 0]
            entropies.append(-(w * np.log(w)).sum() / np.log(allowed[i].sum()))
        return "broad" if np.mean(entropies) >= 0.9 else "mixed"

    def counts(self, a: np.ndarray, i: int) -> bool:
        """Whether row i can say where it looks most: two keys or more to choose from, and one
        key with the largest weight (no tie)."""
        allowed = a[i][self.allowed[i]]
        return len(allowed) >= 2 and int((allowed == allowed.max()).sum()) == 1

    def own_word_rows(self) -> tuple[int, int]:
        """(rows that look most at their own word, rows that count), padding left out."""
        own = counted = 0
        for layer in self.weights:
            for a in layer:
                for i in range(self.n - self.padding):
                    if self.counts(a, i):
                        counted += 1
                        own += int(a[i, i] >= a[i][self.allowed[i]].max())
        return own, counted

    def own_word_heads(self, row: int) -> int:
        """In how many heads row ``row`` gives its largest weight to itself (and counts)."""
        return sum(
            int(self.counts(a, row) and a[row, row] >= a[row][self.allowed[row]].max())
            for layer in self.weights
            for a in layer
        )


def signed(value: float) -> str:
    if math.isnan(value):
        return "—"
    text = f"{value:.2f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return text.replace("-", "−") if text.startswith("-") else "+" + text


def plain(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}"


PER_HEAD = re.compile(r"^(L\d+ H\d+)\s{2,}(\S.*?)\s{2,}(\S+)\s+(\d\.\d\d)\s+(\S+)\s+(\S+)\s+(\S+)$")


def check_every_number(args: list[str], tmp_path: Path) -> str:
    """Run heads (every head listed) and explain --export on ``args``; recompute each number of
    both tables, each head's type and the own-word count from the export. -> the report."""
    path = tmp_path / "run.npz"
    made = runner.invoke(app, ["explain", *args, "--export", str(path)], env=ENV)
    assert made.exit_code == 0, made.stderr
    result = runner.invoke(app, ["heads", *args, "--top", "500"], env=ENV)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    run = Export(path)
    focus = run.tokens.index("it")
    labels = [fit_label(label) for label in occurrence_labels([printable(t) for t in run.tokens])]
    n_layers, n_heads = run.weights.shape[:2]
    # Each head's most specific word, most specific first, with its type and baselines.
    per_head = [m.groups() for line in out.splitlines() if (m := PER_HEAD.match(line))]
    assert len(per_head) == n_layers * n_heads
    specs = []
    for head, kind, word, w, key, offset, spec in per_head:
        layer, h = (int(part[1:]) - 1 for part in head.split())
        row = [run.spec(layer, h, focus, j) for j in range(run.n)]
        # [CLS], [SEP] and other special tokens are markers, never a head's target.
        targets = [j for j in range(run.n) if j not in run.special] or list(range(run.n))
        best = max(targets, key=lambda j: -np.inf if math.isnan(row[j]) else row[j])
        assert word == labels[best], head
        expected_key, expected_offset = run.baselines(layer, h, focus, best)
        assert w == f"{run.weights[layer, h, focus, best]:.2f}", head
        assert (key, offset) == (plain(expected_key), plain(expected_offset)), head
        assert spec == signed(row[best]), head
        assert kind == run.head_type(layer, h), head
        specs.append(row[best])
    assert specs == sorted(specs, reverse=True)
    # For each word, its three most specific heads.
    words = 0
    for line in out.splitlines():
        cells = line.split()
        if len(cells) < 5 or not re.fullmatch(r"L\d+", cells[1]) or cells[0] not in labels:
            continue
        j = labels.index(cells[0])
        words += 1
        column = sorted(
            (
                (run.spec(layer, h, focus, j), layer, h)
                for layer in range(n_layers)
                for h in range(n_heads)
            ),
            key=lambda item: -np.inf if math.isnan(item[0]) else -item[0],
        )
        printed = [cells[k : k + 4] for k in range(1, len(cells), 4)]
        for (spec, layer, h), (lay, hd, w, shown_spec) in zip(column, printed, strict=False):
            assert f"{lay} {hd}" == f"L{layer + 1} H{h + 1}", line
            assert w == f"{run.weights[layer, h, focus, j]:.2f}", line
            assert shown_spec == signed(spec), line
    marked = [j for j in range(run.n) if j in run.special]
    assert words == (run.n - len(marked) if len(marked) < run.n else run.n)  # every word's row
    text = " ".join(out.split())
    own, rows = run.own_word_rows()
    assert f"Rows that look most at their own word: {own:,} of the {rows:,} rows" in text
    heads = run.own_word_heads(focus)
    counted = sum(int(run.counts(a, focus)) for layer in run.weights for a in layer)
    every = n_layers * n_heads
    of = f"the {counted:,} heads" + ("" if counted == every else " in which it counts")
    if counted:
        assert f"The row of '{labels[focus]}' does so in {heads} of {of}." in text
    else:
        assert f"The row of '{labels[focus]}' counts in none of the heads" in text
    return text


@pytest.mark.slow
def test_every_number_of_the_random_run_is_recomputed(tmp_path: Path) -> None:
    text = check_every_number([IT, "--heads", "4", "--d-model", "16"], tmp_path)
    assert "4 mixed" in text


@pytest.mark.slow
@needs_model
def test_every_number_of_the_tiny_gpt2_is_recomputed(tmp_path: Path) -> None:
    text = check_every_number([IT, "--model", TINY_GPT2], tmp_path)
    assert "the first row, which may look only at itself, has no choice" in text


@pytest.mark.slow
def test_every_number_of_coref_is_recomputed_and_it_points_at_animal(tmp_path: Path) -> None:
    """The trained toy model: in layer 1 the row of "it" is most specific to the adjective,
    "tired"; in its last layer, the answer, it puts its weight on "animal"."""
    text = check_every_number([IT, "--model", "coref"], tmp_path)
    result = runner.invoke(app, ["heads", IT, "--model", "coref"], env=ENV)
    lines = result.stdout.splitlines()
    animal = next(line for line in lines if line.startswith("animal "))
    assert animal.split()[1:4] == ["L2", "H1", "1.00"]
    tired = next(line for line in lines if line.startswith("tired "))
    assert tired.split()[1:3] == ["L1", "H1"]
    per_head = {m.group(1): m.group(3) for line in lines if (m := PER_HEAD.match(line))}
    assert per_head == {"L1 H1": "tired", "L2 H1": "animal"}
    assert "Weights: coref (trained by attnviz); 2 layers × 1 head." in text


@pytest.mark.slow
@needs_model
def test_every_number_of_minilm_is_recomputed(tmp_path: Path) -> None:
    """And layer 1, head 3, which puts 1.00 on the previous word in every row, is named a
    previous-token head, ranked by what it does for every row, not first."""
    text = check_every_number([IT, "--model", "minilm"], tmp_path)
    assert "1 previous-token (L1 H3)" in text
    assert (
        "For example, L1 H3 is a previous-token head: 'it' gives 'because' 1.00 there, and the "
        "head's other rows give the word before them 1.00 on average, so spec is only +0.00"
    ) in text
    result = runner.invoke(app, ["heads", IT, "--model", "minilm"], env=ENV)
    lines = result.stdout.splitlines()
    first = next(m.groups() for line in lines if (m := PER_HEAD.match(line)))
    assert first[0] != "L1 H3"
    because = next(line for line in lines if line.startswith("because "))
    assert "L1 H3" not in because


@pytest.mark.slow
def test_rank_by_takes_its_three_choices_and_refuses_others() -> None:
    args = ["heads", IT, "--heads", "4", "--d-model", "16"]
    for choice in ("specificity", "selectivity", "weight"):
        result = runner.invoke(app, [*args, "--rank-by", choice], env=ENV)
        assert result.exit_code == 0, result.stderr
    result = runner.invoke(app, [*args, "--rank-by", "loudness"])
    assert result.exit_code == 2 and "loudness" in result.stderr


def test_the_report_fits_80_columns_with_fewer_heads_than_ranks() -> None:
    result = runner.invoke(app, ["heads", "I am it"], env=ENV)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert all(line == line.rstrip() for line in lines)  # no empty 3rd rank for 2 heads
    header = next(line for line in lines if line.startswith("word"))
    assert "2nd" in header and "3rd" not in header


def test_heads_needs_a_focus_word() -> None:
    result = runner.invoke(app, ["heads", "I am good"])
    assert result.exit_code == 3
    assert "--focus WORD" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_help_states_the_formulas_within_80_columns() -> None:
    result = runner.invoke(app, ["heads", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    text = " ".join(result.stdout.split())
    for formula in (
        "key = mean_r A[r, j]",
        "offset = mean_r A[r, r + (j − i)]",
        "spec = w − max(key, offset)",
        "sel = w − key",
        "previous = mean_i A[i, i−1]",
        "entropy = mean_i H(A[i]) / log(keys row i may attend to)",
        "broad if the entropy is 0.9 or more; else mixed",
    ):
        assert formula in text, formula


@pytest.mark.slow
@needs_model
def test_words_sum_each_words_pieces_recomputed_from_the_export(tmp_path: Path) -> None:
    """--words: "tokenization" is two pieces; its w, key and offset are the sums of theirs."""
    path = tmp_path / "run.npz"
    args = ["Tokenization is hard because it is new", "--model", "minilm"]
    made = runner.invoke(app, ["explain", *args, "--export", str(path)], env=ENV)
    assert made.exit_code == 0, made.stderr
    result = runner.invoke(app, ["heads", *args, "--words", "--top", "500"], env=ENV)
    assert result.exit_code == 0, result.stderr
    run = Export(path)
    with np.load(path) as saved:
        config = json.loads(str(saved["config"]))["layers"][0]
    groups = [tuple(group) for group in config["word_groups"]]
    assert (1, 2) in groups  # token ##ization
    words = fit_labels(config["words"])
    focus = run.tokens.index("it")

    def numbers(layer: int, h: int, group: tuple[int, ...]) -> tuple[float, float, float]:
        pieces = [run.baselines(layer, h, focus, j) for j in group]
        return (
            sum(run.weights[layer, h, focus, j] for j in group),
            sum(piece[0] for piece in pieces),
            sum(piece[1] for piece in pieces),
        )

    rows = [m.groups() for line in result.stdout.splitlines() if (m := PER_HEAD.match(line))]
    assert len(rows) == 72
    for head, _, word, w, key, offset, spec in rows:
        layer, h = (int(part[1:]) - 1 for part in head.split())
        expected_w, expected_key, expected_offset = numbers(layer, h, groups[words.index(word)])
        assert w == f"{expected_w:.2f}", head
        assert (key, offset) == (plain(expected_key), plain(expected_offset)), head
        assert spec == signed(expected_w - max(expected_key, expected_offset)), head
    line = next(line for line in result.stdout.splitlines() if line.startswith("Tokeniz"))
    cells = line.split()
    for k in range(1, len(cells), 4):
        layer, h = int(cells[k][1:]) - 1, int(cells[k + 1][1:]) - 1
        expected_w, expected_key, expected_offset = numbers(layer, h, (1, 2))
        assert cells[k + 2] == f"{expected_w:.2f}"
        assert cells[k + 3] == signed(expected_w - max(expected_key, expected_offset))


def fit_labels(words: list[str]) -> list[str]:
    return [fit_label(label) for label in occurrence_labels([printable(w) for w in words])]
