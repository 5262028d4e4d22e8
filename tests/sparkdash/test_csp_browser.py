"""The Content-Security-Policy in headless Chromium: the main pages (and Django's admin) load and
run their scripts, charts and sockets with no violation in the console, the Permissions-Policy names
only features Chromium knows, and the policy does refuse an inline script."""
from __future__ import annotations

import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import UserFactory, team_world
from tests.live_server import DaphneLiveServerTestCase

# A page's own scripts ran: the run page's socket or polling said how it got the run, Chart.js drew.
SCRIPTS_RAN = {
    "runs:detail": "return document.getElementById('run-status').dataset.transport || ''",
    "runs:config-detail": "return document.querySelector('button[data-copy]') ? 'copy' : ''",
    "runs:compare": "return typeof Chart === 'function' ? 'chart' : ''",
}


def _violations(logged: list[dict]) -> list[str]:
    """Refusals of the CSP, and features of the Permissions-Policy that Chromium does not know."""
    policies = ("Content Security Policy", "Permissions-Policy")
    return [e["message"] for e in logged if any(policy in e["message"] for policy in policies)]


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
            "admin:index": reverse("admin:index"),
            "admin:engines_engineconfig_add": reverse("admin:engines_engineconfig_add"),
        }

    def test_it_loads_the_main_pages_without_a_policy_violation(self) -> None:
        root = UserFactory(username="root", is_superuser=True, is_staff=True)
        with logged_in_chromium(self.live_server_url, root) as driver:
            for name, path in self._pages().items():
                driver.get(self.live_server_url + path)
                if name in SCRIPTS_RAN:
                    WebDriverWait(driver, 10).until(lambda d, js=SCRIPTS_RAN[name]: d.execute_script(js))
                if name == "runs:config-detail":
                    # An inline handler would be refused only now, when it runs.
                    driver.find_element(By.CSS_SELECTOR, "button[data-copy]").click()
                logged = driver.get_log("browser")
                assert _violations(logged) == [], name
                # The admin's pages link no icon: Chromium's guess at /favicon.ico is a 404 there.
                severe = [e for e in logged if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]
                assert severe == [], name

    def test_it_refuses_an_inline_script(self) -> None:
        with logged_in_chromium(self.live_server_url, self.world.owner) as driver:
            driver.get(self.live_server_url + reverse("runs:home"))
            driver.execute_script(
                "const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
                "document.body.appendChild(s);")
            assert driver.execute_script("return window.injected") is None
            assert any("inline script" in message for message in _violations(driver.get_log("browser")))
