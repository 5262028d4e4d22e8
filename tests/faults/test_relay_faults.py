"""The relay under faults, as its own process (`manage.py relay`) on a private Postgres cluster, in
front of the real llama-server, driven by the agents' own clients (`ollama` and `openai`).

- The engine is killed mid-stream: each client gets a clean error in its own API's shape, the
  records say why, and once the engine is back the relay forwards again.
- Postgres restarts while two clients keep sending: every request gets its answer, and every
  record the relay accepted is stored exactly once (counted against what the clients sent).
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ollama
import openai
import pytest
from django.conf import settings

from tests.faults.services import PrivatePostgres, missing_tools
from tests.faults.stack import TEMPLATE, query, run_env
from tests.processes import stop_process
from tests.real_engine import free_port, llama_server_process, requires_engine

pytestmark = [requires_engine, pytest.mark.skipif(bool(missing_tools()), reason=missing_tools() or "-")]

LONG_ANSWER = 400  # tokens: seconds of streaming on this CPU, time enough to kill the engine
SENT_PER_CLIENT = 30


class Relay:
    """`manage.py relay` on its own database: its fronts, and the rows it wrote, read from outside."""

    def __init__(self, db_url: str, process: subprocess.Popen, log: Path, machine_id: int) -> None:
        self.db_url, self.process, self.log, self.machine_id = db_url, process, log, machine_id
        self.addresses: dict[str, str] = {}

    def query(self, sql: str, *params: Any) -> list[tuple]:
        return query(self.db_url, sql, *params)

    def records(self) -> list[tuple]:
        """(key, front, status, error) of every stored record of the machine."""
        sql = "SELECT key, front, status, error FROM traffic_trafficrecord WHERE machine_id = %s ORDER BY id"
        return self.query(sql, self.machine_id)

    def state(self) -> dict[str, Any]:
        sql = ("SELECT addresses, accepted, stored, buffered, dropped FROM traffic_relaystate"
               " WHERE machine_id = %s")
        rows = self.query(sql, self.machine_id)
        if not rows:
            return {}
        return dict(zip(("addresses", "accepted", "stored", "buffered", "dropped"), rows[0], strict=True))


@contextmanager
def relay(postgres: PrivatePostgres, name: str, engine_url: str, work: Path) -> Iterator[Relay]:
    """A database copied from the template, an engine row for `engine_url`, and its machine's relay."""
    postgres.create_database(name, TEMPLATE)
    env = run_env(postgres.url(name), "", work) | {"SPARKDASH_RELAY_ACTIVE_S": "3"}
    env.pop("REDIS_URL")
    env["SPARKDASH_WORKER"] = "inprocess"
    seeded = subprocess.run([sys.executable, "-m", "tests.faults.seed", "engine", engine_url], env=env,
                            cwd=settings.BASE_DIR, capture_output=True, text=True, check=True)  # fmt: skip
    machine = json.loads(seeded.stdout.strip().splitlines()[-1])
    log = work / "relay.log"
    command = [sys.executable, "manage.py", "relay", "--machine", machine["machine"], "--ollama-port", "0",
               "--openai-port", "0"]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)  # fmt: skip
    it = Relay(postgres.url(name), process, log, machine["machine_id"])
    try:
        deadline = time.monotonic() + 60
        while not (state := it.state()):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        it.addresses = state["addresses"]
        yield it
    except BaseException:
        sys.stderr.write(f"--- relay log ---\n{log.read_text(errors='replace')}\n")
        raise
    finally:
        stop_process(process, timeout_s=40)


def ollama_stream(address: str, tokens: int, seen: threading.Event | None = None) -> str:
    """Stream one chat through the Ollama front; `seen` is set at the first chunk."""
    text = ""
    chat = ollama.Client(host=address).chat(
        model="gemma", messages=[{"role": "user", "content": "Tell a long story about a harbour."}],
        stream=True, options={"num_predict": tokens, "temperature": 0},
    )
    for chunk in chat:
        text += chunk.message.content or ""
        if seen is not None:
            seen.set()
    return text


