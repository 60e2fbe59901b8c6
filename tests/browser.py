"""Headless Chromium from Debian's packages, as the browser tests and the screenshot scripts in
docs/ start it: nothing is downloaded, and nothing reaches the network."""

from __future__ import annotations

from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

#: Without the background-networking flags Chromium tries Google's hosts at every start.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def new_driver(profile: str, *extra: str, logs: bool = False) -> Any:
    """A selenium driver for Debian's chromium through its chromedriver (a driver path given
    to Service skips Selenium Manager, which would download one), on a 1280 × 720 screen."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (*FLAGS, *extra, f"--user-data-dir={profile}"):
        options.add_argument(argument)
    if logs:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": False},
    )
    return driver
