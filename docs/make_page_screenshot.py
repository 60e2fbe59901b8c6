"""Regenerate docs/page.png: the lesson page `attnviz page` writes, as headless Chromium shows it
on a 1280 × 720 screen, after a teacher's clicks: head 12 chosen, then step 5 of 7.

    python docs/make_page_screenshot.py

Needs the model extra (all-MiniLM-L6-v2), selenium (the test extra) and Debian's Chromium and
chromedriver (scripts/install-browser); nothing is downloaded.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from attnviz.cli import run

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "page.png"
SENTENCE = "The animal didn't cross the street because it was too tired"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "it.html"
        assert run(["page", "-m", "minilm", SENTENCE, "-o", str(page)]) == 0
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for argument in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={folder}/profile",
        ):
            options.add_argument(argument)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": False},
            )
            driver.get(page.as_uri())
            Select(driver.find_element(By.ID, "head")).select_by_visible_text("Head 12")
            for _ in range(5):
                driver.find_element(By.ID, "next").click()
            driver.save_screenshot(str(OUTPUT))
        finally:
            driver.quit()
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
