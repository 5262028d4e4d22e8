import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from engines.models import EngineSession
from runs.models import Run
from runs.worker import execution
from runs.worker.reaper import start_reaper
from tests.factories import RunFactory

pytestmark = pytest.mark.django_db(transaction=True)

ORPHAN = [sys.executable, "-c", "import time; time.sleep(60)"]


def lost_run(age_s=600):
    stale = timezone.now() - timedelta(seconds=age_s)
    return RunFactory(status=Run.Status.RUNNING, started=stale, heartbeat=stale)


def orphan_engine(run, command=None):
    process = subprocess.Popen(ORPHAN, start_new_session=True)
    time.sleep(0.2)  # let the interpreter replace the fork, so /proc shows its command
    session = EngineSession.objects.create(
        machine=run.machine, engine=run.config.engine, run_id=run.pk, command=command or ORPHAN,
        pid=process.pid,
    )
    return process, session


def test_it_reaps_lost_runs_on_every_machine_and_spares_live_ones(settings):
    settings.SPARKDASH_LOST_RUN_S = 30
    lost, other_lost, alive = lost_run(), lost_run(), lost_run(age_s=1)
    assert execution.reap_lost_runs() == 2
    states = dict(Run.objects.values_list("pk", "status"))
    assert states == {lost.pk: "failed", other_lost.pk: "failed", alive.pk: "running"}
    lost.refresh_from_db()
    assert lost.error == "lost: its worker sent no heartbeat for 30 s (killed or stopped?)"


def test_it_kills_the_engine_a_lost_run_left_behind_and_closes_its_session():
    run = lost_run()
    process, session = orphan_engine(run)
    try:
        assert execution.reap_lost_runs(run.machine_id) == 1
        assert process.wait(timeout=5) == -9
    finally:
        process.kill()
    session.refresh_from_db()
    assert session.stopped is not None
    assert session.exit_status == f"killed: left behind by a lost run (pid {process.pid})"


def test_it_never_kills_a_process_that_reused_the_engines_pid():
    run = lost_run()
    process, session = orphan_engine(run, command=["llama-server", "--port", "8080"])
    try:
        execution.reap_lost_runs()
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()
    session.refresh_from_db()
    assert session.stopped is not None
    assert session.exit_status == "left behind by a lost run"


def test_it_reaps_periodically_in_the_background(settings):
    settings.SPARKDASH_LOST_RUN_S = 1
    run = RunFactory(status=Run.Status.RUNNING, heartbeat=timezone.now())
    reaper = start_reaper(0.2)
    try:
        deadline = time.monotonic() + 10
        while Run.objects.get(pk=run.pk).status == Run.Status.RUNNING and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        reaper.stop()
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert (run.finished - run.heartbeat).total_seconds() < 3
