import asyncio
import threading
import time
from datetime import timedelta

import pytest
import uvloop
from django.utils import timezone

from engines.models import Machine
from engines.simulator import SimProfile, serve_in_thread
from runs.core.jobs.prompts import SPEED_PROMPTS
from runs.models import Run, Sample
from runs.worker import execution
from tests.factories import EngineConfigFactory, RunFactory

pytestmark = pytest.mark.django_db(transaction=True)


def make_run(url, params=None, kind="llama-server", **config_fields):
    engine = {"engine__base_url": url, "engine__kind": kind, "engine__simulator": True}
    config = EngineConfigFactory(max_tokens=8, **engine, **config_fields)
    return RunFactory(config=config, params=params or {"reps": 1, "warmup": 0})


def run_to_end(run):
    assert execution.claim(run.pk) == execution.CLAIMED
    execution.execute(run.pk)
    run.refresh_from_db()
    return run


def test_it_stores_summary_samples_and_provenance():
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        run = run_to_end(make_run(sim.url))
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.summary["decode_tps_client"]["n"] == len(SPEED_PROMPTS)
    assert 0 <= run.summary["acceptance_rate"]["pooled"] <= 1
    assert run.provenance["engine_version"] == "sparkdash-simulator"
    assert run.provenance["config"]["name"] == run.config.name
    assert run.provenance["harness_commit"]
    seqs = list(run.samples.values_list("seq", flat=True))
    assert seqs == list(range(len(seqs)))  # requests and telemetry readings, numbered in one sequence
    assert run.samples.filter(kind="request").count() == len(SPEED_PROMPTS)
    assert run.progress_done == run.progress_total == len(SPEED_PROMPTS)


def test_it_runs_the_job_on_uvloops_event_loop(monkeypatch):
    loops = []

    async def job(run):
        loops.append(asyncio.get_running_loop())

    monkeypatch.setattr(execution, "_execute", job)
    run_to_end(RunFactory())
    assert len(loops) == 1 and isinstance(loops[0], uvloop.Loop)


def test_it_samples_telemetry_through_the_run_with_an_idle_baseline_first():
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, lookahead=4)) as sim:
        run = run_to_end(make_run(sim.url))
    telemetry = run.summary["telemetry"]
    readings = list(run.samples.filter(kind="telemetry").order_by("seq"))
    # The summary is made at the job's end; the sampler reads on until the run closes.
    assert 3 < telemetry["readings"] <= len(readings)
    phases = [r.values["phase"] for r in readings]
    assert phases.index("baseline") < phases.index("job")  # the baseline before the job
    assert telemetry["baseline"]["readings"] >= 2
    assert 0 <= telemetry["during"]["cpu_load"]["median"] <= 1
    assert telemetry["peak_mem_used_bytes"] > 0
    assert (telemetry["gpu"], telemetry["note"]) == (False, "no GPU telemetry on this machine")
    assert telemetry["energy"] is None and "no power reading" in telemetry["energy_note"]
    assert not telemetry["throttle"]["throttled"]
    assert all(r.values["mem_used_bytes"] > 0 for r in readings)
    requests = run.samples.filter(kind="request")
    assert all(0 < r.values["start_t"] < r.t for r in requests)  # the request's start, in run time


def test_it_contacts_no_url_outside_the_engines_machine():
    # Saved while the machine's host was 10.9.9.9; the host changed since: the worker re-checks.
    run = make_run("http://10.9.9.9:8080")
    run.machine.host = "spark-1.lan"
    run.machine.save()
    started = time.monotonic()
    run = run_to_end(run)
    assert time.monotonic() - started < 5  # refused before any connection attempt (10 s connect timeout)
    assert run.status == Run.Status.FAILED
    assert "engine URL http://10.9.9.9:8080 refused: the host must be the machine's" in run.error
    assert "not 10.9.9.9" in run.error and run.finished is not None and not run.samples.exists()


