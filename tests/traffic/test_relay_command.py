"""`manage.py relay`: the bad invocations it refuses with a clear reason; serving both fronts, end to end."""
from __future__ import annotations

import signal

import ollama
import openai
import pytest
from django.core.management import CommandError, call_command

from engines.models import Machine
from engines.simulator import SimProfile, serve_in_thread
from runs.actions.runs import start_run
from runs.models import Run
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, RunFactory
from tests.traffic.conftest import database_down, postgres_only, relay_process, wait_for
from traffic.models import RelayState, TrafficRecord

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


# --- The command serving, end to end (Postgres: the relay is its own process, on the test database) ---


def ollama_chat(addresses: dict[str, str], text: str) -> str:
    client = ollama.Client(host=addresses["ollama"])
    answer = client.chat(model="qwen3", messages=[{"role": "user", "content": text}])
    return answer.message.content or ""


@postgres_only
def test_it_relays_both_fronts_records_each_request_and_frees_the_machine_when_stopped(monkeypatch):
    monkeypatch.setattr("runs.worker.dispatch.enqueue_on_commit", lambda run: None)  # no worker here
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        engine = {"engine__base_url": sim.url, "engine__kind": "llama-server", "engine__simulator": True}
        config = EngineConfigFactory(**engine)
        machine = config.engine.machine
        with relay_process(machine) as addresses:
            with pytest.raises(ValueError, match="its relay is passing real traffic"):
                start_run(config, "speed", {"reps": 1})
            assert ollama_chat(addresses, "hello")
            client = openai.OpenAI(base_url=addresses["openai"] + "/v1", api_key="unused")
            stream = client.chat.completions.create(
                model="qwen3", messages=[{"role": "user", "content": "hi"}], stream=True, max_tokens=16
            )
            assert "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
            wait_for(lambda: TrafficRecord.objects.filter(machine=machine).count() == 2)

    rows = TrafficRecord.objects.filter(machine=machine)
    assert sorted(rows.values_list("front", flat=True)) == ["ollama", "openai"]
    assert set(rows.values_list("engine_id", flat=True)) == {config.engine.pk}
    assert Machine.objects.get(pk=machine.pk).relay_heartbeat is None
    assert start_run(config, "speed", {"reps": 1}).status == Run.Status.QUEUED


@postgres_only
def test_it_stores_every_request_relayed_while_the_database_was_down():
    with serve_in_thread(SimProfile(decode_tps=400, ttft_ms=5)) as sim:
        engine = EngineFactory(base_url=sim.url, kind="llama-server", simulator=True)
        with relay_process(engine.machine) as addresses:
            with database_down():
                answers = [ollama_chat(addresses, f"step {n}") for n in range(10)]
            assert all(answers)  # the clients never waited on the database
            wait_for(lambda: TrafficRecord.objects.filter(machine=engine.machine).count() >= 10, timeout=60)
    assert TrafficRecord.objects.filter(machine=engine.machine).count() == 10


def test_it_leaves_the_callers_sigterm_handler_as_it_was():
    # A test process (or any caller of call_command) keeps its own handler: forked servers rely on it.
    engine = EngineFactory(machine=MachineFactory(name="spark-1"))
    RunFactory(config__engine=engine, status=Run.Status.RUNNING)  # refused once it would serve
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(CommandError, match="is running run"):
        call_command("relay", "--machine", "spark-1", "--ollama-port", "0", "--openai-port", "0")
    assert signal.getsignal(signal.SIGTERM) is before
