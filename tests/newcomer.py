"""A newcomer's first visit, as a browser walks it: a fresh install, the demo, the tour, the pages.

`DemoSite` is what `make run` gives on a fresh machine (a new SQLite database in a temporary
folder, `manage.py demo`, `manage.py serve` with the simulator and the in-process worker), on
the embedded default whatever DATABASE_URL/REDIS_URL say. `walk` drives headless Chromium through
it: log in, the empty home page, the demo tour, a speed run, the lookahead sweep, compare
selected from the runs list. The browser test (tests/test_newcomer_browser.py) asserts what it
returns; `make screenshots` (bin/screenshots) keeps its pictures in docs/img/.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.processes import stop_process
from tests.real_engine import free_port

ROOT = Path(__file__).resolve().parent.parent
USERNAME, PASSWORD = "newcomer", "first-visit-123"
# The demo's engine ports (examples/demo.yaml): the Ollama simulator serve starts, the managed one.
DEMO_PORTS = (11500, 11501)
RUN_WAIT_S = 240.0
SHOT_MAX_HEIGHT = 2600

# The speed run's "By output type" rows, each as its cells' texts.
BY_TYPE_JS = """
return [...document.querySelectorAll("#by-type tr")].map((r) => [...r.cells].map((c) => c.innerText));
"""
# The lookahead chart as drawn: per dataset its label and values.
LOOKAHEAD_JS = """
const chart = Chart.getChart(document.getElementById("lookahead-chart"));
return {labels: chart.data.labels.map(String),
        datasets: chart.data.datasets.map((d) => [d.label, d.data])};
"""


def port_taken(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class DemoSite:
    """`make run` on a fresh machine, in a temporary folder; a context manager that stops it."""

    def __init__(self) -> None:
        taken = [p for p in DEMO_PORTS if port_taken(p)]
        if taken:
            raise RuntimeError(f"the demo's engine ports {taken} are taken: stop what listens there first")
        self.folder = tempfile.TemporaryDirectory(prefix="sparkdash-newcomer-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        drop = ("DATABASE_URL", "REDIS_URL", "SPARKDASH_WORKER")
        self.env = {k: v for k, v in os.environ.items() if k not in drop} | {
            "SPARKDASH_VAR_DIR": self.folder.name,
            "DJANGO_SUPERUSER_USERNAME": USERNAME,
            "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
        }
        self.process: subprocess.Popen | None = None

    def _manage(self, *args: str) -> None:
        subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True,
                       capture_output=True, timeout=300)

    def __enter__(self) -> DemoSite:
        self._manage("migrate", "--noinput", "-v", "0")
        self._manage("demo")
        log = open(Path(self.folder.name) / "serve.log", "wb")  # closed when serve stops
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(self.port)],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )
        self._wait_up()
        return self

    def _wait_up(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"manage.py serve exited:\n{self.log()}")
            try:
                urllib.request.urlopen(self.url + "/login/", timeout=2).close()
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"the dashboard did not answer on {self.url} within {timeout_s:g} s")

    def log(self) -> str:
        return (Path(self.folder.name) / "serve.log").read_text(errors="replace")[-4000:]

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.process is not None:
            stop_process(self.process, timeout_s=20)
        self.folder.cleanup()


@dataclass
class Walk:
    """What the walk saw, for the test to assert and the screenshots to show."""

    empty_home: str = ""
    tour_url: str = ""
    speed_run: str = ""
    by_type: dict[str, list[str]] = field(default_factory=dict)  # output type -> its row's cells
    lookahead: dict[str, Any] = field(default_factory=dict)
    compare: str = ""
    recipe_errors: list[str] = field(default_factory=list)
    warnings: dict[str, list[str]] = field(default_factory=dict)  # the tour's warning runs: job -> kinds
    shots: list[Path] = field(default_factory=list)


def walk(driver: Any, site: DemoSite, shots: Path | None = None) -> Walk:
    """Log in, see the empty home page, start the tour, open its runs and compare selected."""
    seen = Walk()
    _log_in(driver, site.url)
    seen.empty_home = driver.find_element(By.TAG_NAME, "main").text
    _shot(driver, shots, "home-empty", seen)
    driver.find_element(By.CSS_SELECTOR, '[data-tour="start"]').click()
    WebDriverWait(driver, 20).until(lambda d: "/tour/?runs=" in d.current_url)
    seen.tour_url = driver.current_url
    speed = _links(driver, "compared")
    sweep = _links(driver, "sweeps")[0]
    _wait_finished(driver, [*speed, sweep])
    seen.speed_run, seen.by_type = _speed_page(driver, speed[0])
    _shot(driver, shots, "demo-run", seen)
    seen.lookahead = _sweep_page(driver, sweep)
    _shot(driver, shots, "demo-lookahead-sweep", seen)
    seen.compare = _compare_selected(driver, site.url, speed)
    _shot(driver, shots, "compare", seen)
    seen.warnings = _warnings(driver, _links(driver_at(driver, seen.tour_url), "warning"))
    seen.recipe_errors = _recipe_errors(driver, site.url)
    driver.get(site.url + "/")
    _shot(driver, shots, "home", seen)
    return seen


def _log_in(driver: Any, url: str) -> None:
    driver.get(url + "/")  # the login page, as the redirect sends a newcomer there
    driver.find_element(By.NAME, "username").send_keys(USERNAME)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    WebDriverWait(driver, 10).until(lambda d: "/login/" not in d.current_url)


def _links(driver: Any, step: str) -> list[str]:
    found = driver.find_elements(By.CSS_SELECTOR, f'[data-tour="{step}"] a')
    return [a.get_attribute("href") for a in found]


def _wait_finished(driver: Any, run_urls: list[str]) -> None:
    """Until each run's page says succeeded (the tour page reloads itself; the API says it plainly)."""
    deadline = time.monotonic() + RUN_WAIT_S
    for url in run_urls:
        api = url.replace("/runs/", "/api/runs/").rstrip("/")
        while (status := _status(driver, api)) in ("queued", "running"):
            if time.monotonic() > deadline:
                raise AssertionError(f"{url} still {status} after {RUN_WAIT_S:g} s")
            time.sleep(1)
        if status != "succeeded":
            raise AssertionError(f"{url} ended {status}")