def test_it_claims_a_run_once():
    run = make_run("http://127.0.0.1:9")
    assert execution.claim(run.pk) == execution.CLAIMED
    assert execution.claim(run.pk) == execution.GONE


def test_it_fails_a_queued_run_claimed_while_the_machines_relay_is_active():
    run = make_run("http://127.0.0.1:9")
    Machine.objects.filter(pk=run.machine_id).update(relay_heartbeat=timezone.now())
    assert execution.claim(run.pk) == execution.REFUSED
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED and run.started is None and run.finished is not None
    assert f"machine {run.machine.name} is busy: its relay is passing real traffic" in run.error
    assert execution.claim(run.pk) == execution.GONE


def test_it_claims_a_run_once_a_killed_relays_mark_has_expired(settings):
    settings.SPARKDASH_RELAY_ACTIVE_S = 15
    run = make_run("http://127.0.0.1:9")
    stale = timezone.now() - timedelta(seconds=16)  # a relay killed without clearing its mark
    Machine.objects.filter(pk=run.machine_id).update(relay_heartbeat=stale)
    assert execution.claim(run.pk) == execution.CLAIMED


def test_it_refuses_a_second_run_on_a_busy_machine():
    first = make_run("http://127.0.0.1:9")
    second = RunFactory(config=first.config)
    assert execution.claim(first.pk) == execution.CLAIMED
    assert execution.claim(second.pk) == execution.BUSY
    second.refresh_from_db()
    assert second.status == Run.Status.QUEUED


def test_it_reaps_a_run_whose_worker_stopped(settings):
    settings.SPARKDASH_LOST_RUN_S = 0
    first = make_run("http://127.0.0.1:9")
    second = RunFactory(config=first.config)
    assert execution.claim(first.pk) == execution.CLAIMED
    time.sleep(0.01)
    assert execution.claim(second.pk) == execution.CLAIMED
    first.refresh_from_db()
    assert first.status == Run.Status.FAILED
    assert first.error.startswith("lost:")


def test_it_fails_a_run_against_an_unreachable_engine_with_the_reason():
    run = run_to_end(make_run("http://127.0.0.1:9"))
    assert run.status == Run.Status.FAILED
    assert "cannot reach http://127.0.0.1:9" in run.error
    assert run.finished is not None


@pytest.mark.parametrize(
    ("fault", "reason"),
    [("http-500", "HTTP 500"), ("malformed", "malformed"), ("cut", "stopped mid-answer")],
)
def test_it_fails_with_a_readable_reason_on_engine_faults(fault, reason):
    # Every request faulty: the run records two and stops at the third in a row, naming the first.
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5, fault=fault, fault_after=3)) as sim:
        run = run_to_end(make_run(sim.url))
    assert run.status == Run.Status.FAILED
    assert run.error.startswith("3 requests in a row failed, so the run stops; first request 1 of")
    assert reason in run.error
    assert run.samples.filter(kind="request", values__failed__isnull=False).count() == 2


def test_it_keeps_samples_received_before_the_engine_died():
    sim = serve_in_thread(SimProfile(decode_tps=100, ttft_ms=5))
    run = make_run(sim.url, {"reps": 3, "warmup": 0})
    # Kill the engine once a few requests have been stored.
    killer = threading.Thread(target=_stop_after_samples, args=(sim, run.pk, 3))
    killer.start()
    run = run_to_end(run)
    killer.join()
    assert run.status == Run.Status.FAILED
    kept = run.samples.filter(kind="request").count()
    assert 3 <= kept < 3 * len(SPEED_PROMPTS)
    assert f"request {kept + 1} of {3 * len(SPEED_PROMPTS)}" in run.error


def _stop_after_samples(sim, run_id, n):
    deadline = time.monotonic() + 20
    while Sample.objects.filter(run_id=run_id, kind="request").count() < n and time.monotonic() < deadline:
        time.sleep(0.01)
    sim.stop()


