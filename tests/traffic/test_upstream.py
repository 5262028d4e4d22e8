"""Which engine a machine's relay forwards to, and what it tells the relay about that engine."""
from __future__ import annotations

import pytest
from django.utils import timezone

from engines.models import EngineSession
from tests.factories import EngineFactory, MachineFactory
from traffic.upstream import RelaySetupError, resolve_engine, upstream_for

pytestmark = pytest.mark.django_db


def test_it_forwards_to_the_named_engine():
    machine = MachineFactory()
    EngineFactory(machine=machine, name="qwen-llama")
    wanted = EngineFactory(machine=machine, name="qwen-sglang", kind="sglang")
    assert resolve_engine(machine, "qwen-sglang") == wanted


def test_it_names_the_machines_engines_when_the_named_one_is_not_there():
    machine = MachineFactory(name="box-7")  # no factory sequence name (spark-N)
    EngineFactory(machine=machine, name="qwen-llama")
    EngineFactory(name="elsewhere")  # another machine's
    with pytest.raises(RelaySetupError, match="machine box-7 has no engine named 'elsewhere' "
                       r"\(its engines: qwen-llama\)"):
        resolve_engine(machine, "elsewhere")


def test_it_forwards_to_the_machines_only_engine():
    engine = EngineFactory()
    assert resolve_engine(engine.machine) == engine


def test_it_forwards_to_the_engine_the_machines_latest_run_started():
    machine = MachineFactory()
    first, second = EngineFactory(machine=machine), EngineFactory(machine=machine)
    EngineSession.objects.create(machine=machine, engine=first, stopped=timezone.now())  # one open at a time
    EngineSession.objects.create(machine=machine, engine=second)
    assert resolve_engine(machine) == second


def test_it_asks_for_an_engine_name_when_the_machine_has_several_and_no_run_started_one():
    machine = MachineFactory(name="box-8")
    EngineFactory(machine=machine, name="a"), EngineFactory(machine=machine, name="b")
    with pytest.raises(RelaySetupError, match=r"box-8 has 2 engines \(its engines: a, b\).*--engine"):
        resolve_engine(machine)


def test_it_refuses_a_machine_without_engines():
    with pytest.raises(RelaySetupError, match="machine box-9 has no engine: add one"):
        resolve_engine(MachineFactory(name="box-9"))


@pytest.mark.parametrize(
    ("kind", "api"),
    [("ollama", "ollama"), ("llama-server", "openai"), ("sglang", "openai"), ("vllm", "openai")],
)
def test_it_tells_the_relay_the_engines_wire_api(kind, api):
    assert upstream_for(EngineFactory(kind=kind)).api == api


def test_it_passes_the_engines_and_machines_options_on():
    machine = MachineFactory(capture_bodies=True)
    engine = EngineFactory(machine=machine, kind="llama-server", base_url="http://127.0.0.1:8080/",
                           api_key="sk-local", merge_system_messages=True)
    spec = upstream_for(engine)
    assert (spec.base_url, spec.api_key) == ("http://127.0.0.1:8080", "sk-local")
    assert spec.engine_kind == "llama-server"
    assert spec.merge_system and spec.capture_bodies and spec.body_cap_bytes > 0


def test_it_refuses_an_engine_url_off_its_machine():
    engine = EngineFactory(base_url="http://10.9.9.9:8080")
    refusal = r"URL http://10\.9\.9\.9:8080 refused: the host must be the machine's"
    with pytest.raises(RelaySetupError, match=refusal):
        upstream_for(engine)
