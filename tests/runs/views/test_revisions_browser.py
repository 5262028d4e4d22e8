"""The revision loop in headless Chromium, as a team member does it: run a config, change its
lookahead, run again; the first run keeps its settings, the config shows two revisions and their
diff, "Run again" repeats the first run's settings and "Clone and change" makes a new config.

Screenshots go to /tmp/revision-*.png, for a person to look at.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from engines.models import EngineConfig
from engines.simulator import SimProfile, serve_in_thread
from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import EngineConfigFactory

SHOTS = Path(tempfile.gettempdir())

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def browser(live_server, alice, inprocess):  # runs started from the pages execute in this process
    with logged_in_chromium(live_server.url, alice, height=2000) as driver:
        yield driver


def start_speed_run(driver, config: EngineConfig) -> Run:
    """Start a one-request speed run from the config's page and wait until it has finished."""
    driver.get(driver.base_url + config.get_absolute_url())
    Select(driver.find_element(By.ID, "id_job")).select_by_value("speed")
    driver.find_element(By.CSS_SELECTOR, "#start-job button[type=submit]").click()
    return finished(driver)


def finished(driver) -> Run:
    """The run whose page the browser is on, once it has ended."""
    WebDriverWait(driver, 10).until(lambda d: re.search(r"/runs/\d+/$", d.current_url))
    run_id = int(re.search(r"/runs/(\d+)/$", driver.current_url).group(1))
    WebDriverWait(driver, 60).until(lambda d: Run.objects.get(pk=run_id).is_finished)
    run = Run.objects.get(pk=run_id)
    assert run.status == Run.Status.SUCCEEDED, run.error
    return run


def edit_lookahead(driver, config: EngineConfig, value: int) -> None:
    driver.get(driver.base_url + f"/configs/{config.pk}/edit/")
    field = driver.find_element(By.ID, "id_lookahead")
    field.clear()
    field.send_keys(str(value))
    driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    WebDriverWait(driver, 10).until(lambda d: d.current_url.endswith(config.get_absolute_url()))


def test_it_keeps_each_runs_settings_through_an_edit_and_repeats_them(browser):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        config = EngineConfigFactory(name="drafting", max_tokens=8, lookahead=4, engine__base_url=sim.url,
                                     engine__kind="llama-server", engine__simulator=True)
        first = start_speed_run(browser, config)
        edit_lookahead(browser, config, 8)
        second = start_speed_run(browser, config)

        browser.get(browser.base_url + first.get_absolute_url())
        browser.save_screenshot(str(SHOTS / "revision-old-run.png"))
        assert '"lookahead": 4' in browser.find_element(By.ID, "config-snapshot").get_attribute("textContent")
        changed = browser.find_element(By.ID, "run-changed-since").text
        assert "revision r2" in changed and "lookahead: 4 → 8" in changed

        browser.get(browser.base_url + config.get_absolute_url())
        browser.save_screenshot(str(SHOTS / "revision-config.png"))
        rows = browser.find_elements(By.CSS_SELECTOR, "#revisions tbody tr")
        assert [r.get_attribute("data-revision") for r in rows] == ["2", "1"]
        assert "lookahead: 4 → 8" in rows[0].text
        cards = browser.find_elements(By.CSS_SELECTOR, "#scorecard .revision-scorecard")
        assert [c.get_attribute("data-revision") for c in cards] == ["2", "1"]

        browser.get(browser.base_url + first.get_absolute_url())
        browser.find_element(By.CSS_SELECTOR, "#again-form button").click()
        WebDriverWait(browser, 10).until(lambda d: not d.current_url.endswith(first.get_absolute_url()))
        again = finished(browser)
        browser.get(browser.base_url + config.get_absolute_url())
        groups = browser.find_elements(By.CSS_SELECTOR, "section.revision-runs")
        groups[-1].location_once_scrolled_into_view  # noqa: B018
        browser.save_screenshot(str(SHOTS / "revision-runs.png"))
        assert [g.get_attribute("data-revision") for g in groups] == ["2", "1"]
        assert f"#{again.pk}" in groups[1].text and f"#{first.pk}" in groups[1].text
    assert again.pk not in (first.pk, second.pk)
    assert again.revision_id == first.revision_id and again.provenance["config"]["lookahead"] == 4
    assert second.provenance["config"]["lookahead"] == 8


def test_it_clones_a_config_with_the_changed_field_outlined(browser):
    config = EngineConfigFactory(name="base", lookahead=4, temperature=0.0)
    browser.get(browser.base_url + config.get_absolute_url())
    browser.find_element(By.ID, "clone-config").click()
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.ID, "clone-source"))
    name, lookahead = browser.find_element(By.ID, "id_name"), browser.find_element(By.ID, "id_lookahead")
    assert name.get_attribute("value") == "base (copy)" and lookahead.get_attribute("value") == "4"
    lookahead.clear()
    lookahead.send_keys("6")
    outlined = browser.find_elements(By.CSS_SELECTOR, ".changed-from-source")
    browser.save_screenshot(str(SHOTS / "revision-clone.png"))
    assert [field.get_attribute("name") for field in outlined] == ["lookahead"]  # settings only
    name.clear()
    name.send_keys("base-6")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    WebDriverWait(browser, 10).until(lambda d: EngineConfig.objects.filter(name="base-6").exists())
    clone = EngineConfig.objects.get(name="base-6")
    assert (clone.lookahead, clone.engine_id, clone.temperature) == (6, config.engine_id, 0.0)
