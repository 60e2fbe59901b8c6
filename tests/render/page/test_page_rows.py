"""What the page shows beside a word's row (render/page/page_rows.py) and of a second sentence
(render/page/page_compare.py), read from the data embedded in the page that ``attnviz page`` writes
and checked against an independent recomputation from ``attnviz explain --export``: numpy on
the exported X, W_V, b_V, W_O and weights, not attnviz's analysis functions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.errors import ExitStatus
from attnviz.render.page.page_numbers import unpacked

from support import CliRunner, needs_model, one_error_line

IT = "The animal didn't cross the street because it was too tired"
WIDE = IT.replace("tired", "wide")
GPT2 = str(Path(__file__).resolve().parents[2] / "model" / "tiny_gpt2")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def page_and_export(tmp_path: Path, *options: str) -> tuple[Any, Any]:
    """The page's embedded data and the --export of the same sentence and options."""
    page, export = tmp_path / "page.html", tmp_path / "trace.npz"
    code, _, stderr = run("page", IT, "-o", str(page), *options)
    assert code == 0, stderr
    code, _, stderr = run("explain", IT, "--export", str(export), *options)
    assert code == 0, stderr
    text = page.read_text(encoding="utf-8")
    block = text.split('<script type="application/json" id="attnviz-data">')[1]
    return json.loads(block.split("</script>")[0]), dict(np.load(export))


def layered(arrays: dict[str, Any], key: str) -> np.ndarray:
    """An exported array with a leading layer axis (a one-layer export has none)."""
    array = np.asarray(arrays[key], dtype=np.float64)
    dims = {"weights": 4, "X": 3, "W_V": 4, "W_O": 3, "b_V": 3}[key]
    return array if array.ndim == dims else array[None]


def close(shown: str, expected: float, decimals: int = 2) -> bool:
    return abs(float(shown) - expected) <= 0.5 * 10**-decimals + 1e-9


def check_contributions(data: Any, arrays: dict[str, Any]) -> None:
    """Every layer's, head's and row's ‖w_ij·f_h(x_j)‖, share and total, and each row's note,
    against f_h(x_j) = (x_j·W_V^h + b_V^h) · W_O[head h's rows]."""
    weights, X = layered(arrays, "weights"), layered(arrays, "X")
    W_V, W_O = layered(arrays, "W_V"), layered(arrays, "W_O")  # [L, h, d_model, d_k], [L, ·, ·]
    b_V = layered(arrays, "b_V") if "b_V" in arrays else np.zeros((*W_V.shape[:2], W_V.shape[-1]))
    d_k = W_V.shape[-1]
    checked = 0
    for layer, shown in enumerate(data["layers"]):
        norm_rows, share_rows = (
            table_rows(data, shown["numbers"][name]) for name in ("norms", "shares")
        )
        for index, (head, head_data) in enumerate(zip(data["heads"], shown["heads"], strict=True)):
            values = X[layer] @ W_V[layer, head] + b_V[layer, head]  # [n, d_k]
            rows = W_O[layer][head * d_k : (head + 1) * d_k]
            f_norms = np.linalg.norm(values @ rows, axis=-1)
            norms = weights[layer, head] * f_norms  # [n, n]
            shares = norms / norms.sum(axis=-1, keepdims=True)
            contribution = head_data["contribution"]
            for i in range(norms.shape[0]):
                assert all(map(close, norm_rows[index][i], norms[i]))
                assert all(map(close, share_rows[index][i], shares[i]))
                assert close(contribution["totals"][i], norms[i].sum())
                check_note(contribution["notes"][i], weights[layer, head, i], shares[i], f_norms)
                checked += 1
    assert checked == len(data["layers"]) * len(data["heads"]) * weights.shape[-1]


def table_rows(data: Any, packed: dict[str, Any]) -> list[list[list[str]]]:
    """A packed table as the page's script prints it (page.js, printed): [heads][rows][columns]
    of texts (one "head" for rollout's [rows, columns])."""
    texts = unpacked(packed)
    n_rows, n_columns = len(data["rows"]), len(data["columns"])
    return [
        [texts[start + r * n_columns : start + (r + 1) * n_columns] for r in range(n_rows)]
        for start in range(0, len(texts), n_rows * n_columns)
    ]


