"""Headless Debian Chromium for the browser tests: where it is, a driver set up the same way, and
one Chromium per language shared by the whole test session (a start costs ~0.5-1 s, ~45 tests use one).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTH = 1280  # every window's width; its height is each test's
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
        "--no-first-run", f"--window-size={WIDTH},{height}", f"--user-data-dir={profile_dir}",
        f"--lang={language}",
    ):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"intl.accept_languages": language})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


_shared: dict[str, tuple[webdriver.Chrome, str]] = {}


def shared_chromium(height: int = 1400, language: str = "en-US") -> webdriver.Chrome:
    """The session's Chromium asking for `language`, as a new one would be: one new blank tab (what
    an earlier test injected into its pages or set on its network went with its tabs), no cookies,
    an empty console log, a window `height` tall. Started on first use, quit at exit.
    """
    driver = _alive(language)
    if driver is None:
        profile = tempfile.mkdtemp(prefix=f"sparkdash-chromium-{language}-")
        driver = chromium(profile, height=height, language=language)
        _shared[language] = (driver, profile)
    earlier = driver.window_handles
    driver.switch_to.new_window("tab")
    fresh = driver.current_window_handle
    for handle in earlier:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(fresh)
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.set_window_size(WIDTH, height)
    driver.get_log("browser")  # read, so the next test's log holds only what its own pages wrote
    return driver


def _alive(language: str) -> webdriver.Chrome | None:
    """The shared Chromium for `language`, unless it is gone (a test quit it, or it crashed)."""
    if language not in _shared:
        return None
    driver = _shared[language][0]
    try:
        driver.current_url  # noqa: B018 (asks the browser: raises when it is gone)
        return driver
    except Exception:
        _quit(language)
        return None


def _quit(language: str) -> None:
    driver, profile = _shared.pop(language)
    with contextlib.suppress(Exception):
        driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@atexit.register
def _quit_all() -> None:
    for language in list(_shared):
        _quit(language)


@contextlib.contextmanager
def logged_in_chromium(
    site_url: str, user: Any, height: int = 1400, language: str = "en-US", own: bool = False,
) -> Iterator[webdriver.Chrome]:
    """A headless Chromium asking for `language`, holding `user`'s session cookie for the live
    server at `site_url`, with `base_url` set: the shared one (shared_chromium), or with `own` a
    Chromium of its own, quit and its profile removed when the block ends.
    """
    with contextlib.ExitStack() as stack:
        if own:
            profile = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="sparkdash-chromium-", ignore_cleanup_errors=True))
            driver = chromium(profile, height=height, language=language)
            stack.callback(driver.quit)
        else:
            driver = shared_chromium(height=height, language=language)
        log_in(driver, site_url, user)
        driver.base_url = site_url
        yield driver


def log_in(driver: webdriver.Chrome, site_url: str, user: Any) -> None:
    """Give `driver` a session cookie of `user` for the live server at `site_url`."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    driver.get(site_url + "/login/")
    driver.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value})
