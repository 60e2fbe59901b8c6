"""Regenerate docs/page.png: the lesson page `attnviz page` writes, as headless Chromium shows it
on a 1280 × 720 screen, opened on head 12 (``--open-head 12``), then Next five times: step 5 of 7;
docs/page_whatif.png and docs/page_tryit.png: the page of "The cat sat on the mat" (``--causal``)
in its two modes on a 1280 × 1400 screen, a number of X changed in one, a scaled score answered
as the raw score in the other; and docs/generate_page.png: the page `attnviz generate -m smollm2
… --page` writes, moved back to its second new token.

    python docs/make_page_screenshot.py

Needs the model extra (all-MiniLM-L6-v2), selenium (the test extra) and Debian's Chromium and
chromedriver (scripts/install-browser); nothing is downloaded.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from attnviz.cli import run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the browser as the tests start it

from browser import new_driver  # noqa: E402

OUTPUT = ROOT / "docs" / "page.png"
WHATIF_OUTPUT = ROOT / "docs" / "page_whatif.png"
TRYIT_OUTPUT = ROOT / "docs" / "page_tryit.png"
MODES_SENTENCE = "The cat sat on the mat"
GENERATE_OUTPUT = ROOT / "docs" / "generate_page.png"
PROMPT = "The capital of France is"
SENTENCE = "The animal didn't cross the street because it was too tired"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "it.html"
        assert run(["page", "-m", "minilm", SENTENCE, "--open-head", "12", "-o", str(page)]) == 0
        driver = new_driver(f"{folder}/profile", "--hide-scrollbars")
        try:
            driver.get(page.as_uri())
            # The page inflates its tables of numbers before it draws itself.
            WebDriverWait(driver, 10).until(
                lambda d: d.execute_script("return document.body.dataset.ready") == "true"
            )
            for _ in range(5):
                driver.find_element(By.ID, "next").click()
            driver.save_screenshot(str(OUTPUT))
        finally:
            driver.quit()
    print(f"wrote {OUTPUT}")
    make_mode_screenshots()
    make_generation_screenshot()


def make_mode_screenshots() -> None:
    """The page of ``MODES_SENTENCE`` (causal) in What if, X's first number for "cat" changed to
    2.5, and in Try it, head 1's scaled score answered with its raw score (forgot ÷√d_k)."""
    import json

    from selenium.webdriver.common.keys import Keys

    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "cat.html"
        assert run(["page", MODES_SENTENCE, "--causal", "-o", str(page)]) == 0
        html = page.read_text(encoding="utf-8")
        data = json.loads(html.split('id="attnviz-data">')[1].split("</script>")[0])
        driver = new_driver(f"{folder}/profile", "--hide-scrollbars")
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 1400, "deviceScaleFactor": 1, "mobile": False},
        )
        try:
            driver.get(page.as_uri())
            WebDriverWait(driver, 10).until(
                lambda d: d.execute_script("return document.body.dataset.ready") == "true"
            )
            # "mat", the last word, reads every word: its lines show the change.
            driver.find_elements(By.CSS_SELECTOR, "#queries button")[-1].click()
            driver.find_element(By.ID, "whatif-mode").click()
            cell = driver.find_element(By.CSS_SELECTOR, 'td[data-array="X"][data-index="8"]')
            cell.click()  # "cat" is row 2 of X, d_model 8 wide: its first number
            field = driver.find_element(By.CSS_SELECTOR, ".whatif-input")
            field.send_keys(Keys.CONTROL, "a")
            field.send_keys("2.5", Keys.ENTER)
            driver.save_screenshot(str(WHATIF_OUTPUT))
            driver.find_element(By.ID, "whatif-reset").click()
            driver.find_element(By.ID, "tryit-mode").click()
            asked = [q for q in data["tryit"]["questions"] if q["step"] == "scaled"][0]
            number = data["tryit"]["questions"].index(asked)
            raw = next(m["value"] for m in asked["mistakes"] if m["key"] == "forgot_scale")
            field = driver.find_element(By.CSS_SELECTOR, f'.tryit-input[data-question="{number}"]')
            driver.execute_script(
                "arguments[0].closest('article').scrollIntoView({block: 'start'})", field
            )
            field.send_keys(repr(raw), Keys.ENTER)
            driver.save_screenshot(str(TRYIT_OUTPUT))
        finally:
            driver.quit()
    print(f"wrote {WHATIF_OUTPUT} and {TRYIT_OUTPUT}")


def make_generation_screenshot() -> None:
    """``attnviz generate -m smollm2 "The capital of France is" --tokens 5 --page …``, shown on
    step 3 of 6 (token 2) at 1280 × 720."""
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "writing.html"
        arguments = ["generate", "-m", "smollm2", PROMPT, "--tokens", "5", "--pace", "0"]
        assert run([*arguments, "--page", str(page)]) == 0
        driver = new_driver(f"{folder}/profile", "--hide-scrollbars")
        try:
            driver.get(page.as_uri())
            for _ in range(3):
                driver.find_element(By.ID, "previous").click()
            driver.save_screenshot(str(GENERATE_OUTPUT))
        finally:
            driver.quit()
    print(f"wrote {GENERATE_OUTPUT}")


if __name__ == "__main__":
    main()
