"""The page's "What if" mode: its data (X and the weights in full precision, offered only where
the page can redo the arithmetic), and, marked ``browser``, numbers changed through the page's
own controls in headless Chromium, every step the page recomputes checked against attnviz's
numpy (attnviz.attention on the same changed inputs) to 1e-12.

Tolerance: the page sums the products of each matrix product in its own order, numpy's BLAS in
another, and Math.exp is not numpy's exp, so the two differ in the last bits; the numbers here
are at most a few hundred, whose last bits are ~1e-14: 1e-12 leaves room and catches any wrong
step (a missing ÷√d_k moves a score by a third of itself).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnviz.attention import multi_head_attention
from attnviz.core import trace_layers
from attnviz.labels import format_number
from attnviz.options import TraceOptions
from attnviz.render.page.page import page_html
from attnviz.render.page.page_data import PAGE_TEXT, page_data
from attnviz.render.page.page_whatif import EDITABLE, MAX_NUMBERS, WHATIF_TEXT
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights
from render.analysed import analysed
from render.page.test_page import choose, data_block, needs_model, open_page, shown_weights
from render.page.test_page_script import english_in

#: The steps the page recomputes, by the trace's names (the page's "concat" is Concat).
COMPUTED = ("Q", "K", "V", "scores", "scaled", "weights", "Z", "concat", "output")
PER_HEAD = ("Q", "K", "V", "scores", "scaled", "weights", "Z")
CLOSE = 1e-12
WORDS = "the a cat dog sat ran on under mat rug it was tired wide because street".split()


def page_of(sentence: str, **options: Any) -> tuple[str, AttentionTrace]:
    layers, _ = trace_layers(sentence, TraceOptions(**options))
    trace = layers[-1]
    return page_html(analysed(layers), trace, select(trace, ViewOptions())), trace


def whatif_of(sentence: str, view: ViewOptions | None = None, **options: Any) -> dict[str, Any]:
    layers, _ = trace_layers(sentence, TraceOptions(**options))
    trace = layers[-1]
    selection = select(trace, view or ViewOptions())
    result: dict[str, Any] = page_data(analysed(layers), trace, selection)["whatif"]
    return result


def carried(array: dict[str, Any]) -> np.ndarray:
    """An input as the page reads it: its JSON text parsed back."""
    parsed = json.loads(json.dumps(array["values"]))
    return np.array(parsed, dtype=np.float64).reshape(array["shape"])


# -- the data ------------------------------------------------------------------------------------


def test_the_inputs_travel_exactly_every_bit() -> None:
    layers, _ = trace_layers("The cat sat on the mat", TraceOptions(seed=3, causal=True))
    data = page_data(analysed(layers), layers[0], select(layers[0], ViewOptions()))["whatif"]
    assert data["available"] and data["biases"] == {}
    for key in EDITABLE:
        assert np.array_equal(carried(data["inputs"][key]), getattr(layers[0], key))
    assert data["mask"] == layers[0].mask.tolist()
    assert data["sizes"] == {"n": 6, "dModel": 8, "nHeads": 2, "nKvHeads": 2, "dK": 4}


def test_a_toy_model_is_offered_and_says_it_ran_in_float32() -> None:
    data = whatif_of("the animal was tired because it", model="coref")
    assert data["available"]
    assert "float32" in data["text"]["precision"]
    # Two layers: the mode changes the one the page opened on, and says the other is kept.
    assert "the other layers (the mode changes layer 2" in data["text"]["notRecomputed"]


@pytest.mark.parametrize(
    ("options", "view", "reason"),
    [
        ({"positions": "rope"}, None, "drop --positions rope"),
        ({"latent": 2}, None, "drop --latent"),
        ({}, ViewOptions(hide_special=True), None),  # the random layer has no special token
    ],
)
def test_what_the_mode_cannot_redo_it_says(
    options: dict[str, Any], view: ViewOptions | None, reason: str | None
) -> None:
    data = whatif_of("The cat sat on the mat", view, **options)
    assert data["available"] is (reason is None)
    if reason is not None:
        assert reason in data["reason"] and "inputs" not in data


@pytest.mark.slow
def test_a_pretrained_model_is_not_offered() -> None:
    needs_model()
    data = whatif_of("I am good", model="minilm")
    assert not data["available"]
    assert data["reason"].startswith("What if works with random weights and attnviz's toy")


def test_hidden_padding_is_not_offered() -> None:
    data = whatif_of("The cat sat", ViewOptions(hide_special=True), pad_to=5)
    assert not data["available"] and "drop --words and --hide-special" in data["reason"]
    assert whatif_of("The cat sat", pad_to=5)["available"]  # the padding shown: offered


def test_a_layer_too_big_for_the_page_is_not_offered() -> None:
    data = whatif_of("The cat sat", d_model=128, heads=2)  # 3·128 + 4·128² numbers
    assert 3 * 128 + 4 * 128**2 > MAX_NUMBERS
    assert not data["available"] and f"{3 * 128 + 4 * 128**2:,} of them" in data["reason"]


def test_the_page_grows_by_a_few_kilobytes() -> None:
    """The seeds' sentence at the default sizes (11 words, d_model 8): the mode's numbers and
    sentences add about 9 kB, its script and style about 21 kB (docs/page.md); at most
    MAX_NUMBERS inputs, about 20 bytes each, whatever the sizes."""
    sentence = "The animal didn't cross the street because it was too tired"
    page, trace = page_of(sentence)
    data = data_block(page)["whatif"]
    added = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
    count = sum(np.size(getattr(trace, key)) for key in EDITABLE)
    assert count == 11 * 8 + 4 * 8 * 8
    assert added < 2_500 + 25 * count < 12_000
    assets = resources.files("attnviz.render.page")
    code = sum(len(assets.joinpath(name).read_bytes()) for name in ("whatif.js", "whatif.css"))
    assert code < 30_000


def test_the_mode_script_holds_no_english_and_uses_every_text() -> None:
    script = resources.files("attnviz.render.page").joinpath("whatif.js").read_text("utf-8")
    assert english_in(script) == []
    used = set(re.findall(r"WTEXT\.(\w+)", script))
    # The tables' titles are read by their arrays' names: WTEXT[name].
    titles = {*EDITABLE, *COMPUTED}
    assert used | titles == set(WHATIF_TEXT) | {"notRecomputed", "precision"}


# -- in a real browser ---------------------------------------------------------------------------


def expected(trace: AttentionTrace, inputs: dict[str, np.ndarray]) -> AttentionTrace:
    """attnviz's own textbook path on the changed inputs, in float64."""
    weights = AttentionWeights(*(np.asarray(inputs[key], dtype=np.float64) for key in EDITABLE[1:]))
    return multi_head_attention(
        trace.tokens, np.asarray(inputs["X"], dtype=np.float64), weights, mask=trace.mask
    )


