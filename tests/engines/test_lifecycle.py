"""Engine processes for real: the simulator as an engine, programs that fail, die or linger."""
from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from engines import lifecycle
from engines.clients import GenerationRequest, client_for
from engines.clients.base import EngineError
from engines.lifecycle import (
    EngineDied,
    EngineStartError,
    ManagedEngine,
    port_is_free,
    run_while_alive,
    wait_port_free,
)
from measure import event_loop
from tests.engines.resetting import resetting_engine

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
SLEEPER = "import time; print('loading', flush=True); time.sleep(30)"
NO_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(30)"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def simulator(port: int) -> list[str]:
    return [sys.executable, "manage.py", "simengine", "--port", str(port), "--decode-tps", "50"]


@pytest.fixture
async def engine() -> AsyncIterator[Callable[..., ManagedEngine]]:
    made: list[ManagedEngine] = []

    def make(argv: list[str], **kwargs: Any) -> ManagedEngine:
        made.append(ManagedEngine(argv, cwd=ROOT, **kwargs))
        return made[-1]

    yield make
    for one in made:
        await one.stop(timeout_s=2)


async def until(condition: Callable[[], bool], timeout_s: float = 5) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_it_starts_the_simulator_and_frees_its_port_on_stop(engine, tmp_path: Path) -> None:
    port = free_port()
    sim = engine(simulator(port), log_path=tmp_path / "logs" / "engine.log")
    await sim.start()
    startup_s = await sim.wait_healthy(f"http://{HOST}:{port}", timeout_s=20)
    assert startup_s > 0
    assert not port_is_free(HOST, port)
    assert sim.exit_status() is None
    status = await sim.stop()
    assert status == sim.exit_status() is not None
    assert await wait_port_free(HOST, port, timeout_s=2)
    assert "SIMULATOR" in (tmp_path / "logs" / "engine.log").read_text()


async def test_it_names_a_missing_program(engine) -> None:
    with pytest.raises(EngineStartError, match="/no/such/llama-server"):
        await engine(["/no/such/llama-server", "--port", "1"]).start()


async def test_it_reports_a_program_that_exits_at_once_with_its_output(engine) -> None:
    failing = engine(python("import sys; print('boom'); sys.exit(3)"))
    with pytest.raises(EngineStartError, match="exit code 3") as caught:
        await failing.start(grace_s=5)
    assert "boom" in str(caught.value)
    assert failing.exit_status() == "exit code 3"


async def test_it_sends_every_line_to_the_log_file_and_callback(engine, tmp_path: Path) -> None:
    seen: list[str] = []
    code = "import sys, time; print('one'); print('two\\r'); sys.stdout.write('caf\\u00e9'); "
    code += "sys.stdout.flush(); time.sleep(30)"
    talker = engine(python(code), log_path=tmp_path / "engine.log", on_line=seen.append)
    await talker.start()
    await until(lambda: len(seen) == 2)
    assert await talker.stop() == "killed by SIGTERM"
    assert seen == ["one", "two", "café"]
    assert (tmp_path / "engine.log").read_text(encoding="utf-8") == "one\ntwo\ncafé\n"


async def test_it_keeps_reading_when_the_callback_fails(engine) -> None:
    def explode(line: str) -> None:
        raise RuntimeError(line)

    code = "import time; print('a'); print('b', flush=True); time.sleep(30)"
    talker = engine(python(code), on_line=explode)
    await talker.start()
    await until(lambda: list(talker.tail) == ["a", "b"])


async def test_it_times_out_on_a_process_that_never_listens(engine) -> None:
    silent = engine(python(SLEEPER))
    await silent.start()
    started = time.monotonic()
    with pytest.raises(EngineStartError, match=r"did not become healthy within 0\.5 s") as caught:
        await silent.wait_healthy(f"http://{HOST}:{free_port()}", timeout_s=0.5)
    assert time.monotonic() - started < 2
    assert "loading" in str(caught.value)


async def test_it_reports_an_exit_while_waiting_for_health(engine) -> None:
    code = "import time; time.sleep(0.5); print('cannot load model', flush=True); raise SystemExit(1)"
    dying = engine(python(code))
    await dying.start(grace_s=0.05)
    with pytest.raises(EngineStartError, match=r"exited \(exit code 1\)") as caught:
        await dying.wait_healthy(f"http://{HOST}:{free_port()}", timeout_s=10)
    assert "cannot load model" in str(caught.value)


