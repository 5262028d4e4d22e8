"""Run pages open in one headless Chromium (one window each) for the live-latency benchmark."""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from tests.chromium import logged_in_chromium

WINDOW_HEIGHT = 900
LIVE_JS = 'return document.getElementById("live-state").textContent === "live";'
READ_JS = "return window.__sparkdashLive || null;"


@contextlib.contextmanager
def open_pages(site: str, user: Any, path: str, pages: int, wait_s: float) -> Iterator[Any]:
    """`pages` windows showing `path`, each with its run socket open, in one logged-in Chromium."""
    with logged_in_chromium(site, user, height=WINDOW_HEIGHT) as driver:
        for i in range(pages):
            if i:
                driver.switch_to.new_window("window")
            driver.get(site + path)
        _wait_until_live(driver, wait_s)
        yield driver


def _wait_until_live(driver: Any, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    for handle in driver.window_handles:
        driver.switch_to.window(handle)
        while not driver.execute_script(LIVE_JS):
            if time.monotonic() > deadline:
                raise RuntimeError(f"a run page's socket was not open after {wait_s:.0f} s")
            time.sleep(0.2)


def read_pages(driver: Any) -> list[list[list[float]]]:
    """Every window's [seq, sent, drawn] rows (epoch ms), in window order."""
    drawn = []
    for handle in driver.window_handles:
        driver.switch_to.window(handle)
        rows = driver.execute_script(READ_JS)
        if rows is None:
            raise RuntimeError("a run page has no window.__sparkdashLive (is ?latency in its URL?)")
        drawn.append(rows)
    return drawn
