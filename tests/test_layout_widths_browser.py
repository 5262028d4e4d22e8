"""Every busy page at 390, 1,280, 1,400 and 1,920 px in headless Chromium, and in Japanese at 390
and 1,280 px (its words break differently): nothing runs off the page or out of its card; a
table wider than its card scrolls inside it (.overflow-auto), except the runs tables of the runs
list and a config's page, which fit from 1,280 px on.

Screenshots: /tmp/layout-<page>-<width>[-ja].png, for a person to look at.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from selenium.webdriver.common.by import By

from engines.simulator import SimProfile, serve_in_thread
from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import EngineConfigFactory, SweepExecutionFactory, SweepFactory, TrafficRecordFactory
from tests.runs.compare_helpers import full_comparison, speed_summary, succeeded
from tests.runs.worker.test_execution import make_run, run_to_end

SHOTS = Path(tempfile.gettempdir())
WIDTHS = (390, 1280, 1400, 1920)
JAPANESE_WIDTHS = (390, 1280)
# Pages whose runs table must fit its card unscrolled from 1,280 px on (no hidden figure columns).
FITTING = ("runs", "config")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    # Where a page's boxes fall does not depend on the database: once is enough, in the embedded
    # pass (as the Japanese job pages and the newcomer walk); 50 s of CI's backend pass each time.
    pytest.mark.skipif(bool(os.getenv("DATABASE_URL")), reason="runs in the embedded pass"),
    pytest.mark.django_db(transaction=True),
]

# What sticks out: the page itself scrolling sideways; a table, card or chart past the viewport's
# right edge that no scroll container holds; a card whose content spills out of it.
OVERFLOW_JS = """
const vw = document.documentElement.clientWidth, bad = [], page = document.documentElement.scrollWidth;
const classes = (el) => typeof el.className === "string" && el.className.trim() ?
  "." + el.className.trim().split(/\\s+/).join(".") : "";
const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + classes(el);
if (page > vw + 1) bad.push("page " + page + " > " + vw);
const boxes = "header, main table, main article, main section, main canvas, main pre";
document.querySelectorAll(boxes).forEach((el) => {
  const r = el.getBoundingClientRect();
  if (r.width && r.right > vw + 1 && !el.closest(".overflow-auto, pre")) {
    bad.push(name(el) + " ends at " + Math.round(r.right));
  }
});
document.querySelectorAll("main article, main section, main .grid > *").forEach((el) => {
  if (getComputedStyle(el).overflowX === "visible" && el.scrollWidth > el.clientWidth + 2)
    bad.push(name(el) + " holds " + el.scrollWidth + " in " + el.clientWidth);
});
return bad;
"""


# A runs table that needs its scroll container: columns out of sight until scrolled.
SCROLLED_JS = """
return [...document.querySelectorAll("table.runs")]
  .filter((t) => t.scrollWidth > t.parentElement.clientWidth + 1)
  .map((t) => "table.runs is " + t.scrollWidth + " wide in " + t.parentElement.clientWidth);
"""


@pytest.fixture
def pages(alice) -> dict[str, str]:
    """A run list, a speed run, a bandwidth run, a compare page and a traffic page with content."""
    base, near, fast = full_comparison()
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        speed = run_to_end(make_run(sim.url, {"reps": 1, "warmup": 0}, lookahead=4))
        bandwidth = make_run(sim.url, {"buffer_mib": 16, "passes": 3})
        Run.objects.filter(pk=bandwidth.pk).update(job="bandwidth")
        bandwidth = run_to_end(Run.objects.get(pk=bandwidth.pk))
    sweep = SweepFactory(name="nightly-lookahead-and-quantization-sweep", configs=[base, near, fast],
                         baseline=base, repetitions=3)
    execution = SweepExecutionFactory(sweep=sweep, finished=timezone.now())
    for config in (base, near, fast):
        for rep in (1, 2, 3):
            succeeded(config, "speed", speed_summary(40.0 + rep), minute=30 + rep, execution=execution,
                      repetition=rep)
    machine = EngineConfigFactory().engine.machine
    for n in range(30):
        TrafficRecordFactory(machine=machine, model=f"qwen3-coder-30b-a3b-instruct-{n}")
    return {
        "runs": reverse("runs:list"), "speed": speed.get_absolute_url(),
        "bandwidth": bandwidth.get_absolute_url(),
        "compare": f"{reverse('runs:compare')}?configs={base.pk},{near.pk},{fast.pk}",
        "traffic": reverse("traffic:page", args=[machine.pk]), "config": base.get_absolute_url(),
        "sweep": reverse("runs:sweep-detail", args=[sweep.pk]), "sweep-form": reverse("runs:sweep-new"),
        "sweep-run": reverse("runs:sweep-run", args=[execution.pk]),
    }


def test_it_keeps_every_page_inside_the_window_at_each_width(live_server, alice, pages):
    found = {}
    with logged_in_chromium(live_server.url, alice, own=True) as driver:
        for language, widths in (("en", WIDTHS), ("ja", JAPANESE_WIDTHS)):
            driver.add_cookie({"name": settings.LANGUAGE_COOKIE_NAME, "value": language})
            for width in widths:
                driver.set_window_size(width, 1000)
                found |= _look(driver, pages, width, "" if language == "en" else "-ja")
    assert found == {}, json.dumps(found, indent=1)


def _look(driver, pages: dict[str, str], width: int, suffix: str) -> dict[str, list[str]]:
    found = {}
    for page, url in pages.items():
        driver.get(driver.base_url + url)
        assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == (suffix[1:] or "en")
        driver.execute_script("return new Promise((done) => setTimeout(done, 300));")
        driver.save_screenshot(str(SHOTS / f"layout-{page}-{width}{suffix}.png"))
        bad = driver.execute_script(OVERFLOW_JS)
        if width >= 1280 and page in FITTING:
            bad += driver.execute_script(SCROLLED_JS)
        if bad:
            found[f"{page} at {width}{suffix}"] = bad
    return found
