import asyncio
import os
import signal
import statistics
import threading
import time

import pytest
from asgiref.sync import async_to_sync

from engines.lifecycle import port_is_free
from engines.models import Engine, EngineSession
from runs.models import Run
from runs.worker import execution, handoff, recorder
from runs.worker.engine_session import MachineBusy, RunEngine
from tests.factories import EngineConfigFactory, MachineFactory, RunFactory
from tests.real_engine import GEMMA_270M, LLAMA_SERVER, LLAMA_THREADS, free_port, requires_engine
from tests.runs.views.test_acceptance_everywhere import assert_compared, assert_shown_everywhere
from tests.runs.worker.real_runs import request_rows, run_to_end

pytestmark = [requires_engine, pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

FIGURES: dict[str, dict] = {}


def managed_config(machine=None, **config):
    engine = {
        "engine__kind": "llama-server",
        "engine__launch": Engine.Launch.MANAGED,
        "engine__binary": str(LLAMA_SERVER),
        "engine__base_url": f"http://127.0.0.1:{free_port()}",
    }
    if machine is not None:
        engine["engine__machine"] = machine
    settings = {"model": str(GEMMA_270M), "threads": LLAMA_THREADS, "parallel": 1, "context_length": 4096}
    settings["max_tokens"] = 64  # enough for tok/s within 3 % and acceptance; the suite has a time budget
    return EngineConfigFactory(**engine, **(settings | config))




def test_it_runs_a_speed_job_on_a_real_llama_server_and_stops_it():
    run = run_to_end(managed_config())
    assert run.status == Run.Status.SUCCEEDED, run.error
    rows = request_rows(run)
    client = statistics.median(r["decode_tps_client"] for r in rows)
    engine = statistics.median(r["decode_tps_engine"] for r in rows)
    FIGURES["plain"] = {"client": client, "engine": engine}
    print(f"\nplain decoding: client {client:.2f} tok/s, engine {engine:.2f} tok/s")
    assert client == pytest.approx(engine, rel=0.03)
    assert run.summary["acceptance_rate"] is None
    assert run.summary["cross_check"]["agree"]
    assert "b11434" in run.provenance["engine_version"]
    session = EngineSession.objects.get(run_id=run.pk)
    assert session.startup_s > 0 and session.stopped is not None
    port = int(run.config.engine.base_url.rsplit(":", 1)[1])
    assert port_is_free("127.0.0.1", port)
    assert "print_timing" in run.engine_log
    roof = run.summary["roofline"]
    assert (roof["bytes_per_token"], roof["bytes_source"]) == (246_587_904, "gguf")
    assert roof["ceiling_tps"] == pytest.approx(273e9 / 246_587_904)
    measured = run.summary["decode_tps_client"]["median"]
    assert roof["efficiency"] == pytest.approx(measured / roof["ceiling_tps"])


def test_it_stores_every_sample_of_a_4_stream_run_while_live_updates_are_thinned(monkeypatch, settings):
    # A hand-off of one update and a channel layer that takes 1 s a message: updates must thin.
    async def slow_broadcast(run_id, message):
        await asyncio.sleep(1.0)

    monkeypatch.setattr(handoff, "LIVE_UPDATES_BOUND", 1)
    monkeypatch.setattr(recorder, "broadcast", slow_broadcast)
    settings.SPARKDASH_FLUSH_INTERVAL_S = 0.01
    params = {"levels": [4], "answer_tokens": 32, "reps": 2, "warmup": 0}
    run = run_to_end(managed_config(parallel=4), params, job="concurrency")
    assert run.status == Run.Status.SUCCEEDED, run.error
    health = run.summary["client_health"]
    assert health["live_updates_thinned"] > 0 and "thinned" in health["reasons"]
    assert "client-bound" in [w["kind"] for w in run.warnings]
    rows = request_rows(run)
    assert sorted((r["rep"], r["index"]) for r in rows) == [(rep, i) for rep in range(2) for i in range(4)]
    # Each request's stored tokens are the engine's own count of what it generated for it.
    assert all(r["output_tokens_source"] == "engine" and r["output_tokens"] == 32 for r in rows)
    assert run.summary["levels"]["4"]["output_tokens"]["median"] == 32
    assert run.progress_done == run.progress_total == 8
    seqs = list(run.samples.order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(len(seqs)))


def test_it_reads_acceptance_from_timings_metrics_and_log_with_a_self_draft():
    config = managed_config(speculative_method="draft-simple", draft_model=str(GEMMA_270M), lookahead=8)
    run = run_to_end(config, {"reps": 1, "warmup": 0})
    assert run.status == Run.Status.SUCCEEDED, run.error
    rows = request_rows(run)
    assert run.summary["acceptance_rate"]["pooled"] >= 0.95
    spec = run.summary["spec_decode_metrics"]
    assert spec["tokens_per_verification"] > 2
    # b11434 counts accepted tokens per draft position too; position i needs 0..i-1 accepted.
    by_position = spec["acceptance_by_position"]
    assert len(by_position) == 8 and by_position == sorted(by_position, reverse=True)
    assert sum(by_position) == pytest.approx(spec["tokens_per_verification"] - 1)
    assert spec["draft_tokens"] == sum(r["draft_tokens"] for r in rows)
    # The log's per-request "draft acceptance" lines say what the timings said, request by request.
    from_log = [(e["accepted"], e["generated"]) for e in _log_events(run)]
    from_timings = [(r["accepted_tokens"], r["draft_tokens"]) for r in rows]
    assert from_log == from_timings
    assert run.summary["log_acceptance"]["acceptance_rate"] == pytest.approx(
        sum(a for a, _ in from_timings) / sum(g for _, g in from_timings)
    )
    assert "--spec-type draft-simple" in run.provenance["recipe"]
    assert len(run.provenance["model_file"]["sha256"]) == 64
    client = statistics.median(r["decode_tps_client"] for r in rows)
    engine = statistics.median(r["decode_tps_engine"] for r in rows)
    FIGURES["draft"] = {"client": client, "engine": engine, "tpv": spec["tokens_per_verification"]}
    print(f"\nself-draft lookahead 8: client {client:.2f} tok/s, engine {engine:.2f} tok/s, "
          f"acceptance {run.summary['acceptance_rate']['pooled']:.3f}, "
          f"tokens/verification {spec['tokens_per_verification']:.2f}")
    assert client == pytest.approx(engine, rel=0.03)


def test_it_pools_acceptance_from_the_engines_counters_where_most_drafts_are_rejected(alice_client):
    # Sampled at temperature 1, the target rejects most of what n-grams and its own greedy draft
    # propose: the median of per-request ratios is not the run's ratio.
    config = managed_config(speculative_method="ngram-mod,draft-simple", draft_model=str(GEMMA_270M),
                            lookahead=8, temperature=1.0)
    run = run_to_end(config, {"reps": 1, "warmup": 0})
    assert run.status == Run.Status.SUCCEEDED, run.error
    spec, summary = run.summary["spec_decode_metrics"], run.summary
    rate, per_pass = summary["acceptance_rate"], summary["tokens_per_verification"]
    rows = [r for r in request_rows(run) if r["draft_tokens"]]
    counted = sum(r["verifications"] for r in rows)
    estimated = sum(r["output_tokens"] - 1 - r["accepted_tokens"] for r in rows)
    median = summary["acceptance_rate_per_request"]["median"]
    print(f"\nsampled self-draft + n-grams, lookahead 8: {spec['accepted']} of {spec['draft_tokens']} "
          f"drafted in {spec['drafts']} verifications; pooled {rate['pooled']:.4f}, "
          f"{per_pass['pooled']:.3f} tokens per verification; per-request median {median:.4f}; "
          f"verifications by the counters around each request {counted}, by the estimate {estimated}")
    assert rate["source"] == "engine"
    assert rate["pooled"] == pytest.approx(spec["accepted"] / spec["draft_tokens"], abs=0.01)
    assert per_pass["pooled"] == pytest.approx(spec["tokens_per_verification"], rel=0.01)
    assert rate["pooled"] < 0.9
    # Each request's verifications from the counters around it: summed, the engine's own count.
    from_requests = (sum(r["accepted_tokens"] for r in rows) + counted) / counted
    assert from_requests == pytest.approx(spec["tokens_per_verification"], rel=0.01)
    # The same figure on the run page, the runs CSV, the JSON API, the Prometheus export, compare
    # and its HTML report.
    assert_shown_everywhere(alice_client, run)
    assert_compared(alice_client, run)


def _log_events(run):
    from engines.logparse import parse_line

    events = [parse_line(line) for line in run.engine_log.splitlines()]
    return [vars(e) for e in events if e is not None and e.event == "acceptance"]


def test_it_refuses_a_second_engine_on_a_machine_while_the_first_runs():
    machine = MachineFactory()
    first = RunFactory(config=managed_config(machine), status=Run.Status.RUNNING)
    second = RunFactory(config=managed_config(machine))

    async def both():
        async with RunEngine(first) as running:
            assert running.startup_s > 0
            with pytest.raises(MachineBusy, match=f"machine {machine.name} already runs an engine"):
                async with RunEngine(second):
                    pass

    async_to_sync(both)()
    assert EngineSession.objects.filter(run_id=second.pk).count() == 0
    assert EngineSession.objects.get(run_id=first.pk).stopped is not None


def test_it_fails_the_run_within_five_seconds_when_the_engine_is_killed():
    run = RunFactory(config=managed_config(), params={"reps": 3, "warmup": 0})
    assert execution.claim(run.pk) == execution.CLAIMED
    worker = threading.Thread(target=execution.execute, args=(run.pk,))
    worker.start()
    pid = _wait_for(lambda: EngineSession.objects.filter(run_id=run.pk, pid__isnull=False).first())
    _wait_for(lambda: run.samples.filter(kind="request").exists())
    os.kill(pid.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    _wait_for(lambda: Run.objects.filter(pk=run.pk, status=Run.Status.FAILED).exists())
    elapsed = time.monotonic() - killed_at
    worker.join(30)
    run.refresh_from_db()
    print(f"\nkilled engine: run failed {elapsed:.2f} s after SIGKILL: {run.error}")
    assert elapsed < 5
    assert "SIGKILL" in run.error
    assert run.samples.filter(kind="request").count() >= 1


def _wait_for(probe, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_it_turns_a_missing_binary_into_a_readable_failure():
    config = managed_config()
    Engine.objects.filter(pk=config.engine_id).update(binary="/nonexistent/llama-server")
    run = run_to_end(config)
    assert run.status == Run.Status.FAILED
    assert "/nonexistent/llama-server" in run.error
    assert EngineSession.objects.get(run_id=run.pk).stopped is not None
