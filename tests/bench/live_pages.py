"""Run pages open in headless Chromium (a window each, five per browser) for the live-latency benchmark."""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.chromium import logged_in_chromium

WINDOW_HEIGHT = 900
PAGES_PER_BROWSER = 5
LIVE_JS = 'return document.getElementById("live-state").textContent === "live";'
READ_JS = "return window.__sparkdashLive || null;"
# Sets up window.__sparkdashLive in each page, before the page's own scripts run.
HOOK_JS = (Path(__file__).parent / "live_hook.js").read_text(encoding="utf-8")


def install_hook(driver: Any) -> None:
    """Inject live_hook.js into every document the driver's current window loads from now on."""
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK_JS})


@contextlib.contextmanager
def open_pages(site: str, user: Any, path: str, pages: int, wait_s: float) -> Iterator[list[Any]]:
    """`pages` windows showing `path`, each with its run socket open; PAGES_PER_BROWSER windows per
    logged-in Chromium, since one Chromium puts its windows of one site in one renderer process,
    whose single main thread would then draw every page's charts."""
    with contextlib.ExitStack() as stack:
        drivers = []
        for first in range(0, pages, PAGES_PER_BROWSER):
            driver = stack.enter_context(logged_in_chromium(site, user, height=WINDOW_HEIGHT, own=True))
            for i in range(min(PAGES_PER_BROWSER, pages - first)):
                if i:
                    driver.switch_to.new_window("window")
                install_hook(driver)
                driver.get(site + path)
            drivers.append(driver)
        for driver in drivers:
            _wait_until_live(driver, wait_s)
        yield drivers


def _wait_until_live(driver: Any, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    for handle in driver.window_handles:
        driver.switch_to.window(handle)
        while not driver.execute_script(LIVE_JS):
            if time.monotonic() > deadline:
                raise RuntimeError(f"a run page's socket was not open after {wait_s:.0f} s")
            time.sleep(0.2)


# Chromium's own main-thread accounting per page (DevTools Performance domain), in seconds.
MAIN_THREAD = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def main_thread_times(drivers: list[Any]) -> list[dict[str, float]]:
    """Each window's cumulative main-thread seconds so far (task, script, layout, style recalc)."""
    found = []
    for driver, handle in ((d, h) for d in drivers for h in d.window_handles):
        driver.switch_to.window(handle)
        driver.execute_cdp_cmd("Performance.enable", {})
        listed = driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
        metrics = {m["name"]: m["value"] for m in listed}
        found.append({name: metrics[name] for name in MAIN_THREAD})
    return found


def read_pages(drivers: list[Any]) -> list[list[list[float]]]:
    """Every window's [seq, sent, received, drawn] rows (epoch ms), in window order."""
    drawn = []
    for driver, handle in ((d, h) for d in drivers for h in d.window_handles):
        driver.switch_to.window(handle)
        rows = driver.execute_script(READ_JS)
        if rows is None:
            raise RuntimeError("a run page has no window.__sparkdashLive (was live_hook.js injected?)")
        drawn.append(rows)
    return drawn
