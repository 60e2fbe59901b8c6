"""The page of two sentences (``attnviz page A --compare B``), its data without a browser: B's
picture, drawn beside A's, has B's own words and weights in every layer and head; the table of
A beside B names a changed word where it stands ("tired / wide"); and sentences whose positions
do not line up (a word added, words reordered) are said to, never paired by position."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnviz
from attnviz.labels import format_number
from attnviz.render.page.page_compare import TOGETHER
from render.page.test_page import button, data_block, open_page, run
from render.pages import shown_table

ANIMAL = "The animal didn't cross the street because it was too tired"
TIRED = "The cat sat because it was tired"
WIDE = "The cat sat because it was wide"
LONGER = "The cat sat down because it was very wide"


def page_of(a: str, b: str, **options: Any) -> tuple[Any, attnviz.Compared]:
    pair = attnviz.compare(a, b, **options)
    return data_block(attnviz.page(pair).html), pair


def rows_of(data: Any, layer: int, head: int) -> list[list[str]]:
    """The table of A beside B for one head (its place in the page's menu)."""
    compared = data["compare"]
    (change,) = [c for c in compared["changes"] if (c["layer"], c["head"]) == (layer, head)]
    rows: list[list[str]] = change["rows"]
    return rows


def test_a_changed_word_is_named_where_it_stands_with_both_weights() -> None:
    data, pair = page_of(TIRED, WIDE)
    about = data["compare"]["about"]
    assert "“tired / wide”: what A and B have at the same position." in about
    assert "do not line up" not in about
    for change in pair.comparison.heads:
        rows = rows_of(data, change.layer - 1, change.head - 1)
        assert [row[0] for row in rows] == [
            "The",
            "cat",
            "sat",
            "because",
            "it",
            "was",
            "tired / wide",
        ]
        assert [row[1:3] for row in rows] == [
            [format_number(w_a, 2), format_number(w_b, 2)]
            for w_a, w_b in zip(change.row_a, change.row_b, strict=True)
        ]
        tired = abs(change.row_a[6] - change.row_b[6])
        assert rows[-1][3] == format_number(tired, 2)


def test_sentences_whose_positions_do_not_line_up_say_so() -> None:
    data, pair = page_of(TIRED, LONGER)
    about = data["compare"]["about"]
    assert (
        "A has 7 words and B 9, and their positions do not line up: each shared word is paired "
        "with its partner by the alignment, not by its position, and “— / down”, “tired / very "
        "wide” name what A and B have in one place between shared words (—: nothing)."
    ) in about
    assert "same position" not in about
    for change in pair.comparison.heads:
        rows = rows_of(data, change.layer - 1, change.head - 1)
        assert [row[0] for row in rows] == [
            "The", "cat", "sat", "— / down", "because", "it", "was", "tired / very wide", TOGETHER,
        ]  # fmt: skip
        down, tired, together = rows[3], rows[7], rows[8]
        assert down[1:] == ["0.00", format_number(change.row_b[3], 2), ""]
        assert tired[1:] == [
            format_number(change.row_a[6], 2),
            format_number(change.row_b[7] + change.row_b[8], 2),
            "",
        ]
        # TV counts the changed words as one: their weights together, once, in the last column.
        w_a, w_b = change.row_a[6], change.row_b[[3, 7, 8]].sum()
        assert together[1:] == [format_number(w, 2) for w in (w_a, w_b, abs(w_a - w_b))]
        shared = [(i, j) for i, j in enumerate([0, 1, 2, 4, 5, 6])]
        twice = sum(abs(change.row_a[i] - change.row_b[j]) for i, j in shared) + abs(w_a - w_b)
        assert twice == pytest.approx(2 * change.tv)


def test_words_in_another_order_are_not_paired_by_position() -> None:
    data, _ = page_of("the animal saw it in the street", "the street saw it in the animal")
    about = data["compare"]["about"]
    assert (
        "A and B have 7 words each, and their positions do not line up: each shared word is "
        "paired with its partner by the alignment, not by its position."
    ) in about
    assert "same position" not in about
    links = data["compare"]["links"]
    animal, street = 1, 6  # B follows each word to its partner, not to its position
    assert links["rowInB"][animal] == street and links["rowInB"][street] == animal


@pytest.mark.slow
def test_b_has_its_own_words_and_weights_in_every_layer_and_head() -> None:
    data, pair = page_of(
        "The animal didn't cross the street because it was too tired",
        "The animal didn't cross the street because it was too wide",
        model="coref",
    )
    picture = data["compare"]["picture"]
    b = pair.b
    assert [row["word"] for row in picture["rows"]][-2:] == ["too", "wide"]
    assert [column["word"] for column in picture["columns"]][5] == "street"
    assert len(picture["layers"]) == len(b.layers) == 2
    as_a_page = {**picture, "layers": [{"numbers": layer} for layer in picture["layers"]]}
    for index, layer in enumerate(b.layers):
        for head in range(layer.n_heads):
            assert shown_table(as_a_page, index, "weights", head) == [
                [format_number(w, 2) for w in row] for row in layer.weights[head]
            ]
    it = b.trace.tokens.index("it")
    row = [float(w) for w in shown_table(as_a_page, 1, "weights", 0)[it]]
    assert picture["columns"][int(np.argmax(row))]["word"] == "street"  # in B, "it" → "street"


@pytest.mark.slow
def test_b_follows_the_word_chosen_in_a() -> None:
    data, _ = page_of(TIRED, WIDE)
    links = data["compare"]["links"]
    assert links["rowInB"] == links["rowInA"] == list(range(7))  # "tired" stands for "wide"
    assert (
        links["changedA"]
        == links["changedB"]
        == {
            "rows": [False] * 6 + [True],
            "columns": [False] * 6 + [True],
        }
    )
    data, _ = page_of(TIRED, LONGER)
    links = data["compare"]["links"]
    # A's "tired" has two words in its place in B ("very wide"): none stands for it.
    assert links["rowInB"] == [0, 1, 2, 4, 5, 6, None]
    assert links["rowInA"] == [0, 1, 2, None, 3, 4, 5, None, None]
    assert links["changedB"]["rows"] == [False, False, False, True, False, False, False, True, True]


# -- in a real browser ---------------------------------------------------------------------------


def shown(driver: Any, selector: str) -> list[str]:
    return [
        node.get_attribute("textContent") for node in driver.find_elements("css selector", selector)
    ]


def pressed(driver: Any, side: str) -> list[str]:
    return shown(driver, f"#{side} button[aria-pressed='true']")


def box(driver: Any, name: str) -> dict[str, float]:
    script = f"return document.getElementById({name!r}).getBoundingClientRect().toJSON()"
    result: dict[str, float] = driver.execute_script(script)
    return result


@pytest.mark.browser
def test_b_is_drawn_beside_a_and_follows_the_word_chosen_there(browser: Any, tmp_path: Any) -> None:
    """The trained coref model: A's "it" draws its line to "animal", B's beside it to "street";
    "tired" chosen in A is "wide" in B; a word of B chosen chooses its word in A."""
    wide = ANIMAL.replace("tired", "wide")
    out = tmp_path / "tired-wide.html"
    code, _, stderr = run("page", "-m", "coref", ANIMAL, "--compare", wide, "-o", str(out))
    assert code == 0, stderr
    open_page(browser, out)
    a, b = box(browser, "picture-a"), box(browser, "picture-b")
    assert b["left"] >= a["right"] and b["top"] == a["top"]  # beside it, at 1280 × 720
    assert b["right"] <= box(browser, "steps")["left"]
    assert shown(browser, "figcaption") == ["Sentence A", "Sentence B"]
    pair = attnviz.compare(ANIMAL, wide, model="coref")
    layer_a, layer_b = pair.a.layers[1], pair.b.layers[1]  # it opens on layer 2, head 1
    it = layer_b.tokens.index("it")

    def weights(layer: Any, row: int) -> list[str]:
        return [format_number(w, 2) for w in layer.weights[0, row]]

    assert pressed(browser, "queries") == pressed(browser, "queries-b") == ["it"]
    assert shown(browser, "#keys .weight") == weights(layer_a, it)
    assert shown(browser, "#keys-b .weight") == weights(layer_b, it)
    street = layer_b.tokens.index("street")
    ends = browser.execute_script(
        "const top = document.getElementById('lines-b').getBoundingClientRect().top;"
        "return [...document.querySelectorAll('#lines-b line')]"
        ".map((line) => Number(line.getAttribute('y2')) + top);"
    )
    street_key = browser.find_elements("css selector", "#keys-b .key")[street].rect
    assert any(abs(end - (street_key["y"] + street_key["height"] / 2)) < 1 for end in ends)

    button(browser, "queries", "tired").click()
    assert pressed(browser, "queries-b") == ["wide"]
    assert shown(browser, "#keys-b .weight") == weights(layer_b, len(layer_b.tokens) - 1)
    assert (
        shown(browser, "#queries-b .changed")
        == shown(browser, "#keys-b .changed .label")
        == ["wide"]
    )
    assert (
        shown(browser, "#queries .changed") == shown(browser, "#keys .changed .label") == ["tired"]
    )
    button(browser, "queries-b", "animal").click()
    assert pressed(browser, "queries") == pressed(browser, "queries-b") == ["animal"]
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


@pytest.mark.browser
def test_a_word_b_has_no_counterpart_for_draws_nothing_in_b(browser: Any, tmp_path: Any) -> None:
    out = tmp_path / "longer.html"
    code, _, stderr = run("page", TIRED, "--compare", LONGER, "-o", str(out))
    assert code == 0, stderr
    open_page(browser, out)
    assert shown(browser, "#keys-b .weight") != [""] * 9  # "it" is in both: drawn
    button(browser, "queries", "tired").click()
    caption = browser.find_element("id", "caption-b").text
    assert caption == "Sentence B has no word in the place of “tired”."
    assert pressed(browser, "queries-b") == []
    assert shown(browser, "#keys-b .weight") == [""] * 9
    assert browser.find_elements("css selector", "#lines-b line") == []
    only_in_b = [
        b for b in browser.find_elements("css selector", "#queries-b button") if not b.is_enabled()
    ]
    assert [b.text for b in only_in_b] == ["down", "very", "wide"]
