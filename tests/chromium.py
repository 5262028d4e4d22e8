"""Headless Debian Chromium for the browser tests: where it is, and a driver set up the same way."""
from __future__ import annotations

import os

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
HAVE_CHROMIUM = all(os.access(p, os.X_OK) for p in (CHROMIUM, CHROMEDRIVER))
NEEDS_CHROMIUM = f"needs Debian chromium ({CHROMIUM}) and {CHROMEDRIVER}"


def chromium(profile_dir: str, height: int = 1400) -> webdriver.Chrome:
    """A headless Chromium with its browser console kept; no network besides the pages asked for."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--window-size=1280,{height}", f"--user-data-dir={profile_dir}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
