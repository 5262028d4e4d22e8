"""runs/migrations/0014: runs stored with acceptance as a median of per-request ratios are pooled."""
from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from runs.models import Run
from tests.factories import RunFactory, SampleFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("runs.migrations.0014_pooled_acceptance")


def spread(median: float, n: int = 3) -> dict:
    return {"median": median, "min": median * 0.9, "max": median * 1.1, "n": n}


def drafted(output_type: str, accepted: int, drafted: int, verifications: int, **more) -> dict:
    return {"output_type": output_type, "accepted_tokens": accepted, "draft_tokens": drafted,
            "verifications": verifications, "acceptance_rate": accepted / drafted,
            "tokens_per_verification": (accepted + verifications) / verifications, **more}


def old_run(job: str, summary: dict, rows: list[dict]) -> Run:
    run = RunFactory(job=job, summary=summary, status=Run.Status.SUCCEEDED)
    for row in rows:
        SampleFactory(run=run, values=row)
    return run


def upgraded(run: Run) -> dict:
    migration.forwards(apps, None)
    run.refresh_from_db()
    return run.summary


def test_it_pools_a_speed_runs_acceptance_from_the_engines_counters_and_keeps_the_median_aside():
    rows = [drafted("table", 9, 10, 3), drafted("table", 40, 200, 80), drafted("prose-en", 60, 200, 70)]
    counters = {"drafts": 285, "draft_tokens": 1095, "accepted": 843}
    summary = {"acceptance_rate": spread(0.3), "tokens_per_verification": spread(1.7),
               "spec_decode_metrics": counters,
               "by_output_type": {"table": {"acceptance_rate": spread(0.55, 2)}}}
    summary = upgraded(old_run("speed", summary, [*rows, {"failed": True, "output_type": "table"}]))
    assert summary["acceptance_rate"]["pooled"] == 843 / 1095
    assert summary["acceptance_rate"]["source"] == "engine"
    assert summary["tokens_per_verification"]["pooled"] == (843 + 285) / 285
    assert summary["acceptance_rate_per_request"]["median"] == pytest.approx(0.3)  # the requests' ratios
    table = summary["by_output_type"]["table"]
    assert table["acceptance_rate"]["pooled"] == 49 / 210
    assert table["acceptance_rate"]["source"] == "requests"


def test_it_pools_from_the_request_samples_or_the_log_where_the_engine_kept_no_counters():
    rows = [drafted("table", 9, 10, 3), drafted("table", 40, 200, 80)]
    from_rows = upgraded(old_run("speed", {"acceptance_rate": spread(0.55, 2)}, rows))
    rate = from_rows["acceptance_rate"]
    assert (rate["pooled"], rate["source"]) == (49 / 210, "requests")
    logged = {"acceptance_rate": 0.5, "accepted": 50, "generated": 100, "requests": 4}
    from_log = upgraded(old_run("speed", {"acceptance_rate": None, "log_acceptance": logged}, []))
    assert from_log["acceptance_rate"] | {"pooled": 0} == {
        "pooled": 0, "accepted": 50, "drafted": 100, "verifications": None, "requests": 4, "source": "log"}
    assert from_log["acceptance_rate"]["pooled"] == 0.5


def test_it_pools_each_length_of_a_lookahead_sweep():
    rows = [drafted("table", 9, 10, 3, lookahead=4), drafted("table", 40, 200, 80, lookahead=4)]
    lengths = {"0": {"all": {"acceptance_rate": None}},
               "4": {"all": {"acceptance_rate": spread(0.55, 2)},
                     "table": {"acceptance_rate": spread(0.55, 2)}}}
    summary = {"lengths": lengths, "spec_by_length": {"0": None, "4": {"drafts": 90, "draft_tokens": 220,
                                                                      "accepted": 50}}}
    lengths = upgraded(old_run("lookahead", summary, rows))["lengths"]
    assert lengths["0"]["all"]["acceptance_rate"] is None
    rate = lengths["4"]["all"]["acceptance_rate"]
    assert (rate["pooled"], rate["source"]) == (50 / 220, "engine")
    assert lengths["4"]["table"]["acceptance_rate"]["pooled"] == 49 / 210


def test_it_shows_an_upgraded_run_on_its_page_with_one_acceptance_figure(alice_client):
    rows = [drafted("table", 9, 10, 3), drafted("table", 40, 200, 80)]
    summary = {"acceptance_rate": spread(0.55, 2), "tokens_per_verification": spread(2.1, 2),
               "decode_tps_client": spread(40.0, 2), "spec_decode_metrics": {
                   "drafts": 285, "draft_tokens": 1095, "accepted": 843, "acceptance_rate": 843 / 1095,
                   "tokens_per_verification": (843 + 285) / 285}}
    run = old_run("speed", summary, rows)
    upgraded(run)
    page = alice_client.get(run.get_absolute_url())
    assert page.status_code == 200
    text = page.content.decode()
    assert "77.0 %" in text and "843 of 1095 drafted tokens accepted in 285 verifications" in text
