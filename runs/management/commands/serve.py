"""`manage.py serve`: the dashboard on daphne, the demo simulator, and (with a broker) workers.

Without REDIS_URL the worker and the scheduler run inside the daphne process (embedded default;
runs.actions.scheduler). With it,
one Celery worker per machine queue (concurrency 1) and celery beat are started too.
The simulator on --sim-port is sized like the first config of the external simulator engine
that points at that port (the demo's sim-ollama), and appends its log to that engine's log_path.
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

from engines.machine_names import AmbiguousMachine, MachineLookupError, find_machine
from engines.models import Engine, EngineConfig, Machine
from runs.actions import scheduler
from runs.worker.dispatch import worker_argv
from runs.worker.engine_session import simulator_flags


class Command(BaseCommand):
    help = "Serve the dashboard with the demo simulator (and Celery workers when a broker is set)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=int(os.getenv("PORT", "8000")))
        parser.add_argument("--host", default=os.getenv("HOST", "127.0.0.1"))
        parser.add_argument("--sim-port", type=int, default=11500, help="0 disables the simulator")
        parser.add_argument(
            "--sim-lookahead", type=int, default=4, help="when no simulator engine points at --sim-port"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        procs = [self._daphne(options["host"], options["port"])]
        if options["sim_port"]:
            procs.append(self._simulator(options["sim_port"], options["sim_lookahead"]))
        if settings.SPARKDASH_WORKER == "celery":
            procs += self._celery()
        url = f"http://{options['host']}:{options['port']}/"
        self.stdout.write(f"SparkDash on {url} (Ctrl-C stops)")
        self.stdout.write(f"first visit: {url}tour/ runs the demo tour (speed runs, sweeps, a comparison)")
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            while all(p.poll() is None for p in procs):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            _stop(procs)

    def _daphne(self, host: str, port: int) -> subprocess.Popen:
        # On the embedded default the web process fires due schedules itself (sparkdash.apps starts
        # the loop there); only it is told so, not the simulator or any other child.
        env = {**os.environ, scheduler.ENV: "1"} if settings.SPARKDASH_WORKER != "celery" else None
        return _spawn(["-m", "daphne", "-b", host, "-p", str(port), "sparkdash.asgi:application"], env)

    def _simulator(self, port: int, lookahead: int) -> subprocess.Popen:
        config = external_simulator_config(port)
        if config is None:
            self.stdout.write(f"demo engine: the SparkDash SIMULATOR on port {port} (not a real engine)")
            return _spawn(["manage.py", "simengine", "--port", str(port), "--lookahead", str(lookahead)])
        self.stdout.write(
            f"demo engine: the SparkDash SIMULATOR on port {port} (not a real engine), "
            f"sized as {config.engine.name}'s config {config.name}"
        )
        return _spawn(simulator_command(port, config))

    def _celery(self) -> list[subprocess.Popen]:
        procs = []
        for machine in served_here(settings.SPARKDASH_SERVE_WORKERS):
            procs.append(_spawn(worker_argv(machine.queue_name)))
            self.stdout.write(f"celery worker for {machine.name} on queue {machine.queue_name}")
        procs.append(_spawn(["-m", "celery", "-A", "sparkdash", "beat", "-l", "info"]))
        return procs


def served_here(setting: str) -> list[Machine]:
    """The machines SPARKDASH_SERVE_WORKERS names ("all", "none", or names or queue slugs such as
    `team-3.spark-1`); unknown names, and names several teams use, are refused."""
    if setting.lower() == "all":
        return list(Machine.objects.all())
    names = [] if setting.lower() == "none" else [n.strip() for n in setting.split(",") if n.strip()]
    found, unknown = [], []
    for name in names:
        try:
            found.append(find_machine(name, queue_slug=True))
        except AmbiguousMachine as exc:
            slugs = ", ".join(sorted(m.queue_name.removeprefix("machine.") for m in exc.machines))
            raise CommandError(f"SPARKDASH_SERVE_WORKERS: more than one team has a machine named {name!r}: "
                               f"name the one this box serves by its queue ({slugs})") from None
        except MachineLookupError:
            unknown.append(name)
    if unknown:
        raise CommandError(f"SPARKDASH_SERVE_WORKERS names unknown machines: {', '.join(sorted(unknown))}")
    return found


def external_simulator_config(port: int) -> EngineConfig | None:
    """The first config (by name) of an external simulator engine listening on 127.0.0.1:port."""
    engines = Engine.objects.filter(simulator=True, launch=Engine.Launch.EXTERNAL)
    for engine in engines.order_by("name"):
        if engine.base_url.rstrip("/").endswith(f":{port}") and engine.configs.exists():
            return engine.configs.select_related("engine__machine").order_by("name").first()
    return None


def simulator_command(port: int, config: EngineConfig) -> list[str]:
    """`manage.py simengine` (relative to BASE_DIR) sized as the config, writing its engine's log_path."""
    cmd = ["manage.py", "simengine", "--port", str(port), *simulator_flags(config, config.lookahead)]
    return cmd + (["--log-file", config.engine.log_path] if config.engine.log_path else [])


def _spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=settings.BASE_DIR, env=env,
                            preexec_fn=_die_with_parent)


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
