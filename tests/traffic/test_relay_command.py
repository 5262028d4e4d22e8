"""`manage.py relay`: the bad invocations it refuses with a clear reason; serving both fronts, end to end."""
from __future__ import annotations

import io
import json
import re
import signal
import time

import httpx
import ollama
import openai
import pytest
from django.core.management import CommandError, call_command

from engines.models import Machine
from engines.simulator import SimProfile, serve_in_thread
from runs.actions.runs import start_run
from runs.models import Run
from tests.factories import EngineConfigFactory, EngineFactory, MachineFactory, RunFactory, TeamFactory
from tests.traffic.conftest import database_down, postgres_only, relay_process, wait_for
from tests.traffic.relay.scripted import Scripted, engine
from traffic.gate import REFRESH_S
from traffic.models import RelayState, RelayToken, TrafficRecord
from traffic.relay import RelayServer
from traffic.relay.server import url_of

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


def test_it_relays_for_the_named_teams_machine_and_asks_for_a_team_when_two_have_the_name():
    default = MachineFactory(name="spark-1")
    lab = MachineFactory(name="spark-1", team=TeamFactory(name="lab"))
    for machine, name in ((default, "a"), (default, "b"), (lab, "c"), (lab, "d")):
        EngineFactory(machine=machine, name=name)
    with pytest.raises(CommandError, match=r"more than one team \(default, lab\): choose the team"):
        call_command("relay", "--machine", "spark-1")
    # Found, it goes on to choose the engine: the lab machine's, not the default team's.
    with pytest.raises(CommandError, match=r"machine spark-1 has 2 engines \(its engines: c, d\)"):
        call_command("relay", "--machine", "spark-1", "--team", "lab")
    assert not RelayState.objects.exists()


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


# --- The relay's own credential, through the command (served in this process, on any backend) ---

STORED_KEY = "sk-stored-engine-key"
ANSWER = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                  "finish_reason": "stop"}]}).encode()  # fmt: skip


@pytest.fixture
def scripted_engine():
    """A machine (host 192.0.2.10, not this box) whose engine is a scripted OpenAI server on loopback
    holding a stored API key."""
    scripted = Scripted([ANSWER], "application/json")
    with engine(scripted) as url:
        machine = MachineFactory(name="spark-1", host="192.0.2.10")
        EngineFactory(machine=machine, base_url=url, kind="llama-server", api_key=STORED_KEY)
        yield machine, scripted


def serve_with(monkeypatch, scenario) -> list[dict[str, str]]:
    """`manage.py relay` serves in this process while `scenario(addresses)` runs, then stops."""
    served: list[dict[str, str]] = []

    def serve(app, sockets):
        with RelayServer(app, sockets):
            served.append({"ollama": url_of(sockets[0]), "openai": url_of(sockets[1])})
            scenario(served[0])

    monkeypatch.setattr("traffic.service.serve_forever", serve)
    return served