def page_numbers(driver: Any) -> dict[str, Any]:
    numbers: dict[str, Any] = json.loads(driver.execute_script("return whatIfNumbers()"))
    return numbers


def assert_matches(driver: Any, trace: AttentionTrace, inputs: dict[str, np.ndarray]) -> None:
    """Every input the page holds is the one typed, bit for bit, and every step it computed
    is numpy's to 1e-12."""
    numbers = page_numbers(driver)
    for key in EDITABLE:
        assert np.array_equal(np.reshape(numbers["inputs"][key], inputs[key].shape), inputs[key])
    reference = expected(trace, inputs)
    for key in COMPUTED:
        want = getattr(reference, key)
        got = np.reshape(np.array(numbers["computed"][key], dtype=np.float64), want.shape)
        np.testing.assert_allclose(got, want, rtol=0, atol=CLOSE, err_msg=key)


def mode_on(driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "whatif-mode").click()
    assert driver.find_element(By.ID, "whatif").is_displayed()


def type_into(driver: Any, array: str, index: int, text: str) -> None:
    """Click the cell of ``array``'s flat ``index`` and type ``text`` and Enter, as a student."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    cell = driver.find_element(By.CSS_SELECTOR, f'td[data-array="{array}"][data-index="{index}"]')
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
    cell.click()
    field = driver.find_element(By.CSS_SELECTOR, ".whatif-input")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text, Keys.ENTER)


def shown(driver: Any, array: str) -> list[str]:
    script = (
        "return [...document.querySelectorAll(`td[data-array='${arguments[0]}']`)]"
        ".map((cell) => cell.textContent)"
    )
    texts: list[str] = driver.execute_script(script, array)
    return texts


CASES = [  # seed, d_model, heads, kv_heads, words, causal
    (0, 8, 2, None, 6, False),
    (1, 6, 3, None, 4, True),
    (2, 12, 4, 2, 7, True),
    (3, 4, 1, None, 3, False),
    (4, 10, 5, None, 9, True),
]


@pytest.mark.browser
@pytest.mark.parametrize(("seed", "d_model", "heads", "kv_heads", "n", "causal"), CASES)
def test_changed_numbers_recompute_every_step_as_numpy_does(
    browser: Any,
    tmp_path: Path,
    seed: int,
    d_model: int,
    heads: int,
    kv_heads: int | None,
    n: int,
    causal: bool,
) -> None:
    rng = np.random.default_rng(seed)
    sentence = " ".join(rng.choice(WORDS, size=n))
    options = {"seed": seed, "d_model": d_model, "heads": heads, "causal": causal}
    page, trace = page_of(sentence, kv_heads=kv_heads, **options)
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    open_page(browser, path)
    mode_on(browser)
    inputs = {key: np.array(getattr(trace, key), dtype=np.float64) for key in EDITABLE}
    assert_matches(browser, trace, inputs)  # nothing changed yet
    head = int(rng.integers(heads))
    if heads > 1:
        choose(browser, "head", f"Head {head + 1}")
    group = head // (heads // (kv_heads or heads))
    for key in ("X", "W_Q", "W_K", "W_V", "W_O", "X"):
        array = inputs[key]
        # In a head's own matrices, the chosen head's: the page shows that head's.
        first = {"W_Q": head, "W_K": group, "W_V": group}.get(key)
        block = array[first] if first is not None else array
        where = tuple(int(rng.integers(size)) for size in block.shape)
        value = float(np.round(rng.normal(scale=2.0), int(rng.integers(1, 8))))
        full = (first, *where) if first is not None else where
        array[full] = value
        type_into(browser, key, int(np.ravel_multi_index(full, array.shape)), repr(value))
        assert_matches(browser, trace, inputs)
    reference = expected(trace, inputs)
    assert shown(browser, "weights") == [
        format_number(w, 2) for w in reference.weights[head].reshape(-1)
    ]
    assert shown(browser, "output") == [format_number(v, 2) for v in reference.output.ravel()]
    # The picture follows: the chosen word's bars are the new weights.
    row = int(json.loads(page.split('id="attnviz-data">')[1].split("</script>")[0])["start"]["row"])
    masked = np.zeros(n, dtype=bool) if trace.mask is None else ~trace.mask[row]
    assert shown_weights(browser) == [
        PAGE_TEXT["masked"] if hidden else format_number(w, 2)
        for w, hidden in zip(reference.weights[head, row], masked, strict=True)
    ]


@pytest.mark.browser
def test_a_layer_with_biases_recomputes_them_too(browser: Any, tmp_path: Path) -> None:
    """Given weights with biases (the Python API's): Q = X·W_Q + b_Q, …, output + b_O."""
    rng = np.random.default_rng(11)
    n, d_model, heads, d_k = 5, 6, 2, 3
    weights = AttentionWeights(
        *(rng.normal(size=(heads, d_model, d_k)) for _ in range(3)),
        rng.normal(size=(heads * d_k, d_model)),
        b_Q=rng.normal(size=(heads, d_k)),
        b_K=rng.normal(size=(heads, d_k)),
        b_V=rng.normal(size=(heads, d_k)),
        b_O=rng.normal(size=d_model),
    )
    trace = multi_head_attention(list("abcde"), rng.normal(size=(n, d_model)), weights)
    path = tmp_path / "biases.html"
    path.write_text(page_html(analysed([trace]), trace, select(trace, ViewOptions())), "utf-8")
    open_page(browser, path)
    mode_on(browser)
    inputs = {key: np.array(getattr(trace, key), dtype=np.float64) for key in EDITABLE}
    inputs["X"][2, 4] = 1.25
    type_into(browser, "X", 2 * d_model + 4, "1.25")
    numbers = page_numbers(browser)
    changed = multi_head_attention(trace.tokens, inputs["X"], weights)
    for key in COMPUTED:
        want = getattr(changed, key)
        got = np.reshape(np.array(numbers["computed"][key], dtype=np.float64), want.shape)
        np.testing.assert_allclose(got, want, rtol=0, atol=CLOSE, err_msg=key)


@pytest.mark.browser
def test_nothing_changed_shows_every_number_as_before_and_reset_brings_it_back(
    browser: Any, random_page: Any
) -> None:
    from selenium.webdriver.common.by import By

    path, trace = random_page
    open_page(browser, path)
    before = shown_weights(browser)
    row_before = browser.find_element(By.ID, "row-table").text
    mode_on(browser)
    assert shown_weights(browser) == before
    # The mode's own tables at rest: the trace's numbers as attnviz prints them.
    assert shown(browser, "X") == [format_number(v, 2) for v in trace.X.ravel()]
    assert shown(browser, "scores") == [format_number(v, 2) for v in trace.scores[0].ravel()]
    assert shown(browser, "output") == [format_number(v, 2) for v in trace.output.ravel()]
    assert browser.find_elements(By.CSS_SELECTOR, "#whatif .changed, #whatif .edited") == []
    type_into(browser, "W_K", 5, "4")
    assert shown_weights(browser) != before
    changed = browser.find_elements(By.CSS_SELECTOR, "#whatif td.changed")
    assert browser.find_elements(By.CSS_SELECTOR, "#whatif td.edited")
    # W_K of head 1 moves K of head 1, so its scores, weights, Z, then Concat and the output;
    # Q and V, computed without W_K, stay.
    arrays = {cell.get_attribute("data-array") for cell in changed}
    assert arrays == {"K", "scores", "scaled", "weights", "Z", "concat", "output"}
    changed_weights = shown_weights(browser)
    # Out of the mode the picture shows the layer as given; back in it, the changed weights.
    browser.find_element(By.ID, "whatif-mode").click()
    assert shown_weights(browser) == before
    mode_on(browser)
    assert shown_weights(browser) == changed_weights
    browser.find_element(By.ID, "whatif-reset").click()
    assert shown_weights(browser) == before
    assert browser.find_element(By.ID, "row-table").text == row_before
    assert browser.find_elements(By.CSS_SELECTOR, "#whatif .changed, #whatif .edited") == []


@pytest.mark.browser
def test_a_drag_changes_a_number_smoothly(browser: Any, random_page: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    path, trace = random_page
    open_page(browser, path)
    mode_on(browser)
    cell = browser.find_element(By.CSS_SELECTOR, 'td[data-array="W_Q"][data-index="3"]')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
    seen = []
    actions = ActionChains(browser).click_and_hold(cell)
    actions.perform()
    for _ in range(4):
        ActionChains(browser).move_by_offset(10, 0).perform()
        seen.append(page_numbers(browser)["inputs"]["W_Q"][3])
    ActionChains(browser).release().perform()
    start = float(trace.W_Q.reshape(-1)[3])
    # Ten pixels are ten units of the shown digit, 0.1, each step of the way.
    assert np.allclose(np.diff([start, *seen[1:]])[1:], 0.1)
    assert seen[-1] > start + 0.25
    assert browser.find_elements(By.CSS_SELECTOR, ".whatif-input") == []  # a drag, not a click
    inputs = {key: np.array(getattr(trace, key), dtype=np.float64) for key in EDITABLE}
    inputs["W_Q"].reshape(-1)[3] = seen[-1]
    assert_matches(browser, trace, inputs)


@pytest.mark.browser
def test_a_wrong_entry_is_refused_with_a_sentence(browser: Any, random_page: Any) -> None:
    from selenium.webdriver.common.by import By

    path, _ = random_page
    open_page(browser, path)
    mode_on(browser)
    type_into(browser, "X", 0, "abc")
    field = browser.find_element(By.CSS_SELECTOR, ".whatif-input")
    assert field.get_attribute("aria-invalid") == "true"
    assert browser.find_element(By.ID, "whatif-status").text == WHATIF_TEXT["notANumber"]
    field.clear()
    field.send_keys("1e9\n")
    assert browser.find_element(By.ID, "whatif-status").text.startswith("Keep numbers between")
    assert browser.find_elements(By.CSS_SELECTOR, "#whatif td.changed") == []


@pytest.mark.browser
def test_the_toy_model_page_recomputes_in_float64_and_loads_nothing(
    browser: Any, tmp_path: Path
) -> None:
    page, trace = page_of("the animal was tired because it", model="coref")
    path = tmp_path / "coref.html"
    path.write_text(page, encoding="utf-8")
    open_page(browser, path)
    mode_on(browser)
    inputs = {key: np.array(getattr(trace, key), dtype=np.float64) for key in EDITABLE}
    inputs["W_V"][0, 3, 7] = -0.75
    type_into(browser, "W_V", 3 * 32 + 7, "-0.75")
    assert_matches(browser, trace, inputs)
    events = [json.loads(entry["message"])["message"] for entry in browser.get_log("performance")]
    sent = [event["params"] for event in events if event["method"] == "Network.requestWillBeSent"]
    urls = [r["request"]["url"] for r in sent if r["documentURL"] == path.as_uri()]
    assert urls and all(url == path.as_uri() or url.startswith("data:") for url in urls)
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []  # no script error, and nothing the policy had to block


@pytest.mark.browser
def test_a_pretrained_page_says_why_on_the_control(browser: Any, model_page: Any) -> None:
    from selenium.webdriver.common.by import By

    path, _ = model_page
    open_page(browser, path)
    toggle = browser.find_element(By.ID, "whatif-mode")
    assert toggle.get_attribute("title").startswith("What if works with random weights")
    toggle.click()
    intro = browser.find_element(By.ID, "whatif-intro").text
    assert intro == toggle.get_attribute("title")
    assert browser.find_elements(By.CSS_SELECTOR, "#whatif td") == []
