"""Cancelling a run in headless Chromium: it asks first, and a cancelled run says why it has no
telemetry summary."""
from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import RunFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]


def test_it_asks_before_cancelling_and_says_why_there_is_no_telemetry(live_server, alice):
    run = RunFactory()  # queued, and no worker takes it: only the page acts on it
    with logged_in_chromium(live_server.url, alice) as driver:
        driver.get(driver.base_url + run.get_absolute_url())
        driver.find_element(By.CSS_SELECTOR, "#cancel-form button").click()
        alert = WebDriverWait(driver, 5).until(lambda d: d.switch_to.alert)
        assert "Cancel this run?" in alert.text
        alert.dismiss()
        assert Run.objects.get(pk=run.pk).status == Run.Status.QUEUED
        driver.find_element(By.CSS_SELECTOR, "#cancel-form button").click()
        WebDriverWait(driver, 5).until(lambda d: d.switch_to.alert).accept()
        WebDriverWait(driver, 10).until(lambda d: Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED)
        driver.get(driver.base_url + run.get_absolute_url())
        said = driver.find_element(By.ID, "telemetry-summary").text
    assert said == "none: the run was cancelled before its telemetry summary"