def openai_stream(address: str, tokens: int, seen: threading.Event | None = None) -> str:
    """Stream one chat through the OpenAI front; `seen` is set at the first chunk."""
    client = openai.OpenAI(base_url=address + "/v1", api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model="gemma", messages=[{"role": "user", "content": "Describe a lighthouse at length."}],
        stream=True, max_tokens=tokens, temperature=0,
    )
    text = ""
    for chunk in stream:
        text += "".join(c.delta.content or "" for c in chunk.choices)
        if seen is not None:
            seen.set()
    return text


def in_thread(work: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Run `work(*args)` in a thread; the dict gets its "result" or its "error"."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = work(*args)
        except Exception as exc:  # the outcome under test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_it_gives_each_client_a_clean_error_when_the_engine_dies_mid_stream(cluster):
    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="sparkdash-relay-"))
    with llama_server_process("-np", "2", "-c", "8192", port=port) as (url, engine), \
            relay(cluster, "relay_engine_killed", url, work) as it:  # fmt: skip
        seen = [threading.Event(), threading.Event()]
        clients = [in_thread(ollama_stream, it.addresses["ollama"], LONG_ANSWER, seen[0]),
                   in_thread(openai_stream, it.addresses["openai"], LONG_ANSWER, seen[1])]  # fmt: skip
        assert all(s.wait(60) for s in seen), "no client got a first chunk"
        engine.send_signal(signal.SIGKILL)
        for thread, _ in clients:
            thread.join(60)
        (_, ollama_out), (_, openai_out) = clients
        assert isinstance(ollama_out.get("error"), ollama.ResponseError), ollama_out
        assert isinstance(openai_out.get("error"), openai.APIError), openai_out
        with llama_server_process(port=port):
            assert ollama_stream(it.addresses["ollama"], 8)  # the relay forwards again
            wait = time.monotonic() + 20
            while len(it.records()) < 3 and time.monotonic() < wait:
                time.sleep(0.2)
    records = it.records()
    broken = [r for r in records if r[3]]
    assert sorted(r[1] for r in broken) == ["ollama", "openai"], records
    assert all("engine" in error for *_, error in broken), broken
    assert len(records) == 3 and not records[-1][3]
    print(f"\nengine killed mid-stream: ollama client got {ollama_out['error']!r}; "
          f"openai client got {type(openai_out['error']).__name__}: {openai_out['error']}")


def test_it_stores_every_accepted_record_once_across_a_postgres_restart(cluster):
    work = Path(tempfile.mkdtemp(prefix="sparkdash-relay-"))
    with llama_server_process("-np", "2", "-c", "8192") as (url, _engine), \
            relay(cluster, "relay_postgres_restart", url, work) as it:  # fmt: skip
        answers: list[str] = []
        clients = [in_thread(_keep_sending, ollama_stream, it.addresses["ollama"], answers),
                   in_thread(_keep_sending, openai_stream, it.addresses["openai"], answers)]  # fmt: skip
        while len(it.records()) < 6:
            time.sleep(0.1)
        down_s = cluster.restart()
        for thread, out in clients:
            thread.join(180)
            assert "error" not in out, out
        sent = 2 * SENT_PER_CLIENT
        deadline = time.monotonic() + 60
        while len(it.records()) < sent and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(4)  # one more heartbeat, for the relay's counters
        state = it.state()
    records = it.records()
    assert len(answers) == sent and all(answers)
    assert len(records) == sent and len({r[0] for r in records}) == sent  # each once
    assert all(status == 200 and not error for _, _, status, error in records), [r for r in records if r[3]]
    assert (state["accepted"], state["dropped"]) == (sent, 0), state
    print(f"\nPostgres down {down_s:.1f} s during traffic: {sent} requests sent, {len(records)} stored once, "
          f"relay accepted {state['accepted']}, dropped {state['dropped']}")


def _keep_sending(stream: Any, address: str, answers: list[str]) -> None:
    for _ in range(SENT_PER_CLIENT):
        answers.append(stream(address, 4))
