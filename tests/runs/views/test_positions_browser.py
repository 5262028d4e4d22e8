"""The run page's "Acceptance by draft position" chart in headless Chromium, for factory-made
speed and lookahead runs (docs/metrics.md, Per-position acceptance): drawn from the finished
run's summary, live from request samples until the summary comes, or a "not exposed" note.

Screenshots go to /tmp/chart_positions_<name>.png, for a person to look at.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from runs.models import Run
from runs.templatetags.run_format import positions_text
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import RunFactory
from tests.runs import spec_helpers

SHOTS = Path(tempfile.gettempdir())

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]

# The position chart as drawn: x labels, each dataset's label and values (%, one decimal), and the
# note; and the x points of the job's main chart (drawn from the request samples).
POSITIONS_JS = """
const canvas = document.getElementById("positions-chart");
const main = document.getElementById(document.body.querySelector("#run").dataset.job + "-chart");
const chart = Chart.getChart(canvas);
const note = document.getElementById("positions-note");
return {
  points: Number(canvas.dataset.points),
  labels: chart.data.labels.map(String),
  datasets: chart.data.datasets.map((d) => [d.label, d.data.map((v) => Math.round(v * 10) / 10)]),
  shown: !canvas.parentNode.hidden && canvas.getBoundingClientRect().height > 0,
  note: note.hidden ? null : note.textContent,
  samples: Number(main.dataset.points),
};
"""


@pytest.fixture
def browser(live_server, alice):
    with logged_in_chromium(live_server.url, alice, height=2400) as driver:
        yield driver


def _open(driver: Any, run: Run, until: Any, shot: str) -> dict[str, Any]:
    """The run's page once `until(drawn)` holds for its position chart; a screenshot of it."""
    driver.get(driver.base_url + run.get_absolute_url())
    try:
        WebDriverWait(driver, 10).until(lambda d: until(d.execute_script(POSITIONS_JS)))
    finally:
        driver.save_screenshot(str(SHOTS / f"chart_positions_{shot}.png"))
    return driver.execute_script(POSITIONS_JS)


def _percent(fractions: list[float]) -> list[float]:
    return [round(100 * f, 1) for f in fractions]


def _severe(driver: Any) -> list[dict[str, Any]]:
    # The plain live server has no websocket route: a live page falls back on polling, as it should.
    logged = driver.get_log("browser")
    return [e for e in logged if e["level"] == "SEVERE" and "WebSocket" not in e["message"]]


def test_it_draws_a_speed_runs_acceptance_by_position_per_output_type(browser):
    run = spec_helpers.speed_run()
    spec_helpers.speed_samples(run)
    # The samples come after the summary and leave its figures drawn.
    drawn = _open(browser, run, lambda d: (d["points"], d["samples"]) == (4, 24), "speed")
    assert drawn["labels"] == ["1", "2", "3", "4"] and drawn["shown"] and drawn["note"] is None
    assert drawn["datasets"] == [[t, _percent(p)] for t, p in sorted(spec_helpers.BY_TYPE.items())]
    # The summary's text, rewritten by format.js from the run, reads as the server wrote it.
    text = browser.find_element(By.ID, "positions-text").text
    assert text == positions_text(spec_helpers.POSITIONS)
    assert text == "position 1: 90.0 %, 2: 75.0 %, 3: 60.0 %, 4: 45.0 %"
    assert browser.find_element(By.ID, "positions-counters").text.startswith(text + " (sum 2.70")
    assert _severe(browser) == []


def test_it_draws_the_runs_counters_where_requests_have_no_counts_of_their_own(browser):
    summary = spec_helpers.speed_summary(per_type=False)
    run = RunFactory(job="speed", status=Run.Status.SUCCEEDED, summary=summary)
    drawn = _open(browser, run, lambda d: d["points"] == 4, "counters")
    assert drawn["datasets"] == [
        ["all requests (engine's counters, warm-up included)", _percent(spec_helpers.POSITIONS)]]
    assert _severe(browser) == []


def test_it_draws_a_lookahead_sweeps_acceptance_by_position_per_length(browser):
    run = spec_helpers.lookahead_run()
    spec_helpers.lookahead_samples(run)
    drawn = _open(browser, run, lambda d: (d["points"], d["samples"]) == (8, 4), "lookahead")
    assert drawn["labels"] == [str(i) for i in range(1, 9)]
    # No drafting at length 0: no series of its own.
    assert drawn["datasets"] == [[f"lookahead {k}", _percent(p)] for k, p in spec_helpers.BY_LENGTH.items()]
    assert drawn["shown"] and drawn["note"] is None
    assert _severe(browser) == []


def test_it_says_not_exposed_when_the_engine_gives_no_per_position_counts(browser):
    # Ollama: no per-position counts at all (its log tells accepted and drafted tokens only).
    summary = spec_helpers.speed_summary(per_type=False) | {"acceptance_by_position": None,
                                                             "spec_decode_metrics": None}
    run = RunFactory(job="speed", status=Run.Status.SUCCEEDED, summary=summary)
    drawn = _open(browser, run, lambda d: d["note"] is not None, "not_exposed")
    assert drawn["note"] == "not exposed by this engine (Ollama), or no drafting"
    assert (drawn["points"], drawn["datasets"], drawn["shown"]) == (0, [], False)
    assert _severe(browser) == []


def test_it_draws_from_request_samples_live_then_from_the_summary(browser):
    run = RunFactory(job="speed", status=Run.Status.RUNNING, progress_total=24)
    spec_helpers.request_samples(run, {"tool-call": [9, 8, 6, 5], "table": [8, 6, 4, 2]})
    drawn = _open(browser, run, lambda d: d["points"] == 4, "live")
    assert drawn["datasets"] == [["table", [80.0, 60.0, 40.0, 20.0]], ["tool-call", [90.0, 80.0, 60.0, 50.0]]]
    # The run ends: the page's next poll brings its summary, whose figures replace the samples'.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED, summary=spec_helpers.speed_summary())
    WebDriverWait(browser, 10).until(lambda d: len(d.execute_script(POSITIONS_JS)["datasets"]) == 4)
    final = browser.execute_script(POSITIONS_JS)
    assert final["datasets"][0] == ["prose-en", _percent(spec_helpers.BY_TYPE["prose-en"])]
    assert _severe(browser) == []
