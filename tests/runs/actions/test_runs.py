"""Starting runs: a machine whose relay passes real traffic refuses them (one engine per machine)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from engines.models import Machine
from runs.actions import schedules
from runs.actions.runs import start_run
from runs.actions.sweeps import start_sweep
from runs.models import Run
from tests.factories import EngineConfigFactory, ScheduleFactory, SweepFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_dispatch(monkeypatch):
    # The worker side is not under test here: keep queued runs queued.
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)


def relay_beat(config, seconds_ago: float) -> None:
    """What `manage.py relay` writes for the config's machine, `seconds_ago` seconds ago."""
    when = timezone.now() - timedelta(seconds=seconds_ago)
    Machine.objects.filter(pk=config.engine.machine_id).update(relay_heartbeat=when)


def test_it_refuses_a_run_on_a_machine_whose_relay_is_active(no_dispatch):
    config = EngineConfigFactory()
    relay_beat(config, seconds_ago=3)
    with pytest.raises(ValueError, match=f"machine {config.engine.machine.name} is busy: its relay"):
        start_run(config, "speed", {"reps": 1})
    assert not Run.objects.exists()


def test_it_starts_a_run_once_the_relay_has_been_silent_past_the_limit(no_dispatch, settings):
    settings.SPARKDASH_RELAY_ACTIVE_S = 15
    config = EngineConfigFactory()
    relay_beat(config, seconds_ago=16)  # a relay killed without clearing its mark
    assert start_run(config, "speed", {"reps": 1}).status == Run.Status.QUEUED


def test_it_refuses_a_whole_sweep_when_one_machines_relay_is_active(no_dispatch):
    idle, busy = EngineConfigFactory(name="cfg-idle"), EngineConfigFactory(name="cfg-busy")
    relay_beat(busy, seconds_ago=1)
    with pytest.raises(ValueError, match=r"cfg-busy, speed: machine \S+ is busy: its relay"):
        start_sweep(SweepFactory(configs=[idle, busy], jobs=[{"job": "speed", "params": {"reps": 1}}]))
    assert not Run.objects.exists()


def test_it_records_a_scheduled_sweep_refused_by_an_active_relay(no_dispatch):
    config = EngineConfigFactory()
    relay_beat(config, seconds_ago=1)
    execution = schedules.fire(ScheduleFactory(sweep=SweepFactory(configs=[config])).pk)
    assert "could not start" in execution.error and "its relay is passing real traffic" in execution.error
