"""An imported GuideLLM run next to a SparkDash run of the same config, in headless Chromium: the runs
list, compare and the cross-tool view. Screenshots go to /tmp/imported-*.png, for a person to look at."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from selenium.webdriver.common.by import By

from runs.actions.imports import import_file
from runs.models import Run
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.factories import EngineConfigFactory, RunFactory

SHOTS = Path(tempfile.gettempdir())
GUIDELLM = Path(__file__).parents[2] / "fixtures" / "peers" / "guidellm" / "c1" / "benchmarks.json"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def both():
    config = EngineConfigFactory(name="gemma-270m")
    spread = {"n": 6, "min": 0.24, "max": 0.29}
    ours = RunFactory(
        config=config,
        status=Run.Status.SUCCEEDED,
        finished=timezone.now(),
        summary={
            "ttft_s": spread | {"median": 0.262},
            "decode_tps_client": {"median": 77.9, "min": 76.0, "max": 79.1, "n": 6},
        },
    )
    (theirs,) = import_file("benchmarks.json", GUIDELLM.read_bytes(), config).added
    return config, ours, theirs


def test_it_shows_an_imported_guidellm_run_beside_ours_in_the_list_compare_and_across_tools(
    live_server, alice, both
):
    config, ours, theirs = both
    with logged_in_chromium(live_server.url, alice, height=1400) as driver:
        driver.get(driver.base_url + reverse("runs:list") + f"?config={config.pk}")
        rows = {
            row.find_element(By.CSS_SELECTOR, "td a").text: row.text
            for row in driver.find_elements(By.CSS_SELECTOR, "table tbody tr")
        }
        assert "GuideLLM" in rows[f"#{theirs.pk}"] and "Imported" in rows[f"#{theirs.pk}"]
        assert "Speed" in rows[f"#{ours.pk}"] and "GuideLLM" not in rows[f"#{ours.pk}"]
        driver.save_screenshot(str(SHOTS / "imported-runs.png"))

        driver.get(driver.base_url + reverse("runs:compare") + f"?runs={ours.pk},{theirs.pk}")
        page = driver.find_element(By.TAG_NAME, "main").text
        assert "GuideLLM, one stream" in page and "Speed" in page
        driver.save_screenshot(str(SHOTS / "imported-compare.png"))

        driver.get(driver.base_url + reverse("runs:config-tools", args=[config.pk]))
        level = driver.find_element(By.ID, "level-1")
        heads = [th.text for th in level.find_elements(By.CSS_SELECTOR, "thead th")]
        assert heads[1:3] == ["SparkDash", "GuideLLM"]
        ttft = next(r for r in level.find_elements(By.CSS_SELECTOR, "tbody tr") if r.text.startswith("TTFT"))
        cells = [td.text.split("\n")[0] for td in ttft.find_elements(By.TAG_NAME, "td")]
        assert cells[0] == "0.262" and cells[1] == f"{theirs.summary['ttft_s']['median']:.3f}"
        driver.save_screenshot(str(SHOTS / "imported-across-tools.png"))

        driver.get(driver.base_url + theirs.get_absolute_url())
        figures = driver.find_element(By.ID, "imported-figures")
        assert "includes the first token" in figures.text
        prefill = figures.find_element(By.CSS_SELECTOR, '[data-metric="prefill_tps"] .missing')
        assert (prefill.text, prefill.get_attribute("title")) == ("—", "not measured by GuideLLM")
        driver.save_screenshot(str(SHOTS / "imported-run.png"))
