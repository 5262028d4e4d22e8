import json

import pytest
from django.core.management import CommandError, call_command

from engines.simulator import SimProfile, serve_in_thread
from runs.core.request_figures import REQUEST_METRICS
from runs.models import Run
from tests.factories import EngineConfigFactory
from tests.runs.worker.test_client_health import starve_the_measuring_loop

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def inprocess(settings):
    settings.SPARKDASH_WORKER = "inprocess"


def test_it_prints_the_finished_run_as_json(inprocess, capsys):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        EngineConfigFactory(
            name="sim-default", engine__base_url=sim.url, engine__simulator=True, max_tokens=8
        )
        call_command("bench", "sim-default", "--job", "speed", "--reps", "2", "--wait")
    run = json.loads(capsys.readouterr().out)
    assert (run["status"], run["config"], run["job"]) == ("succeeded", "sim-default", "speed")
    assert set(REQUEST_METRICS) <= set(run["summary"])
    assert {"median", "min", "max", "n", "median_ci", "p90", "p99"} <= set(run["summary"]["ttft_s"])
    assert run["summary"]["prefill_tps"] is None or run["summary"]["prefill_tps"]["n"] > 0
    assert run["provenance"]["engine_version"] == "sparkdash-simulator"


def test_it_prints_the_client_health_and_the_client_bound_warning(inprocess, capsys, monkeypatch):
    starve_the_measuring_loop(monkeypatch)
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        EngineConfigFactory(name="sim-default", engine__base_url=sim.url, max_tokens=8)
        call_command("bench", "sim-default", "--reps", "1", "--wait")
    run = json.loads(capsys.readouterr().out)
    assert run["summary"]["client_health"]["client_bound"]
    assert {"p50", "p99", "max"} == set(run["summary"]["client_health"]["loop_lag_ms"])
    assert "client-bound" in [w["kind"] for w in run["warnings"]]


def test_it_matches_the_api(inprocess, capsys, alice_client):
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        EngineConfigFactory(name="sim-default", engine__base_url=sim.url, max_tokens=4)
        call_command("bench", "sim-default", "--reps", "1", "--wait")
    printed = json.loads(capsys.readouterr().out)
    assert alice_client.get(f"/api/runs/{printed['id']}").json() == printed


def test_it_exits_with_the_reason_when_the_run_fails(inprocess):
    EngineConfigFactory(name="dead", engine__base_url="http://127.0.0.1:9")
    with pytest.raises(CommandError, match="cannot reach"):
        call_command("bench", "dead", "--reps", "1", "--wait")


def test_it_rejects_an_unknown_config_and_bad_parameters(inprocess):
    with pytest.raises(CommandError, match="no config named 'nope'"):
        call_command("bench", "nope")
    EngineConfigFactory(name="c")
    with pytest.raises(CommandError, match="reps must be between 1 and 50"):
        call_command("bench", "c", "--reps", "0")


def test_it_asks_which_team_when_two_teams_have_the_config_name(alpha, bravo):
    for world in (alpha, bravo):
        EngineConfigFactory(engine=world.engine, name="qwen")
    before = Run.objects.count()
    asked = r"more than one team has a config named 'qwen' \(alpha-team, bravo-team\): give --team"
    with pytest.raises(CommandError, match=asked):
        call_command("bench", "qwen")
    with pytest.raises(CommandError, match="no config named 'qwen' in team 'nobody'"):
        call_command("bench", "qwen", "--team", "nobody")
    assert Run.objects.count() == before
