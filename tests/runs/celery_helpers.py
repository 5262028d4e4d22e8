"""Helpers for the worker acceptance tests: real Celery worker subprocesses, run sockets, intervals.

A worker started here talks to the same Redis as the test and to the pytest-django TEST
database, so it sees the rows a `django_db(transaction=True)` test commits.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from runs.models import Run, Sample
from tests.processes import stop_process

__all__ = [
    "assert_streamed_live",
    "celery_worker",
    "open_run_socket",
    "overlaps",
    "receive_until_finished",
    "requires_celery",
    "session_cookie",
    "stored_run",
    "wait_until_finished",
]

CONNECT_S = 10  # the run socket's handshake, at most

requires_celery = pytest.mark.skipif(
    settings.SPARKDASH_WORKER != "celery"
    or not settings.REDIS_URL
    or "postgresql" not in settings.DATABASES["default"]["ENGINE"],
    reason="needs SPARKDASH_WORKER=celery, REDIS_URL and a Postgres DATABASE_URL (workers share them)",
)

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
RUN_TIMEOUT_S = 30.0


@dataclass
class Worker:
    """A running `celery worker` subprocess; `name` is also its Postgres application_name."""

    name: str
    process: subprocess.Popen
    log_path: Path
    final_log: str | None = None

    def log(self) -> str:
        if self.final_log is not None:
            return self.final_log
        return self.log_path.read_text(errors="replace")


def worker_env(name: str) -> dict[str, str]:
    """The test process's environment, pointed at the TEST database (not the dev one)."""
    url = urlsplit(settings.DATABASE_URL)
    query = [*parse_qsl(url.query), ("application_name", name)]
    test_db = settings.DATABASES["default"]["NAME"]
    return os.environ | {
        "DATABASE_URL": url._replace(path=f"/{test_db}", query=urlencode(query)).geturl(),
        "REDIS_URL": settings.REDIS_URL,
        "SPARKDASH_WORKER": "celery",
        "DJANGO_SETTINGS_MODULE": "sparkdash.settings",
    }


@contextmanager
def celery_worker(*queues: str, name: str, pool: str = "solo") -> Iterator[Worker]:
    """Run `celery -A sparkdash worker -Q <queues> -c 1` until the block ends.

    Returns once the worker logs that it is ready; on exit sends SIGTERM (warm shutdown),
    then SIGKILL if it has not stopped within STOP_TIMEOUT_S.
    """
    name = f"{name}-{uuid.uuid4().hex[:8]}"  # the node name, unique on the shared broker
    command = [
        sys.executable, "-m", "celery", "-A", "sparkdash", "worker",
        "-Q", ",".join(queues), "-c", "1", "--pool", pool, "-n", f"{name}@%h",
        "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO",
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="sparkdash-worker-") as log_dir:
        log_path = Path(log_dir) / "worker.log"
        with log_path.open("wb") as log_file:
            env = worker_env(name)
            process = subprocess.Popen(
                command, cwd=settings.BASE_DIR, env=env, stdout=log_file, stderr=subprocess.STDOUT
            )
        worker = Worker(name, process, log_path)
        try:
            _wait_ready(worker)
            yield worker
        except BaseException:
            # Shown with the failing test's captured output.
            sys.stderr.write(f"--- log of worker {name} ---\n{worker.log()}\n")
            raise
        finally:
            stop_process(process, STOP_TIMEOUT_S)
            worker.final_log = worker.log()
            _forget_queues(queues)


