"""The sweep-run page in headless Chromium: sweep_grid.js fills the grid in while the sweep runs,
then stops polling once the sweep run is finished."""
from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

import pytest
from django.contrib.staticfiles.testing import StaticLiveServerTestCase
from django.urls import reverse
from django.utils import timezone
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.support.wait import WebDriverWait

from runs.models import Run, SweepExecution
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, log_in, shared_chromium
from tests.factories import EngineConfigFactory, RunFactory, SweepFactory, UserFactory

EN = "\u2013"
SCREENSHOT = Path(tempfile.gettempdir()) / "sweep_grid.png"
CELL_JS = """
const td = document.querySelector(`[data-cell="${arguments[0]}"]`);
const polls = performance.getEntriesByType("resource")
  .filter((e) => e.name.includes("/api/sweep-runs/")).length;
return [td.querySelector(".cell-figure").textContent, td.querySelector(".cell-delta").textContent.trim(),
        td.querySelector(".cell-delta").hidden, document.getElementById("sweep-run").dataset.finished, polls];
"""


def speed(tps: float) -> dict:
    return {"decode_tps_client": {"median": tps, "min": tps, "max": tps, "n": 6}}


@pytest.mark.browser
@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM)
class SweepGridPageTest(StaticLiveServerTestCase):
    host = "127.0.0.1"

    def setUp(self) -> None:
        self.fast, self.base = EngineConfigFactory(name="fast"), EngineConfigFactory(name="base")
        sweep = SweepFactory(configs=[self.fast, self.base], baseline=self.base, repetitions=2)
        self.sweep_run = SweepExecution.objects.create(sweep=sweep)
        self.runs = {
            (config.name, rep): RunFactory(config=config, execution=self.sweep_run, repetition=rep)
            for config in (self.fast, self.base) for rep in (1, 2)
        }
        self.driver = shared_chromium(height=900)
        log_in(self.driver, self.live_server_url, UserFactory(username="alice"))

    def finish(self, name: str, rep: int, tps: float) -> None:
        run = self.runs[(name, rep)]
        Run.objects.filter(pk=run.pk).update(status="succeeded", summary=speed(tps), finished=timezone.now())

    def look(self, config) -> list:
        return self.driver.execute_script(CELL_JS, f"{config.pk}-speed")

    def wait_for(self, config, figure: str, delta: str) -> list:
        """The cell once it shows `figure` and `delta` (or what it shows after 10 s).

        Both are waited for: a poll can land between two runs' updates and show the first alone.
        """
        with contextlib.suppress(TimeoutException):
            WebDriverWait(self.driver, 10).until(lambda _: self.look(config)[:2] == [figure, delta])
        return self.look(config)

    def test_it_fills_in_the_grid_while_the_sweep_runs_and_stops_polling_when_finished(self) -> None:
        self.driver.get(self.live_server_url + reverse("runs:sweep-run", args=[self.sweep_run.pk]))
        assert self.look(self.fast)[:4] == ["\u2014", "\u0394 \u2014 (\u2014) n/a", False, "false"]

        self.finish("fast", 1, 40.0)
        self.finish("base", 1, 30.0)
        one_each = "\u0394 +10.0 tok/s (+33.3 %) no spread"  # one repetition each: no spread yet
        figure, delta, *_ = self.wait_for(self.fast, f"40.0 [40.0{EN}40.0] tok/s (n=1)", one_each)
        assert (figure, delta) == (f"40.0 [40.0{EN}40.0] tok/s (n=1)", one_each)
        for name, rep, tps in (("fast", 2, 44.0), ("base", 2, 31.0)):
            self.finish(name, rep, tps)
        SweepExecution.objects.filter(pk=self.sweep_run.pk).update(finished=timezone.now())
        better = "\u0394 +11.5 tok/s (+37.7 %) better"
        figure, delta, hidden, *_ = self.wait_for(self.fast, f"42.0 [40.0{EN}44.0] tok/s (n=2)", better)
        assert (figure, delta, hidden) == (f"42.0 [40.0{EN}44.0] tok/s (n=2)", better, False)
        WebDriverWait(self.driver, 5).until(lambda _: self.look(self.fast)[3] == "true")
        assert self.look(self.base)[2] is True  # the baseline's own cell shows no delta
        # The figure's hover, set by sweep_grid.js: of 40 and 44 a resample's median is 40, 42 or 44.
        hover = self.driver.execute_script(
            'return document.querySelector(`[data-cell="${arguments[0]}"] .cell-figure`).title',
            f"{self.fast.pk}-speed")
        assert hover == f"95 % CI 40.0{EN}44.0 tok/s; p90 of 2 runs = max 44.0; p99 of 2 runs = max 44.0"
        text = self.driver.find_element("id", "sweep-progress-text").text
        assert text == "4 of 4 runs done · 0 running · 0 failed"
        polls = self.look(self.fast)[4]
        time.sleep(2.5)
        assert self.look(self.fast)[4] == polls, "kept polling after the sweep run finished"
        self.driver.save_screenshot(str(SCREENSHOT))
