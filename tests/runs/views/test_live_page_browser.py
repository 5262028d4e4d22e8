"""The live run page in headless Chromium against daphne: a run started from the config page
draws its points over the run socket while it runs, then shows its final status."""
from __future__ import annotations

import itertools
import re
import tempfile
import time
from pathlib import Path

import pytest
from django.test import override_settings
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from engines.simulator import SimProfile
from runs.core.jobs.prompts import SPEED_PROMPTS
from runs.models import Sample
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, shared_chromium
from tests.factories import EngineConfigFactory, EngineFactory, UserFactory
from tests.live_server import SimulatorLiveServerTestCase

REPS = 2
# With this profile a request takes ~0.6 s, so the run (a warm-up and 12 requests) lasts ~8 s.
MAX_TOKENS = 16
PROFILE = SimProfile(decode_tps=15, ttft_ms=200, lookahead=4, acceptance=0.8)
RUN_DEADLINE_S = 45
SCREENSHOT = Path(tempfile.gettempdir()) / "run_page.png"

# One look at the page: badge status, points on the tok/s chart, what delivered the latest
# update, how many polling requests for this run's samples the page has made, the summary table's
# TTFT cell and the "so far" note (shown while the table holds the summary of the requests so far).
OBSERVE_JS = """
const badge = document.getElementById("run-status");
const polls = performance.getEntriesByType("resource")
  .filter((e) => e.name.includes(arguments[0])).length;
const note = document.getElementById("summary-so-far");
return [badge.dataset.status, Number(document.getElementById("speed-chart").dataset.points),
        badge.dataset.transport || "", polls,
        document.querySelector('[data-metric="ttft_s"]').textContent.trim(),
        note.hidden ? "" : note.textContent];
"""


