"""The relay's heartbeat: the machine's busy mark and relay state, kept up through a database outage."""
from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime

import pytest
from django.utils import timezone

from engines.models import Machine
from tests.factories import MachineFactory
from tests.traffic.conftest import database_down, postgres_only, wait_for
from traffic import heartbeat
from traffic.models import LOG_WARNINGS_KEPT, RelayState
from traffic.writer import WriterCounters

pytestmark = pytest.mark.django_db(transaction=True)


def status(stored: int = 0, error: str = "") -> heartbeat.RelayStatus:
    return heartbeat.RelayStatus(
        timezone.now(), {"ollama": "http://127.0.0.1:11434"}, "http://127.0.0.1:8080",
        WriterCounters(accepted=stored + 2, stored=stored, buffered=2, dropped=0, last_error=error),
    )


def test_it_keeps_one_relay_state_per_machine_up_to_date():
    machine = MachineFactory()
    heartbeat.beat(machine.pk, status(stored=5))
    heartbeat.beat(machine.pk, status(stored=9, error="OperationalError: the database is starting up"))
    state = RelayState.objects.get(machine=machine)
    assert (state.accepted, state.stored, state.buffered) == (11, 9, 2)
    assert state.last_error == "OperationalError: the database is starting up"
    assert Machine.objects.get(pk=machine.pk).relay_heartbeat == state.heartbeat


def test_it_clears_the_busy_mark_on_a_clean_exit():
    machine = MachineFactory()
    heartbeat.beat(machine.pk, status())
    assert Machine.objects.get(pk=machine.pk).relay_refusal() is not None
    heartbeat.clear(machine.pk)
    assert Machine.objects.get(pk=machine.pk).relay_refusal() is None


@postgres_only
def test_it_beats_again_once_the_database_is_back():
    machine = MachineFactory()
    beats = heartbeat.Heartbeat(lambda: heartbeat.beat(machine.pk, status()), 0.05)
    beats.start()
    try:
        wait_for(lambda: Machine.objects.get(pk=machine.pk).relay_heartbeat is not None)
        with database_down():
            time.sleep(0.5)  # several ticks fail
        back = timezone.now()
        wait_for(lambda: Machine.objects.get(pk=machine.pk).relay_heartbeat > back)
    finally:
        beats.stop()


def test_it_keeps_the_latest_engine_log_warnings_across_beats():
    machine = MachineFactory()
    for n in range(LOG_WARNINGS_KEPT + 5):
        heartbeat.beat(machine.pk, replace(status(), log_lines=(f"discard {n}",)))
    heartbeat.beat(machine.pk, status())  # a beat with nothing new keeps what was seen
    kept = RelayState.objects.get(machine=machine).log_warnings
    assert [w["line"] for w in kept] == [f"discard {n}" for n in range(5, LOG_WARNINGS_KEPT + 5)]
    assert all(datetime.fromisoformat(w["at"]) <= timezone.now() for w in kept)