def check_note(note: Any, weights: np.ndarray, shares: np.ndarray, f_norms: np.ndarray) -> None:
    """The note names the largest weight that is above 1/n and at least twice its share, with
    its numbers; 0 says there is none."""
    parked = (weights > 1 / len(weights)) & (weights >= 2 * shares)
    if note == 0:
        assert not parked.any()
        return
    assert isinstance(note, dict)
    key = int(note["column"])
    assert parked[key] and weights[key] == weights[parked].max()
    assert close(note["weight"], weights[key]) and close(note["share"], shares[key])
    assert close(note["norm"], f_norms[key])
    total = float((weights * f_norms).sum())
    assert close(note["total"], total) and f_norms[key] <= total / 2  # the sentence's claim


def check_rollout(data: Any, arrays: dict[str, Any]) -> None:
    """Â_l = ½·mean_h A_l + ½·I, rows renormalised; R_1 = Â_1, R_l = Â_l·R_{l−1}."""
    weights = layered(arrays, "weights")
    n = weights.shape[-1]
    rolled = np.eye(n)
    for layer, shown in enumerate(data["layers"]):
        mixed = 0.5 * weights[layer].mean(axis=0) + 0.5 * np.eye(n)
        rolled = (mixed / mixed.sum(axis=-1, keepdims=True)) @ rolled
        rows = table_rows(data, shown["rollout"])[0]
        for i in range(n):
            assert all(map(close, rows[i], rolled[i]))


@pytest.mark.slow
def test_random_weights_contributions_and_no_rollout_or_caution(tmp_path: Path) -> None:
    data, arrays = page_and_export(tmp_path)
    check_contributions(data, arrays)
    assert all(layer["rollout"] is None for layer in data["layers"])  # one layer: none below
    assert data["caveat"] is None  # random weights: the page says they are not learned
    assert data["text"]["contributionDisagrees"].count("{") == 7  # the slots the script fills


@pytest.mark.slow
def test_head_types_name_the_score_that_decided_them(tmp_path: Path) -> None:
    from attnviz.analysis.head_types import classify, head_scores

    data, arrays = page_and_export(tmp_path, "-m", "coref")
    weights = layered(arrays, "weights")
    for layer, shown in enumerate(data["layers"]):
        for head, typed in zip(data["heads"], shown["headTypes"], strict=True):
            scores = head_scores(weights[layer, head])
            assert typed["type"] == classify(scores).value
            assert typed["why"].startswith(f"Head {head + 1} ")
            if typed["type"] == "mixed":
                assert f"entropy is {scores.entropy:.2f} of a uniform row's" in typed["why"]


@pytest.mark.slow
def test_the_trained_toy_models_contributions_rollout_and_caution(tmp_path: Path) -> None:
    data, arrays = page_and_export(tmp_path, "-m", "coref")
    check_contributions(data, arrays)
    check_rollout(data, arrays)
    assert data["caveat"].startswith("A caution: a high weight shows where the vector of “{word}”")


@needs_model
@pytest.mark.slow
def test_gpt2s_causal_rollout_stays_below_the_diagonal(tmp_path: Path) -> None:
    data, arrays = page_and_export(tmp_path, "-m", GPT2)
    check_contributions(data, arrays)
    check_rollout(data, arrays)
    first = table_rows(data, data["layers"][0]["rollout"])[0][0]
    assert first[0] == "1.00" and set(first[1:]) == {"0.00"}  # the first word sees only itself
    assert data["caveat"] is None  # an untrained checkpoint


@pytest.mark.slow
@needs_model
def test_minilm_contributions_and_rollout_match_the_export(tmp_path: Path) -> None:
    data, arrays = page_and_export(tmp_path, "-m", "minilm")
    check_contributions(data, arrays)
    check_rollout(data, arrays)
    # The README's row: layer 6, head 12, "it" parks 0.15 on [CLS], which adds 1% of the row.
    note = data["layers"][5]["heads"][11]["contribution"]["notes"][10]
    assert data["columns"][int(note["column"])]["word"] == "[CLS]"
    assert (note["weight"], note["share"]) == ("0.15", "0.01")


# -- --open-head ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_open_head_opens_on_that_head_and_keeps_every_head(tmp_path: Path) -> None:
    out = tmp_path / "it.html"
    code, _, stderr = run("page", IT, "--open-head", "2", "-o", str(out))
    assert code == 0, stderr
    data = json.loads(out.read_text().split('id="attnviz-data">')[1].split("</script>")[0])
    assert data["heads"] == [0, 1] and data["start"]["head"] == 1