async def test_it_kills_a_process_that_ignores_sigterm(engine) -> None:
    stubborn = engine(python(NO_SIGTERM))
    await stubborn.start()
    await until(lambda: "ready" in stubborn.tail)
    assert await stubborn.stop(timeout_s=0.3) == "killed by SIGKILL"


async def test_it_stops_idempotently(engine) -> None:
    assert await engine(python(SLEEPER)).stop() == "not started"
    sleeper = engine(python(SLEEPER))
    await sleeper.start()
    first, second = await asyncio.gather(sleeper.stop(), sleeper.stop())
    assert first == second == await sleeper.stop() == "killed by SIGTERM"


async def test_it_kills_what_the_engine_left_behind_in_its_group(engine) -> None:
    child = f"import os; print(os.getpid(), flush=True); exec({NO_SIGTERM!r})"
    parent = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {child!r}]); "
    parent += "time.sleep(30)"
    leader = engine(python(parent))
    await leader.start()
    await until(lambda: "ready" in leader.tail)
    child_pid = int(leader.tail[0])
    started = time.monotonic()
    assert await leader.stop(timeout_s=5) == "killed by SIGTERM"
    assert time.monotonic() - started < 3
    await until(lambda: not _alive(child_pid))


async def test_it_raises_engine_died_when_the_engine_is_killed_mid_run(engine) -> None:
    port = free_port()
    sim = engine(simulator(port))
    await sim.start()
    url = f"http://{HOST}:{port}"
    await sim.wait_healthy(url, timeout_s=20)
    messages = [{"role": "user", "content": "Go on."}]
    request = GenerationRequest(model="sim", messages=messages, max_tokens=2000)
    assert sim.pid is not None
    asyncio.get_running_loop().call_later(0.5, os.kill, sim.pid, signal.SIGKILL)
    started = time.monotonic()
    async with client_for("llama-server", url) as client:
        with pytest.raises(EngineDied, match=r"engine exited \(killed by SIGKILL\) during the run"):
            await run_while_alive(sim, client.generate(request))
    assert time.monotonic() - started < 5


async def test_it_returns_the_job_result_while_the_engine_lives(engine) -> None:
    sleeper = engine(python(SLEEPER))
    await sleeper.start()
    assert await run_while_alive(sleeper, asyncio.sleep(0.05, result="done")) == "done"
    assert sleeper.exit_status() is None


async def test_it_blames_the_engine_for_a_job_that_failed_because_it_died(engine) -> None:
    sleeper = engine(python(SLEEPER))
    await sleeper.start()

    async def cut_stream() -> None:
        assert sleeper.pid is not None
        os.kill(sleeper.pid, signal.SIGKILL)
        raise EngineError("engine stopped mid-answer after 3 chunks")

    with pytest.raises(EngineDied, match="SIGKILL") as caught:
        await run_while_alive(sleeper, cut_stream())
    assert isinstance(caught.value.__cause__, EngineError)


async def test_it_passes_on_the_job_error_while_the_engine_lives(engine) -> None:
    sleeper = engine(python(SLEEPER))
    await sleeper.start()

    async def bad_request() -> None:
        raise EngineError("HTTP 400")

    with pytest.raises(EngineError, match="HTTP 400") as caught:
        await run_while_alive(sleeper, bad_request())
    assert not isinstance(caught.value, EngineDied)


async def test_it_tells_a_listening_port_from_a_free_one() -> None:
    with socket.socket() as listener:
        listener.bind((HOST, 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not port_is_free(HOST, port)
        assert not await wait_port_free(HOST, port, timeout_s=0.2)
    assert port_is_free(HOST, port)


def _alive(pid: int) -> bool:
    """Whether pid runs (a zombie, which an init that never reaps may leave, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_it_counts_a_connection_reset_as_it_opens_as_not_yet_healthy_on_uvloop() -> None:
    async def polls(url: str) -> list[bool]:
        async with httpx.AsyncClient(trust_env=False) as http:
            return [await lifecycle._answers_200(http, url + "/health", 1.0) for _ in range(300)]

    # Without the client's guard, uvloop's lost socket raised AttributeError out of a few of these.
    with resetting_engine() as url:
        assert event_loop.run(polls(url)) == [False] * 300
