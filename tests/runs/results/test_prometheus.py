from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from measure import catalog
from runs.models import Run
from sparkdash.settings import envsecret
from tests.factories import (
    EngineConfigFactory,
    RunFactory,
    SweepFactory,
    request_outcomes,
    telemetry,
    throttled_warning,
)
from tests.runs.compare_helpers import T0, concurrency_summary, speed_runs, speed_summary, succeeded

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-7f3a"
API_KEY = "sk-engine-secret-91"
WEBHOOK = "https://hooks.example.org/services/T000/B000/very-secret"


def team_token(team, name="prometheus"):
    """A team's metrics token, issued as the metricstoken command does; returns the plain token."""
    out = io.StringIO()
    call_command("metricstoken", team=team.name, name=name, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def scrape(client, **headers):
    return client.get(reverse("runs:metrics"), **headers)


def parse(response):
    """{(sample name, sorted labels): value} of the exposition, read by prometheus-client's parser."""
    text = response.content.decode()
    families = list(text_string_to_metric_families(text))
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}, families


def labels(config, job, **extra):
    engine = config.engine
    base = {"team": engine.machine.team.name, "config": config.name, "machine": engine.machine.name,
            "engine": engine.name,
            "engine_kind": engine.kind, "simulator": "false", "job": job}
    return tuple(sorted((base | extra).items()))


@pytest.fixture
def config():
    config = EngineConfigFactory(name="qwen3-mtp", engine__api_key=API_KEY,
                                 engine__base_url="http://spark-1.lan:8123")
    speed_runs(config, 40.0, 44.0, acceptance=0.7)  # the latest: 44 tok/s
    succeeded(config, "concurrency", concurrency_summary({1: 40.0, 4: 120.0}), minute=5)
    succeeded(config, "mmlu-pro", {"accuracy": 0.41, "total": 100}, minute=6)
    for suite, plus in (("humaneval", 0.8), ("mbpp", 0.6)):
        summary = {"dataset": suite, "pass_at_1_plus": plus, "pass_at_1_base": plus + 0.05, "total": 164}
        succeeded(config, "evalplus", summary, minute=7)
    agent = {"score": 45, "rows": 47, "answer_rows": 50, "outcome": "completed", "task_s": 60.2}
    succeeded(config, "agent-table", agent, minute=8)
    succeeded(config, "speed", {"decode_tps_client": {"median": 999.0}}, minute=9,
              status=Run.Status.FAILED)
    RunFactory(config=config, status=Run.Status.RUNNING)
    SweepFactory(webhook_url=WEBHOOK, configs=[config])
    return config


def test_it_exposes_the_latest_figures_per_config(alice_client, config):
    response = scrape(alice_client)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    values, families = parse(response)
    assert values[("sparkdash_decode_tokens_per_second", labels(config, "speed", source="client"))] == 44.0
    assert values[("sparkdash_decode_tokens_per_second", labels(config, "speed", source="engine"))] == 45.0
    assert values[("sparkdash_ttft_seconds", labels(config, "speed"))] == 0.21
    assert values[("sparkdash_acceptance_rate", labels(config, "speed"))] == 0.7
    total = "sparkdash_concurrency_total_tokens_per_second"
    assert values[(total, labels(config, "concurrency", concurrency="4"))] == 120.0
    assert values[("sparkdash_mmlu_pro_accuracy", labels(config, "mmlu-pro"))] == 0.41
    pass_at_1 = "sparkdash_evalplus_pass_at_1"
    assert values[(pass_at_1, labels(config, "evalplus", suite="humaneval", tests="plus"))] == 0.8
    assert values[(pass_at_1, labels(config, "evalplus", suite="mbpp", tests="base"))] == pytest.approx(0.65)
    assert values[("sparkdash_agent_table_score", labels(config, "agent-table"))] == 45.0
    assert values[("sparkdash_agent_table_f1", labels(config, "agent-table"))] == pytest.approx(90 / 97)
    assert values[("sparkdash_agent_table_task_seconds", labels(config, "agent-table"))] == 60.2
    finished = values[("sparkdash_run_finished_timestamp_seconds", labels(config, "speed"))]
    assert finished == T0.timestamp() + 60 + 50
    # One series per job, even with a latest run per EvalPlus suite.
    timestamps = next(f for f in families if f.name == "sparkdash_run_finished_timestamp_seconds").samples
    assert sorted(s.labels["job"] for s in timestamps) == [
        "agent-table", "concurrency", "evalplus", "mmlu-pro", "speed"]
    assert values[("sparkdash_runs", (("status", "succeeded"),))] == 7
    assert values[("sparkdash_runs", (("status", "failed"),))] == 1
    assert values[("sparkdash_runs", (("status", "running"),))] == 1
    assert values[("sparkdash_runs", (("status", "cancelled"),))] == 0
    assert {f.name: f.type for f in families}["sparkdash_decode_tokens_per_second"] == "gauge"


