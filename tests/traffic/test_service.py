"""A machine's relay process: it follows the machine's engine and marks the machine busy while it runs."""
from __future__ import annotations

import pytest
from django.utils import timezone

from engines.models import EngineSession, Machine
from runs.actions.runs import start_run
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, RelayRecordFactory
from tests.traffic.conftest import wait_for
from traffic.heartbeat import Heartbeat
from traffic.models import RelayState, RelayToken
from traffic.service import Listen, RelayService

pytestmark = pytest.mark.django_db(transaction=True)
LISTEN = Listen("127.0.0.1", 11434, 8090)


def test_it_follows_the_engine_the_machines_latest_run_started():
    machine = MachineFactory()
    first = EngineFactory(machine=machine, kind="llama-server")
    second = EngineFactory(machine=machine, kind="ollama")
    EngineSession.objects.create(machine=machine, engine=first, stopped=timezone.now())  # one open at a time
    relay = RelayService(machine, LISTEN)
    assert (relay.upstream().base_url, relay.engine_id) == (first.base_url, first.pk)

    EngineSession.objects.create(machine=machine, engine=second)
    relay.follow()
    assert (relay.upstream().base_url, relay.engine_id) == (second.base_url, second.pk)
    assert relay.upstream().api == "ollama"


def test_it_keeps_its_engine_when_the_next_one_cannot_be_told():
    machine = MachineFactory()
    engine = EngineFactory(machine=machine)
    relay = RelayService(machine, LISTEN)
    EngineFactory(machine=machine)  # now two engines and no run: which one is unclear
    relay.follow()
    assert relay.upstream().base_url == engine.base_url


def test_it_marks_the_machine_busy_and_stores_its_state_at_every_heartbeat(writers):
    config = EngineConfigFactory()
    machine = config.engine.machine
    RelayToken.issue_for(machine, "agents")  # an address other than loopback needs one
    relay = RelayService(machine, Listen("10.0.0.5", 11434, 8090))
    relay.writer = writers(machine, interval_s=0.05)
    relay.writer.put(RelayRecordFactory.build())
    assert relay.writer.flush(30)
    beats = Heartbeat(relay.tick, 0.05)
    beats.start()
    try:
        wait_for(lambda: RelayState.objects.filter(machine=machine, stored=1).exists())
    finally:
        beats.stop()

    state = RelayState.objects.get(machine=machine)
    assert state.addresses == {"ollama": "http://10.0.0.5:11434", "openai": "http://10.0.0.5:8090"}
    assert state.upstream == config.engine.base_url
    assert (state.accepted, state.buffered, state.dropped) == (1, 0, 0)
    assert (timezone.now() - Machine.objects.get(pk=machine.pk).relay_heartbeat).total_seconds() < 5
    with pytest.raises(ValueError, match="its relay is passing real traffic"):
        start_run(config, "speed", {"reps": 1})
