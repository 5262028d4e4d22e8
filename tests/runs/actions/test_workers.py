from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from runs.actions.workers import CACHE_KEY, WorkerPresence, presence_of, queued_warning
from runs.models import Run
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, RunFactory, TeamFactory
from tests.runs.celery_helpers import celery_worker, requires_celery


@pytest.fixture(autouse=True)
def _fresh_presence_cache():
    cache.delete(CACHE_KEY)
    yield
    cache.delete(CACHE_KEY)


def new_machine():
    """A machine whose queue is new to the broker (no earlier test's worker consumed it)."""
    return MachineFactory(name=f"spark-{uuid.uuid4().hex[:10]}")


def queued_run(machine) -> Run:
    config = EngineConfigFactory(engine=EngineFactory(machine=machine))
    return RunFactory(config=config, status=Run.Status.QUEUED)


@pytest.mark.django_db
def test_it_counts_the_embedded_in_process_worker_as_present(settings):
    settings.SPARKDASH_WORKER = "inprocess"
    machine = new_machine()
    run = queued_run(machine)
    queued_run(machine)

    presence = presence_of(machine)

    assert presence.in_process and presence.listening
    assert presence.queued == 2
    assert queued_warning(run) == ""


@requires_celery
@pytest.mark.django_db(transaction=True)
def test_it_sees_a_worker_listening_on_the_machines_queue():
    machine = new_machine()
    run = queued_run(machine)
    with celery_worker(machine.queue_name, name="presence") as worker:
        presence = presence_of(machine)

    assert presence.listening and not presence.in_process
    assert [w.split("@")[0] for w in presence.workers] == [worker.name]
    assert presence.queued == 1
    assert queued_warning(run) == ""


@requires_celery
@pytest.mark.django_db(transaction=True)
def test_it_says_no_worker_listens_when_none_consumes_the_queue():
    machine = new_machine()
    run = queued_run(machine)
    # A worker on another machine's queue does not serve this one.
    with celery_worker(new_machine().queue_name, name="elsewhere"):
        presence = presence_of(machine)
        warning = queued_warning(run)

    assert not presence.listening and presence.workers == ()
    assert warning == (
        f"no worker listens on queue {machine.queue_name}: start one with make worker MACHINE={machine.name}"
    )


@requires_celery
@pytest.mark.django_db(transaction=True)
def test_it_asks_the_workers_again_only_once_the_cached_answer_expires(settings):
    settings.SPARKDASH_WORKER_PRESENCE_TTL_S = 6.0
    machine = new_machine()
    with celery_worker(machine.queue_name, name="cached"):
        assert presence_of(machine).listening
        cached_at = time.monotonic()
    # The worker has stopped: within the TTL the cached answer (no new broadcast) still lists it.
    assert time.monotonic() - cached_at < settings.SPARKDASH_WORKER_PRESENCE_TTL_S - 1, "worker stop too slow"
    assert presence_of(machine).listening
    time.sleep(max(0.0, settings.SPARKDASH_WORKER_PRESENCE_TTL_S - (time.monotonic() - cached_at)) + 0.2)
    assert not presence_of(machine).listening


@requires_celery
@pytest.mark.django_db(transaction=True)
def test_it_counts_a_machine_whose_run_heartbeats_as_served_but_not_a_lost_one(settings):
    machine = new_machine()
    running = queued_run(machine)
    Run.objects.filter(pk=running.pk).update(status=Run.Status.RUNNING, heartbeat=timezone.now())
    assert presence_of(machine).busy_run == running.pk
    assert presence_of(machine).listening

    stale = timezone.now() - timedelta(seconds=settings.SPARKDASH_LOST_RUN_S + 1)
    Run.objects.filter(pk=running.pk).update(heartbeat=stale)
    assert not presence_of(machine).listening


@pytest.mark.django_db
def test_it_names_the_team_in_the_start_command_outside_the_default_team():
    lab = MachineFactory(name="spark 1", team=TeamFactory(name="my lab"))
    assert WorkerPresence(lab).start_command == "make worker MACHINE='spark 1' TEAM='my lab'"
    assert WorkerPresence(MachineFactory(name="spark-1")).start_command == "make worker MACHINE=spark-1"