def test_it_writes_no_secrets(alice_client, config):
    text = scrape(alice_client).content.decode()
    for secret in (API_KEY, WEBHOOK, "hooks.example.org", "spark-1.lan", "http"):
        assert secret not in text


def test_it_refuses_a_scrape_without_login_or_token(client, config, settings):
    settings.SPARKDASH_METRICS_TOKEN = TOKEN
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"}, {"HTTP_AUTHORIZATION": f"Basic {TOKEN}"}):
        response = scrape(client, **headers)
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == 'Bearer realm="sparkdash"'
        assert "sparkdash_" not in response.content.decode()


def test_it_accepts_the_bearer_token(client, config, settings):
    settings.SPARKDASH_METRICS_TOKEN = TOKEN
    response = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    values, _ = parse(response)
    assert values[("sparkdash_mmlu_pro_accuracy", labels(config, "mmlu-pro"))] == 0.41


def test_it_turns_token_access_off_when_the_token_is_empty(client, settings):
    settings.SPARKDASH_METRICS_TOKEN = ""
    assert scrape(client, HTTP_AUTHORIZATION="Bearer ").status_code == 401
    assert scrape(client, HTTP_AUTHORIZATION="Bearer").status_code == 401


def test_it_reads_the_token_from_a_file(tmp_path, monkeypatch):
    (tmp_path / "token").write_text(TOKEN + "\n")
    monkeypatch.setenv("SPARKDASH_METRICS_TOKEN_FILE", str(tmp_path / "token"))
    assert envsecret("SPARKDASH_METRICS_TOKEN") == TOKEN


def test_it_scrapes_in_as_many_queries_for_more_runs(client, config, django_assert_max_num_queries):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {team_token(config.machine.team)}"}
    # The token, its last use, the latest runs, the counts by status.
    with django_assert_max_num_queries(4):
        scrape(client, **auth)
    for other in (EngineConfigFactory() for _ in range(5)):
        speed_runs(other, *[50.0] * 10)
    speed_runs(config, *[50.0] * 30)
    with django_assert_max_num_queries(4):
        values, _ = parse(scrape(client, **auth))
    assert sum(1 for name, _ in values if name == "sparkdash_ttft_seconds") == 6


def test_it_exposes_energy_and_seconds_throttled_of_the_latest_runs(alice_client):
    metered = EngineConfigFactory(name="metered")
    unmetered = EngineConfigFactory(name="unmetered")
    old = EngineConfigFactory(name="no-telemetry")
    succeeded(metered, "speed", speed_summary(40.0) | {"telemetry": telemetry(1.5, 75.0, throttled_s=12.3)},
              warnings=[throttled_warning(12.3)])
    succeeded(unmetered, "speed", speed_summary(41.0) | {"telemetry": telemetry()})
    succeeded(old, "speed", speed_summary(42.0))
    values, _ = parse(scrape(alice_client))
    assert values[("sparkdash_joules_per_output_token", labels(metered, "speed"))] == 1.5
    assert values[("sparkdash_joules_per_request", labels(metered, "speed"))] == 75.0
    assert values[("sparkdash_throttled_seconds", labels(metered, "speed"))] == 12.3
    assert values[("sparkdash_throttled_seconds", labels(unmetered, "speed"))] == 0.0
    assert ("sparkdash_joules_per_output_token", labels(unmetered, "speed")) not in values
    assert not [key for key in values if dict(key[1]).get("config") == "no-telemetry"
                and key[0].startswith(("sparkdash_joules", "sparkdash_throttled"))]


