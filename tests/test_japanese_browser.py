"""The dashboard in Japanese, in headless Chromium asking for `ja`, against daphne.

A person whose browser asks for Japanese logs in, starts a speed run on a simulator, watches its
live chart with Japanese labels, reads the finished run's summary and a comparison, then walks
every other page (tests/untranslated.py finds catalogue strings a page still shows in English).
Switching to English in the header holds across pages although the browser still asks for ja.
Screenshots go to /tmp/ja_<page>.png, for a person to look at.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from engines.simulator import SimProfile
from runs.core.registry import JOBS
from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, shared_chromium
from tests.factories import (
    AlertFactory,
    EngineConfigFactory,
    EngineFactory,
    RunFactory,
    ScheduleFactory,
    SweepExecutionFactory,
    SweepFactory,
    UserFactory,
)
from tests.live_server import SimulatorLiveServerTestCase
from tests.untranslated import page_english, page_untranslated

SHOTS = Path(tempfile.gettempdir())
PROFILE = SimProfile(decode_tps=15, ttft_ms=200, lookahead=4, acceptance=0.8)
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
RUN_DEADLINE_S = 60
# Read in one script, so a page being replaced by the next never leaves a stale element.
LANG_JS = "return document.readyState === 'complete' ? document.documentElement.lang : ''"

# The run page's badge and its tok/s chart as drawn: status, points, dataset labels, axis titles.
CHART_JS = """
const chart = Chart.getChart("speed-chart");
return {status: document.getElementById("run-status").dataset.status,
        points: Number(document.getElementById("speed-chart").dataset.points),
        labels: chart.data.datasets.map((d) => String(d.label)),
        axes: Object.values(chart.options.scales).map((s) => String((s.title || {}).text || ""))};
