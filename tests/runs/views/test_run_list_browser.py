"""The runs list's "Compare selected" in headless Chromium: the button counts the ticked runs,
refuses one run at once, and opens the compare page with two.

The screenshot goes to /tmp/run-list-compare.png, for a person to look at.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import RunFactory

SHOT = Path(tempfile.gettempdir()) / "run-list-compare.png"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]


def test_it_compares_the_runs_ticked_in_the_list(live_server, alice):
    first, second = RunFactory(status=Run.Status.SUCCEEDED), RunFactory(status=Run.Status.SUCCEEDED)
    with logged_in_chromium(live_server.url, alice) as browser:
        browser.get(browser.base_url + reverse("runs:list"))
        button = browser.find_element(By.CSS_SELECTOR, "#compare-selected button[name=compare]")
        browser.find_element(By.CSS_SELECTOR, f'input[name=runs][value="{first.pk}"]').click()
        assert button.text == "Compare selected (1)"
        button.click()
        error = browser.find_element(By.ID, "compare-error")
        assert "tick at least 2 runs to compare (1 is ticked)" in error.text
        assert browser.current_url.endswith(reverse("runs:list"))
        browser.find_element(By.CSS_SELECTOR, f'input[name=runs][value="{second.pk}"]').click()
        browser.save_screenshot(str(SHOT))
        button.click()
        WebDriverWait(browser, 10).until(lambda d: reverse("runs:compare") in d.current_url)
        assert browser.current_url.endswith(f"{reverse('runs:compare')}?runs={first.pk},{second.pk}")