def test_it_exposes_the_share_of_failed_requests_of_the_latest_runs(alice_client):
    flaky = EngineConfigFactory(name="flaky")
    old = EngineConfigFactory(name="no-outcomes")
    succeeded(flaky, "speed", speed_summary(40.0) | {"outcomes": request_outcomes(12, 3)})
    succeeded(old, "speed", speed_summary(42.0))
    values, _ = parse(scrape(alice_client))
    assert values[("sparkdash_failed_request_share", labels(flaky, "speed"))] == 0.25
    assert ("sparkdash_failed_request_share", labels(old, "speed")) not in values


# --- Team boundaries: each team's token shows its own machines' series only ---------------------


def series_text(response):
    return response.content.decode()


def test_it_shows_a_team_token_only_its_teams_series(client, alpha, bravo):
    response = scrape(client, HTTP_AUTHORIZATION=f"Bearer {team_token(alpha.team)}")
    assert response.status_code == 200
    values, _ = parse(response)
    decode = ("sparkdash_decode_tokens_per_second", labels(alpha.config, "speed", source="client"))
    assert values[decode] == 41.5
    text = series_text(response)
    assert "alpha-box" in text and "alpha-team" in text
    for name in ("bravo", bravo.machine.name, bravo.config.name, bravo.engine.name):
        assert name not in text
    # The run counts are the team's too: alpha has one succeeded run, not two.
    assert values[("sparkdash_runs", (("status", "succeeded"),))] == 1


def test_it_answers_a_revoked_or_unknown_token_like_no_token(client, alpha, bravo):
    token = team_token(alpha.team)
    call_command("metricstoken", team=alpha.team.name, name="prometheus", revoke=True, stdout=io.StringIO())
    for given in (token, token[:-2] + "xx", team_token(bravo.team)[:-1]):
        response = scrape(client, HTTP_AUTHORIZATION=f"Bearer {given}")
        assert response.status_code == 401
        assert "alpha" not in series_text(response) and "sparkdash_" not in series_text(response)


def test_it_shows_a_logged_in_member_only_their_teams_series(client, alpha, bravo):
    client.force_login(bravo.teammate)
    text = series_text(scrape(client))
    assert "bravo-box" in text
    assert "alpha" not in text


def test_it_labels_same_named_configs_of_two_teams_apart(client, alpha, bravo, settings):
    settings.SPARKDASH_METRICS_TOKEN = TOKEN  # the deprecated operator's token sees every team
    for world in (alpha, bravo):
        succeeded(EngineConfigFactory(engine=world.engine, name="qwen"), "speed", speed_summary(30.0))
    values, _ = parse(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    teams = {dict(key[1])["team"] for key in values
             if key[0] == "sparkdash_ttft_seconds" and dict(key[1])["config"] == "qwen"}
    assert teams == {"alpha-team", "bravo-team"}


def test_it_writes_each_declared_figures_help_from_the_metric_catalogue(alice_client, config):
    _, families = parse(scrape(alice_client))
    helped = {f.name: f.documentation for f in families}
    rate = helped["sparkdash_acceptance_rate"]
    assert rate.startswith("Acceptance rate of the latest speed run, as a fraction 0-1")
    assert rate.endswith(catalog.get("acceptance_rate").definition)
    assert "pooled over the run" in helped["sparkdash_tokens_per_verification"]
    assert helped["sparkdash_mmlu_pro_accuracy"].endswith(catalog.get("accuracy").definition)
