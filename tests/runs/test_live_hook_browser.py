"""The live-latency benchmark's page hook (tests/bench/live_hook.js) in headless Chromium: injected
into a run page, it times each stamped sample the page draws; a page without it has no hook."""
from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from runs.models import Run
from tests.bench.live_pages import READ_JS, install_hook
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import RunFactory, SampleFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]

SENT_MS = 1_700_000_000_000.0


def _stamped_run(n: int) -> Run:
    run = RunFactory(job="speed", status=Run.Status.SUCCEEDED)
    for i in range(n):
        values = {"decode_tps_client": 40.0 + i, "bench_sent_ms": SENT_MS + i}
        SampleFactory(run=run, seq=i + 1, values=values)
    return run


def _open(driver, run: Run, points: int) -> None:
    driver.get(driver.base_url + run.get_absolute_url())
    WebDriverWait(driver, 10).until(
        lambda d: d.find_element(By.ID, "speed-chart").get_attribute("data-points") == str(points)
    )


def test_it_times_every_stamped_sample_once_the_page_drew_it(live_server, alice):
    run = _stamped_run(3)
    with logged_in_chromium(live_server.url, alice) as driver:
        install_hook(driver)
        _open(driver, run, 3)
        rows = driver.execute_script(READ_JS)
    assert [(seq, sent) for seq, sent, _, _ in rows] == [(i + 1, SENT_MS + i) for i in range(3)]
    # Received when the polled JSON reached the page, drawn after: both this page's clock, in epoch ms.
    assert all(sent < received <= drawn for _, sent, received, drawn in rows)


def test_it_leaves_a_page_without_the_hook_unhooked(live_server, alice):
    run = _stamped_run(2)
    with logged_in_chromium(live_server.url, alice) as driver:
        _open(driver, run, 2)
        assert driver.execute_script(READ_JS) is None
