"""The run page's hardware telemetry chart and table in headless Chromium, from stored samples.

Screenshots go to /tmp/shots-ui/telemetry_<name>.png, for a person to look at.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import (
    RunFactory,
    SampleFactory,
    TelemetrySampleFactory,
    telemetry_summary,
    telemetry_values,
)

SHOTS = Path("/tmp/shots-ui")
READINGS, BASELINE, THROTTLED = 120, 20, range(70, 90)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]

DRAWN_JS = """
const canvas = document.getElementById("telemetry-chart");
const chart = Chart.getChart(canvas);
return {
  points: Number(canvas.dataset.points), spans: Number(canvas.dataset.throttleSpans),
  phases: canvas.dataset.phases,
  datasets: Object.fromEntries(
    chart.data.datasets.map((d) => [d.label, d.data.filter((p) => p.y !== null).length])
  ),
  requests: Number(document.getElementById("speed-chart").dataset.points),
};
"""


@pytest.fixture
def browser(live_server, alice):
    with logged_in_chromium(live_server.url, alice, height=2200) as driver:
        yield driver


def _run(gpu: bool) -> Run:
    """A finished speed run: 120 readings (2 s baseline, then the job), 5 requests among them."""
    summary = {"telemetry": telemetry_summary(gpu=gpu, throttled_s=2.0 if gpu else 0.0)}
    run = RunFactory(job="speed", status=Run.Status.SUCCEEDED, summary=summary)
    for i in range(READINGS):
        phase = "baseline" if i < BASELINE else "job"
        values = telemetry_values(phase, gpu=gpu, throttle=["thermal"] if gpu and i in THROTTLED else [])
        values["cpu_load"] = 0.05 if i < BASELINE else 0.3 + (i % 10) / 30
        if gpu:
            values.update(power_w=20.0 if i < BASELINE else 60.0 + i % 9, temperature_c=50 + i // 4)
        TelemetrySampleFactory(run=run, seq=i * 2, t=i / 10, values=values)
    for i in range(5):
        SampleFactory(run=run, seq=READINGS * 2 + i, t=2.0 + i)
    return run


def _open(driver: Any, run: Run, shot: str) -> dict[str, Any]:
    driver.get(driver.base_url + run.get_absolute_url())
    try:
        WebDriverWait(driver, 10).until(
            lambda d: d.find_element(By.ID, "telemetry-chart").get_attribute("data-points") == str(READINGS)
        )
    finally:
        driver.find_element(By.ID, "telemetry").location_once_scrolled_into_view  # noqa: B018
        driver.save_screenshot(str(SHOTS / f"telemetry_{shot}.png"))
    return driver.execute_script(DRAWN_JS)


def test_it_draws_cpu_and_memory_and_says_there_is_no_gpu(browser):
    SHOTS.mkdir(exist_ok=True)
    drawn = _open(browser, _run(gpu=False), "host")
    assert drawn["datasets"] == {"CPU load, %": READINGS, "host memory used, GB": READINGS}
    assert drawn["requests"] == 5  # the speed chart counts requests only, not readings
    assert (drawn["phases"], drawn["spans"]) == ("baseline", 0)
    table = browser.find_element(By.ID, "telemetry-summary").text
    assert "no GPU telemetry on this machine" in table
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_it_draws_the_gpu_lines_and_marks_the_throttled_span(browser):
    SHOTS.mkdir(exist_ok=True)
    drawn = _open(browser, _run(gpu=True), "gpu")
    for label in ("GPU power, W", "SM clock, MHz", "GPU temperature, \u00b0C", "CPU load, %"):
        assert drawn["datasets"][label] == READINGS
    assert drawn["spans"] == 1 and drawn["requests"] == 5
    table = browser.find_element(By.ID, "telemetry-summary").text
    assert "throttled 2.0 s of 60.0 s: thermal 2.0 s" in table
    assert "no GPU telemetry on this machine" not in table
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
