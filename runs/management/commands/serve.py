"""`manage.py serve`: the dashboard on daphne, the demo simulator, and (with a broker) workers.

Without REDIS_URL the worker runs inside the daphne process (embedded default). With it,
one Celery worker per machine queue (concurrency 1) and celery beat are started too.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.models import Machine
from runs.worker.dispatch import worker_argv


class Command(BaseCommand):
    help = "Serve the dashboard with the demo simulator (and Celery workers when a broker is set)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=int(os.getenv("PORT", "8000")))
        parser.add_argument("--host", default=os.getenv("HOST", "127.0.0.1"))
        parser.add_argument("--sim-port", type=int, default=11500, help="0 disables the simulator")
        parser.add_argument("--sim-lookahead", type=int, default=4)

    def handle(self, *args: Any, **options: Any) -> None:
        procs = [self._daphne(options["host"], options["port"])]
        if options["sim_port"]:
            procs.append(self._simulator(options["sim_port"], options["sim_lookahead"]))
        if settings.SPARKDASH_WORKER == "celery":
            procs += self._celery()
        self.stdout.write(f"SparkDash on http://{options['host']}:{options['port']}/ (Ctrl-C stops)")
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            while all(p.poll() is None for p in procs):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            _stop(procs)

    def _daphne(self, host: str, port: int) -> subprocess.Popen:
        return _spawn(["-m", "daphne", "-b", host, "-p", str(port), "sparkdash.asgi:application"])

    def _simulator(self, port: int, lookahead: int) -> subprocess.Popen:
        self.stdout.write(f"demo engine: the SparkDash SIMULATOR on port {port} (not a real engine)")
        cmd = ["manage.py", "simengine", "--port", str(port), "--lookahead", str(lookahead)]
        return _spawn([*cmd, "--decode-tps", "40", "--acceptance", "0.8"])

    def _celery(self) -> list[subprocess.Popen]:
        procs = []
        for machine in served_here(settings.SPARKDASH_SERVE_WORKERS):
            procs.append(_spawn(worker_argv(machine.queue_name)))
            self.stdout.write(f"celery worker for {machine.name} on queue {machine.queue_name}")
        procs.append(_spawn(["-m", "celery", "-A", "sparkdash", "beat", "-l", "info"]))
        return procs


def served_here(setting: str) -> list[Machine]:
    """The machines SPARKDASH_SERVE_WORKERS names ("all", "none" or names); unknown names are refused."""
    if setting.lower() == "all":
        return list(Machine.objects.all())
    names = [] if setting.lower() == "none" else [n.strip() for n in setting.split(",") if n.strip()]
    found = list(Machine.objects.filter(name__in=names))
    unknown = sorted(set(names) - {m.name for m in found})
    if unknown:
        raise CommandError(f"SPARKDASH_SERVE_WORKERS names unknown machines: {', '.join(unknown)}")
    return found


def _spawn(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=settings.BASE_DIR, preexec_fn=_die_with_parent)


def _die_with_parent() -> None:
    # Linux: the child gets SIGTERM if serve dies without cleaning up (e.g. SIGKILL).
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
