"""runs/migrations/0015: stored summaries gain their schema version once they hold what their job
kind declares; old runs (pooled by 0014 first) still render and read as their job's type."""
from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from runs.core import registry
from runs.core.jobs.summary import SCHEMA_VERSION
from runs.models import Run
from tests.factories import RunFactory, SampleFactory
from tests.runs.test_pooled_acceptance_migration import drafted, spread

pytestmark = pytest.mark.django_db

pooling = importlib.import_module("runs.migrations.0014_pooled_acceptance")
stamping = importlib.import_module("runs.migrations.0015_summary_schema_version")


def migrated(run: Run) -> dict:
    pooling.forwards(apps, None)
    stamping.forwards(apps, None)
    run.refresh_from_db()
    return run.summary


def test_it_stamps_an_old_speed_run_and_reads_it_as_the_speed_jobs_type(alice_client):
    rows = [drafted("table", 9, 10, 3), drafted("table", 40, 200, 80)]
    old = {"acceptance_rate": spread(0.55, 2), "tokens_per_verification": spread(2.1, 2),
           "decode_tps_client": spread(40.0, 2), "ttft_s": spread(0.2, 2)}
    run = RunFactory(job="speed", summary=old, status=Run.Status.SUCCEEDED)
    for row in rows:
        SampleFactory(run=run, values=row)
    summary = migrated(run)
    assert summary["schema_version"] == SCHEMA_VERSION
    results = registry.get("speed").results(summary)
    assert results is not None and results.acceptance_rate is not None
    assert results.acceptance_rate.pooled == pytest.approx(49 / 210)
    assert results.decode_tps_client is not None and results.decode_tps_client.median == 40.0
    page = alice_client.get(run.get_absolute_url())
    assert page.status_code == 200 and "23.3 %" in page.content.decode()


def test_it_stamps_an_old_quality_run_and_leaves_one_that_does_not_fit_as_it_was(alice_client):
    quality = RunFactory(job="mmlu-pro", status=Run.Status.SUCCEEDED,
                         summary={"accuracy": 0.41, "correct": 41, "total": 100, "answered": 100})
    odd = RunFactory(job="needle", status=Run.Status.SUCCEEDED, summary={"score": "most", "total": 10})
    assert migrated(quality)["schema_version"] == SCHEMA_VERSION
    assert migrated(odd) == {"score": "most", "total": 10}
    assert registry.get("needle").results(odd.summary) is None
    for run in (quality, odd):
        assert alice_client.get(run.get_absolute_url()).status_code == 200
    listed = alice_client.get("/runs/").content.decode()
    assert "41.0 %" in listed and "31.9\u201350.8 % (95 % interval), 41 of 100 questions" in listed
