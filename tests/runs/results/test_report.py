"""The self-contained HTML report: written by `manage.py report` or downloaded from the compare
page, it opens from a file in headless Chromium with the network off and draws every chart.

The screenshot goes to /tmp/report.png, for a person to look at.
"""
from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.chromium import HAVE_CHROMIUM, NEEDS_CHROMIUM, chromium
from tests.factories import EngineConfigFactory
from tests.runs.compare_helpers import full_comparison, speed_runs

pytestmark = pytest.mark.django_db

SHOT = Path(tempfile.gettempdir()) / "report.png"
CANVASES = ("compare-decode", "compare-acceptance", "compare-concurrency", "compare-scatter")
# Per canvas: its chart's datasets as [label, points, point style], and its data-points.
DRAWN_JS = """
return arguments[0].map((id) => {
  const canvas = document.getElementById(id);
  const chart = Chart.getChart(canvas);
  return [id, Number(canvas.dataset.points),
          chart.data.datasets.map((d) => [d.label, d.data.length, d.pointStyle || null])];
});
"""


def ids(*objects):
    return ",".join(str(o.pk) for o in objects)


@pytest.fixture
def compared():
    """Three configs with every chart's runs; the fastest ran hotter (a parity warning)."""
    base, near, fast = full_comparison()
    fast.temperature = 0.7
    fast.save()
    return base, near, fast


@pytest.fixture
def report(compared, tmp_path):
    runs = [run for config in compared for run in config.runs.order_by("pk")]
    out = tmp_path / "report.html"
    stdout = io.StringIO()
    call_command("report", "--runs", ids(*runs), "--baseline", str(compared[0].pk), "--out", str(out),
                 stdout=stdout)
    assert stdout.getvalue() == f"wrote {out}: {len(runs)} runs of base, near, fast\n"
    return out


def _vendor_chart_js() -> str:
    return Path(finders.find("vendor/chart.umd.min.js")).read_text(encoding="utf-8")


def test_it_writes_one_file_that_links_to_nothing(report, compared):
    html = report.read_text(encoding="utf-8")
    assert _vendor_chart_js() in html
    assert "(function () {" in html and '<script id="compare-data" type="application/json">' in html
    assert not re.search(r"""\b(src|href)\s*=|url\(|@import""", html)
    # Chart.js's own licence comment names its home page; nothing else holds a URL.
    rest = html.replace(_vendor_chart_js(), "")
    assert "http://" not in rest and "https://" not in rest
    for config in compared:
        assert config.engine.base_url not in html
        assert f"<th scope=\"col\" data-config=\"{config.pk}\">{config.name}" in html
    assert 'role="alert" id="parity"' in html and "<strong>temperature</strong>" in html


def test_it_downloads_the_same_report_from_the_compare_page(alice_client, compared):
    response = alice_client.get(reverse("runs:compare"), {"configs": ids(*compared), "format": "html"})
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="sparkdash-compare.html"'
    html = response.content.decode()
    assert html.startswith("<!doctype html>") and _vendor_chart_js() in html
    page = alice_client.get(reverse("runs:compare"), {"configs": ids(*compared)}).content.decode()
    assert f'href="?configs={ids(*compared)}&amp;format=html"' in page


