"""The lesson page at its largest text (A+ until it stops), on a 1280 × 720 and a 1920 × 1080
screen, in headless Chromium: no word or number is cut. Text wraps; a wide table scrolls
sideways in its own box; the page itself is never wider than the screen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from attnviz.render.page.page import page_html
from render.analysed import analysed
from render.page.test_page import (
    IT_SENTENCE,
    open_page,
    run,
    traced,
    words,
)

SCREENS = [(1280, 720), (1920, 1080)]

#: Every element that cuts its text: one whose overflow is hidden or clipped while its content
#: is wider or taller than its box, one that ends its text with an ellipsis, a control (button,
#: menu) whose text is wider than it, and any box whose text alone spills out of it. Then the
#: page itself, when it is wider than the screen. Each as [what, its text, sizes].
CUT_TEXT = r"""
const cut = [];
const clips = (value) => value === "hidden" || value === "clip";
for (const node of document.querySelectorAll("body *")) {
  if (node.closest("[hidden], svg, script, noscript")) continue;
  const style = getComputedStyle(node);
  if (style.display === "none" || style.display === "inline" || style.visibility === "hidden") {
    continue;
  }
  const wide = node.scrollWidth > node.clientWidth + 1;
  const tall = node.scrollHeight > node.clientHeight + 1;
  const control = ["BUTTON", "SELECT"].includes(node.tagName);
  const leaf = node.children.length === 0 && node.textContent.trim() !== "";
  if (
    (clips(style.overflowX) && wide) ||
    (clips(style.overflowY) && tall) ||
    (style.textOverflow === "ellipsis" && wide) ||
    (control && wide) ||
    (leaf && (wide || tall))
  ) {
    const name = node.tagName + (node.id ? "#" + node.id : "") + "." + node.className;
    cut.push([name, node.textContent.slice(0, 40), node.scrollWidth, node.clientWidth]);
  }
}
const page = document.documentElement;
if (page.scrollWidth > page.clientWidth) cut.push(["page", "", page.scrollWidth, page.clientWidth]);
return cut;
"""

#: Whether every line of the picture (one head shown) starts at the middle of the chosen word
#: and ends at the middle of a key, with words that take two lines at the largest text.
LINES_MEET_WORDS = r"""
const svg = document.getElementById("lines");
const top = svg.getBoundingClientRect().top;
const middle = (node) => {
  const box = node.getBoundingClientRect();
  return box.top + box.height / 2 - top;
};
const chosen = middle(document.querySelector('#queries button[aria-pressed="true"]'));
const keys = [...document.querySelectorAll("#keys button")].map(middle);
const lines = [...svg.querySelectorAll("line")];
return (
  lines.length > 0 &&
  lines.every((line) => Math.abs(Number(line.getAttribute("y1")) - chosen) < 1) &&
  lines.every((line) => keys.some((key) => Math.abs(Number(line.getAttribute("y2")) - key) < 1))
);
"""

LONG_WORD = (
    "Supercalifragilisticexpialidocious antidisestablishmentarianism sat because it was tired"
)


@pytest.fixture(scope="module")
def compare_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two sentences, the trained coref model: the comparison's tables are on the page too."""
    path = tmp_path_factory.mktemp("pages") / "tired-wide.html"
    wide = IT_SENTENCE.replace("tired", "wide")
    code, _, stderr = run("page", "-m", "coref", IT_SENTENCE, "--compare", wide, "-o", str(path))
    assert code == 0, stderr
    return path


@pytest.fixture(scope="module")
def long_word_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Words longer than a word's box (14rem) at the largest text: they wrap, never cut."""
    layers, trace, selection = traced(LONG_WORD)
    path = tmp_path_factory.mktemp("pages") / "long-words.html"
    path.write_text(page_html(analysed(layers), trace, selection), encoding="utf-8")
    return path


@pytest.fixture
def screen(browser: Any) -> Iterator[Any]:
    """The shared browser, its screen sized by the test; 1280 × 720 again afterwards."""

    def sized(width: int, height: int) -> None:
        browser.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    try:
        yield sized
    finally:
        sized(1280, 720)


