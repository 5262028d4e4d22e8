"""The live-latency benchmark's measuring process: `python -m tests.bench.live_probe PLAN_JSON`.

Sets Django up on its own Postgres database and Redis db (channels-redis), serves the
dashboard with daphne (`manage.py serve`), and for each (pages, seconds) of the plan: opens
that many run pages in headless Chromium (five windows per browser), runs a speed job against
the simulator in this process (the worker: runs.worker.execution with its real recorder, Postgres and
channels-redis), stamping each sample with the worker's wall clock as the job hands it over,
and reads from every page when its chart drew each point (window.__sparkdashLive, set up by
tests/bench/live_hook.js, which live_pages.py injects). Prints one JSON object: per plan entry,
each page's (seq, sent, received, drawn) rows.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
# ~0.5 s a request: two samples a second, each flushed at once (the recorder flushes at most
# every 0.25 s; faster samples wait for the next flush by design).
PROFILE = {"decode_tps": 100, "ttft_ms": 100, "lookahead": 0, "batch_cost": 0.0, "model": "sim-live"}
MAX_TOKENS = 40
SOCKET_WAIT_S = 120


def main(plan: dict[str, Any]) -> None:
    """Measure each (pages, seconds) of the plan; the result is the last line of stdout."""
    os.environ.update(plan["env"])
    from tests.bench.scale_db import create_database

    create_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    from engines.simulator import SimProfile
    from tests.bench.simproc import simulator_process

    call_command("migrate", verbosity=0, interactive=False)
    results = []
    with simulator_process(SimProfile(**PROFILE)) as sim, _dashboard() as site:
        config, user = _fixtures(sim.url)
        for pages, seconds, *sockets in plan["runs"]:
            results.append(measure(site, config, user, pages, seconds, *sockets))
    print(json.dumps({"results": results}))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _fixtures(sim_url: str) -> tuple[Any, Any]:
    from django.contrib.auth import get_user_model

    from engines.models import Engine, EngineConfig, Machine
    from teams.models import Team

    team = Team.default()
    stamp = str(int(time.time()))
    machine = Machine.objects.create(name=f"live-{stamp}", team=team, bandwidth_gbps=273, memory_gb=121)
    engine = Engine.objects.create(
        machine=machine, name=f"sim-{stamp}", kind="llama-server", base_url=sim_url, simulator=True
    )
    config = EngineConfig.objects.create(
        engine=engine, name=f"live-{stamp}", model="sim-live", max_tokens=MAX_TOKENS
    )
    user, _ = get_user_model().objects.get_or_create(username="bench")
    team.members.add(user)
    return config, user


@contextlib.contextmanager
def _dashboard() -> Iterator[str]:
    """`manage.py serve` (daphne only: no simulator, no Celery) on a free port; its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [sys.executable, "manage.py", "serve", "--port", str(port), "--sim-port", "0"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _wait_until_up(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"manage.py serve exited ({proc.returncode})")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/login/", timeout=5).status_code == 200:
                return
        time.sleep(0.5)
    raise RuntimeError("the dashboard did not answer within 60 s")


def measure(
    site: str, config: Any, user: Any, pages: int, seconds: float, sockets: int = 1
) -> dict[str, Any]:
    """One run watched by `pages` pages and `sockets` bare socket clients for `seconds`: every page's
    (sent, received, drawn) and every socket client's (sent, received) per point."""
    from runs.models import Run, Sample
    from tests.bench.live_pages import main_thread_times, open_pages, read_pages
    from tests.bench.live_socket import listening
    from tests.bench.proc_cpu import cores_used, cpu_seconds

    params = {"reps": 10_000, "warmup": 0, "max_tokens": MAX_TOKENS}  # stopped by cancel, not by reps
    run = Run.objects.create(config=config, machine=config.engine.machine, job="speed", params=params)
    with open_pages(site, user, f"/runs/{run.pk}/", pages, SOCKET_WAIT_S) as drivers:
        _say(f"live: {pages} pages and {sockets} socket clients watching run {run.pk}")
        before, cpu, started = main_thread_times(drivers), cpu_seconds(), time.monotonic()
        with listening(site, user, run.pk, sockets) as socket_rows:
            _work(run, seconds)
            cores = cores_used(cpu, cpu_seconds(), time.monotonic() - started)
            time.sleep(3)  # the last points' way to the pages
        drawn = read_pages(drivers)
        busy = [{k: a[k] - b[k] for k in a} for a, b in zip(main_thread_times(drivers), before, strict=True)]
    run.refresh_from_db()
    stamped = Sample.objects.filter(run=run, values__has_key="bench_sent_ms").count()
    return {"pages": pages, "seconds": seconds, "samples": stamped, "status": run.status, "drawn": drawn,
            "main_thread_s": busy, "socket": socket_rows, "cores": cores}


def _work(run: Any, seconds: float) -> None:
    """The worker: claim and execute the run here, cancelled after `seconds`."""
    from runs.actions.runs import cancel_run
    from runs.worker import execution
    from runs.worker.recorder import RunRecorder

    original = RunRecorder.on_sample

    async def stamped(self: RunRecorder, kind: str, values: dict[str, Any]) -> None:
        if kind == "request":
            values = {**values, "bench_sent_ms": time.time() * 1000}
        await original(self, kind, values)

    RunRecorder.on_sample = stamped  # type: ignore[method-assign]
    try:
        if execution.claim(run.pk) != execution.CLAIMED:
            raise RuntimeError(f"run {run.pk} could not be claimed")
        worker = threading.Thread(target=execution.execute, args=(run.pk,))
        worker.start()
        worker.join(seconds)
        cancel_run(run)
        worker.join(60)
    finally:
        RunRecorder.on_sample = original  # type: ignore[method-assign]


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
