"""Headless Debian Chromium for the browser tests: where it is, and a driver set up the same way."""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
HAVE_CHROMIUM = all(os.access(p, os.X_OK) for p in (CHROMIUM, CHROMEDRIVER))
NEEDS_CHROMIUM = f"needs Debian chromium ({CHROMIUM}) and {CHROMEDRIVER}"


def chromium(profile_dir: str, height: int = 1400, language: str = "en-US") -> webdriver.Chrome:
    """A headless Chromium with its browser console kept; no network besides the pages asked for.

    `language` is what it asks for in Accept-Language (and its own interface language).
    """
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--window-size=1280,{height}", f"--user-data-dir={profile_dir}",
        f"--lang={language}",
    ):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"intl.accept_languages": language})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


@contextlib.contextmanager
def logged_in_chromium(
    site_url: str, user: Any, height: int = 1400, language: str = "en-US",
) -> Iterator[webdriver.Chrome]:
    """A headless Chromium holding `user`'s session cookie for the live server at `site_url`,
    asking for `language`.

    The driver has `base_url` set; its profile folder is removed when the block ends.
    """
    from django.test import Client

    client = Client()
    client.force_login(user)
    profile = tempfile.TemporaryDirectory(prefix="sparkdash-chromium-", ignore_cleanup_errors=True)
    driver = chromium(profile.name, height=height, language=language)
    try:
        driver.get(site_url + "/login/")
        driver.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value})
        driver.base_url = site_url
        yield driver
    finally:
        driver.quit()
        profile.cleanup()
