import asyncio
import time

import pytest
from django.template import Context, Template
from django.utils import translation

from engines.simulator import SimProfile, serve_in_thread
from measure.client_health import PROBE_INTERVAL_S, THRESHOLDS
from runs.models import Run
from runs.worker.client_health import client_bound_warning
from runs.worker.recorder import RunRecorder
from tests.factories import EngineConfigFactory
from tests.runs.bench_helpers import bench
from tests.runs.worker.test_execution import make_run, run_to_end

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_records_a_quiet_runs_client_health_without_a_warning():
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        run = run_to_end(make_run(sim.url))
    assert run.status == Run.Status.SUCCEEDED, run.error
    health = run.summary["client_health"]
    assert health["probes"] > 0 and health["loop_lag_ms"]["max"] >= health["loop_lag_ms"]["p99"] >= 0
    assert health["live_updates_thinned"] == 0 and health["schedule_delay_ms"] is None
    assert not health["client_bound"] and health["reasons"] == []
    assert "client-bound" not in [w["kind"] for w in run.warnings]


def starve_the_measuring_loop(monkeypatch):
    """Each sample the run records blocks its loop for 150 ms, as a starved client's loop is blocked."""
    on_sample = RunRecorder.on_sample

    async def blocking_on_sample(self, sample_kind, values):
        _block(0.15)
        await on_sample(self, sample_kind, values)
        # A sample no longer awaits its storing (runs.worker.handoff): give the probe its wake-up,
        # or a job whose last samples come back to back ends before the probe sees the stall.
        await asyncio.sleep(PROBE_INTERVAL_S)

    monkeypatch.setattr(RunRecorder, "on_sample", blocking_on_sample)


def _block(seconds):
    time.sleep(seconds)


def test_it_warns_of_a_run_whose_measuring_loop_was_starved(monkeypatch):
    starve_the_measuring_loop(monkeypatch)
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        run = run_to_end(make_run(sim.url))
    assert run.status == Run.Status.SUCCEEDED, run.error
    health = run.summary["client_health"]
    assert health["client_bound"] and "loop_lag" in health["reasons"]
    # A probe due during a 150 ms block fires at its end: 0 to 150 ms late, by when it was due.
    assert health["loop_lag_ms"]["p99"] > THRESHOLDS.loop_lag_p99_ms
    [bound] = [w for w in run.warnings if w["kind"] == "client-bound"]
    assert "these figures may be the tool's, not the engine's" in bound["message"]
    assert "ms late at p99, above 50 ms" in bound["message"]


def test_it_records_a_machine_benchmarks_client_health_without_the_warning(inprocess, capsys, monkeypatch):
    # It measures the machine, not an engine: a busy loop there says nothing of an engine's figures.
    starve_the_measuring_loop(monkeypatch)
    EngineConfigFactory(name="bw", engine__base_url="http://127.0.0.1:9")
    run = bench(capsys, "bw", "bandwidth", "--buffer-mib", "16", "--passes", "2")
    assert run["status"] == "succeeded", run["error"]
    # Starved all the same.
    assert run["summary"]["client_health"]["loop_lag_ms"]["max"] > THRESHOLDS.loop_lag_p99_ms
    assert "client-bound" not in [w["kind"] for w in run["warnings"]]


def test_it_says_each_reason_of_the_client_bound_warning_in_english_and_in_japanese():
    health = {"client_bound": True, "reasons": ["loop_lag", "cpu", "thinned", "schedule_delay"],
              "loop_lag_ms": {"p99": 212.4}, "loop_cpu_pct_of_core": 93.0, "live_updates_thinned": 4,
              "schedule_delay_ms": {"p99": 75.0}}
    [found] = client_bound_warning({"client_health": health})
    assert found["message"] == (
        "these figures may be the tool's, not the engine's: the measuring loop woke 212 ms late at p99, "
        "above 50 ms, the measuring loop used 93 % of a core, above 85 %, 4 live updates thinned, "
        "requests started 75 ms late at p99, above 50 ms")
    line = Template("{% load run_text %}{% warning_label w.kind %}: {% warning_message w %}")
    with translation.override("ja"):
        said = line.render(Context({"w": found}))
    assert said.startswith("クライアント律速: これらの数値はエンジンではなくツール側のものかもしれません")
    assert "ライブ更新を 4 件間引きました" in said
    assert client_bound_warning({"client_health": health | {"client_bound": False}}) == []


def test_it_names_the_level_that_kept_too_few_requests_in_flight():
    levels = [{"requested": 4, "achieved": 3.9}, {"requested": 64, "achieved": 30.2}]
    health = {"client_bound": True, "reasons": ["achieved_concurrency"], "achieved_concurrency": levels}
    [found] = client_bound_warning({"client_health": health})
    assert found["message"].endswith("the client kept 30.2 of 64 requests in flight, under 75 %")
    line = Template("{% load run_text %}{% warning_message w %}")
    with translation.override("ja"):
        said = line.render(Context({"w": found}))
    assert said.endswith("64 件中 30.2 件で、75 % を下回りました")
