"""`manage.py bench CONFIG --job speed --reps N --wait`: start a run from a script, print it as JSON."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from engines.models import EngineConfig
from runs.actions.runs import start_run
from runs.core import registry
from runs.core.jobs.params import IntParam, RequestsParam
from runs.models import Run

WAIT_POLL_S = (0.1, 2.0)  # the first pause and the longest, in seconds


class Command(BaseCommand):
    help = "Start a run of CONFIG and print it as JSON (with --wait: once it has finished)."
    # Django's system checks (URL and model checks, for a server about to serve) took about half a
    # second of CPU before every run a script starts (issue 41's profile of `make bench-peers`).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("config", help="config name")
        parser.add_argument("--team", help="the config's team (needed when several teams have the name)")
        startable = [job for job, _label in registry.startable_choices()]
        parser.add_argument("--job", default=registry.DEFAULT_JOB, choices=startable)
        for name, (param, jobs) in registry.params_by_name().items():
            parse = Path if isinstance(param, RequestsParam) else int if isinstance(param, IntParam) else str
            help_text = f"{', '.join(jobs)}: {param.label} ({param.help()})"
            parser.add_argument(f"--{name.replace('_', '-')}", type=parse, help=help_text.replace("%", "%%"))
        parser.add_argument("--wait", action="store_true", help="wait for the run to finish")
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait at most")

    def handle(self, *args: Any, **options: Any) -> None:
        config = find_config(options["config"], options["team"])
        params = {k: options[k] for k in registry.params_by_name() if options[k] is not None}
        for name in params:
            if isinstance(params[name], Path):
                params[name] = _read_text(params[name])
        try:
            run = start_run(config, options["job"], params)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        # Without a broker the job runs on a thread of this process, which must outlive it.
        if options["wait"] or settings.SPARKDASH_WORKER == "inprocess":
            run = self._wait(run.pk, options["timeout"])
        self.stdout.write(json.dumps(run.to_dict(), indent=2, ensure_ascii=False))
        if run.status == Run.Status.FAILED:
            raise CommandError(f"run {run.pk} failed: {run.error}")

    def _wait(self, run_id: int, timeout: float) -> Run:
        # Polls the status alone, more rarely as the run goes on: loading the whole run twice a
        # second was a fifth of what a user's run cost beyond the measuring loop, and polling its
        # status twice a second still a sixth at 4 streams (issue 41's profile of bench-peers).
        deadline, pause = time.monotonic() + timeout, WAIT_POLL_S[0]
        statuses = Run.objects.filter(pk=run_id).values_list("status", flat=True)
        while (status := statuses.get()) not in Run.TERMINAL:
            if time.monotonic() > deadline:
                raise CommandError(f"run {run_id} still {status} after {timeout:.0f} s")
            time.sleep(pause)
            pause = min(pause * 1.5, WAIT_POLL_S[1])
        return Run.objects.select_related("config__engine", "machine", "revision").get(pk=run_id)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None


def find_config(name: str, team: str | None) -> EngineConfig:
    """The config named ``name`` (in ``team`` when given): names are unique per team only."""
    configs = EngineConfig.objects.filter(name=name).select_related("engine__machine__team")
    if team:
        configs = configs.filter(engine__machine__team__name=team)
    found = list(configs[:2])
    if not found:
        raise CommandError(f"no config named {name!r}" + (f" in team {team!r}" if team else ""))
    if len(found) > 1:
        teams = ", ".join(sorted({c.engine.machine.team.name for c in configs}))
        raise CommandError(f"more than one team has a config named {name!r} ({teams}): give --team")
    return found[0]