def click(driver: Any, control: str) -> None:
    driver.execute_script(f"document.getElementById({control!r}).click()")


def largest_text(driver: Any) -> None:
    """A+ until it is disabled: the page's largest text size."""
    for _ in range(20):
        if not driver.execute_script("return document.getElementById('larger').disabled"):
            click(driver, "larger")
    size = driver.execute_script("return getComputedStyle(document.documentElement).fontSize")
    assert size == f"{driver.execute_script('return FONT_SIZES.at(-1)')}px"


def states(driver: Any) -> Iterator[str]:
    """The page as it is, then each step alone, every head at once, and the longest word
    chosen: named as they come."""
    yield "every step"
    while driver.execute_script("return !document.getElementById('next').disabled"):
        click(driver, "next")
        yield driver.execute_script("return document.getElementById('step-label').textContent")
    click(driver, "all-steps")
    if driver.execute_script("return document.getElementById('head').options.length > 1"):
        driver.execute_script(
            "const menu = document.getElementById('head'); menu.value = '-1';"
            "menu.dispatchEvent(new Event('change'));"
        )
        yield "every head"
    driver.execute_script(
        "const words = [...document.querySelectorAll('#queries button')];"
        "words.reduce((a, b) => (b.textContent.length > a.textContent.length ? b : a)).click();"
    )
    yield "the longest word"


@pytest.mark.browser
@pytest.mark.parametrize(("width", "height"), SCREENS)
def test_at_the_largest_text_no_word_or_number_is_cut(
    browser: Any,
    screen: Any,
    random_page: Any,
    model_page: Any,
    compare_page: Path,
    long_word_page: Path,
    width: int,
    height: int,
    tmp_path: Path,
) -> None:
    from matplotlib.image import imread

    screen(width, height)
    pages = [random_page[0], model_page[0], compare_page, long_word_page]
    for path in pages:
        open_page(browser, path)
        largest_text(browser)
        assert browser.execute_script(LINES_MEET_WORDS), path.name
        for state in states(browser):
            assert browser.execute_script(CUT_TEXT) == [], (path.name, width, state)
        shot = tmp_path / f"{path.stem}-{width}.png"
        browser.save_screenshot(str(shot))
        pixels = imread(shot)
        assert pixels.shape[:2] == (height, width)
        assert pixels[..., :3].std() > 0.1


@pytest.mark.browser
def test_the_check_finds_a_word_cut_where_there_is_one(
    browser: Any, screen: Any, random_page: Any
) -> None:
    """CUT_TEXT sees a word that its box cuts, and a table wider than the page."""
    open_page(browser, random_page[0])
    browser.execute_script(
        "const word = document.querySelector('#keys .label');"
        "word.style.overflow = 'hidden'; word.style.whiteSpace = 'nowrap';"
        "word.style.width = '1ch';"
    )
    (cut,) = browser.execute_script(CUT_TEXT)
    assert cut[0] == "SPAN.label" and cut[1] == "The:1"
    open_page(browser, random_page[0])
    browser.execute_script("document.body.style.width = '3000px'")
    assert [cut[0] for cut in browser.execute_script(CUT_TEXT)] == ["page"]


@pytest.mark.browser
def test_at_the_largest_text_the_words_stay_under_the_pointer(
    browser: Any, screen: Any, long_word_page: Path
) -> None:
    """A word hovered retitles the picture ("Where does “was” look?"): at the largest text a
    long word's title takes two lines where a short one's takes one, yet no word moves under
    the pointer, whichever word it rests on."""
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, long_word_page)
    largest_text(browser)
    where = (
        "return [...document.querySelectorAll('#queries button')]"
        ".map((word) => word.getBoundingClientRect().top + window.scrollY)"
    )
    before = browser.execute_script(where)
    titles = set()
    for word in words(browser, "queries"):
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", word)
        ActionChains(browser).move_to_element(word).pause(0.05).perform()
        titles.add(
            browser.execute_script("return document.getElementById('picture-title').textContent")
        )
        assert browser.execute_script(where) == before, word.text
    assert len(titles) == len(before)  # the title changed with each word under the pointer
