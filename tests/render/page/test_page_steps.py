"""The page's steps: the lesson's, an optional step (the blockwise softmax, labelled after Z)
only when named, shown as the terminal writes it for each head; and, marked ``browser``, in
Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import attnviz
from attnviz.errors import AttnvizError
from attnviz.labels import format_number
from attnviz.lesson.blocks import Paragraph, Pause, Worked
from attnviz.lesson.options import LessonOptions
from attnviz.lesson.steps import STEPS, focus_number, last_plain_number, step_number
from attnviz.lesson.steps import label as step_label
from attnviz.render.page.page import page_data, page_html
from attnviz.render.page.page_data import PAGE_TEXT
from render.analysed import analysed
from render.page.test_page import IT_SENTENCE, choose, data_block, open_page, traced

from support import written_lesson as lesson

IT = 7  # the position of "it" in IT_SENTENCE
BLOCKWISE_TITLE = "FlashAttention's softmax, a block of keys at a time"
# As the table numbers and labels them ("5", "6", "6b"):
WEIGHTS, Z, BLOCKWISE = (step_label(key) for key in ("weights", "z", "blockwise"))


def flat(text: str) -> str:
    """Text with its line breaks and runs of spaces made single spaces."""
    return " ".join(text.split())


def blockwise_of(data: Any, layer: int = 0) -> tuple[dict[str, Any], list[list[list[Any]]]]:
    """The blockwise step's entry and its blocks for each head, as the page's data has them."""
    index = next(i for i, step in enumerate(data["steps"]) if step["key"] == "blockwise")
    return data["steps"][index], data["layers"][layer]["steps"][index]["heads"]


def tables(blocks: list[list[Any]]) -> list[dict[str, Any]]:
    return [block[1] for block in blocks if block[0] == "t"]


@pytest.mark.slow
def test_the_page_leaves_the_optional_step_out_unless_it_is_named() -> None:
    layers, trace, selection = traced(IT_SENTENCE)
    data = page_data(analysed(layers), trace, selection)
    last = last_plain_number(STEPS, trace)
    assert [step["number"] for step in data["steps"]] == list(range(1, last + 1))
    assert "blockwise" not in [step["key"] for step in data["steps"]]
    assert all("label" not in step for step in data["steps"])
    assert data["lastStep"] == last and len(data["layers"][0]["steps"]) == last
    assert f"Step {BLOCKWISE} " not in page_html(analysed(layers), trace, selection)


@pytest.mark.slow
def test_named_it_is_labelled_after_the_z_step_in_each_head() -> None:
    layers, trace, selection = traced(IT_SENTENCE)
    data = page_data(analysed(layers), trace, selection, steps=f"{WEIGHTS},{Z},blockwise")
    assert [step["key"] for step in data["steps"]] == ["weights", "z", "blockwise"]
    step, heads = blockwise_of(data)
    assert step == {
        # past every plain step, the focus view included
        "number": (focus_number(STEPS, trace) or 0) + 1,
        "key": "blockwise",
        "perHead": True,  # the head menu picks which head's
        "heading": f"Step {BLOCKWISE} · {BLOCKWISE_TITLE}",
        "label": BLOCKWISE,
        "example": IT,
    }
    assert data["lastStep"] == last_plain_number(STEPS, trace)  # "Step 6b of 7"
    assert len(heads) == trace.n_heads
    for head, blocks in enumerate(heads):
        assert blocks[0] == ["h", f"Step {BLOCKWISE} · {BLOCKWISE_TITLE}: 'it' in head {head + 1}"]
        # Its words are the lesson's example word's, whichever word is picked: no slot.
        assert all(run[2] == "" for block in blocks if block[0] == "p" for run in block[1])
        first, *_, running, both = tables(blocks)
        assert [row[0] for row in first["cells"]] == [
            format_number(float(s), 2) for s in trace.scaled[head, IT, :3]
        ]
        assert both["cells"][1] == [format_number(float(w), 2) for w in trace.weights[head, IT]]
        assert both["sums"] == ["1.00", "1.00"] and len(both["colours"][0]) == trace.n_tokens
        assert running["rows"] == [f"block {n}" for n in range(1, len(running["rows"]) + 1)]


@pytest.mark.slow
@pytest.mark.parametrize("head", [1, 2])
def test_each_heads_step_says_what_the_terminal_says_for_that_head(head: int) -> None:
    layers, trace, selection = traced(IT_SENTENCE)
    data = page_data(analysed(layers), trace, selection, steps="blockwise")
    blocks = blockwise_of(data)[1][head - 1]
    printed = attnviz.lesson(
        attnviz.explain(IT_SENTENCE, head=head), steps="blockwise", full=True
    )  # the page says all of the text, as --full does
    said = flat(printed)
    for block in blocks:
        if block[0] in ("h", "w"):
            assert flat(block[-1]) in said
        elif block[0] == "p":
            assert flat("".join(run[0] for run in block[1])) in said
    for table in tables(blocks):
        assert flat(table["title"]) in said
        for label, cells in zip(table["rows"], table["cells"], strict=True):
            line = r"\s+".join(map(re.escape, [label, *cells]))
            assert re.search(line, printed), (label, cells)
    written = lesson(
        trace, selection._replace(heads=(head - 1,)), LessonOptions(steps="blockwise", full=True)
    )
    examples = [block.text for block in written if isinstance(block, Worked)]
    assert [block[2] for block in blocks if block[0] == "w"] == examples
    step = written[next(i for i, block in enumerate(written) if isinstance(block, Pause)) :]
    paragraphs = sum(isinstance(block, Paragraph) for block in step)  # the header's left out
    assert sum(block[0] == "p" for block in blocks) == paragraphs


def test_masked_keys_and_a_given_block_size() -> None:
    layers, trace, selection = traced(IT_SENTENCE, causal=True)
    data = page_data(analysed(layers), trace, selection, steps="blockwise", block=2)
    blocks = blockwise_of(data)[1][0]
    *per_block, running, both = tables(blocks)
    assert len(per_block) == 6  # 11 keys, 2 a block
    after_it = per_block[4]  # keys 9 and 10, after "it": masked
    assert [row[0] for row in after_it["cells"]] == ["−∞", "−∞"]
    assert [row[0] for row in after_it["masked"]] == [True, True]
    assert both["cells"][0][IT + 1 :] == ["0.00"] * 3
    assert any("Masked keys have s_j = −∞" in run[0] for b in blocks if b[0] == "p" for run in b[1])


def test_with_rotary_positions_it_follows_the_z_step_one_further() -> None:
    layers, trace, selection = traced(IT_SENTENCE, positions="rope")
    z = step_number("z", trace)
    assert z == int(Z) + 1  # the rotary step comes before it
    data = page_data(analysed(layers), trace, selection, steps=f"{z - 1},{z},blockwise")
    step, heads = blockwise_of(data)
    assert step["label"] == f"{z}b" and step["heading"].startswith(f"Step {z}b · ")
    assert data["lastStep"] == last_plain_number(STEPS) + 1
    assert heads[1][0][1].startswith(f"Step {z}b · ")


@pytest.mark.slow
def test_the_api_names_the_steps_and_refuses_what_the_page_cannot_show() -> None:
    shown = attnviz.explain(IT_SENTENCE)
    data = data_block(attnviz.page(shown, steps=f"{WEIGHTS},{Z},blockwise", block=4).html)
    step, heads = blockwise_of(data)
    assert step["label"] == BLOCKWISE and len(tables(heads[0])) == 3 + 2  # 11 keys, 4 a block
    assert "blockwise" not in str(data_block(attnviz.page(shown).html)["steps"])
    # In a notebook the page displays itself, the step included.
    assert f"Step {BLOCKWISE} · " in attnviz.page(shown, steps="blockwise")._repr_html_()
    with pytest.raises(AttnvizError, match="focus view, which the page always shows"):
        attnviz.page(shown, steps=step_number("focus"))
    with pytest.raises(AttnvizError, match="block=3 is for the blockwise step"):
        attnviz.page(shown, block=3)
    pair = attnviz.compare(IT_SENTENCE, IT_SENTENCE.replace("tired", "wide"))
    assert f"Step {BLOCKWISE} · " in attnviz.page(pair, steps="blockwise").html


@pytest.mark.slow
def test_a_model_page_has_the_step_in_every_layer_and_head() -> None:
    pytest.importorskip("tokenizers", reason="--model needs the optional extra attnviz[model]")
    layers, trace, selection = traced("The cat sat because it was tired", model="minilm")
    data = page_data(analysed(layers), trace, selection, steps="blockwise")
    for layer, written in enumerate(layers, start=1):
        heads = blockwise_of(data, layer - 1)[1]
        assert len(heads) == 12
        both = tables(heads[11])[-1]
        it = written.tokens.index("it")
        expected = [format_number(float(w), 2) for w in written.weights[11, it]]
        assert both["cells"][1] == expected


# -- in a real browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def blockwise_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    layers, trace, selection = traced(IT_SENTENCE)
    path = tmp_path_factory.mktemp("pages") / "blockwise.html"
    path.write_text(
        page_html(analysed(layers), trace, selection, steps=f"{WEIGHTS},{Z},blockwise"),
        encoding="utf-8",
    )
    return path, data_block(path.read_text(encoding="utf-8"))


def shown_step(driver: Any) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, f"step-{BLOCKWISE}")


def first_table_row(driver: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    row = shown_step(driver).find_elements(By.CSS_SELECTOR, "table tr")[1]
    return [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]


@pytest.mark.browser
def test_the_blockwise_step_shows_and_navigates(browser: Any, blockwise_page: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    path, data = blockwise_page
    open_page(browser, path)

    def visible() -> list[str]:
        steps = browser.find_elements(By.CSS_SELECTOR, ".step")
        return [step.get_attribute("id") for step in steps if step.is_displayed()]

    ids = [f"step-{name}" for name in (WEIGHTS, Z, BLOCKWISE)]
    last = last_plain_number(STEPS)
    assert visible() == ids
    body = browser.find_element(By.TAG_NAME, "body")
    for name in (WEIGHTS, Z, BLOCKWISE):
        body.send_keys(Keys.ARROW_RIGHT)
        assert browser.find_element(By.ID, "step-label").text == f"Step {name} of {last}"
    assert (
        visible() == [f"step-{BLOCKWISE}"] and not browser.find_element(By.ID, "next").is_enabled()
    )
    heads = blockwise_of(data)[1]
    for head in (1, 2):
        choose(browser, "head", f"Head {head}")
        heading = shown_step(browser).find_element(By.TAG_NAME, "h2").text
        assert heading == f"Step {BLOCKWISE} · {BLOCKWISE_TITLE}: 'it' in head {head}"
        assert first_table_row(browser) == tables(heads[head - 1])[0]["cells"][0]
        shown_tables = shown_step(browser).find_elements(By.TAG_NAME, "table")
        assert len(shown_tables) == len(tables(heads[head - 1]))
        worked = [node.text for node in shown_step(browser).find_elements(By.CLASS_NAME, "worked")]
        assert worked == [block[2] for block in heads[head - 1] if block[0] == "w"]
    choose(browser, "head", "All heads")
    assert PAGE_TEXT["chooseHead"] in shown_step(browser).text
    choose(browser, "head", "Head 1")
    body.send_keys(Keys.ARROW_LEFT)
    assert browser.find_element(By.ID, "step-label").text == f"Step {Z} of {last}"
    assert visible() == [f"step-{Z}"]
    browser.find_element(By.ID, "all-steps").click()
    assert visible() == ids
    note = PAGE_TEXT["exampleWord"].format(word="'it'")
    assert note not in shown_step(browser).text
    browser.find_element(By.XPATH, "//ol[@id='queries']//button[text()='animal']").click()
    assert note in shown_step(browser).text
    assert first_table_row(browser) == tables(heads[0])[0]["cells"][0]  # still 'it''s row
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