def _wait_ready(worker: Worker) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _logged_ready(worker):
        if worker.process.poll() is not None:
            raise RuntimeError(f"worker {worker.name} exited ({worker.process.returncode}):\n{worker.log()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"worker {worker.name} not ready after {READY_TIMEOUT_S} s:\n{worker.log()}")
        time.sleep(0.05)
    _wait_answers_control(worker)


def _wait_answers_control(worker: Worker) -> None:
    """Wait until the worker answers a ping: "ready." can be logged before its control
    channel subscribes, and a broadcast sent in between (a presence check) is never seen."""
    from sparkdash.celery import app

    node = f"{worker.name}@{socket.gethostname()}"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not app.control.ping(destination=[node], timeout=0.5, limit=1):
        if worker.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker {worker.name} never answered a ping:\n{worker.log()}")


def _logged_ready(worker: Worker) -> bool:
    # Celery logs "<name>@<host> ready." once it consumes from its queues.
    return any(f"{worker.name}@" in line and line.endswith(" ready.") for line in worker.log().splitlines())


def _forget_queues(queues: tuple[str, ...]) -> None:
    """Drop the per-test queues' Redis keys, so test runs don't pile up bindings."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        client.delete(*queues, *(f"_kombu.binding.{q}" for q in queues))
    finally:
        client.close()


def session_cookie(user: Any) -> str:
    """A session cookie for `user`, as a browser that signed in would send it."""
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def open_run_socket(run_id: int, cookie: str) -> WebsocketCommunicator:
    """Connect to ws/runs/<id>/ through the real ASGI stack (origin check, session auth)."""
    from sparkdash.asgi import application

    headers = [(b"origin", b"http://testserver"), (b"cookie", cookie.encode())]
    socket = WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=headers)
    # The run's worker starts beside the connect (a managed engine's start is a core's work for a
    # while): the communicator's default of 1 s was overrun once in CI's busy backend pass.
    connected, code = await socket.connect(timeout=CONNECT_S)
    assert connected, f"the run socket refused the connection ({code})"
    return socket


async def receive_until_finished(socket: WebsocketCommunicator) -> list[tuple[float, dict[str, Any]]]:
    """Every message up to the terminal "run" one, each as (wall-clock time received, message)."""
    received: list[tuple[float, dict[str, Any]]] = []
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = await socket.receive_json_from(timeout=left)
        except TimeoutError:
            break
        received.append((time.time(), message))
        if message["type"] == "run" and message["run"]["status"] in Run.TERMINAL:
            return received
    raise AssertionError(f"no terminal run message within {RUN_TIMEOUT_S} s; last: {received[-3:]}")


def assert_streamed_live(received: list[tuple[float, dict[str, Any]]], run: Run, requests: int) -> None:
    """Samples reached the socket while the run was running: before it finished, each seq once."""
    samples = [i for i, (_, m) in enumerate(received) if m["type"] == "samples"]
    assert len(samples) >= 2, f"expected several live batches, got {len(samples)}"
    assert received[samples[0]][0] < run.finished.timestamp()
    later = [m["run"]["status"] for _, m in received[samples[0] :] if m["type"] == "run"]
    assert Run.Status.RUNNING in later, later
    streamed = [s for _, m in received if m["type"] == "samples" for s in m["samples"]]
    assert [s["seq"] for s in streamed] == list(range(len(streamed)))  # requests and telemetry, each once
    assert sum(s["kind"] == "request" for s in streamed) == requests


def wait_until_finished(run_ids: list[int]) -> list[Run]:
    """Poll the database until every run has reached a terminal status; runs in pk order."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        runs = list(Run.objects.filter(pk__in=run_ids).order_by("pk"))
        if all(run.is_finished for run in runs):
            return runs
        time.sleep(0.1)
    states = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "status"))
    raise AssertionError(f"runs not finished within {RUN_TIMEOUT_S} s: {states}")


def stored_run(run_id: int) -> tuple[Run, list[int]]:
    """The run as stored, and the seqs of its stored samples in order."""
    seqs = Sample.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True)
    return Run.objects.get(pk=run_id), list(seqs)


def overlaps(a: Run, b: Run) -> bool:
    """Whether two finished runs' [started, finished] intervals share any time."""
    return max(a.started, b.started) < min(a.finished, b.finished)
