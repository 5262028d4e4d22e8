"""The whole dashboard as subprocesses on private services: `manage.py serve` (daphne and a
Celery worker per machine), a simulator engine, a private Redis and a database of its own on
a private Postgres cluster; and reading what the database holds, from outside.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from django.conf import settings

from tests.faults.services import PrivatePostgres, PrivateRedis, free_port, wait_for_port

TEMPLATE = "sparkdash_template"  # the migrated database each test's database is copied from
READY_TIMEOUT_S = 60.0
DB_TIMEOUT_S = 30.0


@dataclass
class Stack:
    """A running dashboard; `db_url` is its database, `site_url` its daphne."""

    redis: PrivateRedis
    postgres: PrivatePostgres
    db_url: str
    site_url: str
    log_path: Path
    sim_url: str
    processes: list[subprocess.Popen] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """The environment of the stack's processes."""
        return run_env(self.db_url, self.redis.url, self.log_path.parent)

    def log(self) -> str:
        """Everything the stack's processes printed so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def seed(self, *args: Any) -> dict[str, Any]:
        """Run tests.faults.seed in a subprocess on this stack's database and broker."""
        command = [sys.executable, "-m", "tests.faults.seed", *map(str, args)]
        done = subprocess.run(command, cwd=settings.BASE_DIR, env=self.env(), capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"seed {args} failed:\n{done.stderr}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def query(self, sql: str, *params: Any) -> list[tuple]:
        """Rows of one query on this stack's database, waiting out a restart."""
        return query(self.db_url, sql, *params)

    def seqs(self, run_id: int) -> list[int]:
        """The stored samples' seq numbers of a run, in order (duplicates would show twice)."""
        rows = self.query("SELECT seq FROM runs_sample WHERE run_id = %s ORDER BY seq", run_id)
        return [row[0] for row in rows]

    def run_row(self, run_id: int) -> dict[str, Any]:
        """The run's status, progress and error as stored."""
        sql = "SELECT status, progress_done, progress_total, error FROM runs_run WHERE id = %s"
        status, done, total, error = self.query(sql, run_id)[0]
        return {"status": status, "done": done, "total": total, "error": error}

    def requests(self, run_id: int) -> int:
        """How many request samples the run has stored (its telemetry readings left out)."""
        sql = "SELECT count(*) FROM runs_sample WHERE run_id = %s AND kind = 'request'"
        return int(self.query(sql, run_id)[0][0])

    def wait_for_samples(self, run_id: int, count: int, timeout_s: float = 60.0) -> int:
        """Wait until the run has stored at least `count` request samples; returns how many it has."""
        deadline = time.monotonic() + timeout_s
        while (stored := self.requests(run_id)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id}: {stored} samples after {timeout_s} s\n{self.log()}")
            time.sleep(0.1)
        return stored

    def wait_until_finished(self, run_id: int, timeout_s: float = 120.0) -> dict[str, Any]:
        """Wait until the run has ended; returns its row (see run_row)."""
        deadline = time.monotonic() + timeout_s
        while (row := self.run_row(run_id))["status"] not in ("succeeded", "failed", "cancelled"):
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id} still {row} after {timeout_s} s\n{self.log()}")
            time.sleep(0.2)
        return row


def query(db_url: str, sql: str, *params: Any) -> list[tuple]:
    """Rows of one query on the database at `db_url`, from outside the stack, waiting out a restart."""
    deadline = time.monotonic() + DB_TIMEOUT_S
    while True:
        try:
            with psycopg.connect(db_url, connect_timeout=2) as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run_env(db_url: str, redis_url: str, var_dir: Path) -> dict[str, str]:
    """The environment of every process of the stack."""
    return os.environ | {
        "DATABASE_URL": db_url,
        "REDIS_URL": redis_url,
        "SPARKDASH_WORKER": "celery",
        "SPARKDASH_VAR_DIR": str(var_dir),
        "DJANGO_SETTINGS_MODULE": "sparkdash.settings",
        "PYTHONUNBUFFERED": "1",
    }


def migrated_template(postgres: PrivatePostgres, name: str, var_dir: Path) -> None:
    """Create database `name` and migrate it, once; each test copies it (createdb -T)."""
    postgres.create_database(name)
    env = run_env(postgres.url(name), "", var_dir)
    del env["REDIS_URL"], env["SPARKDASH_WORKER"]
    command = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
    subprocess.run(command, cwd=settings.BASE_DIR, env=env, check=True, capture_output=True)


@contextmanager
def stack(
    postgres: PrivatePostgres, template: str, name: str, work: Path, sim_args: list[str]
) -> Iterator[Stack]:
    """Start a private Redis, a database copied from `template`, a simulator and `manage.py serve`.

    Stops them all when the block ends; on an error the stack's log is shown.
    """
    postgres.create_database(name, template)
    redis = PrivateRedis(work / "redis.log")
    redis.start()
    sim_port = free_port()
    it = Stack(redis, postgres, postgres.url(name), f"http://127.0.0.1:{free_port()}", work / "stack.log",
               f"http://127.0.0.1:{sim_port}")
    try:
        it.processes.append(_spawn(it, ["manage.py", "simengine", "--port", str(sim_port), *sim_args]))
        wait_for_port(sim_port)
        yield it
    except BaseException:
        sys.stderr.write(f"--- log of the stack ---\n{it.log()}\n")
        raise
    finally:
        for process in reversed(it.processes):
            _stop(process)
        redis.stop()


def serve(it: Stack) -> None:
    """Start `manage.py serve` (daphne, a worker per machine, beat); return once both answer."""
    port = it.site_url.rsplit(":", 1)[1]
    it.processes.append(_spawn(it, ["manage.py", "serve", "--port", port, "--sim-port", "0"]))
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not (" ready." in it.log() and _answers(it.site_url + "/login/")):
        if time.monotonic() > deadline or any(p.poll() is not None for p in it.processes):
            raise RuntimeError(f"the dashboard did not start:\n{it.log()}")
        time.sleep(0.2)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _spawn(it: Stack, args: list[str]) -> subprocess.Popen:
    with it.log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, *args], cwd=settings.BASE_DIR, env=it.env(),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
