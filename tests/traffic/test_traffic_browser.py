"""The Traffic page in headless Chromium: records stored after the page opened show up in the
latest-requests table and the charts without a reload.

- Against Django's live server (no websockets), as with the embedded default, where the relay's
  process cannot reach the page's socket: polling records.json delivers them.
- The socket path (daphne, Redis, the relay's writer in its own process) is the real-engine
  acceptance test's: tests/traffic/test_relay_real_engine.py, RelayTrafficPageTest.

The screenshot goes to /tmp/traffic-page.png, for a person to look at.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import MachineFactory, TrafficRecordFactory

SHOT = Path(tempfile.gettempdir()) / "traffic-page.png"

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM)]

# The charts' datasets as the page holds them: {canvas id: {label: [values]}}.
DATASETS_JS = """
const out = {};
for (const id of ["requests-chart", "decode-chart", "acceptance-chart"]) {
  out[id] = {};
  for (const d of Chart.getChart(document.getElementById(id)).data.datasets) out[id][d.label] = d.data;
}
return out;
"""


def _rows(browser):
    return browser.find_elements(By.CSS_SELECTOR, "#latest-requests tbody tr")


@pytest.mark.django_db(transaction=True)
def test_it_draws_records_stored_after_the_page_opened(live_server, alice):
    machine = MachineFactory(name="spark-live")
    with logged_in_chromium(live_server.url, alice) as browser:
        browser.get(browser.base_url + reverse("traffic:page", args=[machine.pk]))
        assert _rows(browser) == []
        assert browser.find_element(By.ID, "no-requests").is_displayed()
        before = browser.execute_script(DATASETS_JS)
        assert sum(before["requests-chart"]["requests per minute"]) == 0
        assert before["decode-chart"] == {}
        browser.execute_script("window.notReloaded = true;")

        now = timezone.now()
        TrafficRecordFactory(machine=machine, arrived=now, output_type="tool-call", decode_tps_client=60.0,
                             accepted_tokens=90, draft_tokens=100, model="qwen3-live")
        TrafficRecordFactory(machine=machine, arrived=now, output_type="prose-ja", decode_tps_client=20.0,
                             accepted_tokens=10, draft_tokens=100)
        TrafficRecordFactory(machine=machine, arrived=now, status=500, error="engine said 500",
                             output_type="", decode_tps_client=None)

        WebDriverWait(browser, 20).until(lambda d: len(_rows(d)) == 3)
        after = browser.execute_script(DATASETS_JS)
        assert sum(after["requests-chart"]["requests per minute"]) == 3
        assert sum(after["requests-chart"]["errors"]) == 1
        assert set(after["decode-chart"]) == {"tool-call", "prose-ja"}
        assert [v for v in after["decode-chart"]["tool-call"] if v is not None] == [60.0]
        assert [v for v in after["acceptance-chart"]["prose-ja"] if v is not None] == [10.0]
        assert int(browser.find_element(By.ID, "decode-chart").get_attribute("data-points")) == 2
        assert browser.find_element(By.ID, "traffic").get_attribute("data-transport") == "polling"
        assert {row.get_attribute("data-via") for row in _rows(browser)} == {"polling"}
        assert browser.execute_script("return window.notReloaded === true;")
        assert "engine said 500" in _rows(browser)[0].text
        assert "qwen3-live" in browser.find_element(By.ID, "latest-requests").text
        assert not browser.find_element(By.ID, "no-requests").is_displayed()
        assert "3 requests" in browser.find_element(By.CSS_SELECTOR, '[data-figure="requests"]').text
        assert "1 of 3 (33.3 %)" in browser.find_element(By.CSS_SELECTOR, '[data-figure="errors"]').text
        browser.save_screenshot(str(SHOT))
        Select(browser.find_element(By.ID, "window")).select_by_value("15m")
        WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith("?window=15m"))
        assert browser.find_element(By.ID, "traffic").get_attribute("data-window") == "15m"
        assert len(_rows(browser)) == 3