def ask(addresses: dict[str, str], token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(addresses["openai"] + "/v1/chat/completions", json=body, headers=headers, timeout=10)


def relay(*args: str) -> str:
    out = io.StringIO()
    ports = ("--ollama-port", "0", "--openai-port", "0")
    call_command("relay", "--machine", "spark-1", *ports, *args, stdout=out)
    return out.getvalue()


def test_it_takes_only_requests_with_a_live_token_and_adds_the_key_only_to_them(monkeypatch, scripted_engine):
    machine, scripted = scripted_engine
    agents, agents_plain = RelayToken.issue_for(machine, "agents")
    _, ci_plain = RelayToken.issue_for(machine, "ci")
    seen: dict[str, object] = {}

    def scenario(addresses: dict[str, str]) -> None:
        seen["refused"] = [ask(addresses).status_code, ask(addresses, "sdr_wrong").status_code]
        seen["refused_reached"] = len(scripted.headers)
        seen["allowed"] = ask(addresses, agents_plain).status_code
        agents.revoke()
        revoked_at = time.monotonic()
        while ask(addresses, agents_plain).status_code != 401:
            assert time.monotonic() - revoked_at < REFRESH_S + 3, "the revoked token still works"
            time.sleep(0.2)
        seen["revoked_after_s"] = time.monotonic() - revoked_at
        seen["other"] = ask(addresses, ci_plain).status_code

    serve_with(monkeypatch, scenario)
    out = relay("--host", "127.0.0.1")  # with a token it would listen on the machine's host
    assert "requests must present one of its 2 relay token(s)" in out
    assert seen["refused"] == [401, 401] and seen["refused_reached"] == 0
    assert seen["allowed"] == 200 and seen["other"] == 200
    assert seen["revoked_after_s"] <= REFRESH_S + 3
    assert all(headers[b"authorization"] == f"Bearer {STORED_KEY}".encode() for headers in scripted.headers)
    assert not any(plain.encode() in value for headers in scripted.headers for value in headers.values()
                   for plain in (agents_plain, ci_plain))  # fmt: skip
    assert RelayToken.objects.get(name="ci").last_used is not None  # stored when the relay stopped


def test_it_listens_on_loopback_alone_without_a_token_adds_no_key_caps_bodies(monkeypatch, scripted_engine):
    _, scripted = scripted_engine
    answers: list[int] = []

    def scenario(addresses: dict[str, str]) -> None:
        answers.append(ask(addresses, "anything").status_code)
        too_big = b'{"model": "m", "prompt": "' + b"x" * (1024 * 1024) + b'"}'
        refused = httpx.post(addresses["ollama"] + "/api/generate", content=too_big, timeout=10)
        answers.append(refused.status_code)

    served = serve_with(monkeypatch, scenario)
    out = relay("--max-body-mb", "1")
    assert "has no relay token: listening on 127.0.0.1 only, not on its host 192.0.2.10" in out
    assert "open on loopback" in out
    assert all(url.startswith("http://127.0.0.1:") for url in served[0].values())
    assert answers == [200, 413] and len(scripted.headers) == 1
    assert b"authorization" not in scripted.headers[0]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::"])
def test_it_refuses_to_listen_elsewhere_without_a_token(monkeypatch, scripted_engine, host):
    machine, _ = scripted_engine
    RelayToken.issue_for(machine, "old")[0].revoke()  # a revoked token is no token
    served = serve_with(monkeypatch, lambda addresses: None)
    with pytest.raises(CommandError, match=rf"machine spark-1 has no relay token, so its relay listens on "
                                           rf"loopback only \(127.0.0.1\): {re.escape(host)} is reachable"):
        relay("--host", host)
    assert served == [] and not RelayState.objects.exists()
    assert Machine.objects.get(pk=machine.pk).relay_heartbeat is None


def test_it_listens_elsewhere_with_a_token_and_refuses_all_once_it_is_revoked(monkeypatch, scripted_engine):
    machine, scripted = scripted_engine
    token, plain = RelayToken.issue_for(machine, "agents")
    answers: list[int] = []

    def scenario(addresses: dict[str, str]) -> None:
        local = {front: url.replace("0.0.0.0", "127.0.0.1") for front, url in addresses.items()}
        answers.append(ask(local, plain).status_code)
        token.revoke()
        time.sleep(REFRESH_S + 0.5)
        answers.extend([ask(local).status_code, ask(local, plain).status_code])  # not open: closed

    served = serve_with(monkeypatch, scenario)
    relay("--host", "0.0.0.0")
    assert served[0]["openai"].startswith("http://0.0.0.0:")
    assert answers == [200, 401, 401] and len(scripted.headers) == 1


def test_it_refuses_a_size_option_below_one_mib():
    with pytest.raises(CommandError, match="must be a whole number of MiB, at least 1"):
        relay("--max-body-mb", "0")
