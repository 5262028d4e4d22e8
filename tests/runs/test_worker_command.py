from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import time

import pytest
from django.conf import settings
from django.core.cache import cache
from django.core.management import CommandError, call_command

from engines.simulator import SimProfile
from runs.actions.runs import start_run
from runs.actions.workers import CACHE_KEY, presence_of
from runs.models import Run
from tests.factories import MachineFactory, TeamFactory
from tests.processes import stop_process
from tests.runs.celery_helpers import _forget_queues, requires_celery, wait_until_finished, worker_env

READY_TIMEOUT_S = 60.0


@pytest.mark.django_db
def test_it_refuses_a_machine_the_database_does_not_know(settings):
    settings.REDIS_URL, settings.DATABASE_URL = "redis://127.0.0.1:6379/0", "postgres://db/sparkdash"
    MachineFactory(name="spark-1")
    refusal = r"no machine named 'spark-9' in the database; known machines: spark-1"
    with pytest.raises(CommandError, match=refusal):
        call_command("worker", "spark-9")


@pytest.mark.django_db
def test_it_refuses_to_start_without_the_teams_broker_or_database(settings):
    MachineFactory(name="spark-1")
    settings.REDIS_URL, settings.DATABASE_URL = "", "postgres://db/sparkdash"
    with pytest.raises(CommandError, match="REDIS_URL is not set"):
        call_command("worker", "spark-1")
    settings.REDIS_URL, settings.DATABASE_URL = "redis://127.0.0.1:6379/0", ""
    with pytest.raises(CommandError, match="DATABASE_URL is not set"):
        call_command("worker", "spark-1")


@pytest.fixture
def started(monkeypatch, settings) -> list[list[str]]:
    """The argv each `manage.py worker` would exec (no Celery worker starts here)."""
    settings.REDIS_URL, settings.DATABASE_URL = "redis://127.0.0.1:6379/0", "postgres://db/sparkdash"
    argvs: list[list[str]] = []
    monkeypatch.setattr("runs.management.commands.worker.os.execv", lambda path, argv: argvs.append(argv))
    return argvs


@pytest.mark.django_db
def test_it_asks_for_the_team_when_two_teams_have_the_machine_and_starts_nothing(started):
    lab = MachineFactory(name="spark-1", team=TeamFactory(name="lab"))
    MachineFactory(name="spark-1")
    refusal = r"'spark-1' is used by more than one team \(default, lab\): choose the team with --team"
    with pytest.raises(CommandError, match=refusal):
        call_command("worker", "spark-1")
    assert started == []
    call_command("worker", "spark-1", "--team", "lab", stdout=io.StringIO())
    call_command("worker", "spark-1", "--team", "default", stdout=io.StringIO())
    queues = [argv[argv.index("-Q") + 1] for argv in started]
    assert queues == [lab.queue_name, "machine.spark-1"] and lab.queue_name != "machine.spark-1"


def test_it_passes_make_workers_team_on_only_when_given():
    def planned(*variables: str) -> str:
        command = ["make", "-n", "-s", "worker", *variables]
        return subprocess.run(command, cwd=settings.BASE_DIR, capture_output=True, text=True).stdout
    assert 'manage.py worker "spark-1" --team "my lab"' in planned("MACHINE=spark-1", "TEAM=my lab")
    assert "--team" not in planned("MACHINE=spark-1")


def test_it_refuses_in_make_worker_without_a_machine_name():
    command = ["make", "-s", "worker", "MACHINE="]
    done = subprocess.run(command, cwd=settings.BASE_DIR, capture_output=True, text=True)
    assert done.returncode != 0
    assert "usage: make worker MACHINE=<name>" in done.stderr


@requires_celery
def test_it_starts_a_worker_that_listens_on_the_machines_queue_and_runs_its_jobs(sim_config):
    config = sim_config(SimProfile(decode_tps=40, ttft_ms=50), prefix="spark")
    machine = config.machine
    command = [sys.executable, "manage.py", "worker", machine.name]
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=worker_env(f"cmd-{machine.pk}"),
                                   stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            _wait_ready(process, log, f"{machine.queue_name}@")
            presence = _presence_once_seen(machine)
            run = start_run(config, "speed", {"reps": 1, "warmup": 0, "max_tokens": 8})
            [finished] = wait_until_finished([run.pk])
        finally:
            stop_process(process)
            _forget_queues((machine.queue_name,))
            cache.delete(CACHE_KEY)
    assert [w.split("@")[0] for w in presence.workers] == [machine.queue_name]
    assert finished.status == Run.Status.SUCCEEDED, finished.error


def _presence_once_seen(machine, within_s: float = 20.0):
    """The machine's worker presence, asked again until it lists a worker: a worker that has just
    said "ready" can miss the first control broadcast's short timeout on a busy machine (CI)."""
    deadline = time.monotonic() + within_s
    while True:
        cache.delete(CACHE_KEY)
        presence = presence_of(machine)
        if presence.workers or time.monotonic() > deadline:
            return presence
        time.sleep(0.5)


def _wait_ready(process: subprocess.Popen, log, node: str) -> None:
    deadline, text = time.monotonic() + READY_TIMEOUT_S, ""
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read()
        if any(node in line and line.endswith(" ready.") for line in text.splitlines()):
            return
        assert process.poll() is None, f"manage.py worker exited ({process.returncode}):\n{text}"
        time.sleep(0.1)
    raise AssertionError(f"manage.py worker not ready after {READY_TIMEOUT_S} s:\n{text}")
