"""The embedded default's scheduler: due schedules fire from the web process, and the pages say
when nothing fires them."""
from __future__ import annotations

import importlib
import os
import time
from datetime import timedelta

import pytest
from django.apps import apps
from django.urls import reverse
from django.utils import timezone

from engines.simulator import SimProfile, serve_in_thread
from runs.actions import scheduler
from runs.management.commands import serve
from runs.models import Run, SweepExecution
from tests.factories import EngineConfigFactory, ScheduleFactory, SweepFactory


@pytest.fixture(autouse=True)
def quiet_scheduler(monkeypatch):
    """Each test starts with no tick and no thread of this process's scheduler."""
    monkeypatch.setattr(scheduler, "_state", {"last_tick": None, "thread": None})
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)


@pytest.mark.django_db
def test_it_fires_a_due_schedule_and_leaves_one_that_is_not_due():
    now = timezone.now()
    due = ScheduleFactory(sweep=SweepFactory(configs=[EngineConfigFactory()]), every_seconds=60,
                          created=now - timedelta(seconds=61))
    ScheduleFactory(sweep=SweepFactory(configs=[EngineConfigFactory()]), every_seconds=60, created=now)
    (fired,) = scheduler.tick(now)
    assert (fired.schedule_id, fired.trigger) == (due.pk, SweepExecution.Trigger.SCHEDULE)
    assert scheduler.tick(now + timedelta(seconds=30)) == []  # counted from its last firing now
    assert len(scheduler.tick(now + timedelta(seconds=61))) == 2  # the second is due too by then


@pytest.mark.django_db
def test_it_fires_a_nightly_missed_while_nothing_ran_once():
    created = timezone.now() - timedelta(days=3)
    ScheduleFactory(sweep=SweepFactory(configs=[EngineConfigFactory()]), created=created)
    assert len(scheduler.tick()) == 1 and scheduler.tick() == []


@pytest.mark.django_db
def test_it_says_on_the_schedule_pages_when_no_scheduler_runs(alice_client, inprocess):
    ScheduleFactory(sweep=SweepFactory(configs=[EngineConfigFactory()]))
    pages = [reverse("runs:schedule-list"), reverse("runs:schedule-create"), reverse("runs:home")]
    assert all('id="no-scheduler"' in alice_client.get(url).content.decode() for url in pages)
    scheduler.tick()
    assert not any('id="no-scheduler"' in alice_client.get(url).content.decode() for url in pages)


def test_it_starts_only_when_serve_asks_for_it(monkeypatch):
    monkeypatch.delenv(scheduler.ENV, raising=False)
    assert scheduler.start() is None


def test_it_starts_from_the_projects_app_ready_and_not_from_importing_the_asgi_module(monkeypatch):
    started = []
    monkeypatch.setattr(scheduler, "start", lambda: started.append(True))
    monkeypatch.setenv(scheduler.ENV, "1")
    importlib.reload(importlib.import_module("sparkdash.asgi"))
    assert started == []
    apps.get_app_config("sparkdash").ready()
    assert started == [True]


@pytest.mark.parametrize(("worker", "told"), [("inprocess", "1"), ("celery", None)])
def test_it_is_asked_for_by_serve_in_its_web_process_only(worker, told, monkeypatch, settings):
    settings.SPARKDASH_WORKER = worker
    monkeypatch.delenv(scheduler.ENV, raising=False)
    spawned = {}
    monkeypatch.setattr(serve, "_spawn", lambda args, env=None: spawned.setdefault(args[1], env))
    serve.Command()._daphne("127.0.0.1", 8000)
    assert (spawned["daphne"] or {}).get(scheduler.ENV) == told
    assert scheduler.ENV not in os.environ  # nor the simulator nor anything else serve starts


@pytest.mark.django_db(transaction=True)
def test_it_starts_the_run_of_a_schedule_due_now_on_the_embedded_default(monkeypatch, settings):
    if settings.SPARKDASH_WORKER == "celery":
        pytest.skip("the embedded default's scheduler; with a broker celery beat fires schedules")
    monkeypatch.undo()  # runs go to the in-process worker, as under `manage.py serve`
    monkeypatch.setattr(scheduler, "_state", {"last_tick": None, "thread": None})
    monkeypatch.setattr(scheduler, "TICK_S", 0.5)
    monkeypatch.setenv(scheduler.ENV, "1")
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        config = EngineConfigFactory(max_tokens=8, engine__base_url=sim.url, engine__simulator=True)
        sweep = SweepFactory(configs=[config], repetitions=1)
        ScheduleFactory(sweep=sweep, every_seconds=3600, created=timezone.now() - timedelta(hours=1))
        assert scheduler.start() is not None
        try:
            deadline = time.monotonic() + 120
            finished = Run.objects.filter(status=Run.Status.SUCCEEDED)
            while time.monotonic() < deadline and not finished.exists():
                time.sleep(0.5)
            waited = 120 - (deadline - time.monotonic())
        finally:
            scheduler.stop()
    run = Run.objects.get()
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.execution.trigger == SweepExecution.Trigger.SCHEDULE
    print(f"\nthe schedule's run finished {waited:.1f} s after the scheduler started")