@pytest.mark.parametrize(
    ("options", "fragments"),
    [
        (("--open-head", "3"), ("--open-head 3 does not exist; heads are numbered 1 to 2.",)),
        (("--head", "2", "--open-head", "1"), ("--head 2 keeps head 2 alone", "leave out --head")),
    ],
)
def test_a_head_the_page_cannot_open_on_is_one_line(
    tmp_path: Path, options: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    code, _, stderr = run("page", IT, *options, "-o", str(tmp_path / "it.html"))
    assert code == ExitStatus.BAD_INPUT
    one_error_line(stderr, *fragments)
    assert list(tmp_path.iterdir()) == []


# -- --compare -----------------------------------------------------------------------------------


def compared_page(tmp_path: Path, *options: str, b: str = WIDE) -> Any:
    out = tmp_path / "pair.html"
    code, _, stderr = run("page", IT, "--compare", b, "-o", str(out), *options)
    assert code == 0, stderr
    return json.loads(out.read_text().split('id="attnviz-data">')[1].split("</script>")[0])


@pytest.mark.slow
def test_the_page_compares_it_in_tired_and_wide_as_the_export_says(tmp_path: Path) -> None:
    data = compared_page(tmp_path, "-m", "coref")
    exports = {}
    for name, sentence in (("a", IT), ("b", WIDE)):
        path = tmp_path / f"{name}.npz"
        assert run("explain", sentence, "-m", "coref", "--export", str(path))[0] == 0
        exports[name] = layered(dict(np.load(path)), "weights")
    compare = data["compare"]
    it = 7  # "it", and every word but the last, at the same place in both sentences
    tvs = []
    for change in compare["changes"]:
        row_a = exports["a"][change["layer"], data["heads"][change["head"]], it]
        row_b = exports["b"][change["layer"], data["heads"][change["head"]], it]
        tv = 0.5 * np.abs(row_a - row_b).sum()  # the changed word is the last: one slot each
        assert close(change["tv"], tv)
        tvs.append(tv)
        for shown, w_a, w_b in zip(change["rows"], row_a, row_b, strict=True):
            assert close(shown[1], w_a) and close(shown[2], w_b)
    assert tvs == sorted(tvs, reverse=True) and len(tvs) == 2 * 1  # coref: 2 layers × 1 head
    top = compare["changes"][0]
    assert (top["topA"], top["topB"], top["moves"]) == ("animal", "street", "yes")
    assert "moves from 'animal' to 'street'" in compare["summary"]
    assert top["said"].startswith("In this head “it” moves: its top word is “animal” in A")
    # With neither --layer nor --open-head, the page opens on the head that changed most.
    assert (data["start"]["layer"], data["start"]["head"]) == (top["layer"], top["head"])


@pytest.mark.slow
def test_sentences_of_different_lengths_align_the_words_they_share(tmp_path: Path) -> None:
    data = compared_page(tmp_path, b="The animal didn't cross it because it was so very wide")
    compare = data["compare"]
    assert "only in A: the:2 street too tired; only in B: it:1 so very wide" in compare["about"]
    # As many words each, yet "the street" became "it": the positions do not line up, and the
    # page says so rather than pairing words by position.
    assert "A and B have 11 words each, and their positions do not line up" in compare["about"]
    names = [row[0] for row in compare["changes"][0]["rows"]]
    assert names[4] == "the:2 street / it:1" and names[-2:] == [
        "too tired / so very wide",
        "(the changed words together)",
    ]


def test_a_focus_word_missing_from_one_sentence_is_one_line_and_no_file(tmp_path: Path) -> None:
    out = tmp_path / "pair.html"
    code, _, stderr = run("page", IT, "--compare", "The street was wide", "-o", str(out))
    assert code == ExitStatus.BAD_INPUT
    one_error_line(stderr, "The focus word 'it' is not in sentence B", "--focus WORD")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_api_pages_a_comparison_and_opens_on_a_head() -> None:
    import doctest

    import attnviz
    import attnviz.api.page

    pair = attnviz.compare(IT, WIDE)
    html = attnviz.page(pair, open_head=1).html
    data = json.loads(html.split('id="attnviz-data">')[1].split("</script>")[0])
    assert data["compare"]["focus"] == "it" and data["start"]["head"] == 0
    with pytest.raises(attnviz.AttnvizError, match=r"^open_head=5 does not exist"):
        attnviz.page(attnviz.explain(IT), open_head=5)
    failed, attempted = doctest.testmod(attnviz.api.page)
    assert attempted > 0 and failed == 0
