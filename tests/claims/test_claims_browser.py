"""The Claims page and a claim page in headless Chromium, with a check finished on the simulator: the
verdicts, the chart with its intervals and the provenance diff drawn, in English and Japanese, at 390 and
1,280 px; the offline reproduction report too. Screenshots go to $CLAIM_SHOTS (default: a temporary
folder), for a person to look at."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from django.urls import reverse

from claims.checking import refresh_check, start_check
from claims.models import Check
from claims.report import html_report
from claims.results import check_view
from engines.simulator import SimProfile, serve_in_thread
from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, logged_in_chromium
from tests.claims.pages_helpers import make_claim
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, TeamFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM)]

SHOTS = Path(os.environ.get("CLAIM_SHOTS") or tempfile.mkdtemp(prefix="claim-shots-"))
CLAIM = """\
claim:
  source: {title: "A small model on a Spark: 150 tok/s", url: "https://example.org/post",
           author: "a forum post"}
  hardware: {name: "DGX Spark", bandwidth_gbps: 273, nodes: 1}
  engine: {kind: llama-server, version: "b11434"}
  model: {name: gemma3-270m, quantization: Q4_K_M, bytes_per_token_gb: 0.25}
  workload: {output_tokens: 16, concurrency: [1, 2], sampling: {temperature: 0}, thinking: false}
  figures:
    - {metric: decode_tps, concurrency: 1, value: 150}
    - {metric: decode_tps, concurrency: 2, value: 240}
    - {metric: ttft_ms, concurrency: 1, value: 30}
"""
CHARTS_JS = """
return Array.from(document.querySelectorAll('#claim-charts canvas')).map(
  (c) => [c.id, Number(c.dataset.points), Chart.getChart(c).data.datasets.map((d) => d.data.length)]);
"""


def _shot(driver, name: str, width: int) -> None:
    driver.set_window_size(width, 800)
    time.sleep(0.3)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(max(height, 800), 6000))
    time.sleep(0.3)
    driver.save_screenshot(str(SHOTS / f"{name}-{width}.png"))


@pytest.fixture
def simulated_check(settings, transactional_db):
    settings.SPARKDASH_WORKER = "inprocess"
    team = TeamFactory(name="claims-team")
    user = UserFactory(username="claims_owner", teams=[team])
    with serve_in_thread(SimProfile(decode_tps=160.0, ttft_ms=25.0, lookahead=0)) as sim:
        engine = EngineFactory(
            machine=MachineFactory(team=team, name="sim-box"),
            kind="llama-server",
            base_url=sim.url,
            simulator=True,
            name="sim-small",
        )
        config = EngineConfigFactory(
            engine=engine, name="sim-small-config", model="gemma3-270m", max_tokens=16
        )
        check = start_check(make_claim(team, CLAIM), engine, config=config, repetitions=3, user=user)
        deadline = time.monotonic() + 240
        while check.status == Check.Status.RUNNING and time.monotonic() < deadline:
            time.sleep(0.5)
            check = refresh_check(Check.objects.get(pk=check.pk))
        yield user, check


@pytest.mark.timeout(400)
def test_it_shows_the_claims_and_a_checked_claim_in_both_languages(live_server, simulated_check):
    user, check = simulated_check
    assert check.status == Check.Status.DONE, check.error
    for language, tag in (("en-US", "en"), ("ja", "ja")):
        with logged_in_chromium(live_server.url, user, language=language) as driver:
            driver.get(live_server.url + reverse("claims:list"))
            assert driver.find_elements("css selector", f'tr[data-claim="{check.claim_id}"] mark.verdict')
            for width in (390, 1280):
                _shot(driver, f"claims-list-{tag}", width)
            driver.get(live_server.url + reverse("claims:detail", args=[check.claim_id]))
            charts = driver.execute_script(CHARTS_JS)
            assert sorted(c[0] for c in charts) == ["claim-chart-decode_tps", "claim-chart-ttft_ms"]
            assert all(sets == [points] * 3 for _, points, sets in charts)
            assert driver.find_elements("css selector", "[data-simulator]")
            assert driver.find_elements("css selector", 'tr[data-prov="engine_version"].differs')
            for width in (390, 1280):
                _shot(driver, f"claim-page-{tag}", width)
            report = SHOTS / f"report-{tag}.html"
            report.write_text(html_report(check_view(check), tag), encoding="utf-8")
            driver.get(report.as_uri())
            assert len(driver.execute_script(CHARTS_JS)) == 2
            for width in (390, 1280):
                _shot(driver, f"report-{tag}", width)
            assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