def test_it_stops_a_cancelled_run_at_the_next_flush():
    with serve_in_thread(SimProfile(decode_tps=100, ttft_ms=5)) as sim:
        run = make_run(sim.url, {"reps": 5, "warmup": 0})
        canceller = threading.Thread(target=_cancel_after_samples, args=(run.pk, 2))
        canceller.start()
        run = run_to_end(run)
        canceller.join()
    assert run.status == Run.Status.CANCELLED
    assert run.finished is not None
    assert run.samples.filter(kind="request").count() < 5 * len(SPEED_PROMPTS)


def _cancel_after_samples(run_id, n):
    deadline = time.monotonic() + 20
    while Sample.objects.filter(run_id=run_id, kind="request").count() < n and time.monotonic() < deadline:
        time.sleep(0.01)
    Run.objects.filter(pk=run_id).update(status=Run.Status.CANCELLED)


def test_it_reports_the_roofline_from_the_configs_override():
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        run = run_to_end(make_run(sim.url, bytes_per_token_gb=28.6))
    roof = run.summary["roofline"]
    assert roof["bytes_source"] == "override"
    assert roof["ceiling_tps"] == pytest.approx(273 / 28.6)
    measured = run.summary["decode_tps_client"]["median"]
    assert roof["efficiency"] == pytest.approx(measured / roof["ceiling_tps"])


def test_it_holds_a_run_against_the_measured_bandwidth_and_warns_above_a_ceiling():
    # The simulator decodes at about 400 tok/s; 28.6 GB per token caps 273 GB/s at 9.5 tok/s
    # and a measured 231 GB/s at 8.1: far above both, so the run is flagged.
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        run = make_run(sim.url, bytes_per_token_gb=28.6)
        Machine.objects.filter(pk=run.config.engine.machine_id).update(measured_bandwidth_gbps=231.0)
        run = run_to_end(run)
    roof = run.summary["roofline"]
    measured = run.summary["decode_tps_client"]["median"]
    assert roof["measured_bandwidth_gbps"] == 231.0
    assert roof["measured_ceiling_tps"] == pytest.approx(231 / 28.6)
    assert roof["measured_efficiency"] == pytest.approx(measured / (231 / 28.6))
    assert roof["above_ceiling"] is True
    above = [w for w in run.warnings if w["kind"] == "above-ceiling"]
    assert len(above) == 1
    assert above[0]["message"].startswith(f"measured {measured:.1f} tok/s is above the nominal")
    assert "and the measured ceiling 8.1 tok/s (231 GB/s;" in above[0]["message"]


def test_it_has_no_roofline_without_a_model_file_or_override():
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        run = run_to_end(make_run(sim.url))
    assert run.summary["roofline"] is None


def test_it_holds_a_runs_decode_and_tokens_per_verification_against_the_roofline():
    from runs.worker.execution import roofline_inputs

    spread = {"median": 150.1, "min": 40.0, "max": 160.0, "n": 6}
    per_pass = {"median": 4.2, "min": 1, "max": 5, "n": 6}
    summary = {"decode_tps_client": spread, "tokens_per_verification": per_pass}
    assert roofline_inputs(summary) == (150.1, 4.2, None)
    assert roofline_inputs({"decode_tps_client": spread, "log_acceptance": None}) == (150.1, None, None)


def test_it_states_no_efficiency_for_an_engine_that_drafts_without_counting_passes():
    from runs.worker.execution import DRAFTS_UNCOUNTED, roofline_inputs

    # Ollama: its log counts 1132 drafted tokens, its replies no verifications.
    summary = {"decode_tps_client": {"median": 30.0, "min": 8, "max": 33, "n": 6},
               "log_acceptance": {"acceptance_rate": 0.16, "accepted": 176, "generated": 1132, "requests": 6}}
    assert roofline_inputs(summary) == (None, None, DRAFTS_UNCOUNTED)
