"""The Content-Security-Policy in headless Chromium: the main pages load and run their scripts,
charts and sockets with no violation in the console, and the policy does refuse an inline script."""
from __future__ import annotations

import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import team_world
from tests.live_server import DaphneLiveServerTestCase

# A page's own scripts ran: the run page's socket or polling said how it got the run, Chart.js drew.
SCRIPTS_RAN = {
    "runs:detail": "return document.getElementById('run-status').dataset.transport || ''",
    "runs:config-detail": "return document.querySelector('button[data-copy]') ? 'copy' : ''",
    "runs:compare": "return typeof Chart === 'function' ? 'chart' : ''",
}


def _violations(logged: list[dict]) -> list[str]:
    return [e["message"] for e in logged if "Content Security Policy" in e["message"]]


@pytest.mark.browser
@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM)
class ContentSecurityPolicyTest(DaphneLiveServerTestCase):
    def setUp(self) -> None:
        self.world = team_world("alpha")

    def _pages(self) -> dict[str, str]:
        world = self.world
        return {
            "runs:home": reverse("runs:home"),
            "runs:config-detail": reverse("runs:config-detail", args=[world.config.pk]),
            "runs:detail": reverse("runs:detail", args=[world.run.pk]),
            "runs:list": reverse("runs:list"),
            "runs:compare": reverse("runs:compare") + f"?runs={world.run.pk}",
            "runs:sweep-run": reverse("runs:sweep-run", args=[world.execution.pk]),
            "traffic:page": reverse("traffic:page", args=[world.machine.pk]),
            "runs:tour": reverse("runs:tour"),
        }

    def test_it_loads_the_main_pages_without_a_policy_violation(self) -> None:
        with logged_in_chromium(self.live_server_url, self.world.owner) as driver:
            for name, path in self._pages().items():
                driver.get(self.live_server_url + path)
                if name in SCRIPTS_RAN:
                    WebDriverWait(driver, 10).until(lambda d, js=SCRIPTS_RAN[name]: d.execute_script(js))
                if name == "runs:config-detail":
                    # An inline handler would be refused only now, when it runs.
                    driver.find_element(By.CSS_SELECTOR, "button[data-copy]").click()
                logged = driver.get_log("browser")
                assert _violations(logged) == [], name
                assert [e for e in logged if e["level"] == "SEVERE"] == [], name

    def test_it_refuses_an_inline_script(self) -> None:
        with logged_in_chromium(self.live_server_url, self.world.owner) as driver:
            driver.get(self.live_server_url + reverse("runs:home"))
            driver.execute_script(
                "const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
                "document.body.appendChild(s);")
            assert driver.execute_script("return window.injected") is None
            assert any("inline script" in message for message in _violations(driver.get_log("browser")))
