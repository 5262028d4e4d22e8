"""`manage.py relay`: the bad invocations it refuses with a clear reason, before listening anywhere."""
from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from engines.models import Machine
from runs.models import Run
from tests.factories import EngineFactory, MachineFactory, RunFactory
from traffic.models import RelayState

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_names_the_known_machines_for_an_unknown_one():
    MachineFactory(name="spark-1")
    with pytest.raises(CommandError, match=r"no machine named 'spark-2' \(machines: spark-1\)"):
        call_command("relay", "--machine", "spark-2")


def test_it_refuses_one_port_for_both_fronts():
    EngineFactory(machine=MachineFactory(name="spark-1"))
    with pytest.raises(CommandError, match="--ollama-port and --openai-port must differ"):
        call_command("relay", "--machine", "spark-1", "--ollama-port", "9000", "--openai-port", "9000")


def test_it_asks_which_engine_when_it_cannot_tell():
    machine = MachineFactory(name="spark-1")
    EngineFactory(machine=machine, name="a"), EngineFactory(machine=machine, name="b")
    with pytest.raises(CommandError, match="name the one to relay to with --engine"):
        call_command("relay", "--machine", "spark-1")


def test_it_waits_for_a_running_run_and_leaves_the_machine_free():
    engine = EngineFactory(machine=MachineFactory(name="spark-1"))
    run = RunFactory(config__engine=engine, status=Run.Status.RUNNING)
    refusal = rf"machine spark-1 is running run {run.pk} \(speed\): start its relay"
    with pytest.raises(CommandError, match=refusal):
        call_command("relay", "--machine", "spark-1", "--ollama-port", "0", "--openai-port", "0")
    assert Machine.objects.get(pk=engine.machine_id).relay_heartbeat is None
    assert RelayState.objects.filter(machine=engine.machine).exists()  # what it said before it stopped
