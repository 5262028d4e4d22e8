"""The compare page in headless Chromium: it draws its four charts from the embedded data.

The screenshot goes to /tmp/compare.png, for a person to look at.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.runs.compare_helpers import full_comparison

SHOT = Path(tempfile.gettempdir()) / "compare.png"
CANVASES = ("compare-decode", "compare-acceptance", "compare-concurrency", "compare-scatter")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]

DRAWN_JS = """
return arguments[0].map((id) => {
  const chart = Chart.getChart(document.getElementById(id));
  return [id, chart.config.type, chart.data.datasets.map((d) => d.data.length)];
});
"""


@pytest.fixture
def browser(live_server, alice):
    with logged_in_chromium(live_server.url, alice, height=2300) as driver:
        yield driver


def test_it_draws_the_compare_charts(browser):
    base, near, fast = full_comparison()
    query = f"?configs={base.pk},{near.pk},{fast.pk}&baseline={fast.pk}"
    browser.get(browser.base_url + reverse("runs:compare") + query)
    try:
        WebDriverWait(browser, 10).until(
            lambda d: d.find_element(By.ID, "compare-scatter").get_attribute("data-points") == "3"
        )
    finally:
        browser.save_screenshot(str(SHOT))
    drawn = {id_: (kind, lengths) for id_, kind, lengths in browser.execute_script(DRAWN_JS, CANVASES)}
    assert drawn == {
        "compare-decode": ("bar", [3, 3]),
        "compare-acceptance": ("bar", [2, 2]),
        "compare-concurrency": ("line", [4, 4, 4]),
        "compare-scatter": ("scatter", [3, 2]),
    }
    header = browser.find_element(By.CSS_SELECTOR, f'th[data-config="{fast.pk}"]').text
    assert header.startswith("fast") and "baseline" in header
    assert browser.find_element(By.ID, "parity-ok").is_displayed()
    assert browser.find_element(By.ID, "permalink").get_attribute("href").endswith(
        f"?configs={base.pk},{near.pk},{fast.pk}&baseline={fast.pk}")
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