def test_it_reports_acceptance_at_each_draft_position(tmp_path):
    near, fast = EngineConfigFactory(name="near"), EngineConfigFactory(name="fast")
    runs = speed_runs(near, 41.0, positions=[0.8, 0.6])
    runs += speed_runs(fast, 60.0, positions=[0.9, 0.75, 0.6, 0.45])
    out = tmp_path / "report.html"
    call_command("report", "--runs", ids(*runs), "--out", str(out), stdout=io.StringIO())
    html = out.read_text(encoding="utf-8")
    assert '<tr data-metric="Speed/acceptance_pos_4">' in html
    assert "acceptance at draft position 4" in html and "45.0 [45.0\u201345.0] % (n=1)" in html


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runs", "999999"], "--runs: there is no run with id 999999"),
        (["--sweep-runs", "x"], "--sweep-runs: x is not an id"),
        ([], "give --runs, --configs or --sweep-runs"),
    ],
)
def test_it_names_the_bad_option(tmp_path, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("report", *args, "--out", str(tmp_path / "r.html"))
    assert not (tmp_path / "r.html").exists()


@pytest.mark.browser
@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NEEDS_CHROMIUM)
def test_it_opens_offline_in_headless_chromium_and_draws_its_charts(report):
    profile = tempfile.TemporaryDirectory(prefix="sparkdash-chromium-", ignore_cleanup_errors=True)
    driver = chromium(profile.name, height=2300)
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0})
        driver.get(report.as_uri())
        charts = driver.execute_script(DRAWN_JS, CANVASES)
        resources = driver.execute_script(
            "return performance.getEntriesByType('resource').map((e) => e.name)")
        driver.save_screenshot(str(SHOT))
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        driver.quit()
        profile.cleanup()
    drawn = {id_: (points, datasets) for id_, points, datasets in charts}
    assert drawn["compare-decode"] == (3, [["median, decode tok/s (client)", 3, None],
                                           ["min\u2013max over runs", 3, None]])
    assert drawn["compare-acceptance"][0] == 2
    assert drawn["compare-concurrency"] == (12, [["base", 4, None], ["near", 4, None], ["fast", 4, None]])
    points, datasets = drawn["compare-scatter"]
    assert points == 3
    assert datasets == [["configs", 3, None], ["Pareto front (not beaten on both)", 2, "rectRot"]]
    assert [r for r in resources if not r.startswith(("file:", "data:"))] == []
    assert severe == []


def test_it_writes_the_report_in_japanese_with_lang_ja(tmp_path, compared):
    out = tmp_path / "ja.html"
    args = ("--configs", ids(*compared), "--lang", "ja", "--out", str(out))
    call_command("report", *args, stdout=io.StringIO())
    html = out.read_text()
    assert '<html lang="ja">' in html and "<h1>SparkDash の比較</h1>" in html
    # The scripts' words come inlined with it: the Japanese JavaScript catalogue.
    assert "django.catalog" in html and "\\u57fa\\u6e96" in html  # 基準 (baseline), JSON-escaped


def test_it_keeps_the_report_in_english_by_default(tmp_path, compared):
    out = tmp_path / "en.html"
    call_command("report", "--configs", ids(*compared), "--out", str(out), stdout=io.StringIO())
    html = out.read_text()
    assert '<html lang="en">' in html and "<h1>SparkDash comparison</h1>" in html
    assert "\\u57fa\\u6e96" not in html


def test_it_downloads_the_report_in_the_language_asked_for(alice_client, compared):
    query = {"configs": ids(*compared), "format": "html"}
    japanese = alice_client.get(reverse("runs:compare"), query | {"lang": "ja"}).content.decode()
    assert '<html lang="ja">' in japanese and "SparkDash の比較" in japanese
    # Without ?lang= it is in the page's language.
    page_language = alice_client.get(reverse("runs:compare"), query, HTTP_ACCEPT_LANGUAGE="ja")
    assert '<html lang="ja">' in page_language.content.decode()
    assert '<html lang="en">' in alice_client.get(reverse("runs:compare"), query).content.decode()


def test_it_refuses_a_report_language_it_does_not_have(alice_client, compared):
    query = {"configs": ids(*compared), "format": "html", "lang": "fr"}
    response = alice_client.get(reverse("runs:compare"), query)
    assert response.status_code == 400
    assert response.content.decode() == "lang: fr is not a language of the report (en, ja)"
    with pytest.raises(CommandError, match="invalid choice: 'fr'"):
        call_command("report", "--configs", ids(*compared), "--lang", "fr", "--out", "/dev/null")