def _status(driver: Any, api_url: str) -> str:
    driver.get(api_url)
    return str(driver.execute_script("return JSON.parse(document.body.innerText).status"))


def _speed_page(driver: Any, url: str) -> tuple[str, dict[str, list[str]]]:
    """The run page's text and its by-type rows (read in one script: the page refills them live)."""
    driver.get(url)
    rows_js = BY_TYPE_JS
    WebDriverWait(driver, 15).until(lambda d: len([r for r in d.execute_script(rows_js) if len(r) > 2]) >= 4)
    cells = driver.execute_script(rows_js)
    return driver.find_element(By.TAG_NAME, "main").text, {c[0]: c[1:] for c in cells if len(c) > 2}


def _sweep_page(driver: Any, url: str) -> dict[str, Any]:
    driver.get(url)
    canvas = (By.ID, "lookahead-chart")
    WebDriverWait(driver, 15).until(lambda d: int(d.find_element(*canvas).get_attribute("data-points")) > 0)
    drawn: dict[str, Any] = driver.execute_script(LOOKAHEAD_JS)
    return drawn


def _compare_selected(driver: Any, url: str, speed_urls: list[str]) -> str:
    """Tick the speed runs in the runs list and press "Compare selected"; the compare page's text."""
    driver.get(url + "/runs/")
    for run_url in speed_urls:
        pk = run_url.rstrip("/").rsplit("/", 1)[-1]
        driver.find_element(By.CSS_SELECTOR, f'input[type=checkbox][value="{pk}"]').click()
    driver.find_element(By.XPATH, "//button[contains(., 'Compare selected')]").click()
    WebDriverWait(driver, 10).until(lambda d: "/compare/" in d.current_url)
    return str(driver.find_element(By.TAG_NAME, "main").text)


def driver_at(driver: Any, url: str) -> Any:
    driver.get(url)
    return driver


def _warnings(driver: Any, run_urls: list[str]) -> dict[str, list[str]]:
    """Each of the tour's warning runs, once finished: its job and the kinds of warning its page shows."""
    _wait_finished(driver, run_urls)
    shown = {}
    for url in run_urls:
        driver.get(url)
        job = driver.find_element(By.ID, "run").get_attribute("data-job")
        found = driver.find_elements(By.CSS_SELECTOR, "p.warning[data-warning]")
        shown[job] = [p.get_attribute("data-warning") for p in found]
    return shown


def _recipe_errors(driver: Any, url: str) -> list[str]:
    """The red recipe errors on every config's page of the demo."""
    driver.get(url + "/configs/")
    links = driver.find_elements(By.CSS_SELECTOR, "main a[href*='/configs/']")
    pages = {a.get_attribute("href") for a in links}
    errors = []
    for page in sorted(p for p in pages if p.rstrip("/").rsplit("/", 1)[-1].isdigit()):
        driver.get(page)
        shown = driver.find_elements(By.CSS_SELECTOR, ".error")
        errors += [e.text for e in shown if "recipe" in e.text.lower()]
    return errors


def _shot(driver: Any, shots: Path | None, name: str, seen: Walk) -> None:
    if shots is None:
        return
    shots.mkdir(parents=True, exist_ok=True)
    path = shots / f"{name}.png"
    width, height = driver.get_window_size()["width"], driver.get_window_size()["height"]
    page = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(width, min(max(page, height), SHOT_MAX_HEIGHT))  # the whole page, within reason
    driver.save_screenshot(str(path))
    driver.set_window_size(width, height)
    seen.shots.append(path)
