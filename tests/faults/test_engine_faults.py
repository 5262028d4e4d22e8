import os
import signal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from engines.models import EngineSession
from runs.actions.runs import start_run
from runs.models import Run, Sample
from tests.factories import UserFactory
from tests.faults.helpers import machine_worker, managed_sim, open_session, samples_of, wait_for
from tests.runs.celery_helpers import wait_until_finished

pytestmark = pytest.mark.django_db(transaction=True)

NEXT_RUN = {"reps": 1, "warmup": 0, "max_tokens": 4}


def requests_stored(run_id, n):
    return Sample.objects.filter(run_id=run_id, kind="request").count() >= n


def test_it_fails_a_run_whose_engine_is_killed_mid_stream_and_runs_the_next():
    # 16 tokens at 40 tok/s: 0.4 s a request, twelve requests.
    config = managed_sim("--decode-tps 40 --ttft-ms 20")
    with machine_worker(config.engine.machine, name="engine-kill"):
        first = start_run(config, "speed", {"reps": 2, "warmup": 0, "max_tokens": 16})
        second = start_run(config, "speed", NEXT_RUN)
        session = wait_for("the engine is up", lambda: open_session(first.pk))
        wait_for("three requests stored", lambda: requests_stored(first.pk, 3))
        os.kill(session.pid, signal.SIGKILL)
        killed_at = timezone.now()
        before = len(samples_of(first.pk))
        first, second = wait_until_finished([first.pk, second.pk])
    after = samples_of(first.pk)
    ended_s = (first.finished - killed_at).total_seconds()
    print(f"\nengine killed mid-stream: {first.status} {ended_s:.2f} s after the kill ({first.error}); "
          f"samples {before} at the kill, {len(after)} after; next run {second.status}")
    assert first.status == Run.Status.FAILED
    assert "engine exited (killed by SIGKILL) during the run" in first.error
    assert ended_s < 5
    assert len(after) >= before >= 3
    assert after == list(range(len(after)))  # kept, each seq once
    assert second.status == Run.Status.SUCCEEDED, second.error
    assert second.started >= first.finished
    assert not EngineSession.objects.filter(machine=config.engine.machine, stopped__isnull=True).exists()


def test_it_stops_a_run_cancelled_from_the_ui_within_seconds_and_releases_its_engine():
    # 16 tokens at 4 tok/s: 4 s a request, so the job itself would flush (and notice) only seconds later.
    slow = managed_sim("--decode-tps 4 --ttft-ms 20")
    fast = managed_sim("--decode-tps 200 --ttft-ms 5", engine=slow.engine)
    browser = _superuser_client()
    with machine_worker(slow.engine.machine, name="cancel"):
        run = start_run(slow, "speed", {"reps": 2, "warmup": 0, "max_tokens": 16})
        after_it = start_run(fast, "speed", NEXT_RUN)
        session = wait_for("the engine is up", lambda: open_session(run.pk))
        wait_for("one request stored", lambda: requests_stored(run.pk, 1), timeout_s=60)
        before = len(samples_of(run.pk))  # the second request is in flight
        cancelled_at = timezone.now()
        response = browser.post(reverse("runs:cancel", args=[run.pk]))
        stopped = wait_for("the engine stopped", lambda: _stopped(session.pk))
        run, after_it = wait_until_finished([run.pk, after_it.pk])
    after = samples_of(run.pk)
    ended_s = (run.finished - cancelled_at).total_seconds()
    released_s = (stopped.stopped - cancelled_at).total_seconds()
    print(f"\ncancelled from the UI: {run.status}, ended {ended_s:.2f} s and engine released "
          f"{released_s:.2f} s after the POST ({stopped.exit_status}); samples {before} before, "
          f"{len(after)} after; next run {after_it.status}")
    assert response.status_code == 302
    assert run.status == Run.Status.CANCELLED
    assert ended_s < 3
    assert released_s < 3
    assert not _alive(session.pid)
    assert after == list(range(len(after))) and len(after) >= before
    assert after_it.status == Run.Status.SUCCEEDED, after_it.error


def _stopped(session_id):
    return EngineSession.objects.filter(pk=session_id, stopped__isnull=False).first()


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _superuser_client():
    client = Client()
    client.force_login(UserFactory(is_superuser=True))
    return client