"""


@pytest.mark.browser
@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM)
@override_settings(SPARKDASH_WORKER="inprocess")
class JapaneseDashboardTest(SimulatorLiveServerTestCase):
    profile = PROFILE

    def setUp(self) -> None:
        self.user = UserFactory(username="hanako")
        engine = EngineFactory(simulator=True, base_url=self.sim.url)
        self.config = EngineConfigFactory(engine=engine, name="sim-ja", max_tokens=16, lookahead=4)
        self.driver = shared_chromium(language="ja")
        self.found: dict[str, list[str]] = {}
        self.prose: dict[str, list[str]] = {}

    def _open(self, name: str, path: str) -> None:
        """Open `path`, keep what it shows untranslated under `name`, and a screenshot."""
        self.driver.get(self.live_server_url + path)
        ready = "return document.readyState"
        WebDriverWait(self.driver, 10).until(lambda d: d.execute_script(ready) == "complete")
        self._check(name)

    def _check(self, name: str) -> None:
        assert self.driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "ja", name
        left = page_untranslated(self.driver)
        if left:
            self.found[name] = left
        prose = page_english(self.driver)
        if prose:
            self.prose[name] = prose
        self.driver.save_screenshot(str(SHOTS / f"ja_{name}.png"))

    def _log_in(self) -> None:
        self._open("login", reverse("login"))
        self.driver.find_element(By.NAME, "username").send_keys("hanako")
        self.driver.find_element(By.NAME, "password").send_keys("password")
        self.driver.find_element(By.CSS_SELECTOR, "form[action$='/login/'] button").click()
        WebDriverWait(self.driver, 10).until(expected_conditions.url_to_be(self.live_server_url + "/"))

    def _start_speed_run(self) -> Run:
        self._open("config", reverse("runs:config-detail", args=[self.config.pk]))
        reps = self.driver.find_element(By.NAME, "reps")
        reps.clear()
        reps.send_keys("1")
        self.driver.find_element(By.CSS_SELECTOR, "form[action$='/start/'] button").click()
        WebDriverWait(self.driver, 10).until(expected_conditions.url_matches(r"/runs/\d+/$"))
        return Run.objects.get(pk=int(re.search(r"/runs/(\d+)/$", self.driver.current_url).group(1)))

    def _watch_live(self) -> dict[str, Any]:
        """The chart as drawn while the run is in progress (points arriving), then the finished page."""
        live = WebDriverWait(self.driver, RUN_DEADLINE_S).until(
            lambda d: (c := d.execute_script(CHART_JS))["points"] > 0 and c["status"] == "running" and c)
        self._check("run-live")
        WebDriverWait(self.driver, RUN_DEADLINE_S).until(
            lambda d: d.execute_script(CHART_JS)["status"] in ("succeeded", "failed"))
        return live

    def test_it_shows_every_page_in_japanese_from_the_login_to_the_report(self) -> None:
        self._log_in()
        run = self._start_speed_run()
        live = self._watch_live()
        run.refresh_from_db()
        assert run.status == Run.Status.SUCCEEDED, run.error
        # Legends and axes in Japanese (a label such as "TTFT, s" keeps its abbreviation only).
        assert any(JAPANESE.search(label) for label in live["labels"]), live
        assert any(JAPANESE.search(axis) for axis in live["axes"]), live
        self._check("run-finished")
        summary = self.driver.find_element(By.ID, "speed-summary").text
        assert JAPANESE.search(summary) and "tok/s" in summary
        other = RunFactory(config=self.config, job="speed", status=Run.Status.SUCCEEDED, summary=run.summary)
        runs = f"?runs={run.pk},{other.pk}"
        self._open("compare", reverse("runs:compare") + runs)
        self._open_report(runs)
        self._walk_the_rest(run)
        print("\nEnglish prose left:", *(f"{page}: {left}" for page, left in self.prose.items()), sep="\n")
        assert self.found == {}, "\n".join(f"{page}: {left}" for page, left in self.found.items())

    def _open_report(self, runs: str) -> None:
        """The HTML report of ?format=html&lang=ja, opened from a file as its reader would (it downloads)."""
        self.client.force_login(self.user)
        response = self.client.get(reverse("runs:compare") + runs + "&format=html&lang=ja")
        assert response["Content-Disposition"].startswith("attachment")
        report = Path(tempfile.mkdtemp(prefix="sparkdash-report-ja-")) / "report.html"
        report.write_bytes(response.content)
        self.driver.get(report.as_uri())
        WebDriverWait(self.driver, 10).until(
            lambda d: int(d.find_element(By.ID, "compare-decode").get_attribute("data-points") or 0) > 0)
        self._check("report")

    def _walk_the_rest(self, run: Run) -> None:
        """Every other page of the dashboard, each job kind's run page among them."""
        for name in JOBS:
            if name != "speed":
                job_run = RunFactory(config=self.config, job=name, status=Run.Status.SUCCEEDED, summary={})
                self._open(f"job-{name}", job_run.get_absolute_url())
        sweep = SweepFactory(configs=[self.config], created_by=self.user)
        execution = SweepExecutionFactory(sweep=sweep)
        schedule = ScheduleFactory(sweep=sweep)
        AlertFactory(execution=execution, config=self.config)
        machine = self.config.engine.machine.pk
        pages = {
            "home": reverse("runs:home"), "configs": reverse("runs:config-list"),
            "config-new": reverse("engines:config-create"),
            "config-edit": reverse("engines:config-edit", args=[self.config.pk]),
            "config-matrix": reverse("engines:config-matrix", args=[self.config.pk]),
            "runs": reverse("runs:list"), "run-log": reverse("runs:log", args=[run.pk]),
            "tour": reverse("runs:tour"), "sweeps": reverse("runs:sweep-list"),
            "sweep-new": reverse("runs:sweep-new"), "sweep": reverse("runs:sweep-detail", args=[sweep.pk]),
            "sweep-grid": reverse("runs:sweep-run", args=[execution.pk]),
            "schedules": reverse("runs:schedule-list"), "schedule-new": reverse("runs:schedule-create"),
            "schedule-edit": reverse("runs:schedule-edit", args=[schedule.pk]),
            "alerts": reverse("runs:alert-list"),
            "compare-configs": reverse("runs:compare-configs") + f"?configs={self.config.pk}",
            "traffic": reverse("traffic:page", args=[machine]),
            "conversations": reverse("traffic:conversations", args=[machine]),
        }
        for name, path in pages.items():
            self._open(name, path)

    def test_it_switches_back_to_english_and_remembers_it(self) -> None:
        self._log_in()
        self.driver.find_element(By.CSS_SELECTOR, "#language-form [data-language=en]").click()
        WebDriverWait(self.driver, 10).until(
            lambda d: d.execute_script(LANG_JS) == "en")
        assert "Configs" in self.driver.find_element(By.TAG_NAME, "nav").text
        # Another page, the browser still asking for ja: the choice holds.
        self.driver.get(self.live_server_url + reverse("runs:config-list"))
        assert self.driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
        assert "Configs" in self.driver.find_element(By.TAG_NAME, "nav").text
        self.driver.find_element(By.CSS_SELECTOR, "#language-form [data-language=ja]").click()
        WebDriverWait(self.driver, 10).until(
            lambda d: d.execute_script(LANG_JS) == "ja")
        assert self.driver.current_url.endswith(reverse("runs:config-list"))
        assert "設定" in self.driver.find_element(By.TAG_NAME, "nav").text