@pytest.mark.browser
@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM)
# Runs execute on a thread of the daphne process, which is forked after this takes effect.
@override_settings(SPARKDASH_WORKER="inprocess")
class LiveRunPageTest(SimulatorLiveServerTestCase):
    profile = PROFILE

    def setUp(self) -> None:
        UserFactory(username="alice")
        engine = EngineFactory(simulator=True, base_url=self.sim.url)
        self.config = EngineConfigFactory(engine=engine, max_tokens=MAX_TOKENS, lookahead=4)
        self.driver = shared_chromium()

    def _log_in(self) -> None:
        self.driver.get(self.live_server_url + reverse("login"))
        self.driver.find_element(By.NAME, "username").send_keys("alice")
        self.driver.find_element(By.NAME, "password").send_keys("password")
        self.driver.find_element(By.CSS_SELECTOR, "form[action$='/login/'] button").click()
        WebDriverWait(self.driver, 10).until(expected_conditions.url_to_be(self.live_server_url + "/"))

    def _start_run(self) -> int:
        self.driver.get(self.live_server_url + reverse("runs:config-detail", args=[self.config.pk]))
        reps = self.driver.find_element(By.NAME, "reps")
        reps.clear()
        reps.send_keys(str(REPS))
        self.driver.find_element(By.CSS_SELECTOR, "form[action$='/start/'] button").click()
        WebDriverWait(self.driver, 10).until(expected_conditions.url_matches(r"/runs/\d+/$"))
        return int(re.search(r"/runs/(\d+)/$", self.driver.current_url).group(1))

    def _watch(self, samples_path: str) -> list[tuple[float, str, int, str, int, str, str]]:
        """(seconds since the page loaded, status, points, transport, polls, TTFT cell, so-far note)
        until the run ends."""
        seen, t0 = [], time.monotonic()
        while time.monotonic() - t0 < RUN_DEADLINE_S:
            status, points, transport, polls, ttft, note = self.driver.execute_script(
                OBSERVE_JS, samples_path)
            seen.append((round(time.monotonic() - t0, 2), status, points, transport, polls, ttft, note))
            if note and not SCREENSHOT.with_name("run_page_so_far.png").exists() and points >= 6:
                self.driver.find_element(By.ID, "speed-summary").location_once_scrolled_into_view  # noqa: B018
                self.driver.save_screenshot(str(SCREENSHOT.with_name("run_page_so_far.png")))
            if status in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(0.05)
        return seen

    def _points(self, canvas: str = "speed-chart") -> int:
        return int(self.driver.find_element(By.ID, canvas).get_attribute("data-points"))

    def _wait_for_points(self, n: int) -> int:
        # The final status can arrive a moment before the page has read the last page of samples.
        WebDriverWait(self.driver, 10).until(lambda _: self._points() == n)
        return self._points()

    def test_it_draws_points_over_the_socket_while_the_run_is_in_progress(self) -> None:
        try:
            self._log_in()
            run_id = self._start_run()
            samples_path = reverse("runs:api-samples", args=[run_id])
            seen = self._watch(samples_path)
            total = REPS * len(SPEED_PROMPTS)
            points = self._wait_for_points(total) if seen[-1][1] == "succeeded" else seen[-1][2]
        finally:
            self.driver.save_screenshot(str(SCREENSHOT))
        changes = [s for i, s in enumerate(seen) if i == 0 or s[1:5] != seen[i - 1][1:5]]
        print(f"\nrun {run_id}: (t, status, points, transport, polls, TTFT, note) at each change:", *changes,
              sep="\n  ")

        running = [s for s in seen if s[1] == "running"]
        increases = sum(1 for a, b in itertools.pairwise(running) if b[2] > a[2])
        assert increases >= 2, f"the chart did not grow while running: {changes}"
        assert seen[-1][1] == "succeeded", changes
        assert points == total
        assert self._points("acceptance-chart") == total
        # The socket, not polling, delivered the live updates.
        assert {s[3] for s in running if s[2] > 0} == {"socket"}, changes
        assert all(s[4] == 0 for s in running), f"polled {samples_path} while running: {changes}"
        self._assert_summary_so_far(running)
        self._assert_live_telemetry(run_id)
        logs = self.driver.get_log("browser")
        severe = [e for e in logs if e["level"] == "SEVERE"]
        assert severe == []

    def _assert_summary_so_far(self, running: list[tuple[float, str, int, str, int, str, str]]) -> None:
        """While running, the summary table held figures of the requests so far, said so, and grew;
        at the end the final summary (with its interval line) replaced it and the note went."""
        so_far = [s for s in running if s[6] and re.search(r"\d", s[5])]
        assert so_far, f"no summary so far while running: {running[-3:]}"
        assert "So far: " in so_far[-1][6] and "provisional" in so_far[-1][6]
        notes = {re.search(r"So far: (\d+) of", s[6]).group(1) for s in so_far}
        assert len(notes) >= 2, f"the summary so far did not follow the requests: {notes}"
        assert self.driver.find_element(By.ID, "summary-so-far").is_displayed() is False
        # The final figure has its interval line (the summary so far has none).
        assert self.driver.find_elements(By.CSS_SELECTOR, '[data-metric="ttft_s"] small.interval')

    def _assert_live_telemetry(self, run_id: int) -> None:
        """This machine's own readings (CPU load, memory; no GPU here) charted, and the summary's note."""
        stored = Sample.objects.filter(run_id=run_id, kind="telemetry").count()
        WebDriverWait(self.driver, 10).until(lambda _: self._points("telemetry-chart") == stored)
        datasets = self.driver.execute_script(
            "return Chart.getChart('telemetry-chart').data.datasets.map(d => d.label)")
        assert stored >= 5 and datasets == ["CPU load, %", "host memory used, GB"], datasets
        table = WebDriverWait(self.driver, 10).until(
            lambda d: d.find_element(By.ID, "telemetry") if "no GPU telemetry on this machine"
            in d.find_element(By.ID, "telemetry").text else None)
        table.location_once_scrolled_into_view  # noqa: B018
        self.driver.save_screenshot(str(SCREENSHOT.with_name("live_telemetry.png")))
