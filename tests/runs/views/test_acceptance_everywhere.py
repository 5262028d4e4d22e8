"""One acceptance figure on every page and download: the run's pooled figure (docs/metrics.md, Acceptance)."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from engines.simulator import SimProfile, serve_in_thread
from runs.models import Run
from tests.runs.results.test_prometheus import parse, scrape
from tests.runs.worker.test_execution import make_run, run_to_end

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def drafted_run() -> Run:
    """A speed run on the simulator drafting 4 tokens: its output types accept from 10 to 95 %, so
    the median of the requests' ratios is far from the pooled figure."""
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        run = run_to_end(make_run(sim.url, {"reps": 2, "warmup": 0}))
    assert run.status == Run.Status.SUCCEEDED, run.error
    return run


def test_it_takes_the_engines_counters_as_the_runs_acceptance(drafted_run):
    summary = drafted_run.summary
    counters, rate = summary["spec_decode_metrics"], summary["acceptance_rate"]
    assert rate["source"] == "engine"
    assert rate["pooled"] == counters["accepted"] / counters["draft_tokens"]
    assert summary["tokens_per_verification"]["pooled"] == pytest.approx(counters["tokens_per_verification"])
    # The requests' own counts sum to the engine's, each read around its request.
    requests = [s.values for s in drafted_run.samples.filter(kind="request")]
    assert sum(r["accepted_tokens"] for r in requests) == counters["accepted"]
    assert sum(r["verifications"] for r in requests) == counters["drafts"]
    assert abs(summary["acceptance_rate_per_request"]["median"] - rate["pooled"]) > 0.02


def test_it_shows_the_pooled_figure_on_the_run_page_the_csv_the_api_and_the_export(alice_client, drafted_run):
    assert_shown_everywhere(alice_client, drafted_run)


def test_it_compares_and_reports_the_same_figure(alice_client, drafted_run):
    assert_compared(alice_client, drafted_run)


def assert_shown_everywhere(client, run: Run) -> None:
    """The run's pooled acceptance on its page, in the runs CSV, the JSON API and the Prometheus
    export (the run is the only one its user sees)."""
    rate, per_pass = run.summary["acceptance_rate"], run.summary["tokens_per_verification"]
    page = client.get(run.get_absolute_url()).content.decode()
    assert f"{100 * rate['pooled']:.1f} %" in page
    assert f"{rate['accepted']} of {rate['drafted']} drafted tokens accepted" in page
    assert "spread over requests" in page
    listed = client.get(reverse("runs:list"), {"format": "csv"}).content.decode()
    (row,) = csv.DictReader(io.StringIO(listed))
    assert float(row["acceptance_rate"]) == rate["pooled"]
    assert float(row["tokens_per_verification"]) == per_pass["pooled"]
    assert row["acceptance_source"] == rate["source"]
    api = json.loads(client.get(reverse("runs:api-run", args=[run.pk])).content)
    assert api["summary"]["acceptance_rate"]["pooled"] == rate["pooled"]
    values, _ = parse(scrape(client))
    exported = {name: v for (name, _), v in values.items() if name.startswith("sparkdash_")}
    assert exported["sparkdash_acceptance_rate"] == pytest.approx(rate["pooled"])
    assert exported["sparkdash_tokens_per_verification"] == pytest.approx(per_pass["pooled"])


def assert_compared(client, run: Run) -> None:
    """Compare's table (its JSON download) and its HTML report show the run's pooled acceptance."""
    rate = run.summary["acceptance_rate"]["pooled"]
    query = {"runs": str(run.pk), "format": "json"}
    rows = json.loads(client.get(reverse("runs:compare"), query).content)["rows"]
    (accept,) = [r for r in rows if r["metric"] == "acceptance_rate"]
    assert accept["median"] == pytest.approx(100 * rate)
    report = client.get(reverse("runs:compare"), query | {"format": "html"}).content.decode()
    assert f"{100 * rate:.1f} [" in report
