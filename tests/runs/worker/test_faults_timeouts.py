import threading
import time

import pytest
from django.test import Client
from django.urls import reverse

from engines.simulator import SimProfile, serve_in_thread
from runs.models import Run
from runs.worker import execution
from tests.factories import EngineConfigFactory, RunFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def make_run(url, params):
    config = EngineConfigFactory(engine__base_url=url, engine__kind="llama-server", engine__simulator=True)
    return RunFactory(config=config, params=params)


def run_to_end(run):
    assert execution.claim(run.pk) == execution.CLAIMED
    started = time.monotonic()
    execution.execute(run.pk)
    run.refresh_from_db()
    return run, time.monotonic() - started


def seqs(run):
    return list(run.samples.order_by("seq").values_list("seq", flat=True))


def test_it_fails_a_hung_request_at_the_per_request_timeout(settings):
    settings.SPARKDASH_REQUEST_TIMEOUT_S = 1.0
    with serve_in_thread(SimProfile(fault="hang")) as sim:
        run, took = run_to_end(make_run(sim.url, {"reps": 1, "warmup": 0, "max_tokens": 8}))
    print(f"\nhung engine, per-request timeout 1 s: {run.status} after {took:.2f} s, "
          f"samples {len(seqs(run))}: {run.error}")
    assert run.status == Run.Status.FAILED
    assert "timed out: sent nothing for 1 s (the per-request read timeout)" in run.error
    assert "3 requests in a row failed" in run.error and "request 1 of" in run.error
    assert 3.0 <= took < 10  # three timeouts in a row stop the run (runs/core/outcomes.py)


def test_it_fails_a_hung_job_at_the_per_job_timeout(settings):
    settings.SPARKDASH_JOB_TIMEOUT_S = 1.5
    with serve_in_thread(SimProfile(fault="hang")) as sim:
        run, took = run_to_end(make_run(sim.url, {"reps": 1, "warmup": 0, "max_tokens": 8}))
    print(f"\nhung engine, per-job timeout 1.5 s: {run.status} after {took:.2f} s: {run.error}")
    assert run.status == Run.Status.FAILED
    assert run.error == (
        "job timed out: not finished after 1.5 s (the per-job timeout, SPARKDASH_JOB_TIMEOUT_S)"
    )
    assert 1.5 <= took < 10


def test_it_keeps_the_samples_of_a_job_stopped_at_the_per_job_timeout(settings):
    settings.SPARKDASH_JOB_TIMEOUT_S = 1.5
    # About 60 ms a request: some twenty requests fit in the limit, the other 280 do not.
    with serve_in_thread(SimProfile(decode_tps=300, ttft_ms=5)) as sim:
        run, took = run_to_end(make_run(sim.url, {"reps": 50, "warmup": 0, "max_tokens": 16}))
    stored = seqs(run)
    print(f"\nslow job, per-job timeout 1.5 s: {run.status} after {took:.2f} s, samples kept {len(stored)}")
    assert run.status == Run.Status.FAILED
    assert "per-job timeout" in run.error
    assert 0 < len(stored) < 300
    assert stored == list(range(len(stored)))


def test_it_stops_a_run_cancelled_from_the_ui_while_it_waits_on_a_long_request():
    # One request takes 30 s: the job itself would not flush, and so not notice, for that long.
    browser = _superuser_client()
    with serve_in_thread(SimProfile(decode_tps=2, ttft_ms=5)) as sim:
        run = make_run(sim.url, {"reps": 1, "warmup": 0, "max_tokens": 60})
        assert execution.claim(run.pk) == execution.CLAIMED
        worker = threading.Thread(target=execution.execute, args=(run.pk,))
        worker.start()
        time.sleep(1.0)  # the first request is in flight
        cancelled_at = time.monotonic()
        response = browser.post(reverse("runs:cancel", args=[run.pk]))
        worker.join(timeout=20)
        stopped_s = time.monotonic() - cancelled_at
    run.refresh_from_db()
    print(f"\ncancelled mid-request: {run.status}, job ended {stopped_s:.2f} s after the POST, "
          f"samples {len(seqs(run))}")
    assert response.status_code == 302
    assert not worker.is_alive()
    assert run.status == Run.Status.CANCELLED
    assert run.finished is not None
    assert stopped_s < 2.5


def _superuser_client():
    client = Client()
    client.force_login(UserFactory(is_superuser=True))
    return client
