import os
import re
import signal
import time
from pathlib import Path

import pytest
from django.utils import timezone

from engines.models import EngineSession
from runs.actions.runs import start_run
from runs.models import Run
from tests.faults.helpers import managed_sim, open_session, samples_of, wait_for
from tests.runs.celery_helpers import celery_worker, requires_celery, wait_until_finished

pytestmark = [requires_celery, pytest.mark.django_db(transaction=True)]

LOST_RUN_S = 3
# 16 tokens at 40 tok/s: 0.4 s a request, twelve requests (~5 s).
LONG_RUN = {"reps": 2, "warmup": 0, "max_tokens": 16}
NEXT_RUN = {"reps": 1, "warmup": 0, "max_tokens": 4}
GONE = re.compile(r"execute_run\[(\S+)\] succeeded in \S+: 'gone'")


@pytest.fixture(autouse=True)
def quick_reaper(monkeypatch):
    """Workers started by these tests fail a run as lost after 3 s without heartbeat, looking every 1 s."""
    monkeypatch.setenv("SPARKDASH_LOST_RUN_S", str(LOST_RUN_S))
    monkeypatch.setenv("SPARKDASH_REAP_INTERVAL_S", "1")


def test_it_reaps_a_run_whose_worker_child_was_killed_and_runs_the_next():
    config = managed_sim("--decode-tps 40 --ttft-ms 20")
    with celery_worker(config.engine.machine.queue_name, name="child-kill", pool="prefork") as worker:
        first = start_run(config, "speed", LONG_RUN)
        second = start_run(config, "speed", NEXT_RUN)
        session = wait_for("the engine is up", lambda: open_session(first.pk))
        wait_for("three samples stored", lambda: len(samples_of(first.pk)) >= 3)
        child = _pool_child(worker.process.pid)
        os.kill(child, signal.SIGKILL)
        killed_at = timezone.now()
        wait_for("the killed child gone", lambda: not _alive(child))
        before = settled_samples(first.pk)
        first, second = wait_until_finished([first.pk, second.pk])
        # The killed task comes back (acks_late, reject on worker lost) and finds its run taken.
        redelivered = wait_for("the killed task redelivered", lambda: GONE.search(worker.log()))
        log = worker.log()
    after = samples_of(first.pk)
    session.refresh_from_db()
    _report("worker child SIGKILLed", first, killed_at, before, after, second, session)
    assert "exited with 'signal 9 (SIGKILL)'" in log  # the parent saw its child die
    assert log.count(f"execute_run[{redelivered[1]}] received") == 2, log
    _assert_lost_then_next(first, killed_at, before, after, second, session)


def test_it_reaps_a_run_whose_whole_worker_was_killed_once_a_worker_is_back():
    config = managed_sim("--decode-tps 40 --ttft-ms 20")
    queue = config.engine.machine.queue_name
    with celery_worker(queue, name="whole-kill") as worker:
        first = start_run(config, "speed", LONG_RUN)
        second = start_run(config, "speed", NEXT_RUN)
        session = wait_for("the engine is up", lambda: open_session(first.pk))
        wait_for("three samples stored", lambda: len(samples_of(first.pk)) >= 3)
        worker.process.kill()  # solo pool: the job ran in this very process
        killed_at = timezone.now()
        worker.process.wait(timeout=10)
        before = settled_samples(first.pk)
        # No worker is left to reap it; the run waits for one, its task unacknowledged in Redis.
        time.sleep(LOST_RUN_S + 1)
        assert Run.objects.get(pk=first.pk).status == Run.Status.RUNNING
        with celery_worker(queue, name="whole-kill-back"):
            first, second = wait_until_finished([first.pk, second.pk])
    after = samples_of(first.pk)
    session.refresh_from_db()
    _report("whole worker SIGKILLed, then a worker back", first, killed_at, before, after, second, session)
    _assert_lost_then_next(first, killed_at, before, after, second, session, bound_s=30)


def _alive(pid):
    """Whether process `pid` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def settled_samples(run_pk):
    """The run's samples once the killed process is gone: a commit it had already sent lands in
    the database just after its death (a busy machine shows it); nothing may come after that."""
    time.sleep(0.5)
    return samples_of(run_pk)


def _pool_child(parent_pid):
    """The prefork pool's one child process of a worker."""
    children = Path(f"/proc/{parent_pid}/task/{parent_pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _report(what, first, killed_at, before, after, second, session):
    lost_s = (first.finished - killed_at).total_seconds()
    print(f"\n{what}: run {first.status} {lost_s:.2f} s after the kill ({first.error}); samples "
          f"{len(before)} at the kill, {len(after)} after; engine session: {session.exit_status}; "
          f"next run {second.status}")


def _assert_lost_then_next(first, killed_at, before, after, second, session, bound_s=LOST_RUN_S + 7):
    assert first.status == Run.Status.FAILED
    assert first.error == f"lost: its worker sent no heartbeat for {LOST_RUN_S} s (killed or stopped?)"
    assert (first.finished - killed_at).total_seconds() < bound_s
    assert after == before == list(range(len(before)))  # nothing duplicated, nothing written after
    assert session.exit_status == f"killed: left behind by a lost run (pid {session.pid})"
    assert second.status == Run.Status.SUCCEEDED, second.error
    assert second.started >= first.finished
    assert not EngineSession.objects.filter(machine_id=first.machine_id, stopped__isnull=True).exists()
