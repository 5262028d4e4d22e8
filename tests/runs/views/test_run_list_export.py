from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from runs.models import Run
from tests.factories import EngineConfigFactory
from tests.runs.compare_helpers import speed_runs, succeeded

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs():
    fast, other = EngineConfigFactory(name="fast"), EngineConfigFactory(name="other")
    speed_runs(fast, 40.0, 41.0)
    succeeded(other, "mmlu-pro", {"accuracy": 0.4}, minute=3, status=Run.Status.FAILED)
    return fast, other


def test_it_exports_the_filtered_run_list_as_csv(alice_client, runs):
    fast, _ = runs
    response = alice_client.get(reverse("runs:list"), {"config": fast.pk, "format": "csv"})
    assert response["Content-Disposition"] == 'attachment; filename="sparkdash-runs.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["config"], r["job"], r["status"], r["decode_tps_client"]) for r in rows] == [
        ("fast", "speed", "succeeded", "41.0"), ("fast", "speed", "succeeded", "40.0")]
    assert rows[0]["ttft_s"] == "0.21" and rows[0]["url"] == f"/runs/{rows[0]['id']}/"


def test_it_exports_the_run_list_as_json(alice_client, runs):
    response = alice_client.get(reverse("runs:list"), {"format": "json"})
    data = json.loads(response.content)
    assert data["columns"][:3] == ["id", "created", "finished"]
    assert [(r["config"], r["status"], r["decode_tps_client"]) for r in data["rows"]] == [
        ("other", "failed", None), ("fast", "succeeded", 41.0), ("fast", "succeeded", 40.0)]


def test_it_exports_in_one_query_however_many_runs(alice_client, runs, django_assert_max_num_queries):
    speed_runs(runs[0], *[50.0] * 20)
    # Session, user, the runs with their config, engine and machine.
    with django_assert_max_num_queries(3):
        alice_client.get(reverse("runs:list"), {"format": "csv"})
