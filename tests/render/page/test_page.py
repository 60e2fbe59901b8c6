"""The lesson page (attnviz page): its data against the trace, its safety and size, the command's
errors; and, marked ``browser``, the page itself in headless Chromium.

The browser tests run with ``pytest -m browser`` (scripts/check does, after scripts/install-browser
has installed Chromium from Debian's packages); a plain ``pytest`` leaves them out. They need
/usr/bin/chromium, /usr/bin/chromedriver and selenium, and fail, never skip, without them.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from attnviz import worked
from attnviz.cli import app
from attnviz.core import trace_layers
from attnviz.errors import AttnvizError, ExitStatus
from attnviz.labels import format_number, occurrence_labels
from attnviz.lesson.examples import ExampleText
from attnviz.lesson.steps import STEPS, last_plain_number, per_head_numbers
from attnviz.options import TraceOptions
from attnviz.render.page.page import page_data, page_html, script_json
from attnviz.render.page.page_worked import WORKED_PAIRS
from attnviz.selection import Selection, ViewOptions, select
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace
from render.analysed import analysed
from render.pages import assembled, shown_table

from support import CliRunner, step

IT_SENTENCE = "The animal didn't cross the street because it was too tired"
#: The steps these tests read, by the table's numbers (tests name steps by key).
SCORES, SCALED, WEIGHTS, Z, OUTPUT = (
    step(key) for key in ("scores", "scaled", "weights", "z", "output")
)
#: Each head's own steps, and the page's last step (the focus view is the picture, not a step).
PER_HEAD, LAST = sorted(per_head_numbers()), last_plain_number(STEPS)
HOSTILE = "</script><img src=x onerror=alert(1)>"
MAX_BYTES = 3_000_000
REMOTE = ("http:", "https:", "ws:", "wss:", "ftp:")


def traced(
    sentence: str, view: ViewOptions | None = None, **options: Any
) -> tuple[tuple[AttentionTrace, ...], AttentionTrace, Selection]:
    layers, _ = trace_layers(sentence, TraceOptions(**options))
    view = view or ViewOptions()
    trace = layers[-1] if view.layer is None else layers[view.layer - 1]
    return layers, trace, select(trace, view)


def needs_model() -> None:
    pytest.importorskip("safetensors", reason="--model needs the optional extra attnviz[model]")
    pytest.importorskip("tokenizers", reason="--model needs the optional extra attnviz[model]")


def data_block(page: str) -> Any:
    """The page's embedded data, read as the page's script reads it."""
    text = page.split('<script type="application/json" id="attnviz-data">')[1].split("</script>")[0]
    return json.loads(text)


def example_text(trace: AttentionTrace, decimals: int = 2) -> ExampleText:
    labels = occurrence_labels([printable(token) for token in trace.tokens])
    return ExampleText(decimals, labels, labels)


# -- the data, without a browser -----------------------------------------------------------------


@pytest.mark.slow
def test_every_worked_example_is_the_terminals_for_every_word_and_key() -> None:
    """What the page's script puts together for any word, key and head is, character for
    character, what the terminal's lesson prints for that pair (ExampleText): the same
    numbers, at the same decimals, so the same arithmetic holds."""
    for layers, trace, selection in (
        traced(IT_SENTENCE),
        traced("The cat sat on the mat", causal=True, pad_to=8),
        traced("Thinking Machines", preset="paper"),
        traced("The cat sat on the mat", latent=5, positions="rope", causal=True),
    ):
        data = page_data(analysed(layers), trace, selection)
        text = example_text(trace)
        for head in range(trace.n_heads):
            for row, query in enumerate(group[0] for group in selection.row_groups):
                for key in range(trace.n_tokens):
                    dot, scaling, softmax = assembled(data, 0, head, row, key)
                    assert dot == text.dot_product(worked.dot_product(trace, head, query, key))
                    assert scaling == text.scaling(worked.scaling(trace, head, query, key))
                    example = worked.softmax_example(trace, head, query, key)
                    assert softmax == text.softmax(example)
                words = data["layers"][0]["heads"][head]["queries"][row]
                assert data["layers"][0]["heads"][head]["keys"][row] == worked.example_key(
                    trace, selection, head, query
                )
                summed = worked.weighted_sum(trace, head, query)
                assert words["sum"] == text.weighted_sum(summed, limit=12)
                assert words["element"] == text.weighted_sum_element(summed)
                assert words["projection"] == text.projection(worked.projection(trace, head, query))


@pytest.mark.slow
def test_the_lines_and_weights_are_the_traces() -> None:
    layers, trace, selection = traced(IT_SENTENCE, ViewOptions(focus="it"))
    data = page_data(analysed(layers), trace, selection, decimals=3)
    for head in range(trace.n_heads):
        lines = np.array(shown_table(data, 0, "lines", head), dtype=float)
        np.testing.assert_allclose(lines, trace.weights[head], atol=5e-3)
        assert shown_table(data, 0, "weights", head) == [
            [format_number(w, 3) for w in row] for row in trace.weights[head]
        ]
    assert data["start"]["row"] == trace.tokens.index("it")
    assert data["rows"][data["start"]["row"]]["word"] == "it"


def test_masked_pairs_are_marked_and_explained() -> None:
    layers, trace, selection = traced("The cat sat on the mat", causal=True, pad_to=8)
    data = page_data(analysed(layers), trace, selection)
    assert data["maskedCells"] == trace.masked.tolist()
    assert data["maskedKeys"] == trace.masked.tolist()
    # The mask is explained where the lesson explains it: the scaling step's note, in every head.
    scaled_step = data["layers"][0]["steps"][SCALED - 1]["heads"][0]
    notes = ["".join(run[0] for run in runs) for kind, runs in scaled_step if kind == "p"]
    assert any("Causal mask" in note and "Padding mask" in note for note in notes)
    assert data["sentence"] == "The cat sat on the mat"  # the padding is not the sentence
    parts = data["layers"][0]["heads"][0]["queries"][0]["softmaxAt"]
    assert all(level["shifted"][1:] == ["−∞"] * 7 for level in parts.values())
    assert all(
        pair[6] == "−∞"
        for key, pair in data["layers"][0]["heads"][0]["queries"][0]["keys"].items()
        if key != "0"
    )


@pytest.mark.slow
def test_hostile_words_cannot_leave_the_data_block() -> None:
    layers, trace, selection = traced(HOSTILE + " <!-- & \u2028")
    page = page_html(analysed(layers), trace, selection)
    assert page.count("</script") == 2  # the data block's end and the script's
    assert "<img" not in page and "<!--" not in page
    data = data_block(page)
    assert data["sentence"] == printable(" ".join(trace.tokens))
    assert [row["word"] for row in data["rows"]][:4] == ["<:1", "/", "script", ">:1"]
    assert script_json({"word": "</script>"}) == '{"word":"\\u003c/script\\u003e"}'
    assert json.loads(script_json(["<&>\u2028"])) == ["<&>\u2028"]


MARKUP = ["</script>", "<!--", "<img src=x onerror=alert(1)>", "&amp;", "\u2028", "it", "\x1b[2J"]


@pytest.mark.slow
@settings(max_examples=60)  # a page each (up to 30 words): 60 in CI too
@given(
    st.one_of(
        st.text(max_size=30),
        st.lists(st.sampled_from(MARKUP), min_size=1, max_size=6).map(" ".join),
        st.binary(max_size=20).map(os.fsdecode),  # argv's bytes that are not UTF-8
    )
)
def test_any_sentence_stays_text(sentence: str) -> None:
    """Whatever the sentence, the page is valid UTF-8, its data block ends where it should and
    reads back as the words, and nothing of it reaches the markup unescaped."""
    try:
        layers, trace, selection = traced(sentence)
    except AttnvizError:
        assume(False)
    page = page_html(analysed(layers), trace, selection)
    page.encode("utf-8")  # no lone surrogate
    block = page.split('id="attnviz-data">')[1].split("</script>")[0]
    assert "<" not in block and ">" not in block and "&" not in block
    assert page.count("</script") == 2 and page.count("<script") == 2
    data = json.loads(block)
    words = occurrence_labels([printable(word) for word in selection.row_words])
    assert [row["word"] for row in data["rows"]] == words
    heading = page.split('<h1 id="title">')[1].split("</h1>")[0]
    assert "<" not in heading and html.unescape(heading) == data["sentence"]


def test_the_page_loads_nothing_and_forbids_loading() -> None:
    import base64
    import hashlib

    layers, trace, selection = traced("I am good")
    page = page_html(analysed(layers), trace, selection)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None
    rules = dict(rule.strip().split(" ", 1) for rule in policy.group(1).split(";"))
    assert rules["default-src"] == "'none'" and rules["img-src"] == "data:"
    # Only the page's own script and style, by their hashes.
    script = page.split("<script>")[1].split("</script>")[0]
    style = page.split("<style>")[1].split("</style>")[0]
    for rule, text in (("script-src", script), ("style-src", style)):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert rules[rule] == f"'sha256-{digest}'"
    assert not re.search(r"https?:|//[a-z]", page.replace("http-equiv", ""))
    assert re.findall(r"""(?:src|href)=["']([^"']*)""", page) == ["data:,"]


def test_sizes() -> None:
    layers, trace, selection = traced("I am good")
    # About 66 kB of the lesson, 28 kB of its "What if" mode (whatif.js, X and the weights in
    # full precision) and 40 kB of "Try it" (tryit.js, eleven questions with their solutions):
    # test_page_whatif.py and test_page_tryit.py bound the modes' parts on their own.
    assert len(page_html(analysed(layers), trace, selection).encode()) < 150_000


@pytest.mark.slow
def test_a_model_page_of_fifteen_tokens_and_every_layer_and_head_is_under_3_mb() -> None:
    needs_model()
    layers, trace, selection = traced(IT_SENTENCE, model="minilm")
    assert trace.n_tokens == 15 and len(layers) == 6 and trace.n_heads == 12
    page = page_html(analysed(layers), trace, selection)
    assert len(page.encode()) <= MAX_BYTES
    data = data_block(page)
    assert len(data["layers"]) == 6 and all(len(d["heads"]) == 12 for d in data["layers"])
    assert data["start"]["layer"] == 5
    text = example_text(layers[4])
    dot, scaling, softmax = assembled(data, 4, 11, 10, 2)  # layer 5, head 12, "it", "animal"
    assert dot == text.dot_product(worked.dot_product(layers[4], 11, 10, 2))
    assert scaling == text.scaling(worked.scaling(layers[4], 11, 10, 2))
    assert softmax == text.softmax(worked.softmax_example(layers[4], 11, 10, 2))
    # n words × n keys a head: the page works out its first layer's heads, then the nearest
    # layers', within WORKED_PAIRS; the others' say where their numbers are (page.js).
    carried = [[("queries" in h) for h in layer["heads"]] for layer in data["layers"]]
    assert data["workedHeads"] == sum(map(sum, carried)) == WORKED_PAIRS // trace.n_tokens**2
    assert all(carried[5]) and all(carried[4]) and not any(carried[0])
    assert [layer["output"] is None for layer in data["layers"]][:2] == [True, True]


@pytest.mark.slow
def test_merged_words_and_hidden_tokens_follow_the_selection() -> None:
    needs_model()
    view = ViewOptions(words=True, hide_special=True)
    layers, trace, selection = traced("Tokenization isn't trivial, it said", view, model="minilm")
    data = page_data(analysed(layers), trace, selection)
    assert [row["word"] for row in data["rows"]][:2] == ["Tokenization", "isn't"]
    assert data["columns"][0]["positions"] == [1, 2]  # token, ##ization
    assert data["hidden"] == "[CLS] and [SEP]" and data["merged"]
    lines = np.array(shown_table(data, 5, "lines", 0), dtype=float)
    np.testing.assert_allclose(lines, selection.pairs(trace.weights[0], total=True), atol=5e-3)


# -- the command ---------------------------------------------------------------------------------


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_the_command_writes_one_page(tmp_path: Path) -> None:
    out = tmp_path / "lesson.html"
    code, stdout, stderr = run("page", "I am good", "-o", str(out), "--focus", "am", "-d", "3")
    assert code == 0, stderr
    assert stdout == "" and stderr == f"wrote {out}\n"
    data = data_block(out.read_text(encoding="utf-8"))
    assert data["rows"][data["start"]["row"]]["word"] == "am"
    assert shown_table(data, 0, "weights", 0)[0][0].count(".") == 1
    assert len(shown_table(data, 0, "weights", 0)[0][0].split(".")[1]) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lesson.html"]


@pytest.mark.slow
def test_head_keeps_only_that_head_and_layer_opens_on_that_layer(tmp_path: Path) -> None:
    needs_model()
    out = tmp_path / "it.html"
    code, _, stderr = run(
        "page", IT_SENTENCE, "-m", "minilm", "--layer", "3", "--head", "12", "-o", str(out)
    )
    assert code == 0, stderr
    data = data_block(out.read_text(encoding="utf-8"))
    assert data["heads"] == [11] and data["start"]["layer"] == 2
    assert all(len(layer["heads"]) == 1 for layer in data["layers"])


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("lesson.txt", "unknown extension '.txt'; use one of .html, .htm."),
        ("missing/lesson.html", "does not exist; create it first."),
        ("", "is a folder; give a file name in it, e.g."),
    ],
)
def test_bad_outputs_are_one_line_and_leave_nothing(
    tmp_path: Path, name: str, fragment: str
) -> None:
    code, stdout, stderr = run("page", "I am good", "-o", str(tmp_path / name))
    assert code == ExitStatus.CANNOT_WRITE, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: --output ")
    assert fragment in stderr and "Traceback" not in stdout + stderr
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_folder_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root may write anywhere (CI runs as root), so the permission check itself is faked.
    import os

    import attnviz.files.writing

    real_access = os.access
    monkeypatch.setattr(
        attnviz.files.writing.os,
        "access",
        lambda p, mode: Path(p) != tmp_path and real_access(p, mode),
    )
    code, _, stderr = run("page", "I am good", "--focus", "cat", "-o", str(tmp_path / "a.html"))
    assert code == ExitStatus.CANNOT_WRITE  # refused before the focus word is even looked up
    assert "is not writable; choose another." in stderr
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "keep.html"
    out.write_text("precious", encoding="utf-8")

    def full_disk(self: Path, *args: Any, **kwargs: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    code, _, stderr = run("page", "I am good", "-o", str(out))
    monkeypatch.undo()
    assert code == ExitStatus.CANNOT_WRITE
    assert stderr == f"error: Cannot write {out}: No space left on device.\n"
    assert out.read_text(encoding="utf-8") == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.html"]


# -- in a real browser ---------------------------------------------------------------------------


def open_page(driver: Any, path: Path, *, wait: bool = True) -> None:
    driver.get_log("performance")  # forget what earlier pages logged
    driver.get(path.as_uri())
    if wait:
        drawn(driver)


def drawn(driver: Any, seconds: float = 10) -> None:
    """Wait until the page is drawn: it inflates its tables of numbers first. Asked every 20 ms
    (Selenium's default is every 0.5 s, half a second lost on most pages)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, seconds, poll_frequency=0.02).until(
        lambda d: d.execute_script("return document.body.dataset.ready") == "true"
    )


def words(driver: Any, side: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, f"#{side} button"))


#: The button of ``side`` whose first word of its first line is the word: innerText, the text
#: as laid out, which is what Selenium's ``.text`` reads, in one call instead of one a button.
BUTTON = """
const [side, word] = arguments;
return [...document.querySelectorAll(`#${side} button`)]
    .find((b) => b.innerText.split("\\n")[0].split(" ")[0] === word);
"""


def button(driver: Any, side: str, word: str) -> Any:
    found = driver.execute_script(BUTTON, side, word)
    assert found is not None, f"no button {word!r} in #{side}"
    return found


def text_contents(driver: Any, selector: str) -> list[str]:
    """The textContent of every node ``selector`` matches, in one call to the browser."""
    script = "return [...document.querySelectorAll(arguments[0])].map((n) => n.textContent)"
    found: list[str] = driver.execute_script(script, selector)
    return found


#: The textContent of each node of a class inside the step's article; null without the article.
IN_STEP = """
const article = document.getElementById(arguments[0]);
return article && [...article.getElementsByClassName(arguments[1])].map((n) => n.textContent);
"""


def in_step(driver: Any, step: int, class_name: str) -> list[str]:
    found: list[str] | None = driver.execute_script(IN_STEP, f"step-{step}", class_name)
    assert found is not None, f"the page has no step-{step}"
    return found


def worked_lines(driver: Any, step: int) -> list[str]:
    return in_step(driver, step, "worked")


def notes(driver: Any, step: int) -> list[str]:
    return in_step(driver, step, "note")


def shown_weights(driver: Any) -> list[str]:
    return text_contents(driver, "#keys .weight")


def text_of_output(trace: AttentionTrace, query: int) -> str:
    return example_text(trace).output_sum(worked.output_element(trace, query))


def choose(driver: Any, control: str, label: str) -> None:
    """Choose the option ``label``; a head by its number alone ("Head 12"), whatever the type
    the menu names after it ("Head 12 · mixed")."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    menu = Select(driver.find_element(By.ID, control))
    texts = [option.text for option in menu.options]
    menu.select_by_index(
        next(i for i, text in enumerate(texts) if text == label or text.startswith(label + " · "))
    )


@pytest.mark.browser
def test_clicking_it_shows_the_traces_weights_and_z(browser: Any, random_page: Any) -> None:
    path, trace = random_page
    open_page(browser, path)
    it = trace.tokens.index("it")
    button(browser, "queries", "animal").click()
    button(browser, "queries", "it").click()
    assert button(browser, "queries", "it").get_attribute("aria-pressed") == "true"
    text = example_text(trace)
    for head in range(trace.n_heads):
        choose(browser, "head", f"Head {head + 1}")
        assert shown_weights(browser) == [format_number(w, 2) for w in trace.weights[head, it]]
        summed = worked.weighted_sum(trace, head, it)
        assert worked_lines(browser, Z) == [
            text.weighted_sum(summed, limit=12),
            text.weighted_sum_element(summed),
        ]
        # The z terms read off the page are the trace's weights and values, as rounded there.
        element = worked_lines(browser, Z)[1]
        terms = re.findall(r"\(?(-?\d+\.\d+)\)?×\(?(-?\d+\.\d+)\)?", element.split(" = ")[1])
        order = np.argsort(-trace.weights[head, it], kind="stable")
        for (weight, value), key in zip(terms, order, strict=True):
            decimals = len(weight.split(".")[1])
            assert abs(float(weight) - trace.weights[head, it, key]) <= 0.5 * 10**-decimals
            assert abs(float(value) - trace.V[head, key, 0]) <= 0.5 * 10**-decimals
        assert element.endswith(f" = {format_number(trace.Z[head, it, 0], 2)}")
        # The lines: one per key weighing at least 0.005, as thick as its weight.
        lines = browser.execute_script(
            "return [...document.querySelectorAll('#lines line')]"
            ".map(l => Number(l.getAttribute('stroke-width')))"
        )
        heavy = [w for w in trace.weights[head, it] if w >= 0.005]
        assert len(lines) == len(heavy)
        assert np.argmax(lines) == int(np.argmax(heavy))


@pytest.mark.browser
def test_a_key_clicked_is_worked_out_in_the_score_scale_and_softmax_steps(
    browser: Any, random_page: Any
) -> None:
    path, trace = random_page
    open_page(browser, path)
    it, animal = trace.tokens.index("it"), trace.tokens.index("animal")
    choose(browser, "head", "Head 2")
    button(browser, "keys", "animal").click()
    assert button(browser, "keys", "animal").get_attribute("aria-pressed") == "true"
    text = example_text(trace)
    assert worked_lines(browser, SCORES) == [
        text.dot_product(worked.dot_product(trace, 1, it, animal))
    ]
    assert worked_lines(browser, SCALED) == [text.scaling(worked.scaling(trace, 1, it, animal))]
    # The softmax step as the terminal writes it, on one line.
    (one_line,) = worked_lines(browser, WEIGHTS)
    assert one_line == text.softmax(worked.softmax_example(trace, 1, it, animal))
    assert one_line.rsplit(" = ", 1)[1] == format_number(trace.weights[1, it, animal], 2)


@pytest.mark.browser
def test_head_and_layer_switch_in_model_mode(browser: Any, model_page: Any) -> None:
    path, layers = model_page
    open_page(browser, path)
    it, animal = 10, 2
    assert layers[0].tokens[it] == "it" and layers[0].tokens[animal] == "animal"
    for layer, head in ((6, 12), (5, 1), (1, 5)):
        choose(browser, "layer", f"Layer {layer} of 6")
        choose(browser, "head", f"Head {head}")
        trace = layers[layer - 1]
        assert shown_weights(browser) == [format_number(w, 2) for w in trace.weights[head - 1, it]]
        button(browser, "keys", "animal").click()
        text = example_text(trace)
        if layer == 1:  # beyond the pairs a page works out: it says where they are
            (note,) = notes(browser, 3)
            assert note.startswith(f"The worked numbers of Layer 1 of 6, head {head} are left out")
            assert note.endswith(
                "attnviz page with --layer 1 --open-head 5 opens on it and carries them."
            )
            assert worked_lines(browser, SCORES) == []
            continue
        expected = text.dot_product(worked.dot_product(trace, head - 1, it, animal))
        assert worked_lines(browser, SCORES) == [expected]
        assert worked_lines(browser, OUTPUT) == [text.output_sum(worked.output_element(trace, it))]
        title = browser.find_element("id", "picture-title").text
        assert title == f"Where does “it” look? (Layer {layer} of 6, head {head})"
    choose(browser, "layer", "Layer 6 of 6")
    choose(browser, "head", "All heads")
    assert len(browser.find_elements("css selector", "#lines line")) > 12 * 3
    legend = browser.find_element("id", "legend").text
    assert all(f"head {h}" in legend for h in range(1, 13))
    for number in PER_HEAD:  # each head's own steps wait for a head; the output uses them all
        assert worked_lines(browser, number) == []
        text = browser.find_element("id", f"step-{number}").text
        assert text.endswith("This step happens in each head separately: choose a head.")
    assert worked_lines(browser, OUTPUT) == [text_of_output(layers[5], it)]


@pytest.mark.browser
def test_step_by_step_with_the_buttons_and_the_arrow_keys(browser: Any, random_page: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    path, _ = random_page
    open_page(browser, path)

    def visible() -> list[str]:
        return [
            a.get_attribute("id")
            for a in browser.find_elements(By.CSS_SELECTOR, ".step")
            if a.is_displayed()
        ]

    assert visible() == [f"step-{n}" for n in range(1, LAST + 1)]
    browser.find_element(By.ID, "next").click()
    assert visible() == ["step-1"]
    assert browser.find_element(By.ID, "step-label").text == f"Step 1 of {LAST}"
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)
    body.send_keys(Keys.ARROW_RIGHT)
    assert visible() == ["step-3"]
    body.send_keys(Keys.PAGE_DOWN)  # a presenter's clicker
    browser.find_element(By.ID, "previous").click()
    body.send_keys(Keys.ARROW_LEFT)
    assert visible() == ["step-2"]
    for _ in range(LAST + 2):  # past the last step: the page stays there
        body.send_keys(Keys.ARROW_RIGHT)
    assert visible() == [f"step-{LAST}"] and not browser.find_element(By.ID, "next").is_enabled()
    browser.find_element(By.ID, "all-steps").click()
    assert len(visible()) == LAST
    # Keyboard only: Tab to a word, Enter or Space to choose it.
    word = button(browser, "queries", "cross")
    word.send_keys(Keys.ENTER)
    assert word.get_attribute("aria-pressed") == "true"
    button(browser, "queries", "was").send_keys(Keys.SPACE)
    assert button(browser, "queries", "was").get_attribute("aria-pressed") == "true"
    # The text size: larger, and the lines follow the words.
    before = browser.execute_script("return getComputedStyle(document.documentElement).fontSize")
    browser.find_element(By.ID, "larger").click()
    after = browser.execute_script("return getComputedStyle(document.documentElement).fontSize")
    assert (before, after) == ("16px", "18px")


@pytest.mark.browser
def test_a_hostile_sentence_is_shown_as_text_and_never_runs(browser: Any, tmp_path: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    for options in ({}, {"model": "minilm"}):
        layers, trace, selection = traced(HOSTILE, **options)
        path = tmp_path / "hostile.html"
        path.write_text(page_html(analysed(layers), trace, selection), encoding="utf-8")
        open_page(browser, path)
        for word in words(browser, "queries")[:6]:
            word.click()
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018 - reading it is the check
        assert browser.find_elements(By.TAG_NAME, "img") == []
        assert browser.execute_script("return document.scripts.length") == 2
        title = browser.find_element(By.ID, "title").text
        assert title == (HOSTILE if options else " ".join(trace.tokens))
        if options:  # a model keeps the sentence as written: the header shows it as text
            about = browser.find_element(By.ID, "about-text").get_attribute("textContent")
            assert f"Sentence: {HOSTILE}" in about


@pytest.mark.browser
def test_no_request_leaves_the_page(browser: Any, model_page: Any) -> None:
    from selenium.webdriver.common.by import By

    path, _ = model_page
    open_page(browser, path)
    for word in words(browser, "queries")[:4]:
        word.click()
    choose(browser, "layer", "Layer 2 of 6")
    browser.find_element(By.CSS_SELECTOR, "#about summary").click()
    browser.find_element(By.ID, "next").click()
    events = [json.loads(entry["message"])["message"] for entry in browser.get_log("performance")]
    sent = [event["params"] for event in events if event["method"] == "Network.requestWillBeSent"]
    # Chromium's own pages (its new-tab page at start-up) log chrome:// loads: not the page's.
    page = [
        request["request"]["url"] for request in sent if request["documentURL"] == path.as_uri()
    ]
    assert page and all(url == path.as_uri() or url.startswith("data:") for url in page)
    assert not [r["request"]["url"] for r in sent if r["request"]["url"].startswith(REMOTE)]
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []  # no script error, and nothing the policy had to block


@pytest.mark.browser
def test_screenshots_are_not_blank(
    browser: Any, random_page: Any, model_page: Any, tmp_path: Path
) -> None:
    from matplotlib.image import imread

    for name, (path, _) in (("random", random_page), ("minilm", model_page)):
        open_page(browser, path)
        shot = tmp_path / f"{name}.png"
        browser.save_screenshot(str(shot))
        pixels = imread(shot)
        assert pixels.shape[:2] == (720, 1280)
        assert pixels[..., :3].std() > 0.1
        # Everything the picture needs is on the first screen: every word and its lines.
        bottom = browser.execute_script(
            "return document.querySelector('#keys li:last-child').getBoundingClientRect().bottom"
        )
        assert bottom <= 720


@pytest.mark.browser
def test_the_notebook_display_runs_the_page_in_its_own_frame(browser: Any, tmp_path: Path) -> None:
    """attnviz.page(trace) in a notebook cell: the page, in a sandboxed iframe's srcdoc,
    works as the file does, and nothing of it leaks into the notebook around it."""
    from selenium.webdriver.common.by import By

    import attnviz

    shown = attnviz.explain(IT_SENTENCE, focus="it")
    trace = shown.trace
    cell = tmp_path / "cell.html"
    cell.write_text(
        "<!doctype html><html><body><p id='notebook'>a notebook cell</p>"
        f"{attnviz.page(shown)._repr_html_()}</body></html>",
        encoding="utf-8",
    )
    open_page(browser, cell, wait=False)
    browser.switch_to.frame(browser.find_element(By.TAG_NAME, "iframe"))
    try:
        drawn(browser)
        it = trace.tokens.index("it")
        button(browser, "queries", "it").click()
        assert shown_weights(browser) == [format_number(w, 2) for w in trace.weights[0, it]]
    finally:
        browser.switch_to.default_content()
    assert browser.find_element(By.ID, "notebook").text == "a notebook cell"
    assert not browser.find_elements(By.CSS_SELECTOR, "body > script")


@pytest.mark.browser
def test_real_pointer_clicks_select_the_word_under_the_pointer(
    browser: Any, model_page: Any
) -> None:
    """A mouse moved onto each word and clicked, at 1280 × 720, selects that word: the layout
    does not move under the pointer when the title changes with the word."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    path, layers = model_page
    open_page(browser, path)
    names = [b.text.split("\n")[0].split(" ")[0] for b in words(browser, "queries")]
    for name in names:
        target = button(browser, "queries", name)
        ActionChains(browser).move_to_element(target).pause(0.05).click().perform()
        title = browser.find_element(By.ID, "picture-title").text
        assert f"“{name}”" in title, (name, title)
        assert button(browser, "queries", name).get_attribute("aria-pressed") == "true"


# -- beside the row: contributions, rollout, head types, the caution; a second sentence --------


def table_cells(driver: Any, table: str) -> list[list[str]]:
    """Each row's cells' textContent, headers and data alike, in one call to the browser."""
    script = (
        "return [...document.querySelectorAll(`#${arguments[0]} tr`)]"
        ".map((row) => [...row.children].map((cell) => cell.textContent))"
    )
    cells: list[list[str]] = driver.execute_script(script, table)
    return cells


@pytest.mark.browser
def test_the_row_shows_what_each_word_adds_its_rollout_and_the_heads_type(
    browser: Any, model_page: Any
) -> None:
    """MiniLM, layer 6, head 12, the row of "it": beside each weight ‖w_ij·f_h(x_j)‖ and its
    share (attnviz.analysis.contribution), rollout through layer 6 (analysis.rollout), the
    sentence on [CLS]'s weight parked on a short value, the head's type in the menu, and the
    caution for a trained model."""
    from selenium.webdriver.common.by import By

    from attnviz.analysis.contribution import row_contribution
    from attnviz.analysis.head_types import trace_head_types
    from attnviz.analysis.rollout import trace_rollout

    path, layers = model_page
    open_page(browser, path)
    choose(browser, "layer", "Layer 6 of 6")
    choose(browser, "head", "Head 12")
    button(browser, "queries", "it").click()
    trace, it = layers[5], 10
    row = row_contribution(trace, 11, it)
    rolled = trace_rollout(layers)[5, it]
    cells = table_cells(browser, "row-table")
    assert cells[0] == ["word", "weight w_ij", "‖w_ij·f_h(x_j)‖", "share", "rollout"]
    assert [c[1:] for c in cells[1:]] == [
        [format_number(k.weight, 2), format_number(k.norm, 2), format_number(k.share, 2),
         format_number(r, 2)]
        for k, r in zip(row.keys, rolled, strict=True)
    ]  # fmt: skip
    note = browser.find_element(By.ID, "contribution-note").text
    total = format_number(row.total, 2)
    assert note == (
        "“[CLS]” has weight 0.15 but a share of only 0.01: its value after W_O is short, "
        f"‖f_h(x_[CLS])‖ = {format_number(row.keys[0].transformed_norm, 2)} against {total}, "
        "the row's mean ‖f‖ weighted by w (its total Σ_j w_ij·‖f_h(x_j)‖), so the weight parked "
        "on it adds little to the output of “it”."
    )
    assert "Rollout through layer 6" in browser.find_element(By.ID, "rollout-note").text
    kind = trace_head_types(trace)[11].type.value
    menu = browser.find_element(By.ID, "head").get_attribute("value")
    assert menu == "11" and f"Head 12 · {kind}" in browser.find_element(By.ID, "head").text
    assert browser.find_element(By.ID, "head-type").text.startswith("Head 12 ")
    caution = browser.find_element(By.ID, "caveat").text
    assert caution.startswith("A caution: a high weight shows where the vector of “it”")
    # Every head at once: the rollout alone, which is the layer's, not a head's.
    choose(browser, "head", "All heads")
    assert table_cells(browser, "row-table")[0] == ["word", "rollout"]
    assert browser.find_element(By.ID, "contribution-note").text.startswith("Choose a head")
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280


@pytest.mark.browser
def test_a_page_of_two_sentences_opens_where_the_row_changed_most(
    browser: Any, tmp_path: Path
) -> None:
    """attnviz page A --compare B with the trained coref model: "it" moves from "animal" to
    "street"; a head of the ranking, clicked, is shown; random weights open on --open-head."""
    from selenium.webdriver.common.by import By

    out = tmp_path / "pair.html"
    wide = IT_SENTENCE.replace("tired", "wide")
    code, _, stderr = run("page", IT_SENTENCE, "-m", "coref", "--compare", wide, "-o", str(out))
    assert code == 0, stderr
    open_page(browser, out)
    assert browser.find_element(By.ID, "compare").is_displayed()
    assert browser.find_element(By.ID, "compare-title").text == f"Sentence B: {wide}"
    title = browser.find_element(By.ID, "picture-title").text
    assert title == "Where does “it” look? (Layer 2 of 2, head 1)"
    said = browser.find_element(By.ID, "compare-said").text
    assert (
        said
        == "In this head “it” moves: its top word is “animal” in A (1.00) and “street” in B (1.00)."
    )
    ranked = table_cells(browser, "compare-ranked")
    assert ranked[0] == ["head", "type", "TV", "top in A", "w_A", "top in B", "w_B", "moves"]
    assert [r[0] for r in ranked[1:]] == ["L2 H1", "L1 H1"]
    browser.find_elements(By.CSS_SELECTOR, "#compare-ranked tr")[2].click()
    title = browser.find_element(By.ID, "picture-title").text
    assert title == "Where does “it” look? (Layer 1 of 2, head 1)"
    assert browser.find_element(By.ID, "compare-row-title").text.endswith(
        "Layer 1 of 2, head 1, A beside B"
    )
    rows = table_cells(browser, "compare-row")
    assert rows[0] == ["word", "w_A", "w_B", "|w_A − w_B|"] and rows[-1][0] == "tired / wide"

    out = tmp_path / "random.html"
    code, _, stderr = run(
        "page", IT_SENTENCE, "--compare", wide, "--open-head", "2", "-o", str(out)
    )
    assert code == 0, stderr
    open_page(browser, out)
    assert browser.find_element(By.ID, "head").get_attribute("value") == "1"
    assert browser.find_element(By.ID, "caveat").text == ""  # random weights: not interpreted
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
