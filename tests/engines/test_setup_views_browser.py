"""Adding an engine in headless Chromium: the connection test waits for the machine's worker and
the page fills in what answered. Screenshots: /tmp/setup-engine-*.png, for a person to look at."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from engines.simulator import SimProfile, serve_in_thread
from teams.models import Role
from teams.roles import set_role
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import MachineFactory, TeamFactory, UserFactory

SHOTS = Path(tempfile.gettempdir())

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def admin_browser(live_server, settings):
    if settings.SPARKDASH_WORKER == "celery":
        pytest.skip("the in-process worker runs the check here; with a broker, the machine's worker")
    team = TeamFactory(name="lab")
    admin = UserFactory(username="lab-admin", teams=[team])
    set_role(admin, team, Role.ADMIN)
    MachineFactory(name="spark-9", team=team)
    with logged_in_chromium(live_server.url, admin, height=1200) as driver:
        yield driver


def connection_of(driver, url: str, shot: str) -> str:
    """Fill the new-engine form with `url`, test the connection, and return what the page says."""
    driver.get(driver.base_url + "/engines/new/")
    Select(driver.find_element(By.ID, "id_machine")).select_by_visible_text("spark-9")
    driver.find_element(By.ID, "id_name").send_keys("llama")
    Select(driver.find_element(By.ID, "id_kind")).select_by_value("llama-server")
    driver.find_element(By.ID, "id_base_url").send_keys(url)
    driver.find_element(By.ID, "test-connection").click()
    box = WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "connection-check"))
    WebDriverWait(driver, 30).until(lambda d: box.get_attribute("data-finished") == "1")
    driver.save_screenshot(str(SHOTS / shot))
    return box.text


def test_it_says_plainly_that_nothing_answers(admin_browser):
    said = connection_of(admin_browser, "http://127.0.0.1:9", "setup-engine-unreachable.png")
    assert "Not reachable: http://127.0.0.1:9" in said and "cannot reach" in said


def test_it_shows_what_a_reachable_simulator_is(admin_browser):
    with serve_in_thread(SimProfile(lookahead=4)) as sim:
        said = connection_of(admin_browser, sim.url, "setup-engine-reachable.png")
    assert "openai" in said and "sparkdash-sim:8b" in said and "exposed in /metrics" in said
